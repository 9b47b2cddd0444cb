//! mcplex-surface
