//! Agent tokens: `GET` and `POST /api/v1/tokens`, and the rows of `mcplex token list`. A token
//! is shown without its secret and without its hash; the secret appears once, in the answer that
//! created it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    /// The token's own limits on tool calls, in the config's `limits` shape (over the config's).
    #[serde(default)]
    pub limits: Option<Value>,
}

/// The body of `PUT /api/v1/tokens/{name}/limits`, also what `mcplex token limit` sends: the
/// token's own limits, replaced whole (`{}`: the config's alone).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetLimits {
    pub limits: Value,
}

/// `GET /api/v1/limits`: every caller's default, and the callers with a limit that made or
/// were refused a call lately (agent tokens and OAuth subjects alike).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitsAnswer {
    /// The config's `limits`.
    pub defaults: Value,
    pub callers: Vec<CallerUsage>,
}

/// One caller's limits in force and its use of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallerUsage {
    /// The token's name, or `oauth:<subject>`.
    pub caller: String,
    /// In force: its own over the config's.
    pub limits: Value,
    /// Calls started in the last 60 seconds, on every replica.
    pub calls_last_minute: u64,
    /// Calls in flight now, on every replica.
    pub in_flight: u64,
    /// Calls this replica refused in the last 60 seconds.
    pub refused_last_minute: u64,
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
    /// Its own limits (`null`: the config's alone).
    #[serde(default)]
    pub limits: Option<Value>,
    /// Its recent use, when a running gateway answers and the token is limited.
    #[serde(default)]
    pub usage: Option<CallerUsage>,
}

/// The 201 answer to `POST /api/v1/tokens`: the token, and its secret, shown this once (never
/// in its `Debug`).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreatedToken {
    #[serde(flatten)]
    pub record: Token,
    /// The secret an agent presents as `Authorization: Bearer <token>`.
    pub token: String,
}

impl std::fmt::Debug for CreatedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreatedToken")
            .field("record", &self.record)
            .field("token", &"[redacted]")
            .finish()
    }
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
