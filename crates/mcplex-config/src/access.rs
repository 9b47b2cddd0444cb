//! The access part of the config: data directory, HTTP hardening (`trusted_hosts`,
//! `require_auth`, `max_body_bytes`) and `profiles`.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::parse::{Cx, kind, warn_unknown};
use crate::{ConfigError, ServerConfig};

/// Request bodies larger than this get 413 unless `max_body_bytes` says otherwise.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// How the HTTP listener protects itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSecurity {
    /// Host names (or `host:port`) accepted in `Host` and `Origin` besides loopback names.
    pub trusted_hosts: Vec<String>,
    /// `None`: required exactly when the listener is not on loopback.
    pub require_auth: Option<bool>,
    /// Larger request bodies get 413.
    pub max_body_bytes: usize,
}

impl Default for HttpSecurity {
    fn default() -> HttpSecurity {
        HttpSecurity {
            trusted_hosts: Vec::new(),
            require_auth: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }
}

/// A named subset of the servers, served at `/mcp/p/<name>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    pub name: String,
    pub servers: BTreeSet<String>,
}

impl Cx<'_> {
    pub(crate) fn data_dir(
        &self,
        root: &Map<String, Value>,
    ) -> Result<Option<PathBuf>, ConfigError> {
        match root.get("data_dir") {
            None | Some(Value::Null) => Ok(None),
            Some(value) => {
                let text = self.string(value, "data_dir")?;
                if text.trim().is_empty() {
                    return Err(self.err("data_dir", "must not be empty"));
                }
                Ok(Some(PathBuf::from(text)))
            }
        }
    }

    pub(crate) fn store(
        &self,
        root: &Map<String, Value>,
    ) -> Result<Option<crate::StoreUrl>, ConfigError> {
        match root.get("store") {
            None | Some(Value::Null) => Ok(None),
            Some(value) => {
                let text = self.string(value, "store")?;
                crate::StoreUrl::parse(text)
                    .map(Some)
                    .map_err(|why| self.err("store", why.to_string()))
            }
        }
    }

    pub(crate) fn http_security(
        &self,
        root: &Map<String, Value>,
    ) -> Result<HttpSecurity, ConfigError> {
        let mut security = HttpSecurity::default();
        if let Some(value) = root.get("trusted_hosts").filter(|v| !v.is_null()) {
            let Value::Array(items) = value else {
                return Err(self.err(
                    "trusted_hosts",
                    format!("must be an array of host names, found {}", kind(value)),
                ));
            };
            for (i, item) in items.iter().enumerate() {
                let key = format!("trusted_hosts[{i}]");
                let host = self.string(item, &key)?.trim().to_ascii_lowercase();
                if host.is_empty() || host.contains('/') || host.contains(char::is_whitespace) {
                    return Err(self.err(key, format!("{host:?} is not a host name or host:port")));
                }
                security.trusted_hosts.push(host);
            }
        }
        if let Some(value) = root.get("require_auth").filter(|v| !v.is_null()) {
            security.require_auth = Some(self.bool(value, "require_auth")?);
        }
        if let Some(value) = root.get("max_body_bytes").filter(|v| !v.is_null()) {
            security.max_body_bytes = match value.as_u64() {
                Some(n) if n >= 1024 => usize::try_from(n).unwrap_or(usize::MAX),
                _ => {
                    return Err(self.err(
                        "max_body_bytes",
                        format!("must be a whole number of bytes, at least 1024, found {value}"),
                    ));
                }
            };
        }
        Ok(security)
    }

    pub(crate) fn audit(
        &self,
        root: &Map<String, Value>,
    ) -> Result<crate::AuditSettings, ConfigError> {
        let mut audit = crate::AuditSettings::default();
        if let Some(value) = root.get("audit_retention_days").filter(|v| !v.is_null()) {
            audit.retention_days = value
                .as_u64()
                .filter(|n| *n <= 3650)
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| {
                    self.err(
                        "audit_retention_days",
                        format!(
                            "must be a whole number of days from 0 (off) to 3650, found {value}"
                        ),
                    )
                })?;
        }
        if let Some(value) = root.get("audit_retention_rows").filter(|v| !v.is_null()) {
            audit.retention_rows = match value.as_u64() {
                Some(0) => None,
                Some(rows) if rows >= 1000 => Some(rows),
                _ => {
                    return Err(self.err(
                        "audit_retention_rows",
                        format!(
                            "must be a whole number of rows, at least 1000 (0: no limit), found {value}"
                        ),
                    ));
                }
            };
        }
        if let Some(value) = root.get("audit_arguments").filter(|v| !v.is_null()) {
            audit.arguments = self.bool(value, "audit_arguments")?;
        }
        if let Some(value) = root.get("audit_sink").filter(|v| !v.is_null()) {
            audit.sink = match self.string(value, "audit_sink")? {
                "stdout" => Some(crate::AuditSink::Stdout),
                "" => {
                    return Err(self.err(
                        "audit_sink",
                        "must be \"stdout\" or the path of a file to append to",
                    ));
                }
                path => Some(crate::AuditSink::File(path.into())),
            };
        }
        Ok(audit)
    }

    pub(crate) fn code_limits(
        &self,
        root: &Map<String, Value>,
    ) -> Result<crate::CodeLimits, ConfigError> {
        let mut limits = crate::CodeLimits::default();
        if let Some(value) = root.get("code_execution_timeout").filter(|v| !v.is_null()) {
            let key = "code_execution_timeout";
            let timeout = self.duration(self.string(value, key)?, key)?;
            if timeout.is_zero() || timeout > crate::CodeLimits::MAX_TIMEOUT {
                return Err(self.err(key, "must be more than 0 and at most 600s"));
            }
            limits.timeout = timeout;
        }
        if let Some(value) = root
            .get("code_execution_memory_limit")
            .filter(|v| !v.is_null())
        {
            let key = "code_execution_memory_limit";
            limits.memory_bytes = match value {
                Value::Number(n) => n.as_u64().and_then(|n| usize::try_from(n).ok()),
                Value::String(text) => parse_bytes(text),
                _ => None,
            }
            .filter(|n| *n >= 1024 * 1024)
            .ok_or_else(|| {
                self.err(key, format!("must be a size of at least 1 MiB, like \"64MiB\" or 67108864, found {value}"))
            })?;
        }
        if let Some(value) = root
            .get("code_execution_max_tool_calls")
            .filter(|v| !v.is_null())
        {
            limits.max_tool_calls = value
                .as_u64()
                .filter(|n| (1..=10_000).contains(n))
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| {
                    self.err(
                        "code_execution_max_tool_calls",
                        format!("must be a whole number from 1 to 10000, found {value}"),
                    )
                })?;
        }
        let key = "code_execution_max_concurrent_per_caller";
        if let Some(value) = root.get(key).filter(|v| !v.is_null()) {
            limits.max_concurrent_per_caller = value
                .as_u64()
                .filter(|n| (1..=1_000).contains(n))
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| {
                    self.err(
                        key,
                        format!("must be a whole number from 1 to 1000, found {value}"),
                    )
                })?;
        }
        Ok(limits)
    }

    pub(crate) fn profiles(
        &self,
        root: &Map<String, Value>,
        servers: &[ServerConfig],
        warnings: &mut Vec<String>,
    ) -> Result<Vec<Profile>, ConfigError> {
        let Some(value) = root.get("profiles").filter(|v| !v.is_null()) else {
            return Ok(Vec::new());
        };
        let Value::Array(items) = value else {
            return Err(self.err(
                "profiles",
                format!(
                    "must be an array like [{{\"name\": \"research\", \"servers\": [\"web\"]}}], found {}",
                    kind(value)
                ),
            ));
        };
        let mut profiles: Vec<Profile> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let key = format!("profiles[{i}]");
            let Value::Object(object) = item else {
                return Err(self.err(key, format!("must be an object, found {}", kind(item))));
            };
            warn_unknown(
                object,
                &["name", "servers"],
                &format!("{key}."),
                self.file,
                warnings,
            )?;
            let name = object
                .get("name")
                .ok_or_else(|| self.err(format!("{key}.name"), "required"))
                .and_then(|v| self.string(v, &format!("{key}.name")))?;
            let valid_name = !name.is_empty()
                && name.len() <= 64
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !valid_name {
                return Err(self.err(
                    format!("{key}.name"),
                    format!("{name:?} must be 1 to 64 of A-Z a-z 0-9 - _ (it becomes the URL path /mcp/p/{name})"),
                ));
            }
            if profiles.iter().any(|p| p.name == name) {
                return Err(self.err(
                    format!("{key}.name"),
                    format!("profile {name:?} is defined twice"),
                ));
            }
            let servers_key = format!("{key}.servers");
            let members = match object.get("servers") {
                Some(Value::Array(members)) => members,
                Some(other) => {
                    return Err(self.err(
                        servers_key,
                        format!("must be an array of server names, found {}", kind(other)),
                    ));
                }
                None => return Err(self.err(servers_key, "required")),
            };
            let mut set = BTreeSet::new();
            for (j, member) in members.iter().enumerate() {
                let member_key = format!("{servers_key}[{j}]");
                let member = self.string(member, &member_key)?;
                if !servers.iter().any(|s| s.name == member) {
                    return Err(self.err(
                        member_key,
                        format!("no server named {member:?} in mcpServers"),
                    ));
                }
                set.insert(member.to_owned());
            }
            profiles.push(Profile {
                name: name.to_owned(),
                servers: set,
            });
        }
        Ok(profiles)
    }
}

/// `"64MiB"`, `"512KiB"`, `"1GiB"` or a plain number of bytes.
fn parse_bytes(text: &str) -> Option<usize> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, ""),
    };
    let scale: usize = match unit.trim() {
        "" | "B" => 1,
        "KiB" | "KB" | "k" | "K" => 1024,
        "MiB" | "MB" | "M" => 1024 * 1024,
        "GiB" | "GB" | "G" => 1024 * 1024 * 1024,
        _ => return None,
    };
    number.parse::<usize>().ok()?.checked_mul(scale)
}
