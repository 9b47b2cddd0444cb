//! A worker program for this crate's own tests (`tests/engine.rs`): the gateway's binary serves
//! workers through its hidden subcommand instead.

fn main() -> std::process::ExitCode {
    mcplex_code::serve_worker()
}
