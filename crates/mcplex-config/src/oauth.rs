//! A server's `"oauth"` block: how mcplex logs in to an upstream that wants OAuth 2.1
//! (`client_id`, `client_secret` as a value or `{"env": "NAME"}`, `scopes`, `grant`). The
//! secret is never shown: `Debug` redacts it, and the server's `Redactor` hides a literal one.

use std::fmt;

use serde_json::Value;

use crate::ConfigError;
use crate::parse::{Cx, kind, warn_unknown};

const OAUTH_KEYS: &[&str] = &["client_id", "client_secret", "scopes", "grant", "per_user"];

/// How mcplex obtains tokens for one server.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OAuthConfig {
    /// A pre-registered client; without it mcplex registers itself (RFC 7591).
    pub client_id: Option<String>,
    pub client_secret: Option<ClientSecret>,
    /// Scopes to ask for; empty: those the server's metadata lists, else none.
    pub scopes: Vec<String>,
    pub grant: OAuthGrant,
    /// `per_user`: each caller's calls go out with its own credential for the server, never
    /// another's (`None`: the gateway's login serves everyone). The gateway's own login (the
    /// operator's) lists the tools either way.
    pub per_user: Option<PerUser>,
}

/// Where a caller's own credential for a `per_user` server comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerUser {
    /// `true`: each caller logs in once (authorization code), from the link its first call
    /// carries; the login is stored and refreshed like the gateway's.
    OwnLogin,
    /// `"token_exchange"`: the caller's own OAuth access token (a JWT of the gateway's issuer)
    /// is exchanged at that issuer, which must be the server's authorization server too (RFC
    /// 8693), with the client of the gateway's own login (a person's, or client credentials);
    /// no second login.
    TokenExchange,
}

impl OAuthConfig {
    /// Whether each caller logs in to this server with its own login.
    pub fn own_logins(&self) -> bool {
        self.per_user == Some(PerUser::OwnLogin)
    }
}

/// Which grant obtains the tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OAuthGrant {
    /// A person logs in once (`mcplex auth login SERVER`); refresh tokens keep it going.
    #[default]
    AuthorizationCode,
    /// Machine to machine: the client's own credentials, no person.
    ClientCredentials,
}

/// A client secret, written in the file or named by an environment variable (read when used).
#[derive(Clone, PartialEq, Eq)]
pub enum ClientSecret {
    Value(String),
    Env(String),
}

impl fmt::Debug for ClientSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientSecret::Value(_) => f.write_str("Value([redacted])"),
            ClientSecret::Env(name) => write!(f, "Env({name:?})"),
        }
    }
}

impl Cx<'_> {
    /// The `"oauth"` block at `key`.
    pub(crate) fn oauth(
        &self,
        value: &Value,
        key: &str,
        warnings: &mut Vec<String>,
    ) -> Result<OAuthConfig, ConfigError> {
        let Value::Object(object) = value else {
            return Err(self.err(key, format!("must be an object, found {}", kind(value))));
        };
        warn_unknown(object, OAUTH_KEYS, &format!("{key}."), self.file, warnings)?;
        let field = |name: &str| object.get(name).filter(|v| !v.is_null());
        let client_id = field("client_id")
            .map(|v| {
                self.string(v, &format!("{key}.client_id"))
                    .map(str::to_owned)
            })
            .transpose()?;
        let client_secret = field("client_secret")
            .map(|v| self.client_secret(v, &format!("{key}.client_secret")))
            .transpose()?;
        let scopes = field("scopes")
            .map(|v| self.scopes(v, &format!("{key}.scopes")))
            .transpose()?
            .unwrap_or_default();
        let grant = match field("grant")
            .map(|v| self.string(v, &format!("{key}.grant")))
            .transpose()?
        {
            None | Some("authorization_code") => OAuthGrant::AuthorizationCode,
            Some("client_credentials") => OAuthGrant::ClientCredentials,
            Some(other) => {
                return Err(self.err(
                    format!("{key}.grant"),
                    format!("unknown grant {other:?}; expected \"authorization_code\" (a person logs in) or \"client_credentials\" (no person)"),
                ));
            }
        };
        if grant == OAuthGrant::ClientCredentials
            && (client_id.is_none() || client_secret.is_none())
        {
            return Err(self.err(
                key,
                "\"grant\": \"client_credentials\" needs \"client_id\" and \"client_secret\"",
            ));
        }
        let per_user = match field("per_user") {
            None | Some(Value::Bool(false)) => None,
            Some(Value::Bool(true)) => Some(PerUser::OwnLogin),
            Some(Value::String(text)) if text == "token_exchange" => Some(PerUser::TokenExchange),
            Some(other) => {
                return Err(self.err(
                    format!("{key}.per_user"),
                    format!(
                        "must be true, false or \"token_exchange\", found {}",
                        kind(other)
                    ),
                ));
            }
        };
        if per_user == Some(PerUser::OwnLogin) && grant == OAuthGrant::ClientCredentials {
            return Err(self.err(
                format!("{key}.per_user"),
                "a client-credentials login is the gateway's own, never a caller's: \"per_user\" needs \"authorization_code\"",
            ));
        }
        Ok(OAuthConfig {
            client_id,
            client_secret,
            scopes,
            grant,
            per_user,
        })
    }

    pub(crate) fn client_secret(
        &self,
        value: &Value,
        key: &str,
    ) -> Result<ClientSecret, ConfigError> {
        match value {
            Value::String(secret) => Ok(ClientSecret::Value(secret.clone())),
            Value::Object(object) => {
                let mut ignored = Vec::new();
                warn_unknown(
                    object,
                    &["env"],
                    &format!("{key}."),
                    self.file,
                    &mut ignored,
                )?;
                match object.get("env") {
                    Some(Value::String(name)) if !name.is_empty() && ignored.is_empty() => {
                        Ok(ClientSecret::Env(name.clone()))
                    }
                    _ => Err(self.err(key, "must be a string or {\"env\": \"VARIABLE\"}")),
                }
            }
            other => Err(self.err(
                key,
                format!(
                    "must be a string or {{\"env\": \"VARIABLE\"}}, found {}",
                    kind(other)
                ),
            )),
        }
    }

    pub(crate) fn scopes(&self, value: &Value, key: &str) -> Result<Vec<String>, ConfigError> {
        let Value::Array(items) = value else {
            return Err(self.err(
                key,
                format!("must be an array of strings, found {}", kind(value)),
            ));
        };
        items
            .iter()
            .enumerate()
            .map(|(i, v)| self.string(v, &format!("{key}[{i}]")).map(str::to_owned))
            .collect()
    }
}
