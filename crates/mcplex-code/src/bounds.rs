//! How much JSON a run may exchange with the gateway at once, and how a size is measured without
//! building anything. Every line between the gateway and a worker is bounded both ways, and each
//! bound is checked on the text's length before it is parsed into a tree (a `serde_json::Value`
//! takes tens of bytes per byte of `[0,0,…]`), so that the gateway's memory stays proportional to
//! these numbers, whatever a script builds.

use mcplex_protocol::ErrorType;
use serde_json::{Value, json};

use crate::error::MESSAGE_LIMIT;

/// The largest JSON text of a run's outcome (its value, or its error's body), of one tool call's
/// arguments, and of one tool result a script receives: the gateway's default request body
/// limit (`max_body_bytes`), so that a script cannot return or send more than a client could.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// The largest batch at once: the arguments of one `call_tools` batch together, and the results
/// the gateway sends back for one batch together.
pub(crate) const MAX_BATCH_BYTES: usize = 4 * MAX_MESSAGE_BYTES;

/// The protocol's own syntax around the bounded parts (the outcome's wrapping, error messages).
const LINE_OVERHEAD: usize = 64 * 1024;

/// The longest line the gateway reads from a worker.
pub(crate) const MAX_LINE_FROM_WORKER: usize = MAX_BATCH_BYTES + LINE_OVERHEAD;

/// The longest outcome (`{"value": …}`, a script error with its body, …) the gateway parses.
pub(crate) const MAX_OUTCOME_BYTES: usize = MAX_MESSAGE_BYTES + LINE_OVERHEAD;

/// The message of a refusal for size: `what` was larger than `bound` bytes.
pub(crate) fn too_large_message(what: &str, bound: usize) -> String {
    format!(
        "{what} is more than the {bound} bytes of JSON a script may exchange with the gateway at once ({MESSAGE_LIMIT})"
    )
}

/// The body of a tool call refused for its size (the script's error carries it; the run goes on).
pub(crate) fn too_large(what: &str, bound: usize) -> Value {
    json!({
        "error": too_large_message(what, bound),
        "error_type": ErrorType::LimitExceeded,
        "limit": MESSAGE_LIMIT,
    })
}
