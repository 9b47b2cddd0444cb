//! MCP servers for tests, benchmarks and `mcplex serve --demo`, speaking raw JSON-RPC.
//!
//! Owns: a small server whose tools misbehave on demand (slow with progress, crash, change
//! their list, fail, answer protocol errors, fork a grandchild), and corpus servers that serve
//! any tool file of `shared/corpora` and validate-and-echo their calls. Reachable in-process
//! (a byte stream, for the demo), on stdio (the `mcplex-fixture` binary) and over stateless
//! streamable HTTP (for benchmarks). Must not: depend on any gateway crate; it plays the
//! upstream, so it must not share the gateway's code paths it is used to test.

mod conformance;
mod corpus;
mod hostile;
mod http;
mod lines;
mod model;
mod server;
mod tools;

pub use conformance::ConformanceServer;
pub use corpus::{CorpusTool, load_corpus, ref45};
pub use hostile::{ATTACK_LINE, attack_at_start};
pub use http::{serve_denying, serve_endless_error, serve_http};
pub use lines::{Writes, serve_lines, serve_lines_writing};
pub use model::installed_sentence_model;
pub use server::{Fixture, FixtureOptions, Sabotage};
