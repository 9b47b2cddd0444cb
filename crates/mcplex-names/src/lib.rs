//! Names that model APIs accept, and the table that maps them back to canonical tool ids.
//!
//! A direct-surface name is `server__tool` sanitized to `^[a-zA-Z0-9_-]{1,64}$`. Names that
//! sanitizing made ambiguous, or that are too long, get a deterministic hash suffix. The
//! [`RegistrationTable`] is the only way back from a display name to a [`ToolId`]: nothing ever
//! splits a name on `__`, because server and tool names may themselves contain `__`.
//! Pure: no I/O, no async, no MCP types.

pub mod gateway_tools;
mod sanitize;
mod table;

pub use sanitize::{MAX_NAME_LEN, is_valid_name, sanitize};
pub use table::{NameConflict, NameHolder, RegistrationTable, ToolId};

#[cfg(test)]
mod tests;
