//! JSON text → [`Config`]. Walks the document by hand so every refusal names its exact key path
//! (`mcpServers.github.command`). An unknown key is a warning, unless it is a misspelling of a
//! known one (`comand`): that is refused with the key it was meant to be.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::duration::parse_duration;
use crate::model::{
    Config, DEFAULT_CALL_TIMEOUT, DEFAULT_LISTEN, DEFAULT_MAX_MATCHES, DEFAULT_STARTUP_WAIT,
    DirectToolResponseMode, Overrides, RoutingMode, SearchModel, ToolResponseMode,
};
use crate::suggest::near_key;
use crate::{ConfigError, Glob, StoreUrl, ToolFilter};

const GLOBAL_KEYS: &[&str] = &[
    "tool_response_mode",
    "defer_tools",
    "tool_search",
    "search_model",
    "listen",
    "call_timeout",
    "startup_wait",
    "routing_mode",
    "direct_tool_response_mode",
    "instructions",
    "mcpServers",
    "servers",
    "inputs",
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
    "audit_retention_rows",
    "audit_arguments",
    "audit_sink",
    "http_header_read_timeout",
    "http_body_read_timeout",
    "http_idle_timeout",
    "max_connections",
    "session_idle_timeout",
    "max_sessions",
    "max_sessions_per_caller",
    "auth",
    "sandbox",
    "limits",
];

/// Parses and validates `text` (the content of `file`, used in messages), then applies `overrides`.
pub fn parse_config(text: &str, file: &str, overrides: &Overrides) -> Result<Config, ConfigError> {
    let root = document(text, file)?;
    let mut warnings = Vec::new();
    warn_unknown(&root, GLOBAL_KEYS, "", file, &mut warnings)?;
    let cx = Cx { file };
    cx.warn_inputs(&root, &mut warnings);
    let modes = cx.modes(&root, overrides)?;
    let max_matches = cx.max_matches(&root, &mut warnings)?;
    let (sandbox, sandbox_env) = crate::sandbox::read_sandbox(
        &cx,
        root.get("sandbox"),
        "sandbox",
        &crate::Sandbox::default(),
        &mut warnings,
    )?;
    if !sandbox_env.is_empty() {
        return Err(cx.err(
            "sandbox.env",
            "names what one server inherits: set it on the server's own \"sandbox\"",
        ));
    }
    let before_servers = warnings.len();
    let servers = match cx.servers_key(&root)? {
        None => Vec::new(),
        Some((servers_key, value)) => cx.servers(servers_key, value, &sandbox, &mut warnings)?,
    };
    // Everything the server entries had to say: an unknown key inside a server fails `config check`.
    let server_warnings = warnings[before_servers..].to_vec();
    let data_dir = match &overrides.data_dir {
        Some(dir) => Some(dir.clone()),
        None => cx.data_dir(&root)?,
    };
    let profiles = cx.profiles(&root, &servers, &mut warnings)?;
    let auth = cx.auth(&root, &servers, &profiles, &mut warnings)?;
    let limits = crate::limits::read_limits(&cx, root.get("limits"), "limits", &mut warnings)?;
    let store = match &overrides.store {
        Some(url) => Some(StoreUrl::parse(url).map_err(|why| cx.err("store", why.to_string()))?),
        None => cx.store(&root)?,
    };
    Ok(Config {
        listen: modes.listen,
        call_timeout: modes.call_timeout,
        startup_wait: modes.startup_wait,
        routing_mode: modes.routing_mode,
        direct_tool_response_mode: modes.direct_tool_response_mode,
        tool_response_mode: modes.tool_response_mode,
        instructions: cx.optional_string(&root, "instructions")?,
        defer_tools: cx.defer_tools(&root)?,
        max_matches,
        search_model: cx.search_model(&root)?,
        http: cx.http_security(&root)?,
        profiles,
        auth,
        limits,
        servers,
        data_dir,
        store,
        code: cx.code_limits(&root)?,
        audit: cx.audit(&root)?,
        listener: cx.listener_limits(&root)?,
        warnings,
        server_warnings,
    })
}

/// The file's JSON object, or why it is not one.
fn document(text: &str, file: &str) -> Result<Map<String, Value>, ConfigError> {
    let document: Value = serde_json::from_str(text).map_err(|e| ConfigError::Syntax {
        file: file.to_owned(),
        reason: e.to_string(),
    })?;
    match document {
        Value::Object(root) => Ok(root),
        _ => Err(ConfigError::invalid(
            file,
            "(root)",
            "must be a JSON object",
        )),
    }
}

/// The globals a flag or an `MCPLEX_*` variable can set.
struct Modes {
    listen: String,
    call_timeout: Duration,
    startup_wait: Duration,
    routing_mode: RoutingMode,
    direct_tool_response_mode: DirectToolResponseMode,
    tool_response_mode: ToolResponseMode,
}

