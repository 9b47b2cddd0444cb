//! The `mcpServers` entries: both forms (a map of name → server, or an array of `{"name": …}`),
//! each server's transport, timeouts, trust, filters and environment, with every refusal naming
//! its key path (`mcpServers.github.command`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::model::{DEFAULT_INIT_TIMEOUT, Lifecycle, ServerConfig, Transport};
use crate::parse::{Cx, kind, warn_unknown};
use crate::{ConfigError, InheritEnv};

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

    pub(crate) fn servers(
        &self,
        value: &Value,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<ServerConfig>, ConfigError> {
        let entries: Vec<(String, String, &Map<String, Value>)> = match value {
            // Array form: [{"name": "github", ...}]
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(index, item)| {
                    let key = format!("mcpServers[{index}]");
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
                    let key = format!("mcpServers.{name}");
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
                    "mcpServers",
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
            warn_unknown(object, SERVER_KEYS, &format!("{key}."), self.file, warnings);
            servers.push(self.server(&key, name, object, warnings)?);
        }
        Ok(servers)
    }

    pub(crate) fn server(
        &self,
        key: &str,
        name: String,
        object: &Map<String, Value>,
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
        let field = |field: &str| object.get(field).filter(|v| !v.is_null());
        let path = |field: &str| format!("{key}.{field}");

        let command = field("command")
            .map(|v| self.string(v, &path("command")))
            .transpose()?;
        let url = field("url")
            .map(|v| self.string(v, &path("url")))
            .transpose()?;
        let headers = field("headers")
            .map(|v| self.string_map(v, &path("headers")))
            .transpose()?
            .unwrap_or_default();
        let (protocol_key, protocol) = match (field("protocol"), field("type")) {
            (Some(v), _) => ("protocol", Some(self.string(v, &path("protocol"))?)),
            (None, Some(v)) => ("type", Some(self.string(v, &path("type"))?)),
            (None, None) => ("protocol", None),
        };
        let protocol = protocol.unwrap_or("auto");
        let transport = match (protocol, command, url) {
            (_, Some(_), Some(_)) => {
                return Err(self.err(
                    key,
                    "has both \"command\" and \"url\"; a server is either a process or a URL",
                ));
            }
            ("stdio" | "auto", Some(command), None) => {
                if command.trim().is_empty() {
                    return Err(self.err(path("command"), "must not be empty"));
                }
                let args = match field("args") {
                    None => Vec::new(),
                    Some(Value::Array(items)) => items
                        .iter()
                        .enumerate()
                        .map(|(i, v)| {
                            self.string(v, &format!("{key}.args[{i}]"))
                                .map(str::to_owned)
                        })
                        .collect::<Result<_, _>>()?,
                    Some(other) => {
                        return Err(self.err(
                            path("args"),
                            format!("must be an array of strings, found {}", kind(other)),
                        ));
                    }
                };
                let env = field("env")
                    .map(|v| self.string_map(v, &path("env")))
                    .transpose()?
                    .unwrap_or_default();
                let working_dir = match (field("working_dir"), field("cwd")) {
                    (Some(v), _) => Some(PathBuf::from(self.string(v, &path("working_dir"))?)),
                    (None, Some(v)) => Some(PathBuf::from(self.string(v, &path("cwd"))?)),
                    (None, None) => None,
                };
                let inherit_env = match field("inherit_env") {
                    None | Some(Value::Bool(false)) => InheritEnv::default(),
                    Some(Value::Bool(true)) => InheritEnv::All,
                    Some(list @ Value::Array(_)) => {
                        InheritEnv::AllowList(self.globs(list, &path("inherit_env"))?)
                    }
                    Some(other) => {
                        return Err(self.err(
                            path("inherit_env"),
                            format!(
                                "must be true, false or an array of variable names, found {}",
                                kind(other)
                            ),
                        ));
                    }
                };
                Transport::Stdio {
                    command: command.to_owned(),
                    args,
                    env,
                    working_dir,
                    inherit_env,
                }
            }
            ("http" | "streamable-http" | "streamableHttp" | "auto", None, Some(url)) => {
                self.url(url, &path("url"))?;
                Transport::Http {
                    url: url.to_owned(),
                    headers,
                    fallback_to_sse: protocol == "auto",
                }
            }
            ("sse", None, Some(url)) => {
                self.url(url, &path("url"))?;
                Transport::Sse {
                    url: url.to_owned(),
                    headers,
                }
            }
            ("stdio", None, _) => {
                return Err(self.err(path("command"), "required for protocol \"stdio\""));
            }
            ("http" | "streamable-http" | "streamableHttp" | "sse", _, None) => {
                return Err(self.err(path("url"), format!("required for protocol {protocol:?}")));
            }
            ("auto", None, None) => {
                return Err(self.err(key, "needs \"command\" (stdio) or \"url\" (HTTP)"));
            }
            (other, _, _) => {
                return Err(self.err(path(protocol_key), format!("unknown protocol {other:?}; expected \"stdio\", \"http\", \"sse\" or \"auto\"")));
            }
        };
        let mut enabled = field("enabled")
            .map(|v| self.bool(v, &path("enabled")))
            .transpose()?
            .unwrap_or(true);
        if let Some(disabled) = field("disabled") {
            enabled &= !self.bool(disabled, &path("disabled"))?;
        }
        let call_timeout = field("call_timeout")
            .map(|v| {
                self.string(v, &path("call_timeout"))
                    .and_then(|s| self.duration(s, &path("call_timeout")))
            })
            .transpose()?;
        let init_timeout = field("init_timeout")
            .map(|v| {
                self.string(v, &path("init_timeout"))
                    .and_then(|s| self.duration(s, &path("init_timeout")))
            })
            .transpose()?
            .unwrap_or(DEFAULT_INIT_TIMEOUT);
        let lifecycle = match field("lifecycle") {
            None => Lifecycle::Initialize,
            Some(v) => match self.string(v, &path("lifecycle"))? {
                "initialize" => Lifecycle::Initialize,
                "discover" => Lifecycle::Discover,
                other => {
                    return Err(self.err(path("lifecycle"), format!("unknown lifecycle {other:?}; expected \"initialize\" (2025 era) or \"discover\" (2026-07-28)")));
                }
            },
        };
        let defer = field("defer")
            .map(|v| self.bool(v, &path("defer")))
            .transpose()?;
        let tools = field("tools")
            .map(|v| self.tool_filter(v, &path("tools"), true, warnings))
            .transpose()?
            .unwrap_or_default();
        let prompts = field("prompts")
            .map(|v| self.tool_filter(v, &path("prompts"), false, warnings))
            .transpose()?
            .unwrap_or_default();
        let resources = field("resources")
            .map(|v| self.tool_filter(v, &path("resources"), false, warnings))
            .transpose()?
            .unwrap_or_default();
        let namespace = field("namespace")
            .map(|v| self.bool(v, &path("namespace")))
            .transpose()?
            .unwrap_or(true);
        let trust_auto = match field("trust") {
            None => false,
            Some(v) => match self.string(v, &path("trust"))? {
                "auto" => true,
                "manual" => false,
                other => {
                    return Err(self.err(path("trust"), format!("unknown trust {other:?}; expected \"manual\" (new tools wait for approval) or \"auto\" (new tools are approved; changed ones never are)")));
                }
            },
        };
        let quarantined = field("quarantined")
            .map(|v| self.bool(v, &path("quarantined")))
            .transpose()?
            .unwrap_or(false);
        Ok(ServerConfig {
            name,
            transport,
            enabled,
            defer,
            tools,
            call_timeout,
            init_timeout,
            lifecycle,
            trust_auto,
            quarantined,
            namespace,
            prompts,
            resources,
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
