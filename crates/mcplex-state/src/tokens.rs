//! Agent tokens: created once (the secret is shown once and never stored), kept as an HMAC,
//! listed, revoked.

use std::collections::BTreeSet;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::secret::{mac_hex, random_bytes};
use crate::sql::{Mode, Param, Row};
use crate::{StateError, Store};
use mcplex_config::CallLimits;
use mcplex_trust::{Permissions, Scope};

/// Seconds since the Unix epoch, now.
pub fn now_unix() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// What a new token may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenSpec {
    pub name: String,
    /// `None`: every server.
    pub servers: Option<BTreeSet<String>>,
    pub permissions: Permissions,
    /// Pinned to a profile: the token sees only that profile's servers, wherever it is used.
    pub profile: Option<String>,
    /// Unix seconds.
    pub expires_at: Option<i64>,
    /// Its own limits on tool calls, over the config's `limits` (empty: the config's alone).
    pub limits: CallLimits,
}

/// A stored token: its scope and its keyed hash, never the token itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRecord {
    pub spec: TokenSpec,
    /// HMAC-SHA256 of the token under the installation secret, hex.
    pub mac: String,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
}

/// How an OAuth access token's caller is named (`oauth:<subject>`) in audit rows and limits;
/// no agent token may be named so.
pub const OAUTH_CALLER_PREFIX: &str = "oauth:";
/// How an operator's actions are named in audit rows (`operator:<person>`, `operator:api-key`);
/// no agent token may be named so either.
pub const OPERATOR_CALLER_PREFIX: &str = "operator:";

impl TokenRecord {
    /// Usable at `now`: not revoked, not expired.
    pub fn is_active(&self, now: i64) -> bool {
        self.revoked_at.is_none() && self.spec.expires_at.is_none_or(|at| now < at)
    }

    /// The servers × permissions this token reaches (before any profile narrows it).
    pub fn scope(&self) -> Scope {
        Scope::new(self.spec.servers.clone(), self.spec.permissions)
    }

    /// `active`, `expired` or `revoked`, at `now`.
    pub fn status(&self, now: i64) -> &'static str {
        if self.revoked_at.is_some() {
            "revoked"
        } else if self.is_active(now) {
            "active"
        } else {
            "expired"
        }
    }
}

/// A token just created: the secret is in `token`, and only here (never in its `Debug`).
pub struct NewToken {
    pub record: TokenRecord,
    pub token: String,
}

impl std::fmt::Debug for NewToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewToken")
            .field("record", &self.record)
            .field("token", &mcplex_config::REDACTED)
            .finish()
    }
}

impl Store {
    /// The keyed hash under which a presented token would be stored.
    pub fn token_mac(&self, token: &str) -> String {
        mac_hex(&self.secret, token.as_bytes())
    }

    /// Compares two secrets without leaking, through timing, how much of them matched: both are
    /// keyed-hashed first, so the comparison sees digests an attacker cannot steer.
    pub fn secrets_match(&self, presented: &str, expected: &str) -> bool {
        self.token_mac(presented) == self.token_mac(expected)
    }

    /// Creates a token (never one named like an OAuth caller). Names are unique among all tokens, revoked ones included, so the audit
    /// log's names stay unambiguous.
    pub fn create_token(&self, spec: TokenSpec) -> Result<NewToken, StateError> {
        let name = spec.name.trim();
        if name.is_empty() || name.len() > 64 || name.chars().any(char::is_control) {
            return Err(StateError::Invalid(
                "a token name must be 1 to 64 printable characters".into(),
            ));
        }
        for (prefix, who) in [
            (OAUTH_CALLER_PREFIX, "OAuth callers"),
            (OPERATOR_CALLER_PREFIX, "operators"),
        ] {
            if name.starts_with(prefix) {
                return Err(StateError::Invalid(format!(
                    "a token name must not begin with {prefix:?}: audit rows and limits name {who} so"
                )));
            }
        }
        let spec = TokenSpec {
            name: name.to_owned(),
            ..spec
        };
        let token = format!("mcplex_{}", mcplex_trust::hex(&random_bytes(32)?));
        let mac = self.token_mac(&token);
        let created_at = now_unix();
        let servers = spec
            .servers
            .as_ref()
            .map(|s| s.iter().cloned().collect::<Vec<_>>().join(","));
        let permissions = spec.permissions.to_string();
        let limits = limits_text(&spec.limits);
        let inserted = self.db.transaction(Mode::Write, |tx| {
            let inserted = tx.execute(
                "INSERT INTO tokens (name, mac, servers, permissions, profile, created_at, expires_at, limits)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (name) DO NOTHING",
                &[
                    Param::Text(&spec.name),
                    Param::Text(&mac),
                    Param::OptText(servers.as_deref()),
                    Param::Text(&permissions),
                    Param::OptText(spec.profile.as_deref()),
                    Param::Int(created_at),
                    Param::OptInt(spec.expires_at),
                    Param::OptText(limits.as_deref()),
                ],
            )?;
            if inserted > 0 {
                crate::control::bump_generation(tx)?;
            }
            Ok(inserted)
        })?;
        if inserted == 0 {
            return Err(StateError::TokenExists(spec.name));
        }
        Ok(NewToken {
            record: TokenRecord {
                spec,
                mac,
                created_at,
                revoked_at: None,
            },
            token,
        })
    }

