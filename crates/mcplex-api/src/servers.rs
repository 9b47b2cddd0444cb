//! Servers: `GET /api/v1/servers`, one server's page (`GET /api/v1/servers/{name}`),
//! `GET /api/v1/approvals`, and the rows of `mcplex servers list`.

use std::fmt;

use mcplex_protocol::{ServerEvent, ServerHealth};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::tools::WithheldTool;

/// `{"servers": [...]}`, one row per configured server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServersAnswer {
    pub servers: Vec<Server>,
}

/// One configured server. A running gateway knows its tools; the CLI reading the store itself
/// does not, and leaves `tools` and `withheld` out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Server {
    pub name: String,
    pub state: ServerState,
    pub status: ServerStatus,
    /// Tools it offers in the gateway's current catalog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<usize>,
    /// Of those, the ones withheld until an operator decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withheld: Option<usize>,
    /// How its process is isolated: a stdio server the running gateway started (absent for URL
    /// servers, servers not started yet, and when the CLI read the store itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<Isolation>,
    /// Its failures (exits, broken connections) in the last ten minutes, when it had any: a
    /// server that comes back after each crash is up between them, not healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failures: Option<RecentFailures>,
    /// A `per_user` server's callers that connected their own account (for the operator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connected: Option<Vec<ConnectedCaller>>,
}

/// `GET /api/v1/servers/{name}`: what the server page shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerDetail {
    pub server: Server,
    /// Its entry as the Config page shows it (command or URL, arguments; secrets replaced,
    /// env and header values never shown).
    pub config: serde_json::Value,
    /// What happened to it on this replica, oldest first (at most the last 64 events).
    pub history: Vec<ServerEvent>,
    /// Added from the dashboard (kept in the control plane, removable there), not from the
    /// config file.
    pub added: bool,
}

/// `POST /api/v1/servers`: a server to add while the gateway runs, as its `mcpServers` entry
/// would be in the config file. It is kept in the control plane (every replica runs it) and
/// starts quarantined.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AddServer {
    pub name: String,
    pub entry: serde_json::Value,
    /// Only check it: nothing is stored or started.
    #[serde(default)]
    pub check_only: bool,
}

/// The answer to [`AddServer`]: the entry as the gateway read it (secrets replaced).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerAdded {
    pub name: String,
    pub config: serde_json::Value,
    pub message: String,
}

/// A caller's own login to a `per_user` server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectedCaller {
    /// An agent token's name, `oauth:<subject>`.
    pub caller: String,
    /// Unix seconds of its login or last refresh.
    pub updated_at: i64,
}

/// A server's recent failures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecentFailures {
    /// How many in the last ten minutes.
    pub recent: u32,
    /// The last one's reason (redacted).
    pub last: Option<String>,
}

/// From this many failures in ten minutes a server that is up is in a crash loop.
pub const CRASH_LOOP_FAILURES: u32 = 3;

impl Server {
    /// Up, but failing again and again lately.
    pub fn crash_looping(&self) -> bool {
        matches!(self.status, ServerStatus::Health(ServerHealth::Ready))
            && self
                .failures
                .as_ref()
                .is_some_and(|f| f.recent >= CRASH_LOOP_FAILURES)
    }
}

/// How a stdio server's process is confined (`docs/isolation.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Isolation {
    pub level: IsolationLevel,
    /// The quarantine policy is in force (no network, no writes beyond its temp directory).
    pub quarantine: bool,
    /// It can reach the network.
    pub network: bool,
    /// The mechanisms in force.
    pub mechanisms: Vec<String>,
    /// What its policy asked for that the kernel did not give, and what that leaves open.
    pub missing: Vec<String>,
    /// All of the above in one line (what `servers list` prints).
    pub summary: String,
    /// The last line of its stderr that looks like the sandbox refused it something.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub denied: Option<String>,
}

/// How much of a server's sandbox is in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IsolationLevel {
    /// Everything its policy asks for.
    Full,
    /// Less than asked: `missing` says what.
    Partial,
    /// Not confined: `"sandbox": false`, or the kernel offers nothing usable.
    Off,
}

/// Whether the operator let the server's tools be served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerState {
    Approved,
    /// None of its tools is served.
    Quarantined,
}

impl ServerState {
    pub fn as_str(self) -> &'static str {
        match self {
            ServerState::Approved => "approved",
            ServerState::Quarantined => "quarantined",
        }
    }
}

/// The connection to a server: the gateway's [`ServerHealth`], or what the CLI says when it read
/// the store itself. On the wire one string (`"ready"`, `"unhealthy: <reason>"`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerStatus {
    /// As the running gateway reports it.
    Health(ServerHealth),
    /// Said by the CLI when it read the store itself: no gateway is registered in it.
    NotRunning,
    /// Said by the CLI when it read the store itself: a gateway is registered but did not answer.
    NotReachable,
}

const NOT_RUNNING: &str = "not running";
const NOT_REACHABLE: &str = "running (not reachable)";

impl ServerStatus {
    /// The status a wire text names; `None` for text that names none.
    pub fn parse(text: &str) -> Option<ServerStatus> {
        match text {
            NOT_RUNNING => Some(ServerStatus::NotRunning),
            NOT_REACHABLE => Some(ServerStatus::NotReachable),
            other => ServerHealth::parse(other).map(ServerStatus::Health),
        }
    }
}

impl From<ServerHealth> for ServerStatus {
    fn from(health: ServerHealth) -> ServerStatus {
        ServerStatus::Health(health)
    }
}

impl fmt::Display for ServerStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerStatus::Health(health) => health.fmt(f),
            ServerStatus::NotRunning => f.write_str(NOT_RUNNING),
            ServerStatus::NotReachable => f.write_str(NOT_REACHABLE),
        }
    }
}

impl Serialize for ServerStatus {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ServerStatus {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        ServerStatus::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown server status {text:?}")))
    }
}

/// `{"servers": [...], "tools": [...]}`: what waits for the operator, the quarantined servers by
/// name and every withheld tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalsAnswer {
    pub servers: Vec<String>,
    pub tools: Vec<WithheldTool>,
}
