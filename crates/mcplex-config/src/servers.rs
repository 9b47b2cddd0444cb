//! The `mcpServers` entries: both forms (a map of name → server, or an array of `{"name": …}`),
//! each server's transport, timeouts, trust, filters and environment, with every refusal naming
//! its key path (`mcpServers.github.command`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::ConfigError;
use crate::model::{DEFAULT_INIT_TIMEOUT, ServerConfig};
use crate::parse::{Cx, kind, warn_unknown};
use crate::server_entry::Entry;

const SERVER_KEYS: &[&str] = &[
    "defer",
    "tools",
    "name",
    "command",
    "args",
    "env",
    "inherit_env",
    "working_dir",
    "cwd",
    "url",
    "headers",
    "protocol",
    "type",
    "enabled",
    "disabled",
    "call_timeout",
    "init_timeout",
    "lifecycle",
    "trust",
    "quarantined",
    "namespace",
    "prompts",
    "resources",
    "oauth",
    "sandbox",
    "trace_context",
];

impl Cx<'_> {
    pub(crate) fn string_map(
        &self,
        value: &Value,
        key: &str,
    ) -> Result<BTreeMap<String, String>, ConfigError> {
        let Value::Object(object) = value else {
            return Err(self.err(
                key,
                format!("must be an object of strings, found {}", kind(value)),
            ));
        };
        object
            .iter()
            .map(|(name, v)| match v {
                Value::String(s) => Ok((name.clone(), s.clone())),
                // Numbers and booleans are common in hand-written env blocks; take their JSON text.
                Value::Number(_) | Value::Bool(_) => Ok((name.clone(), v.to_string())),
                other => Err(self.err(
                    format!("{key}.{name}"),
                    format!("must be a string, found {}", kind(other)),
                )),
            })
            .collect()
    }

    /// The entries under `root` (`mcpServers`, or VS Code's `servers`).
    pub(crate) fn servers(
        &self,
        root: &str,
        value: &Value,
        sandbox: &crate::Sandbox,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<ServerConfig>, ConfigError> {
        let entries: Vec<(String, String, &Map<String, Value>)> = match value {
            // Array form: [{"name": "github", ...}]
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(index, item)| {
                    let key = format!("{root}[{index}]");
                    let Value::Object(object) = item else {
                        return Err(
                            self.err(key, format!("must be an object, found {}", kind(item)))
                        );
                    };
                    let name = match object.get("name") {
                        Some(name) => self.string(name, &format!("{key}.name"))?.to_owned(),
                        None => return Err(self.err(key, "missing \"name\"")),
                    };
                    Ok((key, name, object))
                })
                .collect::<Result<_, _>>()?,
            // Map form (Claude Desktop, Cursor, VS Code): {"github": {"command": ...}}
            Value::Object(map) => map
                .iter()
                .map(|(name, item)| {
                    let key = format!("{root}.{name}");
                    let Value::Object(object) = item else {
                        return Err(
                            self.err(key, format!("must be an object, found {}", kind(item)))
                        );
                    };
                    if let Some(inner) = object.get("name") {
                        let inner = self.string(inner, &format!("{key}.name"))?;
                        if inner != name {
                            return Err(self.err(
                                format!("{key}.name"),
                                format!("{inner:?} differs from the map key {name:?}"),
                            ));
                        }
                    }
                    Ok((key, name.clone(), object))
                })
                .collect::<Result<_, _>>()?,
            other => {
                return Err(self.err(
                    root,
                    format!("must be an array or an object, found {}", kind(other)),
                ));
            }
        };
        let mut seen = BTreeSet::new();
        let mut servers = Vec::with_capacity(entries.len());
        for (key, name, object) in entries {
            if !seen.insert(name.clone()) {
                return Err(self.err(
                    format!("{key}.name"),
                    format!("duplicate server name {name:?}"),
                ));
            }
            warn_unknown(object, SERVER_KEYS, &format!("{key}."), self.file, warnings)?;
            object.iter().try_for_each(|(field, value)| {
                self.refuse_input_references(&format!("{key}.{field}"), value)
            })?;
            servers.push(self.server(&key, name, object, sandbox, warnings)?);
        }
        Ok(servers)
    }

    pub(crate) fn server(
        &self,
        key: &str,
        name: String,
        object: &Map<String, Value>,
        sandbox: &crate::Sandbox,
        warnings: &mut Vec<String>,
    ) -> Result<ServerConfig, ConfigError> {
        if name.trim().is_empty() {
            return Err(self.err(format!("{key}.name"), "must not be empty"));
        }
        if name.contains(':') {
            return Err(self.err(
                format!("{key}.name"),
                format!("{name:?} contains ':', which separates server and tool in tool ids"),
            ));
        }
        let entry = Entry {
            cx: self,
            key,
            object,
            sandbox,
        };
        let transport = entry.transport(warnings)?;
        if !matches!(transport, crate::Transport::Stdio { .. })
            && object.get("sandbox").is_some_and(|v| !v.is_null())
        {
            warnings.push(format!(
                "{}: {key}.sandbox: only a process (\"command\") runs in a sandbox; ignored for a URL server",
                self.file
            ));
        }
        let mut enabled = entry.flag("enabled")?.unwrap_or(true);
        if let Some(disabled) = entry.flag("disabled")? {
            enabled &= !disabled;
        }
        // In the order the keys are checked, so that the first refusal stays the same one.
        let call_timeout = entry.duration("call_timeout")?;
        let init_timeout = entry.duration("init_timeout")?;
        let lifecycle = entry.lifecycle()?;
        let defer = entry.flag("defer")?;
        let tools = entry.filter("tools", true, warnings)?;
        let prompts = entry.filter("prompts", false, warnings)?;
        let resources = entry.filter("resources", false, warnings)?;
        let namespace = entry.flag("namespace")?;
        let trust_auto = entry.trust_auto()?;
        let quarantined = entry.flag("quarantined")?;
        let oauth = entry.oauth(&transport, warnings)?;
        let trace_context = entry.flag("trace_context")?;
        Ok(ServerConfig {
            name,
            transport,
            enabled,
            defer,
            tools,
            call_timeout,
            init_timeout: init_timeout.unwrap_or(DEFAULT_INIT_TIMEOUT),
            lifecycle,
            trust_auto,
            quarantined: quarantined.unwrap_or(false),
            namespace: namespace.unwrap_or(true),
            prompts,
            resources,
            oauth,
            trace_context: trace_context.unwrap_or(false),
            origin: crate::ServerOrigin::File,
        })
    }

    pub(crate) fn url(&self, url: &str, key: &str) -> Result<(), ConfigError> {
        if url.starts_with("http://") || url.starts_with("https://") {
            Ok(())
        } else {
            let shown = crate::redact_url(url);
            Err(self.err(key, format!("{shown:?} is not an http:// or https:// URL")))
        }
    }
}
