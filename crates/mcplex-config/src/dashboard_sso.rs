//! `auth.dashboard`: single sign-on for the dashboard against the issuer `auth` names. People
//! sign in with OpenID Connect (`client_id`, `client_secret` as a value or `{"env": "NAME"}`,
//! `scopes`); `operators` are the claims that make a person an operator. The flow itself and
//! the ID token's checks are the binary's; this file only reads the settings.

use serde_json::{Map, Value};

use crate::parse::{Cx, kind, warn_unknown};
use crate::{ClientSecret, ConfigError};

const DASHBOARD_KEYS: &[&str] = &["client_id", "client_secret", "operators", "scopes"];
const OPERATOR_KEYS: &[&str] = &["claim", "value"];

/// The scopes asked for when the config names none.
pub const DEFAULT_SIGN_IN_SCOPES: &[&str] = &["openid", "profile", "email"];

/// How people sign in to the dashboard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DashboardSignIn {
    /// The dashboard's client at the issuer (its redirect URI: `<public URL>/ui/oidc/callback`).
    pub client_id: String,
    /// `None`: a public client (PKCE alone).
    pub client_secret: Option<ClientSecret>,
    /// Always holds `openid`.
    pub scopes: Vec<String>,
    /// A person is an operator when one of these holds of their claims (the ID token's, with
    /// the userinfo endpoint's added).
    pub operators: Vec<ClaimMatch>,
}

/// The claim `claim` is `value`, or an array that holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimMatch {
    pub claim: String,
    pub value: String,
}

impl ClaimMatch {
    /// Whether `claims` meet it (a dotted name reaches into nested objects).
    pub fn holds(&self, claims: &Map<String, Value>) -> bool {
        let mut parts = self.claim.split('.');
        let Some(first) = parts.next() else {
            return false;
        };
        let mut found = claims.get(first);
        for part in parts {
            found = found.and_then(|v| v.get(part));
        }
        match found {
            Some(Value::String(text)) => *text == self.value,
            Some(Value::Array(items)) => items.iter().any(|i| i.as_str() == Some(&self.value)),
            Some(Value::Bool(b)) => b.to_string() == self.value,
            Some(Value::Number(n)) => n.to_string() == self.value,
            _ => false,
        }
    }
}

impl Cx<'_> {
    pub(crate) fn dashboard_sign_in(
        &self,
        auth: &Map<String, Value>,
        warnings: &mut Vec<String>,
    ) -> Result<Option<DashboardSignIn>, ConfigError> {
        let key = "auth.dashboard";
        let Some(value) = auth.get("dashboard").filter(|v| !v.is_null()) else {
            return Ok(None);
        };
        let Value::Object(object) = value else {
            return Err(self.err(
                key,
                format!(
                    "must be an object like {{\"client_id\": …, \"client_secret\": …, \"operators\": [{{\"claim\": \"groups\", \"value\": \"mcp-admins\"}}]}}, found {}",
                    kind(value)
                ),
            ));
        };
        warn_unknown(
            object,
            DASHBOARD_KEYS,
            &format!("{key}."),
            self.file,
            warnings,
        )?;
        let field = |name: &str| object.get(name).filter(|v| !v.is_null());
        let client_id = match field("client_id") {
            Some(v) => self
                .string(v, &format!("{key}.client_id"))?
                .trim()
                .to_owned(),
            None => String::new(),
        };
        if client_id.is_empty() {
            return Err(self.err(format!("{key}.client_id"), "required"));
        }
        let client_secret = field("client_secret")
            .map(|v| self.client_secret(v, &format!("{key}.client_secret")))
            .transpose()?;
        let mut scopes = match field("scopes") {
            Some(v) => self.scopes(v, &format!("{key}.scopes"))?,
            None => DEFAULT_SIGN_IN_SCOPES
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
        };
        if !scopes.iter().any(|s| s == "openid") {
            scopes.insert(0, "openid".to_owned());
        }
        let operators = self.operators(field("operators"), key, warnings)?;
        Ok(Some(DashboardSignIn {
            client_id,
            client_secret,
            scopes,
            operators,
        }))
    }

    fn operators(
        &self,
        value: Option<&Value>,
        key: &str,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<ClaimMatch>, ConfigError> {
        let key = format!("{key}.operators");
        let items = match value {
            Some(Value::Array(items)) if !items.is_empty() => items,
            _ => {
                return Err(self.err(
                    key,
                    "required: the claims that make a person an operator, like [{\"claim\": \"groups\", \"value\": \"mcp-admins\"}]",
                ));
            }
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let item_key = format!("{key}[{i}]");
                let Value::Object(object) = item else {
                    return Err(
                        self.err(item_key, format!("must be an object, found {}", kind(item)))
                    );
                };
                warn_unknown(
                    object,
                    OPERATOR_KEYS,
                    &format!("{item_key}."),
                    self.file,
                    warnings,
                )?;
                let text = |name: &str| -> Result<String, ConfigError> {
                    let field_key = format!("{item_key}.{name}");
                    let value = object
                        .get(name)
                        .ok_or_else(|| self.err(&field_key, "required"))?;
                    let text = self.string(value, &field_key)?.trim();
                    if text.is_empty() {
                        return Err(self.err(field_key, "must not be empty"));
                    }
                    Ok(text.to_owned())
                };
                Ok(ClaimMatch {
                    claim: text("claim")?,
                    value: text("value")?,
                })
            })
            .collect()
    }
}
