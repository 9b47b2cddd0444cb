//! How each setting takes an edit of the config file while the gateway runs: hot (applied at
//! once) or cold (read at start; kept at its running value until a restart). Declared once, in
//! [`declare`], which names every field of [`Config`] without `..`: a new field does not compile
//! until it is classified here. From that one declaration come which settings an edit changed,
//! the "needs a restart" list (only the cold settings that changed), and the config to run (the
//! edit with each cold setting reset to its running value).

use crate::access::HttpSecurity;
use crate::model::{AuditSettings, CodeLimits, Config, ListenerLimits};

/// What an edit of the config file does to a running gateway.
#[derive(Debug, Clone, PartialEq)]
pub struct Reloaded {
    /// The config to run from now on: the edit, with every cold setting at its running value.
    pub config: Config,
    /// The hot settings the edit changed, by their key in the file (applied now).
    pub applied: Vec<&'static str>,
    /// The cold settings the edit changed, by their key in the file (kept as they run until a
    /// restart).
    pub needs_restart: Vec<&'static str>,
    /// The edit defers tools on a gateway that started without deferral: `tool_search` and
    /// `call_tool` are listed or not from the start, so hiding tools behind them now would make
    /// them unreachable; every defer setting is kept off until a restart.
    pub deferral_waits: bool,
    /// The edit defers nothing on a gateway that started with deferral: every tool is listed
    /// now, but `tool_search` and `call_tool` stay listed (harmless) until a restart.
    pub search_tools_stay: bool,
}

impl Reloaded {
    /// Whether `mcpServers` changed: the running servers must be reconciled with the new list.
    pub fn servers_changed(&self) -> bool {
        self.applied.contains(&SERVERS)
    }
}

/// The key of the server list, the one hot setting that starts and stops processes.
const SERVERS: &str = "mcpServers";

/// Classifies the edit `edited` of the config `running` serves from, for a gateway that started
/// with `running` (it lists `tool_search` and `call_tool` exactly when `running` defers).
pub fn reload(running: &Config, edited: Config) -> Reloaded {
    reload_listing(running, edited, running.defers_anything())
}

/// [`reload`] for a gateway that has applied edits since it started: `search_tools_listed` is
/// whether the config it started with deferred anything, which decided for good whether it lists
/// `tool_search` and `call_tool`.
pub fn reload_listing(running: &Config, edited: Config, search_tools_listed: bool) -> Reloaded {
    let mut config = edited;
    let deferral_waits = keep_deferral_off(search_tools_listed, &mut config);
    let search_tools_stay =
        search_tools_listed && running.defers_anything() && !config.defers_anything();
    let mut edit = Edit::default();
    declare(running, &mut config, &mut edit);
    Reloaded {
        config,
        applied: edit.applied,
        needs_restart: edit.needs_restart,
        deferral_waits,
        search_tools_stay,
    }
}

/// The declaration: every setting, hot or cold, by its key in the file.
fn declare(running: &Config, edited: &mut Config, edit: &mut Edit) {
    let Config {
        listen,
        call_timeout,
        startup_wait,
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
        listener,
        profiles,
        code,
        audit,
        auth,
        limits,
        // Not a setting: what the edited file's parse had to say.
        warnings: _,
        server_warnings: _,
    } = edited;
    edit.hot(
        "direct_tool_response_mode",
        &running.direct_tool_response_mode,
        direct_tool_response_mode,
    );
    edit.hot(
        "tool_response_mode",
        &running.tool_response_mode,
        tool_response_mode,
    );
    edit.hot("defer_tools", &running.defer_tools, defer_tools);
    edit.hot(SERVERS, &running.servers, servers);
    edit.hot("limits", &running.limits, limits);
    edit.cold("listen", &running.listen, listen);
    edit.cold("call_timeout", &running.call_timeout, call_timeout);
    edit.cold("startup_wait", &running.startup_wait, startup_wait);
    edit.cold("routing_mode", &running.routing_mode, routing_mode);
    edit.cold("instructions", &running.instructions, instructions);
    edit.cold("tool_search.max_matches", &running.max_matches, max_matches);
    edit.cold("search_model", &running.search_model, search_model);
    edit.cold("data_dir", &running.data_dir, data_dir);
    edit.cold("store", &running.store, store);
    edit.cold("profiles", &running.profiles, profiles);
    edit.cold("auth", &running.auth, auth);
    declare_http(&running.http, http, edit);
    declare_listener(&running.listener, listener, edit);
    declare_code(&running.code, code, edit);
    declare_audit(&running.audit, audit, edit);
}

