//! Agent tokens: `GET` and `POST /api/v1/tokens`, and the rows of `mcplex token list`. A token
//! is shown without its secret and without its hash; the secret appears once, in the answer that
//! created it.

use serde::{Deserialize, Serialize};

/// The body of `POST /api/v1/tokens`, also what `mcplex token create` sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateToken {
    pub name: String,
    /// Omitted: every server.
    #[serde(default)]
    pub servers: Option<Vec<String>>,
    /// `read`, `write`, `destructive`, comma-separated.
    pub permissions: String,
    #[serde(default)]
    pub profile: Option<String>,
    /// A duration such as `30d` or `12h`.
    #[serde(default)]
    pub expires: Option<String>,
}

/// `{"tokens": [...]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokensAnswer {
    pub tokens: Vec<Token>,
}

/// A stored token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Token {
    pub name: String,
    /// `null`: every server.
    pub servers: Option<Vec<String>>,
    /// Comma-separated, e.g. `read,write`.
    pub permissions: String,
    pub profile: Option<String>,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds; `null`: never.
    pub expires_at: Option<i64>,
    pub status: TokenStatus,
}

/// The 201 answer to `POST /api/v1/tokens`: the token, and its secret, shown this once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreatedToken {
    #[serde(flatten)]
    pub record: Token,
    /// The secret an agent presents as `Authorization: Bearer <token>`.
    pub token: String,
}

/// Whether a token is accepted now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TokenStatus {
    Active,
    Expired,
    Revoked,
}

impl TokenStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TokenStatus::Active => "active",
            TokenStatus::Expired => "expired",
            TokenStatus::Revoked => "revoked",
        }
    }
}
