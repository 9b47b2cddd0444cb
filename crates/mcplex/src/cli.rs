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
    /// List the tools of the configured servers (no gateway needed), approve or block one.
    Tools {
        #[command(subcommand)]
        command: ToolsCommand,
    },
    /// Approve or quarantine servers (through the running gateway, or the state database).
    Servers {
        #[command(subcommand)]
        command: ServersCommand,
    },
    /// Agent tokens: scoped credentials for MCP clients.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// The admin API key.
    Apikey {
        #[command(subcommand)]
        command: ApikeyCommand,
    },
    /// OAuth logins to upstream servers (`"oauth"` in a server's config).
    Auth {
        #[command(subcommand)]
        command: AuthCommand,
    },
    /// The audit log of tool calls, newest first; `activity export` writes all of it.
    #[command(args_conflicts_with_subcommands = true)]
    Activity {
        #[command(subcommand)]
        command: Option<ActivityCommand>,
        #[command(flatten)]
        config: ConfigArgs,
        /// At most this many rows.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Only calls made with this token.
        #[arg(long)]
        token: Option<String>,
        /// Only calls whose tool (`server:tool`) contains this, in any case.
        #[arg(long)]
        tool: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Call one tool, by canonical id `server:tool` or display name, without a running gateway.
    Call(CallArgs),
    /// Print the tools as Anthropic or OpenAI tool definitions, deferral included (docs/projection.md).
    Export(ExportArgs),
    /// Work with the config file.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Benchmarks; each prints a table and writes JSON.
    #[cfg(feature = "bench")]
    Bench {
        #[command(subcommand)]
        command: mcplex_bench::BenchCommand,
    },
    /// Not in this build: the benchmarks need a build with `--features mcplex/bench`.
    #[cfg(not(feature = "bench"))]
    #[command(hide = true, disable_help_flag = true)]
    Bench {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
        rest: Vec<std::ffi::OsString>,
    },
}

/// Where the config comes from, and the values that override it.
#[derive(Args, Clone)]
pub struct ConfigArgs {
    /// Config file (default ~/.mcplex/mcp_config.json).
    #[arg(long, env = "MCPLEX_CONFIG")]
    pub config: Option<PathBuf>,
    /// Where approvals, tokens and the API key live (default: the config's data_dir, else
    /// ~/.mcplex).
    #[arg(long, env = "MCPLEX_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// A PostgreSQL store (`postgres://user:password@host:port/db`) that several gateways share
    /// (default: the config's `store`, else SQLite in the data directory).
    #[arg(long, env = "MCPLEX_STORE", hide_env_values = true)]
    pub store: Option<String>,
}

#[derive(Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Default per-call timeout, e.g. "30s" (default 120s).
    #[arg(long, env = "MCPLEX_CALL_TIMEOUT")]
    pub call_timeout: Option<String>,
    /// host:port to listen on (default 127.0.0.1:8080).
    #[arg(long, env = "MCPLEX_LISTEN")]
    pub listen: Option<String>,
    /// What /mcp serves: direct, retrieve_tools or code_execution.
    #[arg(long, env = "MCPLEX_ROUTING_MODE")]
    pub routing_mode: Option<String>,
    /// How the direct surface renders tools: full or deferred (hot: also read on config edits).
    #[arg(long, env = "MCPLEX_DIRECT_TOOL_RESPONSE_MODE")]
    pub direct_tool_response_mode: Option<String>,
    /// How retrieve_tools renders matches: full or compact (hot).
    #[arg(long, env = "MCPLEX_TOOL_RESPONSE_MODE")]
    pub tool_response_mode: Option<String>,
    /// How long the first listings wait for servers still starting, e.g. "30s" ("0": no wait;
    /// default 30s).
    #[arg(long, env = "MCPLEX_STARTUP_WAIT")]
    pub startup_wait: Option<String>,
    /// A file holding the admin API key, which the store takes as its own in place of any
    /// other (a Kubernetes or Docker secret mounted as a file): at least 32 random characters,
    /// e.g. `openssl rand -hex 32`. Never shown; hidden from stdio servers.
    #[arg(long, env = "MCPLEX_API_KEY_FILE")]
    pub api_key_file: Option<PathBuf>,
    /// Serve one client on stdin/stdout instead of HTTP.
    #[arg(long)]
    pub stdio: bool,
    /// Run on built-in demo servers: no network, no config file (approvals are kept apart, in
    /// the data directory's `demo`).
    #[arg(long)]
    pub demo: bool,
}

