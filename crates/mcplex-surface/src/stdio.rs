//! `mcplex serve --stdio`: the direct surface on stdin/stdout for clients that spawn their
//! servers. Stdout carries only JSON-RPC; all logging goes to stderr.

use rmcp::ServiceExt;

/// Serves one client on stdin/stdout until it disconnects.
pub async fn serve_stdio<S: rmcp::ServerHandler>(surface: S) -> Result<(), String> {
    let running = surface
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("stdio client did not start a session: {e}"))?;
    running
        .waiting()
        .await
        .map_err(|e| format!("stdio session ended abnormally: {e}"))?;
    Ok(())
}
