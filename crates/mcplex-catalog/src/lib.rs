//! Builds the immutable catalog [`Snapshot`] from the config and the tool lists the upstreams sent.
//!
//! Owns: tool ids, display names (through `mcplex-names`), compiled signatures and argument
//! validators (cached across snapshots by schema content hash), the precomputed direct-surface
//! listing in `full` or `deferred` form, describe/availability answers, and per-server status. A snapshot is built whole, shared behind an `Arc`,
//! swapped whole and never mutated, but for its embeddings, which a write-once cell takes when
//! the model has embedded its tools (off the request path; until then search is BM25F). One bad
//! tool or one dead server only adds a [`Diagnostic`].
//! Must not: await, read files, log, or name an rmcp/HTTP type. Upstream tool objects are kept as
//! raw JSON so every field the upstream sent (known to us or not) reaches the client.

mod build;
mod cache;
mod describe;
mod gather;
mod offers;
mod render;
mod route;
mod search;
mod snapshot;
mod validate;

pub use build::{
    BuildInput, Built, Diagnostic, PROMPT_APPROVAL_PREFIX, UpstreamTools, build_snapshot,
};
pub use cache::CatalogCache;
pub use describe::UnavailableReason;
pub use mcplex_search::{EmbedError, Embedder, Tuning, Vectors, embed_query, embeddable};
pub use mcplex_trust::{ContentHash, content_hash};
pub use mcplex_trust::{Permission, Scope};
pub use offers::{
    NAMESPACED_URI_PREFIX, OfferedPrompt, OfferedResource, Offers, ServerFeatures, Target,
    namespaced_uri, split_namespaced_uri, template_matches,
};
pub use route::Route;
pub use search::{Match, Matches};
pub use snapshot::{CatalogTool, ServerView, Snapshot, WithheldTool};
pub use validate::{ArgumentProblem, ArgumentProblems};

#[cfg(test)]
mod offers_tests;
#[cfg(test)]
mod tests;
