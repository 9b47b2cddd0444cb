//! Builds the immutable catalog [`Snapshot`] from the config and the tool lists the upstreams sent.
//!
//! Owns: tool ids, display names (through `mcplex-names`), the precomputed direct-surface
//! listing, and per-server status facts. A snapshot is built whole, shared behind an `Arc`,
//! swapped whole and never mutated; one bad tool or one dead server only adds a [`Diagnostic`].
//! Must not: await, read files, log, or name an rmcp/HTTP type. Upstream tool objects are kept as
//! raw JSON so every field the upstream sent (known to us or not) reaches the client.

mod build;
mod snapshot;

pub use build::{Diagnostic, ServerStatus, UpstreamTools, build_snapshot};
pub use snapshot::{CatalogTool, ServerView, Snapshot};

#[cfg(test)]
mod tests;
