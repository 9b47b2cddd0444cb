//! The routes the dashboard (`/ui`) reads besides the ones the CLI uses, each also usable with
//! the API key: the audit log filtered and paged, per-server counts of the last hour, search
//! with scores, the effective config (redacted) with the current diagnostics and how searches
//! rank, a server's stderr tail (redacted), and the dashboard's login answers.

use serde::{Deserialize, Serialize};

use crate::activity::ActivityEntry;

/// `GET /api/v1/activity/export?format=&since=&token=&tool=&status=`: which rows to export and
/// how (the filters of [`ActivityFilter`], a start, and `jsonl` (the default) or `csv`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivityExportQuery {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// An RFC 3339 time, a date, or a duration back from now (`24h`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// `GET /api/v1/activity?token=&tool=&status=&offset=&limit=`: which rows, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivityFilter {
    /// An agent token's name; `-` stands for calls without a token (the operator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Part of the tool as recorded (`server:tool`), in any case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The outcome as recorded (`ok`, `tool_error`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Rows skipped from the newest (paging).
    #[serde(default)]
    pub offset: Option<usize>,
    /// Rows per page (default 50, at most 500).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// `{"entries": [...], "more": bool}`: one page of the audit log, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivityAnswer {
    pub entries: Vec<ActivityEntry>,
    /// Older rows match the filter beyond this page.
    pub more: bool,
}

/// `GET /api/v1/trends?hours=N` (1 to 168, default 24; `&server=S` or `&tool=server:tool` to
/// narrow it): the audit log's calls, failures and latency over time, every replica's, in about
/// 48 buckets, oldest first, empty ones included.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrendsAnswer {
    /// Unix milliseconds the first bucket starts at.
    pub since_ms: i64,
    pub bucket_ms: i64,
    pub buckets: Vec<TrendPoint>,
}

/// One bucket of [`TrendsAnswer`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrendPoint {
    pub start_ms: i64,
    pub calls: u64,
    /// Of those, the ones whose outcome was not `ok`.
    pub errors: u64,
    /// The median, 95th percentile (nearest rank) and longest call, in microseconds (0
    /// without calls).
    pub p50_us: u64,
    pub p95_us: u64,
    pub max_us: u64,
}

/// The query of `GET /api/v1/trends`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrendsQuery {
    #[serde(default)]
    pub hours: Option<u32>,
    /// Only this server's calls.
    #[serde(default)]
    pub server: Option<String>,
    /// Only this tool's calls (`server:tool`); with `server` too, the tool wins.
    #[serde(default)]
    pub tool: Option<String>,
}

/// `GET /api/v1/stats`: calls and errors of the last hour per server, and restarts since start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatsAnswer {
    /// Unix milliseconds the counts start at (an hour before the answer).
    pub since_ms: i64,
    pub servers: Vec<ServerStats>,
}

/// One server's counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerStats {
    pub server: String,
    /// Requests to it in the audit log since `since_ms`, every replica's.
    pub calls: u64,
    /// Of those, the ones whose outcome was not `ok`.
    pub errors: u64,
    /// Times this gateway lost a ready connection to it since it started.
    pub restarts: u64,
}

/// `POST /api/v1/search`: the catalog ranked as `tool_search` and `retrieve_tools` rank it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    pub query: String,
    /// Matches to return (default 10, 1 to 50).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Only this server's tools.
    #[serde(default)]
    pub server: Option<String>,
}

/// `{"tools": [...], "total": n}`, best first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchAnswer {
    pub tools: Vec<SearchHit>,
    /// How many tools matched before the cut.
    pub total: usize,
    /// `hybrid` when the query was embedded and the catalog is, else `bm25`.
    pub ranking: Ranking,
}

/// How a search ranks: by words alone, or by words and meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ranking {
    /// BM25F over the tools' names, descriptions and parameters.
    Bm25,
    /// BM25F fused with the sentence model's similarity.
    Hybrid,
}

/// Which ranking searches get and why: the model in use, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchStatus {
    /// What a search gets now: `hybrid` once the model has embedded the served catalog.
    pub ranking: Ranking,
    /// The sentence model's name, when one is loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The instructions the model's products run with, as `MCPLEX_EMBED_ISA` spells them
    /// (`avx512-vnni`, `avx512`, `avx2`, `portable`), when one is loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Why searches are BM25F alone for the gateway's life, when no model loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub without_model: Option<WithoutModel>,
    /// Why the model's last pass over the catalog failed (searches stay BM25F until one
    /// succeeds, at the next change of the catalog).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding_failed: Option<String>,
}

/// Why a gateway searches without a sentence model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WithoutModel {
    pub because: NoModel,
    /// The same in words: for [`NoModel::Failed`], the load's error.
    pub message: String,
}

/// The causes of [`WithoutModel`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoModel {
    /// `search_model: false`.
    Config,
    /// Built without the cargo feature `semantic`.
    Build,
    /// The configured model did not load.
    Failed,
}

/// One match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    pub id: String,
    pub name: String,
    pub server: String,
    /// The ranking's score, rounded to three decimals as `retrieve_tools` shows it.
    pub score: f64,
    pub description: String,
    /// Reached through `tool_search` rather than listed.
    pub deferred: bool,
}

/// `GET /api/v1/config`: the effective config with every secret replaced, and what the
/// gateway currently reports about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigAnswer {
    /// A JSON view of the running config: secrets (env and header values, URL user info and
    /// query values, the store's password) replaced by `[redacted]`.
    pub config: serde_json::Value,
    /// Config warnings (unknown keys, ignored values).
    pub warnings: Vec<String>,
    /// The last catalog build's diagnostics.
    pub diagnostics: Vec<DiagnosticEntry>,
    /// Why the last edit of the config file was refused (the file, the key, the reason); `null`
    /// while the running config is the file's.
    #[serde(default)]
    pub refused_edit: Option<String>,
    /// Whether this gateway's store answered its last read: while it does not, every change is
    /// refused (503) and the gateway serves from what it last read.
    pub store_reachable: bool,
    /// How searches rank on this gateway.
    pub search: SearchStatus,
}

/// One diagnostic of the catalog build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiagnosticEntry {
    pub server: String,
    pub message: String,
}

/// `GET /api/v1/servers/{name}/stderr`: the last lines the server's process wrote to stderr on
/// this gateway, secrets redacted, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StderrAnswer {
    pub server: String,
    pub lines: Vec<String>,
}

/// `POST /ui/login`: the API key, pasted once. Its `Debug` leaves the key out.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoginRequest {
    pub key: String,
}

impl std::fmt::Debug for LoginRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginRequest")
            .field("key", &"[redacted]")
            .finish()
    }
}

/// `GET /ui/session` and a successful login: the session's CSRF token, which every
/// state-changing request made with the session cookie sends as `X-CSRF-Token`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionAnswer {
    pub csrf: String,
    /// Unix seconds the session ends at.
    pub expires_at: i64,
    /// The person signed in at the issuer (`auth.dashboard`); `null` for the API key.
    #[serde(default)]
    pub who: Option<String>,
    /// A viewer: signed in, not an operator; reads within what `auth.rules` grant them.
    #[serde(default)]
    pub viewer: bool,
}
