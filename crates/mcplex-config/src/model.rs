//! The validated config: what the rest of the gateway sees. Built only by [`crate::parse_config`].

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// Where the gateway listens when nothing says otherwise: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// How long a `tools/call` may take when neither the server nor the file says.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// How long connecting and initializing one upstream may take.
pub const DEFAULT_INIT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the first listings wait for servers still starting: long enough for an `npx` or
/// `uvx` server to be fetched on a cold cache.
pub const DEFAULT_STARTUP_WAIT: Duration = Duration::from_secs(30);

/// The whole gateway config, validated. Immutable once built.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `host:port` of the HTTP listener.
    pub listen: String,
    /// Default per-call timeout for servers that set none.
    pub call_timeout: Duration,
    /// `startup_wait`: how long after start listings wait for servers still connecting for the
    /// first time (zero: never). Read at start only.
    pub startup_wait: Duration,
    /// What `/mcp` serves.
    pub routing_mode: RoutingMode,
    /// How the direct surface renders upstream tools. Hot: re-read on every config reload.
    pub direct_tool_response_mode: DirectToolResponseMode,
    /// The operator's `initialize` instructions for the direct surface (read at start only).
    pub instructions: Option<String>,
    /// How `retrieve_tools` renders its matches. Hot.
    pub tool_response_mode: ToolResponseMode,
    /// The global default for deferral by search (`defer_tools`).
    pub defer_tools: bool,
    /// `tool_search.max_matches`: how many matches one search returns (never 0).
    pub max_matches: usize,
    /// `search_model`: which sentence-embedding model makes searches hybrid (builds with the
    /// `semantic` feature, the default). Read at start only.
    pub search_model: SearchModel,
    /// Upstream servers in file order, names unique.
    pub servers: Vec<ServerConfig>,
    /// Where approvals, tokens and the API key live; `None`: `~/.mcplex`.
    pub data_dir: Option<PathBuf>,
    /// A PostgreSQL store that several gateways share; `None`: SQLite in `data_dir`.
    pub store: Option<StoreUrl>,
    /// Host/Origin checks, authentication requirement and body limit of the HTTP listener.
    pub http: crate::HttpSecurity,
    /// Timeouts and caps of the HTTP listener and its sessions.
    pub listener: ListenerLimits,
    /// Named server subsets served at `/mcp/p/<name>`.
    pub profiles: Vec<crate::Profile>,
    /// Limits of the code_execution surface.
    pub code: CodeLimits,
    /// `audit_retention_days` (0: no audit log), `audit_retention_rows`, `audit_arguments` and
    /// `audit_sink`.
    pub audit: AuditSettings,
    /// `auth`: OAuth access tokens from this issuer are accepted beside agent tokens.
    pub auth: Option<crate::AuthSettings>,
    /// `limits`: every caller's default limits on tool calls (a token's own override them). Hot.
    pub limits: crate::CallLimits,
    /// Things that are not errors but that the user should see (unknown keys, ignored values).
    pub warnings: Vec<String>,
    /// The part of `warnings` about server entries (another client's key, such as
    /// `autoApprove`, ignored): a running gateway tolerates them, `config check` fails on them.
    pub server_warnings: Vec<String>,
}

impl Config {
    /// A config with every global at its default and these servers (built-in fleets, benchmarks).
    pub fn with_servers(servers: Vec<ServerConfig>) -> Config {
        Config {
            listen: DEFAULT_LISTEN.to_owned(),
            call_timeout: DEFAULT_CALL_TIMEOUT,
            startup_wait: DEFAULT_STARTUP_WAIT,
            routing_mode: RoutingMode::Direct,
            direct_tool_response_mode: DirectToolResponseMode::Full,
            instructions: None,
            tool_response_mode: ToolResponseMode::Full,
            defer_tools: false,
            max_matches: DEFAULT_MAX_MATCHES,
            search_model: SearchModel::BuiltIn,
            servers,
            data_dir: None,
            store: None,
            http: crate::HttpSecurity::default(),
            listener: ListenerLimits::default(),
            profiles: Vec::new(),
            code: CodeLimits::default(),
            audit: AuditSettings::default(),
            auth: None,
            limits: crate::CallLimits::default(),
            warnings: Vec::new(),
            server_warnings: Vec::new(),
        }
    }
}

