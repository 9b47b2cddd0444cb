//! An upstream whose whole output is the fuzz input (newline-delimited JSON-RPC, or anything):
//! the gateway's client reads it, answers what it must, and reports the server ready or failed.
//! Never a panic, never a hang.
#![no_main]

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use mcplex_config::{Config, ServerConfig, Transport};
use mcplex_upstream::{BuiltinConnector, Upstreams};

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime")
    })
}

fuzz_target!(|data: &[u8]| {
    let output = data.to_vec();
    runtime().block_on(async move {
        let connector: BuiltinConnector = Arc::new(move |_kind: &str| {
            let reader: Box<dyn tokio::io::AsyncRead + Send + Unpin> =
                Box::new(std::io::Cursor::new(output.clone()));
            let writer: Box<dyn tokio::io::AsyncWrite + Send + Unpin> = Box::new(tokio::io::sink());
            Some((reader, writer))
        });
        let mut server = ServerConfig::new(
            "fuzz",
            Transport::Builtin {
                kind: "fuzz".to_owned(),
            },
        );
        server.init_timeout = Duration::from_millis(200);
        let (events_tx, mut events) = tokio::sync::mpsc::unbounded_channel();
        let upstreams = Upstreams::start(
            &Config::with_servers(vec![server]),
            Some(connector),
            None,
            events_tx,
            mcplex_upstream::Isolation::unavailable(),
        );
        // The first verdict (ready or failed) is enough; then stop everything.
        let _ = tokio::time::timeout(Duration::from_secs(2), async {
            while let Some(event) = events.recv().await {
                if event.report.health() != mcplex_protocol::ServerHealth::Connecting {
                    break;
                }
            }
        })
        .await;
        upstreams.shutdown().await;
    });
});
