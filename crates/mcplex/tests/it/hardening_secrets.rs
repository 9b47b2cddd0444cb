//! Issue 15, secrets and environment: URL credentials and configured secrets redacted from every
//! text that leaves the process, the upstream environment allow-list, the state file's mode.