/// The surface served on `/mcp`.
/// `search_model`: the model hybrid search embeds with.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SearchModel {
    /// Not set: the model built into the binary (all-MiniLM-L6-v2 fine-tuned on requests for tools).
    #[default]
    BuiltIn,
    /// A path: a sentence-transformers model directory (`config.json`, `tokenizer.json`,
    /// `model.safetensors`).
    Dir(PathBuf),
    /// `false`: no model; searches rank by BM25F alone.
    Off,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoutingMode {
    /// Every visible tool listed directly.
    Direct,
    /// `retrieve_tools`, `call_tool` and `describe_tool`.
    RetrieveTools,
    /// `code_execution`, `retrieve_tools` and `describe_tool`.
    CodeExecution,
}

impl RoutingMode {
    pub fn as_str(self) -> &'static str {
        match self {
            RoutingMode::Direct => "direct",
            RoutingMode::RetrieveTools => "retrieve_tools",
            RoutingMode::CodeExecution => "code_execution",
        }
    }
}

/// How `retrieve_tools` renders each match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolResponseMode {
    /// Description, input schema and annotations as the upstream sent them.
    #[default]
    Full,
    /// First sentence of the description, the compact signature and a `lossy` flag.
    Compact,
}

impl ToolResponseMode {
    /// The config file's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolResponseMode::Full => "full",
            ToolResponseMode::Compact => "compact",
        }
    }
}

/// The audit log of calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditSettings {
    /// Rows older than this are deleted; 0 turns the audit log off.
    pub retention_days: u32,
    /// At most this many rows are kept, the newest (`None`: as many as the days keep).
    pub retention_rows: Option<u64>,
    /// Store argument values too (off by default: they may hold secrets).
    pub arguments: bool,
    /// Where each audit row is also appended as a line of JSON as it is written (for a log
    /// shipper), besides the store.
    pub sink: Option<AuditSink>,
}

/// `audit_sink`: `"stdout"` or a file path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditSink {
    Stdout,
    /// Appended to (created 0600 when missing), never truncated.
    File(std::path::PathBuf),
}

impl Default for AuditSettings {
    fn default() -> AuditSettings {
        AuditSettings {
            retention_days: 30,
            retention_rows: None,
            arguments: false,
            sink: None,
        }
    }
}

/// How long the HTTP listener waits on a client and how many it holds (`http_*_timeout`,
/// `max_connections`, `session_idle_timeout`, `max_sessions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenerLimits {
    /// A request's head must arrive whole within this, counted from its first byte.
    pub header_read_timeout: Duration,
    /// A request's body must arrive whole within this, counted from its head.
    pub body_read_timeout: Duration,
    /// A connection with no request in flight is closed after this.
    pub idle_timeout: Duration,
    /// Open connections; past it the oldest idle one is closed, or the newcomer gets 503.
    pub max_connections: usize,
    /// A session with no request or stream open for this long is ended.
    pub session_idle_timeout: Duration,
    /// Open sessions over all MCP routes; past it `initialize` gets 503.
    pub max_sessions: usize,
    /// Open sessions of one credential (an agent token, an OAuth subject); past it its
    /// `initialize` gets 429. The operator (the local user, the API key) has no such quota.
    pub max_sessions_per_caller: usize,
}

impl Default for ListenerLimits {
    fn default() -> ListenerLimits {
        ListenerLimits {
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            max_connections: 512,
            session_idle_timeout: Duration::from_secs(30 * 60),
            max_sessions: 1000,
            max_sessions_per_caller: 100,
        }
    }
}

