//! Servers added while the gateway runs (from the dashboard), kept in the control plane so
//! every replica runs them. An entry is read by the config file's own parser, exactly as it
//! would be under `mcpServers`, and starts quarantined like any new server; the config file
//! stays authoritative: a name it has is never taken from the store.
//!
//! What only the operator who edits the file may grant is refused in an added entry: the
//! gateway's own environment (`inherit_env`, an OAuth `client_secret` read from a variable, so
//! `oauth` at all), a working directory, and any `sandbox` setting. An added stdio server runs
//! under the default sandbox, which must be in force: where the kernel cannot confine it, it
//! does not start.

use serde_json::{Value, json};

use crate::{Config, ConfigError, Overrides, ServerConfig, ServerOrigin, Transport, parse_config};

/// Why an entry cannot be added.
#[derive(Debug, thiserror::Error)]
pub enum AddedServerError {
    /// The parser refused it (the message names the key).
    #[error("{0}")]
    Invalid(#[from] ConfigError),
    /// It parsed, but with something the parser would only warn about in a file (an unknown
    /// key, say): refused here, where nobody reads the log.
    #[error("{}", .0.join("; "))]
    Warnings(Vec<String>),
    /// The name is not one entry's name, or the entry is not one server.
    #[error("{0}")]
    Shape(String),
    /// A key only the config file may set.
    #[error(
        "\"{0}\" can be set only in the config file, not on a server added while the gateway runs"
    )]
    FileOnly(String),
}

/// Keys of a server entry that reach beyond the server itself (the gateway's environment and
/// files, its sandbox): the config file's to set.
const FILE_ONLY_KEYS: [&str; 5] = ["inherit_env", "working_dir", "cwd", "oauth", "sandbox"];

/// Reads the `mcpServers` entry `entry` of a server named `name`, as the config file's parser
/// reads one, quarantined. A name that would not be a valid key there is refused.
pub fn parse_added_server(name: &str, entry: &Value) -> Result<ServerConfig, AddedServerError> {
    if !well_formed_name(name) {
        return Err(AddedServerError::Shape(format!(
            "{name:?} is not a name for an added server: up to {MAX_NAME} letters, digits, '_', '-' and '.', not starting with '.'"
        )));
    }
    let Some(object) = entry.as_object() else {
        return Err(AddedServerError::Shape(
            "a server is a JSON object, as under \"mcpServers\" in the config file".to_owned(),
        ));
    };
    if let Some(key) = FILE_ONLY_KEYS.iter().find(|key| object.contains_key(**key)) {
        return Err(AddedServerError::FileOnly((*key).to_owned()));
    }
    let text = json!({ "mcpServers": { name: entry } }).to_string();
    let config = parse_config(
        &text,
        &format!("the server {name:?} added from the dashboard"),
        &Overrides::default(),
    )?;
    if !config.warnings.is_empty() {
        return Err(AddedServerError::Warnings(config.warnings));
    }
    let mut servers = config.servers.into_iter();
    let (Some(mut server), None) = (servers.next(), servers.next()) else {
        return Err(AddedServerError::Shape(format!(
            "{name:?} must name exactly one server"
        )));
    };
    server.quarantined = true;
    server.origin = ServerOrigin::Added;
    if let Transport::Stdio { sandbox, .. } = &mut server.transport {
        sandbox.required = true;
    }
    Ok(server)
}

/// The longest name of an added server.
const MAX_NAME: usize = 64;

/// A name that is safe wherever a server's name goes (URLs, paths, metric labels, logs).
fn well_formed_name(name: &str) -> bool {
    (1..=MAX_NAME).contains(&name.len())
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// `config` with the servers added in the control plane: those it had from the store are
/// replaced by `added`, except a name the config file has, which keeps the file's entry.
/// Returns the names `added` holds that the file shadows.
pub fn with_added(config: &Config, added: &[ServerConfig]) -> (Config, Vec<String>) {
    let mut merged = config.clone();
    merged.servers.retain(|s| s.origin == ServerOrigin::File);
    let mut shadowed = Vec::new();
    for server in added {
        if merged.servers.iter().any(|s| s.name == server.name) {
            shadowed.push(server.name.clone());
        } else {
            merged.servers.push(server.clone());
        }
    }
    (merged, shadowed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_read_as_the_file_reads_it_and_starts_quarantined() {
        let server = parse_added_server(
            "docs",
            &json!({"command": "npx", "args": ["-y", "x"], "env": {"K": "v"}, "quarantined": false}),
        )
        .expect("valid");
        assert_eq!(server.name, "docs");
        assert!(server.quarantined, "whatever the entry says");
        assert_eq!(server.origin, ServerOrigin::Added);
        let Transport::Stdio { sandbox, .. } = &server.transport else {
            panic!("a stdio server: {server:?}");
        };
        assert!(
            sandbox.enabled && sandbox.required,
            "confined, or not started"
        );
        // Named here, not read from the list the parser checks, so a key dropped there fails.
        for key in ["inherit_env", "working_dir", "cwd", "oauth", "sandbox"] {
            let refused = parse_added_server("docs", &json!({"command": "x", key: true}));
            assert!(
                matches!(&refused, Err(AddedServerError::FileOnly(k)) if k == key),
                "{key}: {refused:?}"
            );
        }
        let refused = |entry: Value| {
            parse_added_server("docs", &entry)
                .map(|_| ())
                .expect_err("refused")
        };
        assert!(matches!(
            refused(json!({"commnd": "x"})),
            AddedServerError::Invalid(_)
        ));
        // A misspelled key is refused, with the key named, whether the file's parser would
        // refuse it (a likely typo) or only warn (an unknown key).
        for key in ["argz", "zzz_unknown"] {
            let unknown = refused(json!({"command": "x", key: []}));
            assert!(unknown.to_string().contains(key), "{unknown}");
        }
        assert!(matches!(refused(json!("x")), AddedServerError::Shape(_)));
        for name in ["a:b", "", "../x", ".hidden", "a b", &"x".repeat(65)] {
            assert!(
                matches!(
                    parse_added_server(name, &json!({"command": "x"})),
                    Err(AddedServerError::Shape(_))
                ),
                "{name:?}"
            );
        }
    }

    #[test]
    fn the_file_keeps_its_names_and_stored_servers_are_replaced_whole() {
        let file = parse_config(
            r#"{"mcpServers": {"a": {"command": "a"}}}"#,
            "f",
            &Overrides::default(),
        )
        .expect("config");
        let added = |name: &str| parse_added_server(name, &json!({"command": name})).expect("ok");
        let (merged, shadowed) = with_added(&file, &[added("a"), added("b")]);
        let names: Vec<_> = merged
            .servers
            .iter()
            .map(|s| (s.name.as_str(), s.origin))
            .collect();
        assert_eq!(
            names,
            [("a", ServerOrigin::File), ("b", ServerOrigin::Added)]
        );
        assert_eq!(shadowed, ["a"]);
        // The next set replaces the last: b removed, c added.
        let (again, _) = with_added(&merged, &[added("c")]);
        let names: Vec<_> = again.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "c"]);
    }
}
