//! Trust decisions, as pure data: tool pinning, server quarantine, and caller scopes.
//!
//! Owns: the canonical content hash and a tool's pin hash ([`pin_hash`]: name, description, input
//! and output schema), the approval state machine ([`Approvals`]: a verdict for every tool, and
//! the [`Change`]s each event makes so they can be persisted whole), the permission a tool needs
//! ([`Permission::of`], from its annotations) and a caller's [`Scope`] (servers × permissions).
//! Must not: do I/O, know where approvals are stored, or know any MCP or HTTP type.

mod approvals;
mod hash;
mod permission;
mod scope;

pub use approvals::{Approvals, Change, ServerRecord, ServerState, ToolRecord, Verdict};
pub use hash::{ContentHash, content_hash, hex, pin_hash, prompt_pin_hash};
pub use permission::{Permission, Permissions, PermissionsError};
pub use scope::Scope;

#[cfg(test)]
mod tests;
