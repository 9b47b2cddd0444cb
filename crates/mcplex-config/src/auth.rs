//! `auth`: mcplex as an OAuth resource server. Which issuer's JWT access tokens are accepted
//! (`issuer`, `audience`, the signature `algorithms`, the clock `leeway_seconds`), where the
//! gateway says it is (`resource`), and the `rules` that turn a token's scopes and claims into
//! what it may reach. Validation of tokens is the binary's; this file only reads the settings.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::parse::{Cx, kind, warn_unknown};
use crate::{ConfigError, Profile, ServerConfig};

/// The signature algorithms an access token may use: asymmetric only. `none` and the HMAC
/// family are never accepted (a resource server that shares a secret with its issuer can mint
/// tokens itself, and HMAC "verified" with a public key is the classic key-confusion attack).
pub const SIGNATURE_ALGORITHMS: &[&str] = &[
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

/// How far `exp` and `nbf` may be off when nothing says otherwise.
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(60);

const AUTH_KEYS: &[&str] = &[
    "issuer",
    "audience",
    "resource",
    "algorithms",
    "leeway_seconds",
    "rules",
    "dashboard",
];
const RULE_KEYS: &[&str] = &[
    "scope",
    "claim",
    "value",
    "servers",
    "permissions",
    "profile",
];
const PERMISSIONS: &[&str] = &["read", "write", "destructive"];

/// The `auth` block, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthSettings {
    /// The authorization server's issuer identifier (`iss`), an `https` URL (`http` on loopback).
    pub issuer: String,
    /// What `aud` must hold (a string, or one of an array).
    pub audience: String,
    /// The public URL of `/mcp` (the protected resource); `None`: `http://<Host>/mcp`.
    pub resource: Option<String>,
    /// The accepted signature algorithms, a subset of [`SIGNATURE_ALGORITHMS`].
    pub algorithms: Vec<String>,
    /// Clock skew allowed on `exp` and `nbf`.
    pub leeway: Duration,
    /// In order; the first rule a token matches decides what it reaches.
    pub rules: Vec<AuthRule>,
    /// `dashboard`: people sign in to the dashboard at this issuer.
    pub dashboard: Option<crate::DashboardSignIn>,
}

impl AuthSettings {
    /// The scopes the rules know, in rule order, each once (`scopes_supported`).
    pub fn scopes(&self) -> Vec<String> {
        let mut scopes: Vec<String> = Vec::new();
        for rule in &self.rules {
            if let RuleMatch::Scope(scope) = &rule.when
                && !scopes.contains(scope)
            {
                scopes.push(scope.clone());
            }
        }
        scopes
    }
}

/// One rule: a condition on the token and the grant of a token that meets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthRule {
    pub when: RuleMatch,
    /// `None` (`["*"]`): every server.
    pub servers: Option<BTreeSet<String>>,
    /// Some of `read`, `write`, `destructive`; never empty.
    pub permissions: BTreeSet<String>,
    /// Narrowed to this profile's servers, as an agent token pinned to a profile.
    pub profile: Option<String>,
}

/// What a rule looks for in a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleMatch {
    /// The token's `scope` (space-separated) or `scp` (array) holds this scope.
    Scope(String),
    /// The claim `name` is `value`, or is an array that holds it.
    Claim { name: String, value: String },
}

