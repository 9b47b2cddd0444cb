//! JSON text → [`Config`]. Walks the document by hand so every refusal names its exact key path
//! (`mcpServers.github.command`) and every unknown key becomes a warning instead of a crash.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::duration::parse_duration;
use crate::model::{
    Config, DEFAULT_CALL_TIMEOUT, DEFAULT_INIT_TIMEOUT, DEFAULT_LISTEN, DEFAULT_MAX_MATCHES,
    DirectToolResponseMode, Lifecycle, Overrides, RoutingMode, ServerConfig, ToolResponseMode,
    Transport,
};
use crate::{ConfigError, Glob, InheritEnv, StoreUrl, ToolFilter};

const GLOBAL_KEYS: &[&str] = &[
    "tool_response_mode",
    "defer_tools",
    "tool_search",
    "search_model",
    "listen",
    "call_timeout",
    "routing_mode",
    "direct_tool_response_mode",
    "instructions",
    "mcpServers",
    "data_dir",
    "store",
    "trusted_hosts",
    "require_auth",
    "max_body_bytes",
    "profiles",
    "code_execution_timeout",
    "code_execution_memory_limit",
    "code_execution_max_tool_calls",
    "code_execution_max_concurrent_per_caller",
    "audit_retention_days",
    "audit_arguments",
    "http_header_read_timeout",
    "http_body_read_timeout",
    "http_idle_timeout",
    "max_connections",
    "session_idle_timeout",
    "max_sessions",
];
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

/// Parses and validates `text` (the content of `file`, used in messages), then applies `overrides`.
pub fn parse_config(text: &str, file: &str, overrides: &Overrides) -> Result<Config, ConfigError> {
    let document: Value = serde_json::from_str(text).map_err(|e| ConfigError::Syntax {
        file: file.to_owned(),
        reason: e.to_string(),
    })?;
    let Value::Object(root) = document else {
        return Err(ConfigError::invalid(
            file,
            "(root)",
            "must be a JSON object",
        ));
    };
    let mut warnings = Vec::new();
    warn_unknown(&root, GLOBAL_KEYS, "", file, &mut warnings);

    let cx = Cx { file };
    let listen = match &overrides.listen {
        Some(value) => cx.listen(value, "--listen / MCPLEX_LISTEN")?,
        None => match root.get("listen") {
            Some(value) => cx.listen(cx.string(value, "listen")?, "listen")?,
            None => DEFAULT_LISTEN.to_owned(),
        },
    };
    let call_timeout = match &overrides.call_timeout {
        Some(value) => cx.duration(value, "--call-timeout / MCPLEX_CALL_TIMEOUT")?,
        None => match root.get("call_timeout") {
            Some(value) => cx.duration(cx.string(value, "call_timeout")?, "call_timeout")?,
            None => DEFAULT_CALL_TIMEOUT,
        },
    };
    let routing_mode = match &overrides.routing_mode {
        Some(value) => cx.routing_mode(value, "--routing-mode / MCPLEX_ROUTING_MODE")?,
        None => match root.get("routing_mode") {
            Some(value) => cx.routing_mode(cx.string(value, "routing_mode")?, "routing_mode")?,
            None => RoutingMode::Direct,
        },
    };
    let direct_tool_response_mode = match &overrides.direct_tool_response_mode {
        Some(value) => cx.direct_mode(
            value,
            "--direct-tool-response-mode / MCPLEX_DIRECT_TOOL_RESPONSE_MODE",
        )?,
        None => match root.get("direct_tool_response_mode") {
            Some(value) => cx.direct_mode(
                cx.string(value, "direct_tool_response_mode")?,
                "direct_tool_response_mode",
            )?,
            None => DirectToolResponseMode::Full,
        },
    };
    let tool_response_mode = match &overrides.tool_response_mode {
        Some(value) => {
            cx.tool_response_mode(value, "--tool-response-mode / MCPLEX_TOOL_RESPONSE_MODE")?
        }
        None => match root.get("tool_response_mode") {
            Some(value) => cx.tool_response_mode(
                cx.string(value, "tool_response_mode")?,
                "tool_response_mode",
            )?,
            None => ToolResponseMode::Full,
        },
    };
    let defer_tools = match root.get("defer_tools") {
        None | Some(Value::Null) => false,
        Some(value) => cx.bool(value, "defer_tools")?,
    };
    let max_matches = match root.get("tool_search") {
        None | Some(Value::Null) => DEFAULT_MAX_MATCHES,
        Some(Value::Object(search)) => {
            warn_unknown(
                search,
                &["max_matches"],
                "tool_search.",
                file,
                &mut warnings,
            );
            match search.get("max_matches") {
                None => DEFAULT_MAX_MATCHES,
                Some(value) => match value.as_u64() {
                    Some(n) if (1..=100).contains(&n) => n as usize,
                    _ => return Err(cx.err("tool_search.max_matches", format!("must be a whole number from 1 to 100 (a search that can answer with nothing is one a model cannot use), found {value}"))),
                },
            }
        }
        Some(other) => {
            return Err(cx.err(
                "tool_search",
                format!(
                    "must be an object like {{\"max_matches\": 5}}, found {}",
                    kind(other)
                ),
            ));
        }
    };
    let search_model = match root.get("search_model") {
        None | Some(Value::Null) => None,
        Some(value) => match cx.string(value, "search_model")? {
            dir if dir.trim().is_empty() => {
                return Err(cx.err(
                    "search_model",
                    "must be the path of a model directory (config.json, tokenizer.json, model.safetensors)",
                ));
            }
            dir => Some(std::path::PathBuf::from(dir)),
        },
    };
    let instructions = match root.get("instructions") {
        None | Some(Value::Null) => None,
        Some(value) => Some(cx.string(value, "instructions")?.to_owned()),
    };
    let servers = match root.get("mcpServers") {
        None | Some(Value::Null) => Vec::new(),
        Some(value) => cx.servers(value, &mut warnings)?,
    };
    let data_dir = match &overrides.data_dir {
        Some(dir) => Some(dir.clone()),
        None => cx.data_dir(&root)?,
    };
    let store = match &overrides.store {
        Some(url) => Some(StoreUrl::parse(url).map_err(|why| cx.err("store", &why))?),
        None => cx.store(&root)?,
    };
    let http = cx.http_security(&root)?;
    let profiles = cx.profiles(&root, &servers, &mut warnings)?;
    let code = cx.code_limits(&root)?;
    let audit = cx.audit(&root)?;
    let listener = cx.listener_limits(&root)?;
    Ok(Config {
        listen,
        call_timeout,
        routing_mode,
        direct_tool_response_mode,
        instructions,
        tool_response_mode,
        defer_tools,
        max_matches,
        search_model,
        servers,
        data_dir,
        store,
        http,
        profiles,
        code,
        audit,
        listener,
        warnings,
    })
}

