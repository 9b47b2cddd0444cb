//! The sandbox of the code_execution surface: JavaScript (QuickJS, through rquickjs) that calls
//! tools and combines their results in one round trip.
//!
//! Owns: a pool of warm QuickJS runtimes, one fresh context per run (no state survives a run),
//! the script API (`call_tool`, `call_tools`, `input`), and every limit: wall-clock deadline
//! (interrupts endless loops and cuts tool calls in flight), memory, stack and the number of tool
//! calls. Scripts run on blocking threads, never on the gateway's async workers, so a busy script
//! cannot stall anything else.
//! Must not: know how a tool is called. Every call goes to a [`ToolHost`], which the surface
//! implements with the gateway's one dispatch path (scope, approvals, validation included).
//! No filesystem, network, process or timer API exists inside a run.

mod engine;
mod error;
mod host;
mod pool;

pub use engine::{Engine, Limits, Outcome};
pub use error::RunError;
pub use host::{ToolHost, result_for_script};

#[cfg(test)]
mod tests;