impl Cx<'_> {
    pub(crate) fn auth(
        &self,
        root: &Map<String, Value>,
        servers: &[ServerConfig],
        profiles: &[Profile],
        warnings: &mut Vec<String>,
    ) -> Result<Option<AuthSettings>, ConfigError> {
        let Some(value) = root.get("auth").filter(|v| !v.is_null()) else {
            return Ok(None);
        };
        let Value::Object(auth) = value else {
            return Err(self.err(
                "auth",
                format!(
                    "must be an object like {{\"issuer\": \"https://…\", \"audience\": \"…\", \"rules\": […]}}, found {}",
                    kind(value)
                ),
            ));
        };
        warn_unknown(auth, AUTH_KEYS, "auth.", self.file, warnings)?;
        let issuer = self.required_text(auth, "issuer")?;
        self.secure_url("auth.issuer", &issuer)?;
        let resource = match auth.get("resource").filter(|v| !v.is_null()) {
            None => None,
            Some(value) => {
                let text = self.string(value, "auth.resource")?.to_owned();
                self.secure_url("auth.resource", &text)?;
                Some(text)
            }
        };
        Ok(Some(AuthSettings {
            issuer,
            audience: self.required_text(auth, "audience")?,
            resource,
            algorithms: self.algorithms(auth)?,
            leeway: self.leeway(auth)?,
            rules: self.rules(auth, servers, profiles, warnings)?,
            dashboard: self.dashboard_sign_in(auth, warnings)?,
        }))
    }

    fn required_text(&self, auth: &Map<String, Value>, field: &str) -> Result<String, ConfigError> {
        let key = format!("auth.{field}");
        let value = auth.get(field).ok_or_else(|| self.err(&key, "required"))?;
        let text = self.string(value, &key)?.trim();
        if text.is_empty() {
            return Err(self.err(key, "must not be empty"));
        }
        Ok(text.to_owned())
    }

    /// An `https` URL, or `http` to a loopback host (a test or a local issuer).
    fn secure_url(&self, key: &str, text: &str) -> Result<(), ConfigError> {
        let loopback = |rest: &str| {
            let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
            let host = host.rsplit_once(':').map_or(host, |(h, _)| h);
            matches!(host, "localhost" | "127.0.0.1" | "[::1]")
        };
        let ok = match (text.strip_prefix("https://"), text.strip_prefix("http://")) {
            (Some(rest), _) => !rest.is_empty(),
            (None, Some(rest)) => loopback(rest),
            (None, None) => false,
        };
        if ok && !text.contains(char::is_whitespace) {
            Ok(())
        } else {
            Err(self.err(
                key,
                format!("{text:?} must be an https:// URL (http:// only on localhost)"),
            ))
        }
    }

    fn algorithms(&self, auth: &Map<String, Value>) -> Result<Vec<String>, ConfigError> {
        let Some(value) = auth.get("algorithms").filter(|v| !v.is_null()) else {
            return Ok(SIGNATURE_ALGORITHMS
                .iter()
                .map(|a| (*a).to_owned())
                .collect());
        };
        let Value::Array(items) = value else {
            return Err(self.err(
                "auth.algorithms",
                format!("must be an array like [\"RS256\"], found {}", kind(value)),
            ));
        };
        let mut algorithms = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let key = format!("auth.algorithms[{i}]");
            let name = self.string(item, &key)?;
            if !SIGNATURE_ALGORITHMS.contains(&name) {
                let why = if name.eq_ignore_ascii_case("none") || name.starts_with("HS") {
                    "is never accepted: an access token must carry an asymmetric signature"
                } else {
                    "is not a supported signature algorithm"
                };
                return Err(self.err(
                    key,
                    format!(
                        "{name:?} {why} (one of {})",
                        SIGNATURE_ALGORITHMS.join(", ")
                    ),
                ));
            }
            algorithms.push(name.to_owned());
        }
        if algorithms.is_empty() {
            return Err(self.err("auth.algorithms", "must name at least one algorithm"));
        }
        Ok(algorithms)
    }

    fn leeway(&self, auth: &Map<String, Value>) -> Result<Duration, ConfigError> {
        match auth.get("leeway_seconds").filter(|v| !v.is_null()) {
            None => Ok(DEFAULT_LEEWAY),
            Some(value) => value
                .as_u64()
                .filter(|n| *n <= 300)
                .map(Duration::from_secs)
                .ok_or_else(|| {
                    self.err(
                        "auth.leeway_seconds",
                        format!("must be a whole number of seconds from 0 to 300, found {value}"),
                    )
                }),
        }
    }
}