/// The code_execution surface's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeLimits {
    /// `code_execution_timeout`: a run's default deadline and its ceiling (a call's
    /// `timeout_ms` may only lower it), at most [`CodeLimits::MAX_TIMEOUT`].
    pub timeout: Duration,
    /// `code_execution_memory_limit`: the JavaScript heap of one run, in bytes.
    pub memory_bytes: usize,
    /// `code_execution_max_tool_calls`: tool calls one run may make.
    pub max_tool_calls: usize,
    /// `code_execution_max_concurrent_per_caller`: scripts one caller (a token, or the local
    /// user) runs at once; the gateway runs at most 16 in all, shared fairly among callers.
    pub max_concurrent_per_caller: usize,
}

impl CodeLimits {
    pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);
}

impl Default for CodeLimits {
    fn default() -> CodeLimits {
        CodeLimits {
            timeout: Duration::from_secs(120),
            memory_bytes: 64 * 1024 * 1024,
            max_tool_calls: 100,
            max_concurrent_per_caller: 4,
        }
    }
}

/// `tool_search.max_matches` when the config does not say.
pub const DEFAULT_MAX_MATCHES: usize = 5;

/// The settings a config edit applies without a restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HotSettings {
    pub direct_tool_response_mode: DirectToolResponseMode,
    pub tool_response_mode: ToolResponseMode,
}

impl Config {
    pub fn hot(&self) -> HotSettings {
        HotSettings {
            direct_tool_response_mode: self.direct_tool_response_mode,
            tool_response_mode: self.tool_response_mode,
        }
    }

    /// Whether any tool can be deferred, decided from the config alone (never from what an
    /// upstream answered): a surface carries `tool_search` and `call_tool` exactly when this holds.
    pub fn defers_anything(&self) -> bool {
        self.defer_tools
            || self
                .servers
                .iter()
                .any(|s| s.defer == Some(true) || !s.tools.defer.is_empty())
    }
}

/// How the direct surface serializes upstream tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DirectToolResponseMode {
    /// The upstream's schemas as they are.
    #[default]
    Full,
    /// Schemas replaced by `{"type":"object"}` and a compact signature in the description.
    Deferred,
}

impl DirectToolResponseMode {
    pub fn as_str(self) -> &'static str {
        match self {
            DirectToolResponseMode::Full => "full",
            DirectToolResponseMode::Deferred => "deferred",
        }
    }
}

/// How the gateway opens the MCP lifecycle with an upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifecycle {
    /// 2024-11-05 .. 2025-11-25: `initialize` then `notifications/initialized`, session-scoped.
    Initialize,
    /// 2026-07-28: `server/discover`, then stateless requests with per-request `_meta`.
    Discover,
}

/// How to reach one upstream.
#[derive(Clone, PartialEq)]
pub enum Transport {
    /// A child process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        working_dir: Option<PathBuf>,
        /// Which variables of the gateway's own environment the process gets besides `env`.
        inherit_env: InheritEnv,
        /// How the process is isolated (on unless `"sandbox": false`).
        sandbox: crate::Sandbox,
    },
    /// Streamable HTTP (`protocol: "http"`), or with `fallback_to_sse` the `auto` behaviour.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
        fallback_to_sse: bool,
    },
    /// Legacy HTTP+SSE (2024-11-05): a GET event stream plus POSTs to the announced endpoint.
    Sse {
        url: String,
        headers: BTreeMap<String, String>,
    },
    /// A server compiled into the gateway (the `--demo` fleet); never read from a file.
    Builtin { kind: String },
}

/// `inherit_env`: which variables of the gateway's environment a stdio server inherits. Always
/// the small allow-list the upstream crate documents (`PATH`, `HOME`, locale, temp dirs, ...);
/// never the gateway's own ([`crate::gateways_own`]); the server's own `env` is added on top.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InheritEnv {
    /// The allow-list plus the variables these names or globs match (`false` or absent: none).
    AllowList(Vec<crate::Glob>),
    /// `true`: the gateway's whole environment, credentials and all, but its own.
    All,
}

impl Default for InheritEnv {
    fn default() -> InheritEnv {
        InheritEnv::AllowList(Vec::new())
    }
}

