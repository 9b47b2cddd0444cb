//! The sandbox of the code_execution surface: JavaScript (QuickJS, through rquickjs) that calls
//! tools and combines their results in one round trip.
//!
//! Owns: running each script in a worker process of its own (the gateway's executable started
//! with its hidden worker subcommand, kept warm in a small pool), the JSON-lines protocol with
//! it, the script API (`call_tool`, `call_tools`, `input`), fair slots per caller, and every
//! limit: the wall-clock deadline (the worker is killed at it, whatever the script is doing),
//! memory, stack and the number of tool calls. A worker serves exactly one run and is killed
//! after it, so nothing of a run outlives it.
//! Must not: know how a tool is called, or the binary's command line. Every call goes to a
//! [`ToolHost`], which the surface implements with the gateway's one dispatch path (scope,
//! approvals, validation included); the worker program is handed in as a [`WorkerCommand`].
//! No filesystem, network, process or timer API exists inside a run.

mod bounds;
mod engine;
mod error;
mod host;
mod pool;
mod process;
mod protocol;
mod sandbox;
mod slots;
mod worker;

pub use bounds::MAX_MESSAGE_BYTES;
pub use engine::{Engine, EngineOptions, Limits, Outcome, Run};
pub use error::RunError;
pub use host::{ToolHost, result_for_script};
pub use process::WorkerCommand;
pub use worker::serve_worker;

#[cfg(test)]
mod tests;
