//! [`OAuthError`]: what went wrong talking OAuth to a server, never with a token in it.

/// A failed OAuth step. Texts name the step and the server's `error` code; no variant holds a
/// token or a client secret.
#[derive(Debug, Clone, thiserror::Error)]
pub enum OAuthError {
    /// No metadata where it should be.
    #[error("discovery failed: {0}")]
    Discovery(String),
    /// Metadata that is there but unusable.
    #[error("bad OAuth metadata: {0}")]
    Metadata(String),
    /// The authorization server refused to register mcplex.
    #[error("client registration refused: {0}")]
    Registration(String),
    /// The authorization server (or the resource) could not be reached.
    #[error("authorization server unreachable: {0}")]
    Unreachable(String),
    /// The token endpoint said no (`invalid_grant`, `invalid_client`, ...).
    #[error("token request refused: {code}{}", if detail.is_empty() { String::new() } else { format!(" ({detail})") })]
    Token { code: String, detail: String },
    /// Nobody has logged in to this server (or the login was for another URL).
    #[error("{0}")]
    NoLogin(String),
    /// Reading or writing the stored login failed.
    #[error("token store: {0}")]
    Store(String),
    #[error("no randomness: {0}")]
    Random(String),
}

impl OAuthError {
    /// Only a person can fix this: no login, or the authorization server refused the grant or
    /// the client for good. Anything else (unreachable, malformed answers) is retried.
    pub fn needs_login(&self) -> bool {
        match self {
            OAuthError::NoLogin(_) => true,
            OAuthError::Token { code, .. } => {
                matches!(
                    code.as_str(),
                    "invalid_grant" | "invalid_client" | "unauthorized_client"
                )
            }
            _ => false,
        }
    }
}