impl Cx<'_> {
    /// `http_header_read_timeout`, `http_body_read_timeout`, `http_idle_timeout`,
    /// `max_connections`, `session_idle_timeout` and `max_sessions`.
    fn listener_limits(
        &self,
        root: &Map<String, Value>,
    ) -> Result<crate::model::ListenerLimits, ConfigError> {
        let mut limits = crate::model::ListenerLimits::default();
        for (key, slot) in [
            ("http_header_read_timeout", &mut limits.header_read_timeout),
            ("http_body_read_timeout", &mut limits.body_read_timeout),
            ("http_idle_timeout", &mut limits.idle_timeout),
            ("session_idle_timeout", &mut limits.session_idle_timeout),
        ] {
            if let Some(value) = root.get(key).filter(|v| !v.is_null()) {
                *slot = self.duration(self.string(value, key)?, key)?;
            }
        }
        for (key, slot) in [
            ("max_connections", &mut limits.max_connections),
            ("max_sessions", &mut limits.max_sessions),
        ] {
            if let Some(value) = root.get(key).filter(|v| !v.is_null()) {
                *slot = value
                    .as_u64()
                    .filter(|n| *n >= 1)
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| {
                        self.err(
                            key,
                            format!("must be a whole number, at least 1, found {value}"),
                        )
                    })?;
            }
        }
        Ok(limits)
    }
}

pub(crate) fn warn_unknown(
    object: &Map<String, Value>,
    known: &[&str],
    prefix: &str,
    file: &str,
    warnings: &mut Vec<String>,
) {
    for key in object.keys() {
        if !known.contains(&key.as_str()) {
            warnings.push(format!("{file}: {prefix}{key}: unknown key, ignored"));
        }
    }
}

/// Context for one parse: the file name that every error carries.
pub(crate) struct Cx<'a> {
    pub(crate) file: &'a str,
}