/// One upstream server.
#[derive(Clone, PartialEq)]
pub struct ServerConfig {
    /// Unique name; never contains `:` (the canonical tool id is `server:tool`).
    pub name: String,
    pub transport: Transport,
    /// Disabled servers are kept in the config but never started.
    pub enabled: bool,
    /// `defer`: this server's tools are reached through `tool_search`; `None` follows `defer_tools`.
    pub defer: Option<bool>,
    /// `tools.include` / `tools.exclude` / `tools.defer`.
    pub tools: crate::ToolFilter,
    /// Per-call timeout; `None` means the global one.
    pub call_timeout: Option<Duration>,
    /// Connect + initialize + first listing must finish within this.
    pub init_timeout: Duration,
    pub lifecycle: Lifecycle,
    /// `"trust": "auto"`: tools this server adds later are approved on first sight (a changed
    /// definition still waits for approval).
    pub trust_auto: bool,
    /// `"quarantined": true`: when first recorded, the server starts quarantined.
    pub quarantined: bool,
    /// `"namespace": false` makes the server transparent: its tools, prompts and resources keep
    /// their own names and URIs (a clash with anything else is refused by name).
    pub namespace: bool,
    /// `prompts.include` / `prompts.exclude`, over prompt names.
    pub prompts: crate::ToolFilter,
    /// `resources.include` / `resources.exclude`, over resource URIs and URI templates.
    pub resources: crate::ToolFilter,
    /// `"oauth"`: tokens from an OAuth 2.1 login, sent as `Authorization: Bearer` (URL servers).
    pub oauth: Option<crate::OAuthConfig>,
    /// `"trace_context": true`: when traces are exported, each request carries the W3C trace
    /// context in its `_meta` (`traceparent`, `tracestate`), for a server that reads it there
    /// (a stdio server has no headers; a URL server gets the `traceparent` header anyway).
    pub trace_context: bool,
    /// Where the entry comes from.
    pub origin: ServerOrigin,
}

/// Where a server's entry comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ServerOrigin {
    /// The config file (or a flag): edited there.
    #[default]
    File,
    /// The control plane: added from the dashboard while the gateway ran, run by every
    /// replica, removed there (`added.rs`).
    Added,
}

impl ServerConfig {
    /// A server with every per-server setting at its default.
    pub fn new(name: impl Into<String>, transport: Transport) -> ServerConfig {
        ServerConfig {
            name: name.into(),
            transport,
            enabled: true,
            defer: None,
            tools: crate::ToolFilter::default(),
            call_timeout: None,
            init_timeout: DEFAULT_INIT_TIMEOUT,
            lifecycle: Lifecycle::Initialize,
            trust_auto: false,
            quarantined: false,
            namespace: true,
            prompts: crate::ToolFilter::default(),
            resources: crate::ToolFilter::default(),
            oauth: None,
            trace_context: false,
            origin: ServerOrigin::File,
        }
    }

    /// Whether `other` would be reached the same way (transport, lifecycle, timeouts): when only
    /// catalog settings such as `tools` or `defer` differ, the running connection can stay.
    pub fn same_connection(&self, other: &ServerConfig) -> bool {
        self.name == other.name
            && self.transport == other.transport
            && self.enabled == other.enabled
            && self.lifecycle == other.lifecycle
            && self.init_timeout == other.init_timeout
            && self.call_timeout == other.call_timeout
            && self.oauth == other.oauth
            && self.trace_context == other.trace_context
    }

    /// Whether tool `tool` of this server is deferred: a tool-level glob, else the server's
    /// `defer`, else the global `defer_tools` (the most specific setting wins).
    pub fn defers(&self, tool: &str, global: bool) -> bool {
        self.tools.defers(tool) || self.defer.unwrap_or(global)
    }

