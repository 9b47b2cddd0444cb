//! Issue 15, the HTTP edge: connection and read timeouts, the connection cap, sessions freed and
//! capped, credential header forms, duplicate request ids, JSON-RPC error codes, Host forms.
