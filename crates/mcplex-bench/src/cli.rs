//! `mcplex bench …`: the benchmarks' command line, which the `mcplex` binary mounts as its
//! `bench` subcommand in builds with the `bench` feature.

use std::path::PathBuf;

use clap::Subcommand;

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Tokens of tool definitions per turn and prompt-prefix changes over a simulated session.
    Cache {
        /// A tool corpus: a JSON array of {server, name, description, inputSchema}, e.g.
        /// crates/mcplex-fixtures/data/ref45.tools.json.
        #[arg(long)]
        corpus: PathBuf,
        /// Turns of the simulated session.
        #[arg(long, default_value_t = 50)]
        turns: usize,
        /// Where to write the JSON results.
        #[arg(long, default_value = "target/bench/cache.json")]
        out: PathBuf,
    },
    /// What the sentence model costs: load time, memory, the catalog's first embedding, query
    /// embedding latency; with two models, how close their vectors are.
    Embed {
        /// A model: `builtin` (the one in the binary) or a model directory; repeat to compare
        /// (builds with the `semantic` feature).
        #[arg(long, default_value = "builtin")]
        model: Vec<PathBuf>,
        /// The tool corpus embedded as the catalog, e.g. crates/mcplex-fixtures/data/ref45.tools.json.
        #[arg(long)]
        corpus: PathBuf,
        /// The queries embedded, e.g. crates/mcplex-fixtures/data/ref45.golden.json.
        #[arg(long)]
        queries: PathBuf,
        /// Each query is embedded this many times.
        #[arg(long, default_value_t = 10)]
        rounds: usize,
        /// Where to write the JSON results.
        #[arg(long, default_value = "target/bench/embed.json")]
        out: PathBuf,
    },
    /// 10 dependent tool calls as direct calls vs. one code_execution run: tokens and time;
    /// and the sandbox's per-run overhead.
    Code {
        /// Measured runs of each path.
        #[arg(long, default_value_t = 20)]
        repeats: usize,
        /// Where to write the JSON results.
        #[arg(long, default_value = "target/bench/code.json")]
        out: PathBuf,
    },
    /// What the stdio sandbox adds to a server's start: a trivial program started directly and
    /// through the sandbox helper (Landlock alone, the default, no network), side by side.
    Sandbox {
        /// Starts measured per variant.
        #[arg(long, default_value_t = 200)]
        starts: usize,
        /// Where to write the JSON results.
        #[arg(long, default_value = "target/bench/sandbox.json")]
        out: PathBuf,
    },
    /// How long a write to the store takes to be enforced by every running gateway
    /// (revocation and approval, p50/p99), with N replicas on one SQLite store.
    Control {
        /// Gateway processes sharing the store.
        #[arg(long, default_value_t = 2)]
        replicas: usize,
        /// Writes measured (each a revocation and an approval).
        #[arg(long, default_value_t = 100)]
        rounds: usize,
        /// A PostgreSQL store for the replicas (default: a fresh SQLite data directory).
        #[arg(long)]
        store: Option<String>,
        /// Where to write the JSON results.
        #[arg(long, default_value = "target/bench/control.json")]
        out: PathBuf,
    },
    /// N concurrent sessions × M calls against a gateway process: throughput, latency, lost and
    /// wrong responses, and the gateway's memory (idle, per session; with --soak, over time).
    Load {
        /// Concurrent client sessions.
        #[arg(long, default_value_t = 1000)]
        sessions: usize,
        /// Calls per session.
        #[arg(long, default_value_t = 10)]
        calls: usize,
        /// Also serve this tool corpus (one fixture process per server), e.g.
        /// crates/mcplex-fixtures/data/ref45.tools.json.
        #[arg(long)]
        corpus: Option<PathBuf>,
        /// Then run mixed traffic with upstream restarts for this long (e.g. 10m), sampling
        /// RSS, open files and threads.
        #[arg(long)]
        soak: Option<String>,
        /// Drive a gateway already running here (a replica, or a load balancer such as the one
        /// `scripts/cluster.sh` starts) instead of starting one: calls/s and latency only.
        #[arg(long)]
        url: Option<String>,
        /// With --url: the echo tool to call (its structured content must be its arguments).
        #[arg(long, default_value = "demo__echo")]
        tool: String,
        /// Where to write the JSON results.
        #[arg(long, default_value = "target/bench/load.json")]
        out: PathBuf,
    },
    /// Ranking quality (recall@1/5/10, MRR, nDCG@10) of BM25F, hybrid and each lever side by
    /// side, and search latency over a tool corpus and a synthetic 10,000-tool fleet.
    Retrieval {
        /// A tool corpus, e.g. crates/mcplex-fixtures/data/ref45.tools.json.
        #[arg(long)]
        corpus: PathBuf,
        /// Graded queries for that corpus, e.g. crates/mcplex-fixtures/data/ref45.golden.json;
        /// repeat for several sets over the same corpus.
        #[arg(long, required = true)]
        queries: Vec<PathBuf>,
        /// A sentence-embedding model directory: also measure hybrid search and its levers
        /// (builds with the `semantic` feature).
        #[arg(long)]
        model: Option<PathBuf>,
        /// At most this many queries of each set, picked by a hash of their text (0: all).
        #[arg(long, default_value_t = 0)]
        sample: usize,
        /// Only these rankings (comma-separated column names, e.g. `bm25,gateway`); all by
        /// default.
        #[arg(long, value_delimiter = ',')]
        rankers: Vec<String>,
        /// Latency rounds: each query is timed this many times per fleet size.
        #[arg(long, default_value_t = 20)]
        rounds: usize,
        /// Also write each query's top 30 by each ranking, with the part that placed each hit,
        /// into the JSON results (what a second stage would reorder: scripts/study_rerank.py).
        #[arg(long)]
        rankings: bool,
        /// Where to write the JSON results.
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
