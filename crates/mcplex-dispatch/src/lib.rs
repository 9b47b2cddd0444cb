//! mcplex-dispatch