    /// Values that must never be logged: env values, the values of command-line flags named
    /// like credentials (`--api-key …`) and header values (the URL's credentials are found by
    /// [`crate::Redactor::for_server`]).
    pub fn secret_values(&self) -> impl Iterator<Item = &str> {
        let values: Vec<&str> = match &self.transport {
            Transport::Stdio { env, args, .. } => env
                .values()
                .map(String::as_str)
                .chain(crate::secret_args::secret_args(args))
                .collect(),
            Transport::Http { headers, .. } | Transport::Sse { headers, .. } => {
                headers.values().map(String::as_str).collect()
            }
            Transport::Builtin { .. } => Vec::new(),
        };
        let oauth_secret = self.oauth.as_ref().and_then(|o| match &o.client_secret {
            Some(crate::ClientSecret::Value(secret)) => Some(secret.as_str()),
            _ => None,
        });
        values.into_iter().chain(oauth_secret)
    }

    /// The timeout for one call to this server under `config`.
    pub fn effective_call_timeout(&self, global: Duration) -> Duration {
        self.call_timeout.unwrap_or(global)
    }
}

/// Values given on the command line or in `MCPLEX_*` variables; they win over the file. No
/// `Debug`: `store` is a URL that may carry a password before it is parsed into a [`StoreUrl`]
/// (as the command line's arguments have none).
#[derive(Clone, Default, PartialEq)]
pub struct Overrides {
    pub listen: Option<String>,
    pub call_timeout: Option<String>,
    pub startup_wait: Option<String>,
    pub routing_mode: Option<String>,
    pub direct_tool_response_mode: Option<String>,
    pub tool_response_mode: Option<String>,
    pub data_dir: Option<PathBuf>,
    pub store: Option<String>,
}

/// A `postgres://` URL: it may carry a password, so it is shown only redacted.
#[derive(Clone, PartialEq, Eq)]
pub struct StoreUrl(String);

impl StoreUrl {
    /// `postgres://…` or `postgresql://…`; anything else is refused with the reason.
    pub fn parse(url: &str) -> Result<StoreUrl, crate::StoreUrlError> {
        let url = url.trim();
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(StoreUrl(url.to_owned()))
        } else {
            Err(crate::StoreUrlError::NotPostgres)
        }
    }

    /// The URL itself, password included: for connecting, never for showing.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::redact_store_url(&self.0))
    }
}

fn redacted_map(map: &BTreeMap<String, String>) -> BTreeMap<&str, &str> {
    map.keys().map(|k| (k.as_str(), "[redacted]")).collect()
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Transport::Stdio {
                command,
                args,
                env,
                working_dir,
                inherit_env,
                sandbox,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                // Arguments may carry a secret (`--api-key …`); only the config view, with
                // the server's redactor, shows them.
                .field("args", &format_args!("[{} redacted]", args.len()))
                .field("env", &redacted_map(env))
                .field("working_dir", working_dir)
                .field("inherit_env", inherit_env)
                .field("sandbox", sandbox)
                .finish(),
            Transport::Http {
                url,
                headers,
                fallback_to_sse,
            } => f
                .debug_struct("Http")
                .field("url", &crate::redact_url(url))
                .field("headers", &redacted_map(headers))
                .field("fallback_to_sse", fallback_to_sse)
                .finish(),
            Transport::Sse { url, headers } => f
                .debug_struct("Sse")
                .field("url", &crate::redact_url(url))
                .field("headers", &redacted_map(headers))
                .finish(),
            Transport::Builtin { kind } => f.debug_struct("Builtin").field("kind", kind).finish(),
        }
    }
}

impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerConfig")
            .field("name", &self.name)
            .field("transport", &self.transport)
            .field("enabled", &self.enabled)
            .field("call_timeout", &self.call_timeout)
            .field("init_timeout", &self.init_timeout)
            .field("lifecycle", &self.lifecycle)
            .field("defer", &self.defer)
            .field("tools", &self.tools)
            .field("trust_auto", &self.trust_auto)
            .field("quarantined", &self.quarantined)
            .field("namespace", &self.namespace)
            .field("prompts", &self.prompts)
            .field("resources", &self.resources)
            .field("trace_context", &self.trace_context)
            .field("origin", &self.origin)
            .finish()
    }
}
