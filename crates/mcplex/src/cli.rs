//! The command line: one flat table of commands and flags. Flags that override the config file
//! also read `MCPLEX_*` variables (flag > env > file > default).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "mcplex",
    version,
    about = "An MCP gateway: many upstream servers, one small, stable tool surface"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Log format on stderr: text or json.
    #[arg(long, global = true, env = "MCPLEX_LOG_FORMAT", default_value = "text")]
    pub log_format: String,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run the gateway.
    Serve(ServeArgs),
    /// Inspect the tools of the configured servers (connects to them; no gateway needed).
    Tools {
        #[command(subcommand)]
        command: ToolsCommand,
    },
    /// Call one tool, by canonical id `server:tool`, without a running gateway.
    Call(CallArgs),
    /// Work with the config file.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Benchmarks; each prints a table and writes JSON.
    Bench {
        #[command(subcommand)]
        command: BenchCommand,
    },
}

/// Where the config comes from, and the values that override it.
#[derive(Args, Clone)]
pub struct ConfigArgs {
    /// Config file (default ~/.mcplex/mcp_config.json).
    #[arg(long, env = "MCPLEX_CONFIG")]
    pub config: Option<PathBuf>,
    /// Default per-call timeout, e.g. "30s".
    #[arg(long, env = "MCPLEX_CALL_TIMEOUT")]
    pub call_timeout: Option<String>,
}

#[derive(Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// host:port to listen on (default 127.0.0.1:8080).
    #[arg(long, env = "MCPLEX_LISTEN")]
    pub listen: Option<String>,
    /// What /mcp serves: direct or retrieve_tools (code_execution is planned).
    #[arg(long, env = "MCPLEX_ROUTING_MODE")]
    pub routing_mode: Option<String>,
    /// How the direct surface renders tools: full or deferred (hot: also read on config edits).
    #[arg(long, env = "MCPLEX_DIRECT_TOOL_RESPONSE_MODE")]
    pub direct_tool_response_mode: Option<String>,
    /// How retrieve_tools renders matches: full or compact (hot).
    #[arg(long, env = "MCPLEX_TOOL_RESPONSE_MODE")]
    pub tool_response_mode: Option<String>,
    /// Serve one client on stdin/stdout instead of HTTP.
    #[arg(long)]
    pub stdio: bool,
    /// Run on built-in demo servers: no network, no files.
    #[arg(long)]
    pub demo: bool,
}

#[derive(Subcommand)]
pub enum ToolsCommand {
    /// List every tool of the configured servers.
    List {
        #[command(flatten)]
        config: ConfigArgs,
        /// Only this server.
        #[arg(long)]
        server: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Use the built-in demo servers instead of a config file.
        #[arg(long)]
        demo: bool,
    },
}

#[derive(Args)]
pub struct CallArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// The tool: `server:tool`.
    pub tool: String,
    /// Arguments as a JSON object.
    #[arg(long, default_value = "{}")]
    pub args: String,
    /// Use the built-in demo servers instead of a config file.
    #[arg(long)]
    pub demo: bool,
}

#[derive(Subcommand)]
pub enum ConfigCommand {
    /// Validate a config file without starting anything.
    Check {
        #[command(flatten)]
        config: ConfigArgs,
    },
}

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Tokens of tool definitions per turn and prompt-prefix changes over a simulated session.
    Cache {
        /// A tool corpus (shared/corpora/*.tools.json shape), e.g. livemcp527.
        #[arg(long)]
        corpus: PathBuf,
        #[arg(long, default_value_t = 50)]
        turns: usize,
        #[arg(long, default_value = "target/bench/cache.json")]
        out: PathBuf,
    },
    /// Ranking quality (recall@1/5/10, MRR, nDCG@10) and search latency over a tool corpus.
    Retrieval {
        /// A tool corpus (shared/corpora/*.tools.json shape).
        #[arg(long)]
        corpus: PathBuf,
        /// Graded queries (shared/corpora/*.golden.json shape).
        #[arg(long)]
        queries: PathBuf,
        #[arg(long, default_value = "target/bench/retrieval.json")]
        out: PathBuf,
    },
    /// tools/call latency and throughput through the gateway vs. directly, same client and upstream.
    Overhead {
        /// Calls per measurement at concurrency 1 (32 clients make 4× as many).
        #[arg(long, default_value_t = 2000)]
        calls: usize,
        /// Where to write the JSON results.
        #[arg(long, default_value = "target/bench/overhead.json")]
        out: PathBuf,
    },
}