/// `mcplex activity …`
#[derive(Subcommand)]
pub enum ActivityCommand {
    /// Write the audit log, oldest first, to stdout as JSON Lines or CSV (for a log shipper, an
    /// archive or a spreadsheet), read from the state database while gateways keep writing.
    Export {
        #[command(flatten)]
        config: ConfigArgs,
        /// Only calls from then on: an RFC 3339 time (2026-12-01T08:00:00Z), a date
        /// (2026-12-01) or a duration back from now (24h, 7d). Default: the whole log.
        #[arg(long)]
        since: Option<String>,
        /// `jsonl` (one JSON object a line, each as the activity API shows a row) or `csv`.
        #[arg(long, default_value = "jsonl")]
        format: String,
        /// Only calls made with this token (`-` for calls made without one).
        #[arg(long)]
        token: Option<String>,
        /// Only calls whose tool (`server:tool`) contains this, in any case.
        #[arg(long)]
        tool: Option<String>,
        /// Only calls with this outcome (`ok`, `tool_error`, ...).
        #[arg(long)]
        status: Option<String>,
    },
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
    /// The pinned and the latest observed definition of a tool, with their hashes.
    Show {
        #[command(flatten)]
        config: ConfigArgs,
        /// `server:tool`
        id: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Approve a tool's current definition (pending or changed): pins it, and it is served.
    /// Prints the definition it approves; with `--hash`, approves only if the definition still
    /// has that hash (as `tools show` printed it).
    Approve {
        #[command(flatten)]
        config: ConfigArgs,
        /// `server:tool`
        id: String,
        /// Approve only if the definition still has this hash (from `tools show`).
        #[arg(long)]
        hash: Option<String>,
    },
    /// Block a tool: never served, whatever its definition.
    Block {
        #[command(flatten)]
        config: ConfigArgs,
        /// `server:tool`
        id: String,
    },
}

#[derive(Subcommand)]
pub enum ServersCommand {
    /// Every configured server, approved or quarantined, and its status.
    List {
        #[command(flatten)]
        config: ConfigArgs,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Approve a server: its current tools are pinned and served.
    Approve {
        #[command(flatten)]
        config: ConfigArgs,
        /// The server, as the config names it.
        name: String,
    },
    /// Quarantine a server: none of its tools is served until it is approved.
    Quarantine {
        #[command(flatten)]
        config: ConfigArgs,
        /// The server, as the config names it.
        name: String,
    },
}

#[derive(Subcommand)]
pub enum ApikeyCommand {
    /// Make a new admin API key and print it once; the old one, and every dashboard session
    /// opened with it, stop working on every gateway of the store within a second.
    Rotate {
        #[command(flatten)]
        config: ConfigArgs,
    },
}

#[derive(Subcommand)]
pub enum TokenCommand {
    /// Create a token; it is printed once and stored only as a keyed hash.
    Create {
        #[command(flatten)]
        config: ConfigArgs,
        /// The token's name (unique; `token revoke` takes it).
        #[arg(long)]
        name: String,
        /// Comma-separated server names (default: every server).
        #[arg(long, value_delimiter = ',')]
        servers: Option<Vec<String>>,
        /// Comma-separated: read (readOnlyHint tools), write (everything else), destructive
        /// (destructiveHint tools).
        #[arg(long)]
        permissions: String,
        /// Pin the token to a profile: it sees only that profile's servers.
        #[arg(long)]
        profile: Option<String>,
        /// Lifetime with a unit: 30d, 12h, 90m (default: no expiry).
        #[arg(long)]
        expires: Option<String>,
        /// The token's own limit on tool calls, over the config's `limits` (repeatable):
        /// calls_per_minute=N, concurrent_calls=N, write.calls_per_minute=N, destructive.concurrent_calls=N, ...
        #[arg(long = "limit", value_name = "KEY=N")]
        limits: Vec<String>,
    },
    /// Set a token's own limits on tool calls (replacing them; none given: the config's alone).
    Limit {
        #[command(flatten)]
        config: ConfigArgs,
        /// The token's name.
        name: String,
        /// calls_per_minute=N, concurrent_calls=N, write.calls_per_minute=N, ... (repeatable).
        #[arg(long = "limit", value_name = "KEY=N")]
        limits: Vec<String>,
    },
    /// Every token: name, status, scope. Never the secret.
    List {
        #[command(flatten)]
        config: ConfigArgs,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token at once.
    Revoke {
        #[command(flatten)]
        config: ConfigArgs,
        /// The token's name.
        name: String,
    },
}

#[derive(Subcommand)]
pub enum AuthCommand {
    /// Log in to an OAuth server: prints the URL to open (and opens a browser when there is
    /// one), takes the answer on a loopback port, stores the tokens (sealed) in the store.
    Login {
        #[command(flatten)]
        config: ConfigArgs,
        /// The server, as the config names it (it needs an "oauth" block).
        server: String,
        /// Only print the URL (on stdout, alone on its line); open no browser.
        #[arg(long)]
        no_browser: bool,
        /// How long to wait for the login, e.g. "5m".
        #[arg(long, default_value = "5m")]
        timeout: String,
    },
    /// Which OAuth servers have a login, until when, and whether it can be refreshed. Never a
    /// token.
    Status {
        #[command(flatten)]
        config: ConfigArgs,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Forget a server's login (its tokens and registration), or revoke one caller's own login
    /// to a `per_user` server.
    Logout {
        #[command(flatten)]
        config: ConfigArgs,
        /// The server, as the config names it.
        server: String,
        /// The caller whose own login to revoke (an agent token's name, `oauth:<subject>`,
        /// `operator:<person>`), as `auth status` lists it.
        #[arg(long)]
        caller: Option<String>,
    },
}

#[derive(Args)]
pub struct CallArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// The tool: `server:tool`, or its display name (`server__tool`).
    pub tool: String,
    /// Arguments as a JSON object.
    #[arg(long, default_value = "{}")]
    pub args: String,
    /// How long the call may take, e.g. "30s" (default: the server's call_timeout, else 120s).
    #[arg(long, env = "MCPLEX_CALL_TIMEOUT")]
    pub call_timeout: Option<String>,
    /// Use the built-in demo servers instead of a config file.
    #[arg(long)]
    pub demo: bool,
}

#[derive(Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// The model API: anthropic (Messages) or openai (Responses).
    #[arg(long, value_parser = ["anthropic", "openai"])]
    pub format: String,
    /// Only this profile's servers.
    #[arg(long)]
    pub profile: Option<String>,
    /// Who searches deferred tools: the provider's search tool, or your client (through mcplex).
    #[arg(long, default_value = "provider", value_parser = ["provider", "client"])]
    pub search: String,
}

#[derive(Subcommand)]
pub enum ConfigCommand {
    /// Validate a config file without starting anything.
    Check {
        #[command(flatten)]
        config: ConfigArgs,
    },
}
