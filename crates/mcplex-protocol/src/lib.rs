//! The vocabulary mcplex itself puts on the wire, each word defined once.
//!
//! Owns: [`ErrorType`] (the `error_type` of every error body the gateway writes for an agent),
//! [`ProtocolEra`] (which MCP era a protocol revision belongs to, decided in one place), the
//! protocol revisions mcplex speaks, the `_meta` keys it reads and writes, and [`ServerHealth`]
//! (where an upstream stands, as the supervisor, the catalog and the management API all say it),
//! [`ServerEvent`] (what happened to an upstream, as the supervisor records it and the API shows
//! it), and [`Offer`] (what an upstream lists besides tools, as the client read it and the
//! catalog serves it).
//! Must not: do I/O or know about any transport; it is words and the table that spells them.

mod era;
mod error_type;
mod health;
mod json_len;
mod offer;
mod server_event;

pub use era::{LATEST_SESSION_VERSION, ProtocolEra, STATELESS_VERSION};
pub use error_type::ErrorType;
pub use health::ServerHealth;
pub use json_len::json_len;
pub use offer::Offer;
pub use server_event::{ServerEvent, ServerEventKind};

/// The `_meta` key that carries the gateway's request id to the upstream.
pub const REQUEST_ID_META: &str = "io.mcplex/request-id";

/// The `_meta` key of a 2026-07-28 request's client capabilities (what the session era's
/// handshake declared).
pub const CLIENT_CAPABILITIES_META: &str = "io.modelcontextprotocol/clientCapabilities";
