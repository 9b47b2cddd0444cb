//! The names of the gateway's own tools. The surfaces serve them under these names, and no
//! upstream tool may take one: a `"namespace": false` server's tool of such a name is refused
//! (two tools of one name in a listing, and calls going to whichever the surface matches first).

/// Describes one tool in full (the schema-deferred direct listing).
pub const DESCRIBE_TOOL: &str = "describe_tool";
/// Searches the deferred tools (deferral by search).
pub const TOOL_SEARCH: &str = "tool_search";
/// Calls a tool by name (deferral by search, the retrieve surface).
pub const CALL_TOOL: &str = "call_tool";
/// Ranks the catalog for a task (the retrieve and code surfaces).
pub const RETRIEVE_TOOLS: &str = "retrieve_tools";
/// Runs a script that calls tools (the code surface).
pub const CODE_EXECUTION: &str = "code_execution";

/// Every one of them.
pub const ALL: &[&str] = &[
    DESCRIBE_TOOL,
    TOOL_SEARCH,
    CALL_TOOL,
    RETRIEVE_TOOLS,
    CODE_EXECUTION,
];
