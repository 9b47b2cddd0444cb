//! `parse_config` on config text: defaults, both `mcpServers` forms, precedence of overrides,
//! unknown-key warnings, refusals that name the key, and redaction of secrets.

use std::time::Duration;

use crate::{Lifecycle, Overrides, RoutingMode, SearchModel, Transport, parse_config};

#[track_caller]
pub(crate) fn ok(text: &str) -> crate::Config {
    match parse_config(text, "cfg.json", &Overrides::default()) {
        Ok(config) => config,
        Err(e) => panic!("expected a valid config, got: {e}"),
    }
}

#[track_caller]
pub(crate) fn refused(text: &str) -> String {
    match parse_config(text, "cfg.json", &Overrides::default()) {
        Ok(config) => panic!("expected a refusal, got {config:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn defaults_for_an_empty_object() {
    let config = ok("{}");
    assert_eq!(config.listen, "127.0.0.1:8080");
    assert_eq!(config.call_timeout, Duration::from_secs(120));
    assert_eq!(config.routing_mode, RoutingMode::Direct);
    assert!(config.servers.is_empty());
}

#[test]
fn map_form_and_array_form_are_the_same_config() {
    let map = ok(
        r#"{"mcpServers": {"github": {"command": "npx", "args": ["-y", "gh"], "env": {"TOKEN": "abc"}}}}"#,
    );
    let array = ok(
        r#"{"mcpServers": [{"name": "github", "command": "npx", "args": ["-y", "gh"], "env": {"TOKEN": "abc"}}]}"#,
    );
    assert_eq!(map.servers, array.servers);
    assert_eq!(map.servers[0].name, "github");
    assert!(
        matches!(&map.servers[0].transport, Transport::Stdio { command, .. } if command == "npx")
    );
}

#[test]
fn auto_protocol_picks_stdio_for_command_and_http_with_fallback_for_url() {
    let config = ok(
        r#"{"mcpServers": {"a": {"command": "x"}, "b": {"url": "http://h/mcp"}, "c": {"url": "http://h/sse", "protocol": "sse"}, "d": {"url": "http://h/mcp", "type": "http"}}}"#,
    );
    assert!(matches!(
        config.servers[0].transport,
        Transport::Stdio { .. }
    ));
    assert!(matches!(
        config.servers[1].transport,
        Transport::Http {
            fallback_to_sse: true,
            ..
        }
    ));
    assert!(matches!(config.servers[2].transport, Transport::Sse { .. }));
    assert!(matches!(
        config.servers[3].transport,
        Transport::Http {
            fallback_to_sse: false,
            ..
        }
    ));
}

#[test]
fn per_server_settings_are_read() {
    let config = ok(
        r#"{"call_timeout": "10s", "mcpServers": [{"name": "s", "command": "x", "working_dir": "/tmp", "enabled": false, "call_timeout": "1500ms", "init_timeout": "5s", "lifecycle": "discover"}]}"#,
    );
    let server = &config.servers[0];
    assert!(!server.enabled);
    assert_eq!(server.call_timeout, Some(Duration::from_millis(1500)));
    assert_eq!(server.init_timeout, Duration::from_secs(5));
    assert_eq!(server.lifecycle, Lifecycle::Discover);
    assert_eq!(config.call_timeout, Duration::from_secs(10));
}

#[test]
fn unknown_keys_warn_and_do_not_fail() {
    let config = ok(r#"{"colour": 1, "mcpServers": {"s": {"command": "x", "autoApprove": []}}}"#);
    assert_eq!(
        config.warnings,
        vec![
            "cfg.json: colour: unknown key, ignored",
            "cfg.json: mcpServers.s.autoApprove: unknown key, ignored"
        ]
    );
}

#[test]
fn refusals_name_the_file_the_key_and_the_reason() {
    assert_eq!(
        refused(r#"{"mcpServers": {"gh": {"command": 3}}}"#),
        "cfg.json: mcpServers.gh.command: must be a string, found a number"
    );
    assert_eq!(
        refused(r#"{"mcpServers": [{"name": "a", "url": "ftp://x"}]}"#),
        "cfg.json: mcpServers[0].url: \"ftp://x\" is not an http:// or https:// URL"
    );
    assert_eq!(
        refused(r#"{"mcpServers": [{"name": "a:b", "command": "x"}]}"#),
        "cfg.json: mcpServers[0].name: \"a:b\" contains ':', which separates server and tool in tool ids"
    );
    assert_eq!(
        refused(
            r#"{"mcpServers": [{"name": "a", "command": "x"}, {"name": "a", "command": "y"}]}"#
        ),
        "cfg.json: mcpServers[1].name: duplicate server name \"a\""
    );
    assert_eq!(
        refused(r#"{"mcpServers": {"a": {}}}"#),
        "cfg.json: mcpServers.a: needs \"command\" (stdio) or \"url\" (HTTP)"
    );
    assert_eq!(
        refused(r#"{"call_timeout": "soon"}"#)
            .split(':')
            .take(2)
            .collect::<Vec<_>>(),
        ["cfg.json", " call_timeout"]
    );
    assert!(
        refused(r#"{"routing_mode": "schema_deferred"}"#)
            .contains("direct_tool_response_mode: \"deferred\"")
    );
    assert!(refused("{not json").starts_with("cfg.json: not valid JSON"));
    assert_eq!(
        refused(r#"{"listen": "8080"}"#),
        "cfg.json: listen: \"8080\" is not host:port (e.g. \"127.0.0.1:8080\")"
    );
}

#[test]
fn overrides_win_over_the_file() {
    let overrides = Overrides {
        listen: Some("127.0.0.1:9999".into()),
        call_timeout: Some("7s".into()),
        startup_wait: Some("0".into()),
        routing_mode: None,
        direct_tool_response_mode: Some("deferred".into()),
        tool_response_mode: None,
        data_dir: None,
        store: None,
    };
    let config = parse_config(
        r#"{"listen": "127.0.0.1:1", "call_timeout": "1s", "direct_tool_response_mode": "full"}"#,
        "cfg.json",
        &overrides,
    )
    .expect("valid");
    assert_eq!(config.listen, "127.0.0.1:9999");
    assert_eq!(config.call_timeout, Duration::from_secs(7));
    assert_eq!(config.startup_wait, Duration::ZERO, "\"0\": no wait at all");
    assert_eq!(
        config.direct_tool_response_mode,
        crate::DirectToolResponseMode::Deferred
    );
    let bad = Overrides {
        listen: Some("nope".into()),
        ..Overrides::default()
    };
    let err = parse_config("{}", "cfg.json", &bad).expect_err("refused");
    assert_eq!(err.key(), Some("--listen / MCPLEX_LISTEN"));
}

#[test]
fn secrets_never_show_in_debug_and_are_redacted_from_text() {
    let config = ok(
        r#"{"mcpServers": {"s": {"command": "x", "args": ["--api-key", "sk-in-args-42"], "env": {"TOKEN": "hunter2-secret"}}, "h": {"url": "https://h", "headers": {"Authorization": "Bearer abcdef"}}}}"#,
    );
    let debug = format!("{config:?}");
    for secret in ["hunter2-secret", "abcdef", "sk-in-args-42"] {
        assert!(!debug.contains(secret), "{secret} in {debug}");
    }
    let redactor = crate::Redactor::for_server(&config.servers[0]);
    assert_eq!(
        redactor.redact("token=hunter2-secret!"),
        "token=[redacted]!"
    );
    assert!(!format!("{redactor:?}").contains("hunter2-secret"));
}

#[test]
fn disabled_flag_of_other_clients_is_honoured() {
    let config = ok(r#"{"mcpServers": {"s": {"command": "x", "disabled": true}}}"#);
    assert!(!config.servers[0].enabled);
}

#[test]
fn direct_mode_and_instructions_are_read() {
    let config = ok(r#"{"direct_tool_response_mode": "deferred", "instructions": "Be brief."}"#);
    assert_eq!(
        config.direct_tool_response_mode,
        crate::DirectToolResponseMode::Deferred
    );
    assert_eq!(config.instructions.as_deref(), Some("Be brief."));
    assert_eq!(
        ok("{}").direct_tool_response_mode,
        crate::DirectToolResponseMode::Full
    );
    assert_eq!(
        refused(r#"{"direct_tool_response_mode": "compact"}"#),
        "cfg.json: direct_tool_response_mode: unknown mode \"compact\"; expected \"full\" or \"deferred\""
    );
    assert_eq!(
        refused(r#"{"routing_mode": "schema_deferred"}"#),
        "cfg.json: routing_mode: \"schema_deferred\" is not a routing mode; write routing_mode: \"direct\" with direct_tool_response_mode: \"deferred\""
    );
}

#[test]
fn deferral_filters_and_search_settings() {
    let config = ok(
        r#"{"defer_tools": false, "tool_search": {"max_matches": 3}, "tool_response_mode": "compact",
        "routing_mode": "retrieve_tools",
        "mcpServers": {"gh": {"command": "x", "defer": true, "tools": {"include": ["create_*", "list_?"], "exclude": ["*_admin"], "defer": ["list_*"]}},
                       "fs": {"command": "y"}}}"#,
    );
    assert_eq!(config.max_matches, 3);
    assert_eq!(config.tool_response_mode, crate::ToolResponseMode::Compact);
    assert_eq!(config.routing_mode, RoutingMode::RetrieveTools);
    assert!(config.defers_anything());
    let gh = &config.servers[0];
    assert!(gh.tools.admits("create_issue") && gh.tools.admits("list_x"));
    assert!(
        !gh.tools.admits("list_xy")
            && !gh.tools.admits("create_admin")
            && !gh.tools.admits("delete")
    );
    assert!(
        gh.defers("create_issue", false),
        "the server's defer applies"
    );
    let fs = &config.servers[1];
    assert!(
        !fs.defers("read", false) && fs.defers("read", true),
        "the global default applies"
    );
    assert!(!ok(r#"{"mcpServers": {"fs": {"command": "y"}}}"#).defers_anything());
    assert!(
        refused(r#"{"tool_search": {"max_matches": 0}}"#)
            .contains("tool_search.max_matches: must be a whole number from 1 to 100")
    );
    assert_eq!(
        config.search_model,
        SearchModel::BuiltIn,
        "not set: the built-in model, hybrid"
    );
    assert_eq!(
        ok(r#"{"search_model": "models/minilm"}"#).search_model,
        SearchModel::Dir(std::path::PathBuf::from("models/minilm"))
    );
    assert_eq!(
        ok(r#"{"search_model": false}"#).search_model,
        SearchModel::Off,
        "false: plain BM25F"
    );
    assert!(
        refused(r#"{"search_model": " "}"#)
            .contains("search_model: must be the path of a model directory")
    );
    assert!(
        refused(r#"{"search_model": true}"#).contains("or false for no model, found a boolean")
    );
    assert!(refused(r#"{"search_model": 3}"#).contains("search_model"));
    assert_eq!(
        refused(r#"{"mcpServers": {"a": {"command": "x", "tools": {"include": "x"}}}}"#),
        "cfg.json: mcpServers.a.tools.include: must be an array of glob strings, found a string"
    );
}

#[test]
fn globs_match_whole_names() {
    let glob = |p: &str, t: &str| crate::Glob::new(p).matches(t);
    assert!(glob("*", "") && glob("*", "anything"));
    assert!(glob("a*c", "abbbc") && glob("a*c", "ac") && !glob("a*c", "acb"));
    assert!(glob("?b*", "abzz") && !glob("?b", "b"));
    assert!(glob("*_*_x", "a_b_c_x") && !glob("git_*", "github_x"));
}

#[test]
fn access_settings_default_to_loopback_safety() {
    let config = ok("{}");
    assert_eq!(config.http.max_body_bytes, 4 * 1024 * 1024);
    assert_eq!(config.http.require_auth, None);
    assert!(config.http.trusted_hosts.is_empty());
    assert!(config.profiles.is_empty());
    assert_eq!(config.data_dir, None);
}

#[test]
fn access_settings_parse() {
    let config = ok(r#"{
        "data_dir": "/var/lib/mcplex",
        "trusted_hosts": ["Gateway.Example.com", "10.0.0.5:8080"],
        "require_auth": false,
        "max_body_bytes": 65536,
        "mcpServers": {
            "web": {"command": "w", "trust": "auto"},
            "db": {"command": "d", "quarantined": true}
        },
        "profiles": [{"name": "research", "servers": ["web"]}]
    }"#);
    assert_eq!(
        config.data_dir.as_deref(),
        Some(std::path::Path::new("/var/lib/mcplex"))
    );
    assert_eq!(
        config.http.trusted_hosts,
        ["gateway.example.com", "10.0.0.5:8080"]
    );
    assert_eq!(config.http.require_auth, Some(false));
    assert_eq!(config.http.max_body_bytes, 65536);
    assert!(config.servers[0].trust_auto && !config.servers[0].quarantined);
    assert!(!config.servers[1].trust_auto && config.servers[1].quarantined);
    assert_eq!(config.profiles[0].name, "research");
    assert!(config.profiles[0].servers.contains("web"));
}

#[test]
fn access_refusals_name_the_key() {
    let unknown_member = refused(
        r#"{"mcpServers": {"web": {"command": "w"}}, "profiles": [{"name": "p", "servers": ["nope"]}]}"#,
    );
    assert!(
        unknown_member.contains("profiles[0].servers[0]") && unknown_member.contains("nope"),
        "{unknown_member}"
    );
    let bad_name = refused(r#"{"profiles": [{"name": "a/b", "servers": []}]}"#);
    assert!(bad_name.contains("profiles[0].name"), "{bad_name}");
    let twice =
        refused(r#"{"profiles": [{"name": "a", "servers": []}, {"name": "a", "servers": []}]}"#);
    assert!(twice.contains("defined twice"), "{twice}");
    let trust = refused(r#"{"mcpServers": {"web": {"command": "w", "trust": "yes"}}}"#);
    assert!(trust.contains("mcpServers.web.trust"), "{trust}");
    let body = refused(r#"{"max_body_bytes": 10}"#);
    assert!(body.contains("max_body_bytes"), "{body}");
    let host = refused(r#"{"trusted_hosts": ["http://x"]}"#);
    assert!(host.contains("trusted_hosts[0]"), "{host}");
}

#[test]
fn code_execution_is_a_routing_mode_with_limits() {
    let config = ok(
        r#"{"routing_mode": "code_execution", "code_execution_timeout": "30s",
        "code_execution_memory_limit": "16MiB", "code_execution_max_tool_calls": 12,
        "code_execution_max_concurrent_per_caller": 2}"#,
    );
    assert_eq!(config.routing_mode, RoutingMode::CodeExecution);
    assert_eq!(config.code.timeout, Duration::from_secs(30));
    assert_eq!(config.code.memory_bytes, 16 * 1024 * 1024);
    assert_eq!(config.code.max_tool_calls, 12);
    assert_eq!(config.code.max_concurrent_per_caller, 2);
    assert_eq!(ok("{}").code.max_concurrent_per_caller, 4);
    let defaults = ok("{}").code;
    assert_eq!(
        (
            defaults.timeout,
            defaults.memory_bytes,
            defaults.max_tool_calls
        ),
        (Duration::from_secs(120), 64 << 20, 100)
    );
    assert!(refused(r#"{"code_execution_timeout": "11m"}"#).contains("code_execution_timeout"));
    assert!(
        refused(r#"{"code_execution_memory_limit": "12 parsecs"}"#)
            .contains("code_execution_memory_limit")
    );
    assert!(
        refused(r#"{"code_execution_max_tool_calls": 0}"#)
            .contains("code_execution_max_tool_calls")
    );
    for bad in ["0", "-1", "\"4\"", "1.5"] {
        let text = format!(r#"{{"code_execution_max_concurrent_per_caller": {bad}}}"#);
        assert!(refused(&text).contains("code_execution_max_concurrent_per_caller"));
    }
}

#[test]
fn namespace_and_prompt_and_resource_filters_are_read_and_checked() {
    let config = ok(
        r#"{"mcpServers": {"a": {"command": "x", "namespace": false, "prompts": {"exclude": ["draft_*"]}, "resources": {"include": ["file:*"]}}, "b": {"command": "y"}}}"#,
    );
    let (a, b) = (&config.servers[0], &config.servers[1]);
    assert!(
        !a.namespace && b.namespace,
        "namespaced unless said otherwise"
    );
    assert!(!a.prompts.admits("draft_note") && a.prompts.admits("summary"));
    assert!(a.resources.admits("file:///x") && !a.resources.admits("https://x"));
    assert!(b.prompts.admits("anything") && b.resources.admits("anything"));

    let wrong = refused(r#"{"mcpServers": {"a": {"command": "x", "namespace": "no"}}}"#);
    assert!(wrong.contains("namespace"), "{wrong}");
    // `defer` means nothing for prompts: a warning, not a filter.
    let warned = parse_config(
        r#"{"mcpServers": {"a": {"command": "x", "prompts": {"defer": ["*"]}}}}"#,
        "cfg.json",
        &Overrides::default(),
    )
    .expect("valid");
    assert!(
        warned.warnings.iter().any(|w| w.contains("prompts.defer")),
        "{:?}",
        warned.warnings
    );
}

#[test]
fn inherit_env_is_read_and_a_wrong_value_is_refused() {
    let inherit = |text: &str| match &ok(text).servers[0].transport {
        Transport::Stdio { inherit_env, .. } => inherit_env.clone(),
        other => panic!("not stdio: {other:?}"),
    };
    assert_eq!(
        inherit(r#"{"mcpServers": {"s": {"command": "x"}}}"#),
        crate::InheritEnv::default()
    );
    assert_eq!(
        inherit(r#"{"mcpServers": {"s": {"command": "x", "inherit_env": true}}}"#),
        crate::InheritEnv::All
    );
    let listed = inherit(r#"{"mcpServers": {"s": {"command": "x", "inherit_env": ["AWS_*"]}}}"#);
    assert!(
        matches!(&listed, crate::InheritEnv::AllowList(globs) if globs.len() == 1 && globs[0].matches("AWS_REGION")),
        "{listed:?}"
    );
    let err = parse_config(
        r#"{"mcpServers": {"s": {"command": "x", "inherit_env": "yes"}}}"#,
        "cfg.json",
        &Overrides::default(),
    )
    .expect_err("refused");
    assert_eq!(err.key(), Some("mcpServers.s.inherit_env"));
}

#[test]
fn an_inherit_env_entry_only_the_gateways_own_variables_match_is_warned_of() {
    let warned = parse_config(
        r#"{"mcpServers": {"s": {"command": "x", "inherit_env": ["AWS_*", "MCPLEX_STORE", "M*"]}}}"#,
        "cfg.json",
        &Overrides::default(),
    )
    .expect("valid");
    assert_eq!(
        warned.warnings,
        [
            "mcpServers.s.inherit_env: \"MCPLEX_STORE\" is never passed: no server inherits the gateway's own MCPLEX_* and OTEL_* variables (set what it needs in its env)"
        ]
    );
    assert!(crate::gateways_own("MCPLEX_API_KEY"));
    assert!(crate::gateways_own("OTEL_EXPORTER_OTLP_HEADERS"));
    assert!(!crate::gateways_own("AWS_REGION"));
}

#[test]
fn a_url_in_a_refusal_or_in_debug_output_shows_no_credentials() {
    let err = parse_config(
        r#"{"mcpServers": {"s": {"url": "ftp://admin:hunter22@h/?key=k3y-value", "protocol": "http"}}}"#,
        "cfg.json",
        &Overrides::default(),
    )
    .expect_err("refused");
    let message = err.to_string();
    assert!(
        !message.contains("hunter22") && !message.contains("k3y-value"),
        "{message}"
    );
    let config = ok(r#"{"mcpServers": {"s": {"url": "http://admin:hunter22@h/?key=k3y-value"}}}"#);
    let debug = format!("{config:?}");
    assert!(
        !debug.contains("hunter22") && !debug.contains("k3y-value"),
        "{debug}"
    );
}

#[test]
fn listener_limits_default_safe_and_parse() {
    use std::time::Duration;
    let config = ok("{}");
    assert_eq!(config.listener.header_read_timeout, Duration::from_secs(10));
    assert_eq!(config.listener.idle_timeout, Duration::from_secs(60));
    assert_eq!(config.listener.max_sessions, 1000);
    let config = ok(r#"{
        "http_header_read_timeout": "2s", "http_body_read_timeout": "3s",
        "http_idle_timeout": "500ms", "max_connections": 64,
        "session_idle_timeout": "5m", "max_sessions": 10
    }"#);
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    assert_eq!(config.listener.header_read_timeout, Duration::from_secs(2));
    assert_eq!(config.listener.body_read_timeout, Duration::from_secs(3));
    assert_eq!(config.listener.idle_timeout, Duration::from_millis(500));
    assert_eq!(config.listener.max_connections, 64);
    assert_eq!(
        config.listener.session_idle_timeout,
        Duration::from_secs(300)
    );
    assert_eq!(config.listener.max_sessions, 10);
    let zero = refused(r#"{"max_sessions": 0}"#);
    assert!(zero.contains("max_sessions"), "{zero}");
    let never = refused(r#"{"http_idle_timeout": "0s"}"#);
    assert!(never.contains("http_idle_timeout"), "{never}");
}

#[test]
fn a_postgres_store_is_read_shown_redacted_and_anything_else_refused() {
    let config = parse_config(
        r#"{"store": "postgres://mcplex:s3cret@db.internal:5432/mcplex"}"#,
        "c.json",
        &Overrides::default(),
    )
    .expect("valid");
    let store = config.store.as_ref().expect("store");
    assert_eq!(
        store.expose(),
        "postgres://mcplex:s3cret@db.internal:5432/mcplex"
    );
    assert!(
        !format!("{config:?}").contains("s3cret"),
        "the password never shows in Debug"
    );
    let flag = Overrides {
        store: Some("postgresql://other@h/db".into()),
        ..Overrides::default()
    };
    let config = parse_config(r#"{"store": "postgres://x@y/z"}"#, "c.json", &flag).expect("valid");
    assert_eq!(
        config.store.as_ref().map(crate::StoreUrl::expose),
        Some("postgresql://other@h/db"),
        "the flag or MCPLEX_STORE wins over the file"
    );
    let error = parse_config(
        r#"{"store": "/var/lib/mcplex"}"#,
        "c.json",
        &Overrides::default(),
    )
    .expect_err("not a URL");
    assert!(error.to_string().contains("store"), "{error}");
}

#[test]
fn startup_wait_defaults_to_thirty_seconds_and_takes_a_duration_or_zero() {
    assert_eq!(ok("{}").startup_wait, Duration::from_secs(30));
    assert_eq!(
        ok(r#"{"startup_wait": "2m"}"#).startup_wait,
        Duration::from_secs(120)
    );
    assert_eq!(ok(r#"{"startup_wait": "0"}"#).startup_wait, Duration::ZERO);
    let err = parse_config(
        r#"{"startup_wait": "soon"}"#,
        "c.json",
        &Overrides::default(),
    )
    .expect_err("not a duration");
    assert_eq!(err.key(), Some("startup_wait"));
}

#[test]
fn the_audit_log_keeps_days_and_rows_and_may_copy_each_row_to_a_sink() {
    let config = ok(r#"{"audit_retention_rows": 5000, "audit_sink": "/var/log/mcplex.jsonl"}"#);
    assert_eq!(config.audit.retention_rows, Some(5000));
    assert_eq!(
        config.audit.sink,
        Some(crate::AuditSink::File("/var/log/mcplex.jsonl".into()))
    );
    let config = ok(r#"{"audit_retention_rows": 0, "audit_sink": "stdout"}"#);
    assert_eq!(config.audit.retention_rows, None, "0: no row limit");
    assert_eq!(config.audit.sink, Some(crate::AuditSink::Stdout));
    assert_eq!(ok("{}").audit.sink, None);
    assert_eq!(
        refused(r#"{"audit_retention_rows": 10}"#),
        "cfg.json: audit_retention_rows: must be a whole number of rows, at least 1000 (0: no limit), found 10"
    );
    assert!(refused(r#"{"audit_sink": ""}"#).contains("audit_sink: must be \"stdout\""));
    assert!(refused(r#"{"audit_sink": 3}"#).contains("audit_sink"));
}
