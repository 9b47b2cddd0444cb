//! The `--demo` fleet: built-in servers reached over in-process byte streams. `demo` offers
//! working tools (echo, add, slow with progress, ...); the seven `ref45` servers mirror the 45
//! tools of `shared/corpora/ref45.tools.json` (embedded at build time) under their own server
//! names, so ids match the corpus, and validate and echo their calls.

use std::sync::Arc;

use mcplex_config::{Config, ServerConfig, Transport};
use mcplex_fixtures::{Fixture, FixtureOptions, ref45, serve_lines};
use mcplex_upstream::BuiltinConnector;

const KIT: &str = "kit";
const CORPUS_PREFIX: &str = "ref45:";

/// The demo config: `demo` plus one server per ref45 server name.
pub fn config(listen: Option<String>) -> Config {
    let mut corpus_servers: Vec<String> = ref45().into_iter().map(|t| t.server).collect();
    corpus_servers.sort();
    corpus_servers.dedup();
    let builtin = |name: &str, kind: String| ServerConfig::new(name, Transport::Builtin { kind });
    let mut servers = vec![builtin("demo", KIT.to_owned())];
    servers.extend(
        corpus_servers
            .iter()
            .map(|s| builtin(s, format!("{CORPUS_PREFIX}{s}"))),
    );
    let mut config = Config::with_servers(servers);
    if let Some(listen) = listen {
        config.listen = listen;
    }
    config
}

/// Starts a fresh built-in server for each connection the supervisor opens.
pub fn connector() -> BuiltinConnector {
    Arc::new(|kind: &str| {
        let options = if kind == KIT {
            FixtureOptions::kit("demo")
        } else {
            let server = kind.strip_prefix(CORPUS_PREFIX)?;
            let corpus = ref45().into_iter().filter(|t| t.server == server).collect();
            FixtureOptions {
                kit: false,
                corpus,
                ..FixtureOptions::kit(server.to_owned())
            }
        };
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        let (their_reader, their_writer) = tokio::io::split(theirs);
        tokio::spawn(serve_lines(
            Fixture::new(options),
            their_reader,
            their_writer,
        ));
        let (reader, writer) = tokio::io::split(ours);
        Some((Box::new(reader) as _, Box::new(writer) as _))
    })
}
