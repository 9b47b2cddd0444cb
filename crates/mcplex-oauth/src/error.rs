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

/// Why an answer body was not read ([`crate::read_capped`]). Holds no URL: the caller names it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AnswerError {
    /// The connection failed while the body was read.
    #[error("{0}")]
    Transport(String),
    #[error("the answer is over {} bytes", crate::MAX_ANSWER_BYTES)]
    TooLarge,
}

/// Why the issuer's metadata or signing keys could not be had. Names the issuer's public URLs,
/// never a token.
#[derive(Debug, Clone, thiserror::Error)]
pub enum IssuerError {
    #[error("the issuer {issuer:?} is not a URL: {reason}")]
    NotAUrl { issuer: String, reason: String },
    #[error("{url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("{url}: HTTP {status}")]
    Status {
        url: String,
        status: reqwest::StatusCode,
    },
    #[error("{url}: {error}")]
    Body { url: String, error: AnswerError },
    #[error("{url}: not JSON: {reason}")]
    NotJson { url: String, reason: String },
    /// No metadata document names this issuer and has every field asked for; `failures` says
    /// what each candidate URL answered.
    #[error("no usable metadata of issuer {issuer} ({})", failures.join("; "))]
    NoMetadata {
        issuer: String,
        failures: Vec<String>,
    },
    #[error("no jwks_uri in its metadata")]
    NoJwksUri,
    /// The key set could not be fetched; `error` says why.
    #[error("cannot fetch the signing keys of issuer {issuer}: {error}")]
    Keys {
        issuer: String,
        error: Box<IssuerError>,
    },
}

/// Why a JWT is refused, in the operator's words; never holds the token.
#[derive(Debug, Clone, thiserror::Error)]
pub enum JwtError {
    /// The header cannot be read; `reason` is what is wrong with it.
    #[error("not a JWT ({0})")]
    NotAJwt(String),
    #[error("signature algorithm {0:?} is not accepted (auth.algorithms)")]
    Algorithm(jsonwebtoken::Algorithm),
    #[error("the issuer's signing keys are not loaded yet (see the fetch warning)")]
    KeysNotLoaded,
    #[error("signed by an unknown key (kid {kid:?}) for {alg:?}")]
    UnknownKey {
        kid: String,
        alg: jsonwebtoken::Algorithm,
    },
    #[error("no key of the issuer fits {0:?}")]
    NoKey(jsonwebtoken::Algorithm),
    /// A key was tried and the token failed it (signature, `exp`, `aud`, ...): `reason`.
    #[error("{reason} (alg {alg:?}, kid {kid:?})")]
    Refused {
        reason: String,
        alg: jsonwebtoken::Algorithm,
        kid: Option<String>,
    },
    #[error("the ID token is refused: {0}")]
    IdToken(Box<JwtError>),
    #[error("the ID token's nonce is not this sign-in's")]
    Nonce,
}

/// Why a [`crate::LoginStore`] could not read or write a login. No variant holds a login's
/// bytes: they are tokens.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LoginStoreError {
    /// The store itself failed (unreachable, a database error).
    #[error("{0}")]
    Store(String),
    /// The stored bytes are not a login; `category` is serde's (syntax, data, ...), never its
    /// message, which could quote a token.
    #[error("the stored login of {server:?} is unreadable ({category}); log in again")]
    Unreadable { server: String, category: String },
    /// The login could not be serialized.
    #[error("{0}")]
    Encode(String),
}
