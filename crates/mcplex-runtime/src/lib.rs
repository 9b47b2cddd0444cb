//! The running gateway's moving parts: what changes while it serves, and the tasks that apply
//! each change to the published snapshot.
//!
//! Owns: the live catalog ([`live`]: upstream events, config changes, store changes and operator
//! requests folded into the next snapshot; diagnostics reported once; restart and up/down
//! metrics), the running approvals ([`trust`]: registration of configured servers, pins a build
//! makes, operator actions, observed definitions recorded in the store), config hot reload
//! ([`reload`]: the file watch and what a re-read applies; which settings are hot is the config
//! crate's one declaration), following the store ([`follow`]: the write generation, the tokens,
//! the gateway's registration and heartbeat), the replicas' exchange of call counts for limits
//! per caller ([`usage`]), the embedding worker that attaches each published snapshot's tool
//! vectors ([`semantic`]), the servers added from the dashboard ([`added`]: read from the
//! store and merged into the running config), and [`Core`], which starts the gateway whole and
//! the catalog task together.
//!
//! Must not: parse command-line arguments, serve HTTP or MCP, print to stdout, or reach an
//! upstream other than through `Gateway` (start, reconcile, shutdown).

pub mod added;
mod core;
pub mod follow;
pub mod live;
pub mod reload;
pub mod semantic;
pub mod trust;
pub mod usage;

pub use added::AddedServers;
pub use core::Core;
pub use semantic::{
    EmbeddingError, EmbeddingStore, EmbeddingStoreError, PassageKey, SemanticSearch, passage_key,
};
pub use trust::{Refusal, Trust, TrustAction, TrustRequest};

#[cfg(test)]
mod follow_tests;
#[cfg(test)]
mod live_tests;
#[cfg(test)]
mod reload_tests;
#[cfg(test)]
mod semantic_tests;
#[cfg(test)]
mod trust_tests;
