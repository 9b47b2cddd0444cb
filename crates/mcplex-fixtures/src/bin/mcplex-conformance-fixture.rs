//! `mcplex-conformance-fixture`: the server the official conformance suite's server scenarios
//! describe, on stdio (default) or streamable HTTP (`--http ADDR`, served at `/mcp`).

use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use mcplex_fixtures::ConformanceServer;
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

#[derive(Parser)]
#[command(about = "The server the MCP conformance suite's server scenarios describe")]
struct Args {
    /// Serve streamable HTTP on this address (at /mcp) instead of stdio.
    #[arg(long)]
    http: Option<String>,
    /// List this many more resources (test://extra/<n>), in pages of 100.
    #[arg(long, default_value_t = 0)]
    extra_resources: usize,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let server = ConformanceServer::new(args.extra_resources);
    let outcome = match args.http {
        None => serve_stdio(server).await,
        Some(address) => serve_http(server, &address).await,
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcplex-conformance-fixture: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve_stdio(server: ConformanceServer) -> Result<(), String> {
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| e.to_string())?;
    running.waiting().await.map_err(|e| e.to_string())?;
    Ok(())
}

async fn serve_http(server: ConformanceServer, address: &str) -> Result<(), String> {
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|e| format!("cannot listen on {address}: {e}"))?;
    eprintln!(
        "listening on http://{}/mcp",
        listener.local_addr().map_err(|e| e.to_string())?
    );
    axum::serve(listener, app).await.map_err(|e| e.to_string())
}