impl Cx<'_> {
    fn modes(
        &self,
        root: &Map<String, Value>,
        overrides: &Overrides,
    ) -> Result<Modes, ConfigError> {
        Ok(Modes {
            listen: self
                .layered(root, "listen", &overrides.listen, Cx::listen)?
                .unwrap_or_else(|| DEFAULT_LISTEN.to_owned()),
            call_timeout: self
                .layered(root, "call_timeout", &overrides.call_timeout, Cx::duration)?
                .unwrap_or(DEFAULT_CALL_TIMEOUT),
            startup_wait: self
                .layered(root, "startup_wait", &overrides.startup_wait, Cx::wait)?
                .unwrap_or(DEFAULT_STARTUP_WAIT),
            routing_mode: self
                .layered(
                    root,
                    "routing_mode",
                    &overrides.routing_mode,
                    Cx::routing_mode,
                )?
                .unwrap_or(RoutingMode::Direct),
            direct_tool_response_mode: self
                .layered(
                    root,
                    "direct_tool_response_mode",
                    &overrides.direct_tool_response_mode,
                    Cx::direct_mode,
                )?
                .unwrap_or_default(),
            tool_response_mode: self
                .layered(
                    root,
                    "tool_response_mode",
                    &overrides.tool_response_mode,
                    Cx::tool_response_mode,
                )?
                .unwrap_or_default(),
        })
    }

    /// The precedence of a global the command line can set: the flag or its `MCPLEX_*`
    /// variable (`overridden`: clap folds the two), else the file's `key`, else `None` (the
    /// caller's default). `read` validates the text; its refusal names the flag or the key.
    fn layered<T>(
        &self,
        root: &Map<String, Value>,
        key: &str,
        overridden: &Option<String>,
        read: impl Fn(&Self, &str, &str) -> Result<T, ConfigError>,
    ) -> Result<Option<T>, ConfigError> {
        if let Some(value) = overridden {
            let flag = format!(
                "--{} / MCPLEX_{}",
                key.replace('_', "-"),
                key.to_uppercase()
            );
            return read(self, value, &flag).map(Some);
        }
        match root.get(key) {
            Some(value) => read(self, self.string(value, key)?, key).map(Some),
            None => Ok(None),
        }
    }

    fn optional_string(
        &self,
        root: &Map<String, Value>,
        key: &str,
    ) -> Result<Option<String>, ConfigError> {
        match root.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => Ok(Some(self.string(value, key)?.to_owned())),
        }
    }

    fn defer_tools(&self, root: &Map<String, Value>) -> Result<bool, ConfigError> {
        match root.get("defer_tools") {
            None | Some(Value::Null) => Ok(false),
            Some(value) => self.bool(value, "defer_tools"),
        }
    }

    /// `tool_search.max_matches`: from 1 to 100.
    fn max_matches(
        &self,
        root: &Map<String, Value>,
        warnings: &mut Vec<String>,
    ) -> Result<usize, ConfigError> {
        let search = match root.get("tool_search") {
            None | Some(Value::Null) => return Ok(DEFAULT_MAX_MATCHES),
            Some(Value::Object(search)) => search,
            Some(other) => {
                return Err(self.err(
                    "tool_search",
                    format!(
                        "must be an object like {{\"max_matches\": 5}}, found {}",
                        kind(other)
                    ),
                ));
            }
        };
        warn_unknown(
            search,
            &["max_matches"],
            "tool_search.",
            self.file,
            warnings,
        )?;
        match search.get("max_matches") {
            None => Ok(DEFAULT_MAX_MATCHES),
            Some(value) => match value.as_u64() {
                Some(n) if (1..=100).contains(&n) => Ok(n as usize),
                _ => Err(self.err("tool_search.max_matches", format!("must be a whole number from 1 to 100 (a search that can answer with nothing is one a model cannot use), found {value}"))),
            },
        }
    }

    fn search_model(&self, root: &Map<String, Value>) -> Result<SearchModel, ConfigError> {
        match root.get("search_model") {
            None | Some(Value::Null) => Ok(SearchModel::BuiltIn),
            Some(Value::Bool(false)) => Ok(SearchModel::Off),
            Some(Value::String(dir)) if !dir.trim().is_empty() => {
                Ok(SearchModel::Dir(std::path::PathBuf::from(dir)))
            }
            Some(value) => {
                let found = match value {
                    Value::String(_) => "a blank string",
                    other => kind(other),
                };
                Err(self.err(
                    "search_model",
                    format!("must be the path of a model directory (config.json, tokenizer.json, model.safetensors), or false for no model, found {found}"),
                ))
            }
        }
    }
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
            (
                "max_sessions_per_caller",
                &mut limits.max_sessions_per_caller,
            ),
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

/// Warns of each key of `object` that is not `known`, or refuses the first one that is a
/// misspelling of a known key: running without it would run something else than was written.
pub(crate) fn warn_unknown(
    object: &Map<String, Value>,
    known: &[&str],
    prefix: &str,
    file: &str,
    warnings: &mut Vec<String>,
) -> Result<(), ConfigError> {
    for key in object.keys() {
        if known.contains(&key.as_str()) {
            continue;
        }
        match near_key(key, known) {
            Some(meant) => {
                return Err(ConfigError::invalid(
                    file,
                    format!("{prefix}{key}"),
                    format!("unknown key; did you mean {meant:?}?"),
                ));
            }
            None => warnings.push(format!("{file}: {prefix}{key}: unknown key, ignored")),
        }
    }
    Ok(())
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

    /// A duration that may be zero (`"0"`: no wait at all).
    fn wait(&self, text: &str, key: &str) -> Result<Duration, ConfigError> {
        match text.trim() {
            "0" => Ok(Duration::ZERO),
            _ => self.duration(text, key),
        }
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

    pub(crate) fn globs(&self, value: &Value, key: &str) -> Result<Vec<Glob>, ConfigError> {
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
    pub(crate) fn tool_filter(
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
        warn_unknown(object, keys, &format!("{key}."), self.file, warnings)?;
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