    /// Every token, revoked and expired ones included, by name.
    pub fn tokens(&self) -> Result<Vec<TokenRecord>, StateError> {
        let rows = self.db.transaction(Mode::Read, |tx| {
            tx.query(
                "SELECT name, mac, servers, permissions, profile, created_at, expires_at, revoked_at, limits
                 FROM tokens ORDER BY name",
                &[],
            )
        })?;
        rows.iter().map(token_record).collect()
    }

    /// Revokes the token called `name`; false when there is none (or it was already revoked).
    pub fn revoke_token(&self, name: &str) -> Result<bool, StateError> {
        let now = now_unix();
        self.db.transaction(Mode::Write, |tx| {
            let revoked = tx.execute(
                "UPDATE tokens SET revoked_at = ?2 WHERE name = ?1 AND revoked_at IS NULL",
                &[Param::Text(name), Param::Int(now)],
            )?;
            if revoked > 0 {
                crate::control::bump_generation(tx)?;
            }
            Ok(revoked > 0)
        })
    }

    /// Sets the own limits of the token called `name` (empty: the config's alone), in force on
    /// every gateway of the store within the control plane's second; false when there is no
    /// such token.
    pub fn set_token_limits(&self, name: &str, limits: &CallLimits) -> Result<bool, StateError> {
        let text = limits_text(limits);
        self.db.transaction(Mode::Write, |tx| {
            let updated = tx.execute(
                "UPDATE tokens SET limits = ?2 WHERE name = ?1",
                &[Param::Text(name), Param::OptText(text.as_deref())],
            )?;
            if updated > 0 {
                crate::control::bump_generation(tx)?;
            }
            Ok(updated > 0)
        })
    }

    /// The token stored under `mac`, if any.
    pub fn token_by_mac(&self, mac: &str) -> Result<Option<TokenRecord>, StateError> {
        let row = self.db.transaction(Mode::Read, |tx| {
            tx.query_first(
                "SELECT name, mac, servers, permissions, profile, created_at, expires_at, revoked_at, limits
                 FROM tokens WHERE mac = ?1",
                &[Param::Text(mac)],
            )
        })?;
        row.as_ref().map(token_record).transpose()
    }
}

/// A stored token row (the columns of `tokens` in order).
fn token_record(row: &Row) -> Result<TokenRecord, StateError> {
    // A record that no longer parses grants nothing rather than everything.
    let permissions = Permissions::parse(&row.text(3)?).unwrap_or_default();
    let servers = row.opt_text(2)?.map(|s| {
        s.split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    });
    Ok(TokenRecord {
        spec: TokenSpec {
            name: row.text(0)?,
            servers,
            permissions,
            profile: row.opt_text(4)?,
            expires_at: row.opt_int(6)?,
            limits: stored_limits(row.opt_text(8)?.as_deref()),
        },
        mac: row.text(1)?,
        created_at: row.int(5)?,
        revoked_at: row.opt_int(7)?,
    })
}

/// How a token's own limits are stored: their JSON, or `NULL` for none.
fn limits_text(limits: &CallLimits) -> Option<String> {
    (!limits.is_empty()).then(|| limits.to_json().to_string())
}

/// A token's stored limits. Stored limits that no longer read hold the token to the least there
/// is (one call at a time, one a minute) rather than lifting its limits.
fn stored_limits(text: Option<&str>) -> CallLimits {
    let Some(text) = text else {
        return CallLimits::default();
    };
    serde_json::from_str(text)
        .ok()
        .and_then(|value| CallLimits::from_json(&value, "a stored token").ok())
        .unwrap_or_else(|| {
            let least = mcplex_config::Rate {
                calls_per_minute: Some(1),
                concurrent_calls: Some(1),
            };
            CallLimits {
                all: least,
                ..CallLimits::default()
            }
        })
}
