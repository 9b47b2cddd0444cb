//! `sandbox`: on with no configuration, top-level defaults overridden per server key by key,
//! `env` merged into what the server inherits, and refusals that name the key.

use std::path::PathBuf;

use crate::tests::{ok, refused};
use crate::{InheritEnv, Sandbox, Transport};

fn sandbox_of(config: &crate::Config, server: usize) -> Sandbox {
    match &config.servers[server].transport {
        Transport::Stdio { sandbox, .. } => sandbox.clone(),
        other => panic!("not a process: {other:?}"),
    }
}

#[test]
fn every_stdio_server_is_sandboxed_with_no_configuration() {
    let config = ok(r#"{"mcpServers": {"s": {"command": "x"}}}"#);
    assert_eq!(sandbox_of(&config, 0), Sandbox::default());
    assert!(Sandbox::default().enabled && Sandbox::default().network);
}

#[test]
fn a_server_overrides_the_top_level_key_by_key() {
    let config = ok(r#"{
        "sandbox": {"network": false, "memory_mb": 512, "write": ["/srv/shared"]},
        "mcpServers": {
            "plain": {"command": "x"},
            "files": {"command": "x", "sandbox": {"write": ["/srv/notes"], "required": true}},
            "legacy": {"command": "x", "sandbox": false}
        }}"#);
    let plain = sandbox_of(&config, 0);
    assert!(!plain.network);
    assert_eq!(plain.limits.memory_mb, 512);
    assert_eq!(plain.write, [PathBuf::from("/srv/shared")]);
    let files = sandbox_of(&config, 1);
    assert!(!files.network && files.required);
    assert_eq!(
        files.write,
        [PathBuf::from("/srv/notes")],
        "a list replaces"
    );
    assert!(!sandbox_of(&config, 2).enabled);
}

#[test]
fn top_level_false_turns_it_off_unless_a_server_says_true() {
    let config = ok(r#"{"sandbox": false, "mcpServers": {
        "a": {"command": "x"}, "b": {"command": "x", "sandbox": true}}}"#);
    assert!(!sandbox_of(&config, 0).enabled);
    assert!(sandbox_of(&config, 1).enabled);
}

#[test]
fn sandbox_env_adds_to_what_the_server_inherits() {
    let config = ok(
        r#"{"mcpServers": {"s": {"command": "x", "inherit_env": ["AWS_*"],
        "sandbox": {"env": ["HTTPS_PROXY"]}}}}"#,
    );
    let Transport::Stdio { inherit_env, .. } = &config.servers[0].transport else {
        panic!("a process");
    };
    let InheritEnv::AllowList(globs) = inherit_env else {
        panic!("an allow-list");
    };
    assert!(globs.iter().any(|g| g.matches("AWS_REGION")));
    assert!(globs.iter().any(|g| g.matches("HTTPS_PROXY")));
}

#[test]
fn bad_values_are_refused_with_their_key() {
    for (text, key) in [
        (
            r#"{"mcpServers": {"s": {"command": "x", "sandbox": "yes"}}}"#,
            "mcpServers.s.sandbox",
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "sandbox": {"write": ["relative/dir"]}}}}"#,
            "mcpServers.s.sandbox.write[0]",
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "sandbox": {"network": "off"}}}}"#,
            "mcpServers.s.sandbox.network",
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "sandbox": {"open_files": 3}}}}"#,
            "mcpServers.s.sandbox.open_files",
        ),
        (r#"{"sandbox": {"memory_mb": -1}}"#, "sandbox.memory_mb"),
        (r#"{"sandbox": {"env": ["X"]}}"#, "sandbox.env"),
        (
            r#"{"mcpServers": {"s": {"command": "x", "sandbox": {"netwrk": false}}}}"#,
            "mcpServers.s.sandbox.netwrk",
        ),
    ] {
        let why = refused(text);
        assert!(why.contains(key), "{text}: {why}");
    }
}

#[test]
fn a_sandbox_on_a_url_server_is_a_warning() {
    let config = ok(r#"{"mcpServers": {"u": {"url": "https://x.example/mcp", "sandbox": {}}}}"#);
    assert!(
        config
            .server_warnings
            .iter()
            .any(|w| w.contains("mcpServers.u.sandbox")),
        "{:?}",
        config.server_warnings
    );
}
