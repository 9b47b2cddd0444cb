//! The running config as the operator may see it (`GET /api/v1/config`, the dashboard's
//! Config page): every setting that shapes what the gateway serves, and each server's
//! transport with its secrets replaced. Env and header values are never shown (only their
//! names), URLs pass `redact_url`, a stdio server's arguments pass its `Redactor` (its env and
//! header values, URL secrets), an OAuth client secret is only said to exist, and the store's
//! URL loses its password.

use mcplex_config::{
    Config, Glob, REDACTED, Redactor, SearchModel, ServerConfig, ServerOrigin, ToolFilter,
    Transport, redact_store_url, redact_url,
};
use serde_json::{Value, json};

pub fn config_view(config: &Config) -> Value {
    json!({
        "listen": config.listen,
        "routing_mode": config.routing_mode.as_str(),
        "direct_tool_response_mode": config.direct_tool_response_mode.as_str(),
        "tool_response_mode": config.tool_response_mode.as_str(),
        "defer_tools": config.defer_tools,
        "tool_search_max_matches": config.max_matches,
        "call_timeout": humantime::format_duration(config.call_timeout).to_string(),
        "startup_wait": humantime::format_duration(config.startup_wait).to_string(),
        "search_model": match &config.search_model {
            SearchModel::BuiltIn => json!("built-in"),
            SearchModel::Dir(path) => json!(path.display().to_string()),
            SearchModel::Off => json!(false),
        },
        "data_dir": config.data_dir.as_ref().map(|p| p.display().to_string()),
        "store": config.store.as_ref().map(|url| redact_store_url(url.expose())),
        "http": {
            "trusted_hosts": config.http.trusted_hosts,
            "require_auth": config.http.require_auth,
            "max_body_bytes": config.http.max_body_bytes,
        },
        "audit": {
            "retention_days": config.audit.retention_days,
            "arguments": config.audit.arguments,
        },
        "profiles": config.profiles.iter().map(|p| json!({"name": p.name, "servers": p.servers})).collect::<Vec<_>>(),
        "auth": config.auth.as_ref().map(|auth| json!({
            "issuer": auth.issuer,
            "audience": auth.audience,
            "rules": auth.rules.len(),
            "dashboard": auth.dashboard.as_ref().map(|sign_in| json!({
                "client_id": sign_in.client_id,
                "client_secret": sign_in.client_secret.as_ref().map(|_| REDACTED),
                "scopes": sign_in.scopes,
                "operators": sign_in.operators.iter()
                    .map(|m| json!({"claim": m.claim, "value": m.value}))
                    .collect::<Vec<_>>(),
            })),
        })),
        "servers": config.servers.iter().map(server_view).collect::<Vec<_>>(),
    })
}

pub fn server_view(server: &ServerConfig) -> Value {
    let redactor = Redactor::for_server(server);
    json!({
        "name": server.name,
        "origin": match server.origin {
            ServerOrigin::File => "file",
            ServerOrigin::Added => "added",
        },
        "enabled": server.enabled,
        "transport": transport_view(&server.transport, &redactor),
        "defer": server.defer,
        "tools": filter_view(&server.tools),
        "call_timeout": server.call_timeout.map(|t| humantime::format_duration(t).to_string()),
        "init_timeout": humantime::format_duration(server.init_timeout).to_string(),
        "trust": if server.trust_auto { "auto" } else { "manual" },
        "quarantined": server.quarantined,
        "namespace": server.namespace,
        "oauth": server.oauth.as_ref().map(|oauth| json!({
            "client_id": oauth.client_id,
            "client_secret": oauth.client_secret.as_ref().map(|_| REDACTED),
            "scopes": oauth.scopes,
        })),
    })
}

fn transport_view(transport: &Transport, redactor: &Redactor) -> Value {
    let names_only = |map: &std::collections::BTreeMap<String, String>| -> Value {
        map.keys().map(|k| (k.clone(), json!(REDACTED))).collect()
    };
    match transport {
        Transport::Stdio {
            command,
            args,
            env,
            working_dir,
            sandbox,
            ..
        } => json!({
            "type": "stdio",
            "command": redactor.redact(command),
            "args": args.iter().map(|a| redactor.redact(a)).collect::<Vec<_>>(),
            "env": names_only(env),
            "working_dir": working_dir.as_ref().map(|p| p.display().to_string()),
            "sandbox": sandbox_view(sandbox),
        }),
        Transport::Http {
            url,
            headers,
            fallback_to_sse,
        } => json!({
            "type": if *fallback_to_sse { "auto" } else { "http" },
            "url": redact_url(url),
            "headers": names_only(headers),
        }),
        Transport::Sse { url, headers } => json!({
            "type": "sse",
            "url": redact_url(url),
            "headers": names_only(headers),
        }),
        Transport::Builtin { kind } => json!({"type": "builtin", "kind": kind}),
    }
}

fn sandbox_view(sandbox: &mcplex_config::Sandbox) -> Value {
    if !sandbox.enabled {
        return json!(false);
    }
    let shown = |paths: &[std::path::PathBuf]| {
        paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
    };
    json!({
        "read": sandbox.read.as_deref().map(shown),
        "write": shown(&sandbox.write),
        "network": sandbox.network,
        "required": sandbox.required,
        "memory_mb": sandbox.limits.memory_mb,
        "processes": sandbox.limits.processes,
        "open_files": sandbox.limits.open_files,
    })
}

fn filter_view(filter: &ToolFilter) -> Value {
    let patterns = |globs: &[Glob]| globs.iter().map(Glob::pattern).collect::<Vec<_>>();
    json!({
        "include": patterns(&filter.include),
        "exclude": patterns(&filter.exclude),
        "defer": patterns(&filter.defer),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_of_servers_and_the_store_never_show() {
        let text = r#"{"mcpServers": {
            "local": {"command": "tool", "args": ["--token", "sk-live-123", "--api-key=sk-only-in-args"], "env": {"API_KEY": "sk-live-123"}},
            "remote": {"url": "https://user:pw@example.com/mcp?key=q-secret", "headers": {"Authorization": "Bearer h-secret"}}
        }, "store": "postgres://mcplex:db-secret@db.example.com/mcplex"}"#;
        let config =
            mcplex_config::parse_config(text, "test", &Default::default()).expect("config");
        let shown = config_view(&config).to_string();
        for secret in [
            "sk-live-123",
            "sk-only-in-args",
            "pw@",
            "q-secret",
            "h-secret",
            "db-secret",
        ] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        for visible in ["API_KEY", "Authorization", "example.com", "\"--token\""] {
            assert!(shown.contains(visible), "{visible} missing in {shown}");
        }
    }
}