impl Cx<'_> {
    pub(crate) fn err(&self, key: impl Into<String>, reason: impl Into<String>) -> ConfigError {
        ConfigError::invalid(self.file, key, reason)
    }

    pub(crate) fn string<'v>(&self, value: &'v Value, key: &str) -> Result<&'v str, ConfigError> {
        value
            .as_str()
            .ok_or_else(|| self.err(key, format!("must be a string, found {}", kind(value))))
    }

    pub(crate) fn bool(&self, value: &Value, key: &str) -> Result<bool, ConfigError> {
        value
            .as_bool()
            .ok_or_else(|| self.err(key, format!("must be true or false, found {}", kind(value))))
    }

    pub(crate) fn duration(&self, text: &str, key: &str) -> Result<Duration, ConfigError> {
        parse_duration(text)
            .map_err(|reason| self.err(key, format!("invalid duration {text:?}: {reason}")))
    }

    fn listen(&self, text: &str, key: &str) -> Result<String, ConfigError> {
        let valid = text
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
        if valid {
            Ok(text.to_owned())
        } else {
            Err(self.err(
                key,
                format!("{text:?} is not host:port (e.g. \"127.0.0.1:8080\")"),
            ))
        }
    }

    fn routing_mode(&self, text: &str, key: &str) -> Result<RoutingMode, ConfigError> {
        match text {
            "direct" => Ok(RoutingMode::Direct),
            "retrieve_tools" => Ok(RoutingMode::RetrieveTools),
            "code_execution" => Ok(RoutingMode::CodeExecution),
            "schema_deferred" => Err(self.err(
                key,
                "\"schema_deferred\" is not a routing mode; write routing_mode: \"direct\" with direct_tool_response_mode: \"deferred\"",
            )),
            other => Err(self.err(key, format!("unknown routing mode {other:?}; expected \"direct\", \"retrieve_tools\" or \"code_execution\""))),
        }
    }

    fn tool_response_mode(&self, text: &str, key: &str) -> Result<ToolResponseMode, ConfigError> {
        match text {
            "full" => Ok(ToolResponseMode::Full),
            "compact" => Ok(ToolResponseMode::Compact),
            other => Err(self.err(
                key,
                format!("unknown mode {other:?}; expected \"full\" or \"compact\""),
            )),
        }
    }

    fn globs(&self, value: &Value, key: &str) -> Result<Vec<Glob>, ConfigError> {
        let Value::Array(items) = value else {
            return Err(self.err(
                key,
                format!("must be an array of glob strings, found {}", kind(value)),
            ));
        };
        items
            .iter()
            .enumerate()
            .map(|(i, v)| self.string(v, &format!("{key}[{i}]")).map(Glob::new))
            .collect()
    }

    /// `tools` (include/exclude/defer globs), or with `with_defer` false `prompts` and
    /// `resources` (include/exclude).
    fn tool_filter(
        &self,
        value: &Value,
        key: &str,
        with_defer: bool,
        warnings: &mut Vec<String>,
    ) -> Result<ToolFilter, ConfigError> {
        let keys: &[&str] = if with_defer {
            &["include", "exclude", "defer"]
        } else {
            &["include", "exclude"]
        };
        let Value::Object(object) = value else {
            return Err(self.err(
                key,
                format!(
                    "must be an object with {} globs, found {}",
                    keys.join("/"),
                    kind(value)
                ),
            ));
        };
        warn_unknown(object, keys, &format!("{key}."), self.file, warnings);
        let list = |field: &str| {
            object
                .get(field)
                .filter(|v| !v.is_null())
                .map(|v| self.globs(v, &format!("{key}.{field}")))
                .transpose()
                .map(Option::unwrap_or_default)
        };
        Ok(ToolFilter {
            include: list("include")?,
            exclude: list("exclude")?,
            defer: if with_defer {
                list("defer")?
            } else {
                Vec::new()
            },
        })
    }

    fn direct_mode(&self, text: &str, key: &str) -> Result<DirectToolResponseMode, ConfigError> {
        match text {
            "full" => Ok(DirectToolResponseMode::Full),
            "deferred" => Ok(DirectToolResponseMode::Deferred),
            other => Err(self.err(
                key,
                format!("unknown mode {other:?}; expected \"full\" or \"deferred\""),
            )),
        }
    }

    fn string_map(
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

    fn servers(
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

    fn server(
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

    fn url(&self, url: &str, key: &str) -> Result<(), ConfigError> {
        if url.starts_with("http://") || url.starts_with("https://") {
            Ok(())
        } else {
            let shown = crate::redact_url(url);
            Err(self.err(key, format!("{shown:?} is not an http:// or https:// URL")))
        }
    }
}

pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
