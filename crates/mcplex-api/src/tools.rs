//! Tools: `GET /api/v1/tools`, the approval query, and the JSON of `mcplex tools show` and
//! `mcplex tools list`.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `{"tools": [...]}`: every tool offered, served or withheld, sorted by id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolsAnswer {
    pub tools: Vec<Tool>,
}

/// A tool the gateway serves, or one it withholds until an operator decides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Tool {
    Served(ServedTool),
    Withheld(WithheldTool),
}

impl Tool {
    /// The canonical `server:tool` id.
    pub fn id(&self) -> &str {
        match self {
            Tool::Served(tool) => &tool.id,
            Tool::Withheld(tool) => &tool.id,
        }
    }
}

/// A tool in the listings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServedTool {
    pub id: String,
    /// The name callers see.
    pub name: String,
    /// Always [`ToolStatus::Approved`]: only approved definitions are served.
    pub status: ToolStatus,
    pub permission: Permission,
    /// The hash of the approved definition.
    pub pin: String,
    /// Left out of the direct listing until searched for.
    pub deferred: bool,
    /// The upstream's description, when it is text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A tool in no listing, with why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WithheldTool {
    pub id: String,
    pub status: ToolStatus,
    /// What a caller in scope is told when it names the tool.
    pub reason: WithheldReason,
    pub permission: Permission,
    /// The hash of the definition the server offers now.
    pub pin: String,
    /// The upstream's `description`, as it sent it (`null` when it sent none).
    pub description: Value,
}

/// A tool's approval verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolStatus {
    Approved,
    /// Never approved.
    Pending,
    /// Its definition is not the approved one.
    Changed,
    Blocked,
}

/// What a tool may do, from its annotations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Permission {
    Read,
    Write,
    Destructive,
}

/// Why a tool is not served, as a caller in its scope is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WithheldReason {
    NotFound,
    ServerDisabled,
    ServerInitializing,
    ServerUnhealthy,
    ServerQuarantined,
    ToolPendingApproval,
    ToolChanged,
    ToolBlocked,
}

/// The query of `POST /api/v1/tools/{id}/approve`: with `hash`, approve only the definition that
/// hashes to it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApproveQuery {
    pub hash: Option<String>,
}

/// `mcplex tools show ID --json`: the pinned and the latest observed definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolReview {
    pub id: String,
    pub state: ReviewState,
    pub blocked: bool,
    pub pinned: Option<Definition>,
    pub observed: Option<Definition>,
}

/// A definition and its hash (`definition` is `null` when no gateway recorded it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Definition {
    pub hash: String,
    pub definition: Value,
}

/// Where a reviewed tool stands, in words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReviewState {
    #[serde(rename = "blocked")]
    Blocked,
    #[serde(rename = "pending approval")]
    Pending,
    #[serde(rename = "changed: the observed definition is not the approved one")]
    Changed,
    #[serde(rename = "approved")]
    Approved,
}

impl ReviewState {
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewState::Blocked => "blocked",
            ReviewState::Pending => "pending approval",
            ReviewState::Changed => "changed: the observed definition is not the approved one",
            ReviewState::Approved => "approved",
        }
    }
}

impl fmt::Display for ReviewState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One row of `mcplex tools list --json`: a tool as its server offers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListedTool {
    pub id: String,
    pub server: String,
    /// The upstream's tool object, as it sent it.
    pub tool: Value,
}
