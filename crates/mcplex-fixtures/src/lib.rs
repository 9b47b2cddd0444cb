//! mcplex-fixtures
