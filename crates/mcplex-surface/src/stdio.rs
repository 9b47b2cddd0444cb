//! `mcplex serve --stdio`: the direct surface on stdin/stdout for clients that spawn their
//! servers. Stdout carries only JSON-RPC; all logging goes to stderr.

use std::fmt;

use rmcp::ServiceExt;

/// Why serving on stdin/stdout ended in failure. Each holds the MCP library's message.
#[derive(Debug)]
pub enum StdioError {
    /// The client never completed the `initialize` handshake.
    NoSession(String),
    /// The session started but ended other than by the client leaving.
    Ended(String),
}

impl fmt::Display for StdioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StdioError::NoSession(e) => write!(f, "stdio client did not start a session: {e}"),
            StdioError::Ended(e) => write!(f, "stdio session ended abnormally: {e}"),
        }
    }
}

impl std::error::Error for StdioError {}

/// Serves one client on stdin/stdout until it disconnects.
pub async fn serve_stdio<S: rmcp::ServerHandler>(surface: S) -> Result<(), StdioError> {
    let running = surface
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| StdioError::NoSession(e.to_string()))?;
    running
        .waiting()
        .await
        .map_err(|e| StdioError::Ended(e.to_string()))?;
    Ok(())
}