impl Cx<'_> {
    fn rules(
        &self,
        auth: &Map<String, Value>,
        servers: &[ServerConfig],
        profiles: &[Profile],
        warnings: &mut Vec<String>,
    ) -> Result<Vec<AuthRule>, ConfigError> {
        let items = match auth.get("rules") {
            Some(Value::Array(items)) if !items.is_empty() => items,
            Some(Value::Array(_)) | None => {
                return Err(self.err(
                    "auth.rules",
                    "required: at least one rule like {\"scope\": \"mcp:read\", \"servers\": [\"*\"], \"permissions\": [\"read\"]} (a token that matches no rule reaches nothing)",
                ));
            }
            Some(other) => {
                return Err(self.err(
                    "auth.rules",
                    format!("must be an array of rules, found {}", kind(other)),
                ));
            }
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                self.rule(
                    &format!("auth.rules[{i}]"),
                    item,
                    servers,
                    profiles,
                    warnings,
                )
            })
            .collect()
    }

    fn rule(
        &self,
        key: &str,
        item: &Value,
        servers: &[ServerConfig],
        profiles: &[Profile],
        warnings: &mut Vec<String>,
    ) -> Result<AuthRule, ConfigError> {
        let Value::Object(rule) = item else {
            return Err(self.err(key, format!("must be an object, found {}", kind(item))));
        };
        warn_unknown(rule, RULE_KEYS, &format!("{key}."), self.file, warnings)?;
        let text = |field: &str| -> Result<Option<String>, ConfigError> {
            match rule.get(field).filter(|v| !v.is_null()) {
                None => Ok(None),
                Some(v) => Ok(Some(self.string(v, &format!("{key}.{field}"))?.to_owned())),
            }
        };
        let when = match (text("scope")?, text("claim")?, text("value")?) {
            (Some(scope), None, None) if !scope.trim().is_empty() => RuleMatch::Scope(scope),
            (None, Some(name), Some(value)) if !name.trim().is_empty() => {
                RuleMatch::Claim { name, value }
            }
            _ => {
                return Err(self.err(
                    key,
                    "must match on either \"scope\" or \"claim\" with \"value\" (not both)",
                ));
            }
        };
        let profile = text("profile")?;
        if let Some(name) = &profile
            && !profiles.iter().any(|p| &p.name == name)
        {
            return Err(self.err(
                format!("{key}.profile"),
                format!("no profile named {name:?} in profiles"),
            ));
        }
        Ok(AuthRule {
            when,
            servers: self.rule_servers(key, rule, servers)?,
            permissions: self.rule_permissions(key, rule)?,
            profile,
        })
    }

    /// `servers`: names from `mcpServers`, or `["*"]` (the default) for all of them.
    fn rule_servers(
        &self,
        key: &str,
        rule: &Map<String, Value>,
        servers: &[ServerConfig],
    ) -> Result<Option<BTreeSet<String>>, ConfigError> {
        let servers_key = format!("{key}.servers");
        let members = match rule.get("servers").filter(|v| !v.is_null()) {
            None => return Ok(None),
            Some(Value::Array(members)) => members,
            Some(other) => {
                return Err(self.err(
                    servers_key,
                    format!(
                        "must be an array of server names or [\"*\"], found {}",
                        kind(other)
                    ),
                ));
            }
        };
        let mut set = BTreeSet::new();
        for (j, member) in members.iter().enumerate() {
            let member_key = format!("{servers_key}[{j}]");
            let name = self.string(member, &member_key)?;
            if name == "*" {
                return Ok(None);
            }
            if !servers.iter().any(|s| s.name == name) {
                return Err(self.err(
                    member_key,
                    format!("no server named {name:?} in mcpServers"),
                ));
            }
            set.insert(name.to_owned());
        }
        Ok(Some(set))
    }

    fn rule_permissions(
        &self,
        key: &str,
        rule: &Map<String, Value>,
    ) -> Result<BTreeSet<String>, ConfigError> {
        let permissions_key = format!("{key}.permissions");
        let items = match rule.get("permissions") {
            Some(Value::Array(items)) if !items.is_empty() => items,
            _ => {
                return Err(self.err(
                    permissions_key,
                    "required: a non-empty array of \"read\", \"write\", \"destructive\"",
                ));
            }
        };
        let mut set = BTreeSet::new();
        for (j, item) in items.iter().enumerate() {
            let item_key = format!("{permissions_key}[{j}]");
            let name = self.string(item, &item_key)?;
            if !PERMISSIONS.contains(&name) {
                return Err(self.err(
                    item_key,
                    format!("unknown permission {name:?} (expected read, write or destructive)"),
                ));
            }
            set.insert(name.to_owned());
        }
        Ok(set)
    }
}
