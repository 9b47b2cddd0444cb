//! The two answers every write route shares: it was done (200, with what was done), or why not
//! (a 4xx or 5xx status with the reason).

use serde::{Deserialize, Serialize};

/// `{"ok": true, "message": "..."}`: what the gateway did, in words for the operator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Done {
    pub ok: bool,
    pub message: String,
}

impl Done {
    pub fn new(message: impl Into<String>) -> Done {
        Done {
            ok: true,
            message: message.into(),
        }
    }
}

/// `{"error": "..."}`, the body of every refusal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorAnswer {
    pub error: String,
}

/// `POST /api/v1/identity`: a nonce the CLI chose, before it sends the API key to the address
/// a gateway registered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdentityRequest {
    pub nonce: String,
}

/// The gateway's proof that it holds the API key, for that nonce and its registered address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdentityAnswer {
    pub proof: String,
}

/// The answer to `POST /api/v1/servers/{name}/login`: the URL the person opens to log in; the
/// authorization server sends them back to the gateway's `/ui/oauth/callback`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoginStarted {
    pub url: String,
}