fn declare_http(running: &HttpSecurity, edited: &mut HttpSecurity, edit: &mut Edit) {
    let HttpSecurity {
        trusted_hosts,
        require_auth,
        max_body_bytes,
    } = edited;
    edit.cold("trusted_hosts", &running.trusted_hosts, trusted_hosts);
    edit.cold("require_auth", &running.require_auth, require_auth);
    edit.cold("max_body_bytes", &running.max_body_bytes, max_body_bytes);
}

fn declare_listener(running: &ListenerLimits, edited: &mut ListenerLimits, edit: &mut Edit) {
    let ListenerLimits {
        header_read_timeout,
        body_read_timeout,
        idle_timeout,
        max_connections,
        session_idle_timeout,
        max_sessions,
        max_sessions_per_caller,
    } = edited;
    edit.cold(
        "http_header_read_timeout",
        &running.header_read_timeout,
        header_read_timeout,
    );
    edit.cold(
        "http_body_read_timeout",
        &running.body_read_timeout,
        body_read_timeout,
    );
    edit.cold("http_idle_timeout", &running.idle_timeout, idle_timeout);
    edit.cold("max_connections", &running.max_connections, max_connections);
    edit.cold(
        "session_idle_timeout",
        &running.session_idle_timeout,
        session_idle_timeout,
    );
    edit.cold("max_sessions", &running.max_sessions, max_sessions);
    edit.cold(
        "max_sessions_per_caller",
        &running.max_sessions_per_caller,
        max_sessions_per_caller,
    );
}

fn declare_code(running: &CodeLimits, edited: &mut CodeLimits, edit: &mut Edit) {
    let CodeLimits {
        timeout,
        memory_bytes,
        max_tool_calls,
        max_concurrent_per_caller,
    } = edited;
    edit.cold("code_execution_timeout", &running.timeout, timeout);
    edit.cold(
        "code_execution_memory_limit",
        &running.memory_bytes,
        memory_bytes,
    );
    edit.cold(
        "code_execution_max_tool_calls",
        &running.max_tool_calls,
        max_tool_calls,
    );
    edit.cold(
        "code_execution_max_concurrent_per_caller",
        &running.max_concurrent_per_caller,
        max_concurrent_per_caller,
    );
}

fn declare_audit(running: &AuditSettings, edited: &mut AuditSettings, edit: &mut Edit) {
    let AuditSettings {
        retention_days,
        retention_rows,
        arguments,
        sink,
    } = edited;
    edit.cold(
        "audit_retention_days",
        &running.retention_days,
        retention_days,
    );
    edit.cold(
        "audit_retention_rows",
        &running.retention_rows,
        retention_rows,
    );
    edit.cold("audit_arguments", &running.arguments, arguments);
    edit.cold("audit_sink", &running.sink, sink);
}

/// Turning deferral on needs the search built-ins the gateway listed (or not) at start: on a
/// gateway that started without any deferral, every defer setting of `edited` is switched off.
/// True when that dropped something.
fn keep_deferral_off(search_tools_listed: bool, edited: &mut Config) -> bool {
    if search_tools_listed || !edited.defers_anything() {
        return false;
    }
    edited.defer_tools = false;
    for server in &mut edited.servers {
        server.defer = None;
        server.tools.defer.clear();
    }
    true
}

/// The settings an edit changed, sorted by how they take it.
#[derive(Default)]
struct Edit {
    applied: Vec<&'static str>,
    needs_restart: Vec<&'static str>,
}

impl Edit {
    /// A setting applied at once.
    fn hot<T: PartialEq>(&mut self, key: &'static str, running: &T, edited: &mut T) {
        if running != edited {
            self.applied.push(key);
        }
    }

    /// A setting read at start: a change is noted and undone.
    fn cold<T: PartialEq + Clone>(&mut self, key: &'static str, running: &T, edited: &mut T) {
        if running != edited {
            self.needs_restart.push(key);
            edited.clone_from(running);
        }
    }
}
