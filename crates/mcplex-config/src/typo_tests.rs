//! `parse_config` on the first-hour mistakes: misspelled keys refused with the key they were
//! meant to be, other clients' keys kept as warnings, and VS Code's `servers` and `inputs`.

use crate::Transport;
use crate::tests::{ok, refused};

#[test]
fn a_misspelled_key_is_refused_with_the_key_it_was_meant_to_be() {
    // Named before the transport's "needs command or url", which would hide the typo.
    assert_eq!(
        refused(r#"{"mcpServers": {"a": {"comand": "x"}}}"#),
        r#"cfg.json: mcpServers.a.comand: unknown key; did you mean "command"?"#
    );
    assert_eq!(
        refused(r#"{"mcpServers": [{"name": "a", "command": "x", "arg": ["-y"]}]}"#),
        r#"cfg.json: mcpServers[0].arg: unknown key; did you mean "args"?"#
    );
    assert_eq!(
        refused(r#"{"call_timout": "5s"}"#),
        r#"cfg.json: call_timout: unknown key; did you mean "call_timeout"?"#
    );
    assert_eq!(
        refused(r#"{"mcpServer": {"a": {"command": "x"}}}"#),
        r#"cfg.json: mcpServer: unknown key; did you mean "mcpServers"?"#
    );
    assert_eq!(
        refused(r#"{"mcpServers": {"a": {"command": "x", "tools": {"exlude": ["*"]}}}}"#),
        r#"cfg.json: mcpServers.a.tools.exlude: unknown key; did you mean "exclude"?"#
    );
}

#[test]
fn only_warnings_from_server_entries_are_server_warnings() {
    let config = ok(
        r#"{"colour": 1, "mcpServers": {"s": {"command": "x", "autoApprove": [], "tools": {"pin": 1}}}}"#,
    );
    assert_eq!(
        config.server_warnings,
        vec![
            "cfg.json: mcpServers.s.autoApprove: unknown key, ignored",
            "cfg.json: mcpServers.s.tools.pin: unknown key, ignored",
        ]
    );
    assert_eq!(config.warnings.len(), 3, "{:?}", config.warnings);
    assert!(ok(r#"{"colour": 1}"#).server_warnings.is_empty());
}

#[test]
fn vs_code_servers_are_read_as_they_are() {
    let config = ok(r#"{"servers": {
        "files": {"type": "stdio", "command": "npx", "args": ["-y", "fs"]},
        "web": {"type": "http", "url": "https://example.com/mcp"}
    }}"#);
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["files", "web"]);
    assert!(
        matches!(&config.servers[0].transport, Transport::Stdio { command, .. } if command == "npx")
    );
    assert!(
        matches!(&config.servers[1].transport, Transport::Http { url, .. } if url == "https://example.com/mcp")
    );
    // Refusals name VS Code's key.
    assert_eq!(
        refused(r#"{"servers": {"a": {"type": "stdio"}}}"#),
        r#"cfg.json: servers.a.command: required for protocol "stdio""#
    );
    assert_eq!(
        refused(r#"{"servers": {}, "mcpServers": {}}"#),
        r#"cfg.json: servers: both "mcpServers" and VS Code's "servers" are set; keep one"#
    );
}

#[test]
fn vs_code_inputs_are_reported_and_their_references_refused() {
    let config = ok(
        r#"{"inputs": [{"id": "key", "type": "promptString"}], "servers": {"a": {"command": "x"}}}"#,
    );
    assert_eq!(config.warnings.len(), 1);
    assert!(
        config.warnings[0].starts_with("cfg.json: inputs: unsupported: mcplex does not prompt"),
        "{:?}",
        config.warnings
    );
    assert_eq!(
        refused(r#"{"servers": {"a": {"command": "x", "args": ["--key", "${input:key}"]}}}"#),
        r#"cfg.json: servers.a.args[1]: "${input:key}" refers to a VS Code input, which mcplex cannot prompt for ("inputs" is unsupported); write the value itself"#
    );
    // Only the reference is shown: the rest of a header may be a secret.
    let refusal = refused(
        r#"{"mcpServers": {"a": {"url": "https://x/mcp", "headers": {"Authorization": "s3cret ${input:token}"}}}}"#,
    );
    assert!(
        refusal.starts_with(
            r#"cfg.json: mcpServers.a.headers.Authorization: "${input:token}" refers"#
        ) && !refusal.contains("s3cret"),
        "{refusal}"
    );
}
