//! The one call path every surface uses, and the live state it reads.
//!
//! Owns: [`Gateway`] (the current catalog [`Snapshot`] behind an `ArcSwap`, the upstream
//! connections, and a watch channel that ticks when the direct listing changes) and
//! [`Gateway::call`]: resolve the name in the snapshot → policy hooks → call the upstream with
//! the server's timeout, progress and cancellation → the raw result, untouched.
//! Must not: parse or render any downstream wire format; surfaces turn [`DispatchError`] into
//! wire errors in one place each.

mod accounting;
mod error;
mod gateway;
mod semantic;
#[cfg(test)]
mod semantic_tests;

pub use accounting::AuditRecord;
pub use error::DispatchError;
pub use gateway::{CallContext, Gateway, REQUEST_ID_META, STARTUP_GRACE, ToolCall};
pub use semantic::{EmbeddingStore, PassageKey, SemanticSearch, passage_key};
