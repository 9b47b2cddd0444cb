//! The routes under `/api/v1` and the actions their path names. The gateway's router and the
//! CLI's requests build every path from here.

/// What `POST /api/v1/servers/{name}/{action}` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerAction {
    Approve,
    Quarantine,
    /// Restarts its process or connection on the replica that takes the request.
    Restart,
}

impl ServerAction {
    pub fn as_str(self) -> &'static str {
        match self {
            ServerAction::Approve => "approve",
            ServerAction::Quarantine => "quarantine",
            ServerAction::Restart => "restart",
        }
    }

    /// The action a path segment names; `None` for any other text (the route answers 404).
    pub fn parse(segment: &str) -> Option<ServerAction> {
        [
            ServerAction::Approve,
            ServerAction::Quarantine,
            ServerAction::Restart,
        ]
        .into_iter()
        .find(|action| action.as_str() == segment)
    }
}

/// What `POST /api/v1/tools/{id}/{action}` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolAction {
    /// With `?hash=H` ([`crate::ApproveQuery`]): only the definition that hashes to `H`.
    Approve,
    Block,
}

impl ToolAction {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolAction::Approve => "approve",
            ToolAction::Block => "block",
        }
    }

    /// The action a path segment names; `None` for any other text (the route answers 404).
    pub fn parse(segment: &str) -> Option<ToolAction> {
        [ToolAction::Approve, ToolAction::Block]
            .into_iter()
            .find(|action| action.as_str() == segment)
    }
}

/// Every path of the API: the route patterns the gateway serves, and the paths the CLI requests.
pub mod paths {
    use super::{ServerAction, ToolAction, encode_segment};

    /// `GET`: [`crate::ServersAnswer`]; `POST` [`crate::AddServer`]: 201 [`crate::ServerAdded`].
    pub const SERVERS: &str = "/api/v1/servers";
    /// `POST`, open: a registered gateway proves it holds the API key (`IdentityRequest`).
    pub const IDENTITY: &str = "/api/v1/identity";
    /// `GET`: [`crate::ServerDetail`]; `DELETE` (a server added from the dashboard):
    /// [`crate::Done`].
    pub const SERVER: &str = "/api/v1/servers/{name}";
    /// `POST`: [`crate::Done`].
    pub const SERVER_ACTION: &str = "/api/v1/servers/{name}/{action}";
    /// `POST`: [`crate::LoginStarted`]: an OAuth login to the server, begun for a browser.
    pub const SERVER_LOGIN: &str = "/api/v1/servers/{name}/login";
    /// `DELETE`: [`crate::Done`]: revokes one caller's own login to a `per_user` server.
    pub const CALLER_LOGIN: &str = "/api/v1/servers/{name}/logins/{caller}";
    /// `DELETE`, for an agent (its token) or anyone: [`crate::Done`]: forgets the caller's
    /// own login to a `per_user` server (it disconnects itself).
    pub const CONNECTION: &str = "/api/v1/connections/{name}";
    /// `GET`: [`crate::ToolsAnswer`].
    pub const TOOLS: &str = "/api/v1/tools";
    /// `POST` (`?hash=H` on approve): [`crate::Done`].
    pub const TOOL_ACTION: &str = "/api/v1/tools/{id}/{action}";
    /// `GET`: [`crate::ApprovalsAnswer`].
    pub const APPROVALS: &str = "/api/v1/approvals";
    /// `GET`: [`crate::TokensAnswer`]; `POST` [`crate::CreateToken`]: 201 [`crate::CreatedToken`].
    pub const TOKENS: &str = "/api/v1/tokens";
    /// `DELETE`: [`crate::Done`].
    pub const TOKEN: &str = "/api/v1/tokens/{name}";
    /// `PUT` [`crate::SetLimits`]: [`crate::Done`].
    pub const TOKEN_LIMITS: &str = "/api/v1/tokens/{name}/limits";
    /// `GET`: [`crate::LimitsAnswer`].
    pub const LIMITS: &str = "/api/v1/limits";
    /// `GET` (`?profile=P&search=provider|client`): [`crate::ProjectionAnswer`].
    pub const PROJECTION: &str = "/api/v1/projection/{provider}";
    /// `POST` [`crate::ProjectionSearch`]: the provider's search answer item.
    pub const PROJECTION_SEARCH: &str = "/api/v1/projection/{provider}/search";
    /// `POST` [`crate::CallRequest`]: the tool's MCP result.
    pub const CALL: &str = "/api/v1/call";
    /// `GET` (`?hash` absent): [`crate::ToolReview`], the pinned and the observed definition.
    pub const TOOL_REVIEW: &str = "/api/v1/tools/{id}/review";
    /// `GET` [`crate::ActivityFilter`]: [`crate::ActivityAnswer`].
    pub const ACTIVITY: &str = "/api/v1/activity";
    /// `GET` [`crate::ActivityExportQuery`]: every row it selects, oldest first, streamed as
    /// JSON Lines or CSV (what `mcplex activity export` writes).
    pub const ACTIVITY_EXPORT: &str = "/api/v1/activity/export";
    /// `GET`: [`crate::StatsAnswer`].
    pub const STATS: &str = "/api/v1/stats";
    /// `GET` [`crate::TrendsQuery`]: [`crate::TrendsAnswer`].
    pub const TRENDS: &str = "/api/v1/trends";
    /// `POST` [`crate::SearchRequest`]: [`crate::SearchAnswer`].
    pub const SEARCH: &str = "/api/v1/search";
    /// `GET`: [`crate::ConfigAnswer`].
    pub const CONFIG: &str = "/api/v1/config";
    /// `GET`: [`crate::StderrAnswer`].
    pub const SERVER_STDERR: &str = "/api/v1/servers/{name}/stderr";

    pub fn projection(provider: &str) -> String {
        format!("/api/v1/projection/{}", encode_segment(provider))
    }

    pub fn server_action(name: &str, action: ServerAction) -> String {
        format!("{SERVERS}/{}/{}", encode_segment(name), action.as_str())
    }

    /// `hash` only goes with [`ToolAction::Approve`].
    pub fn tool_action(id: &str, action: ToolAction, hash: Option<&str>) -> String {
        let path = format!("{TOOLS}/{}/{}", encode_segment(id), action.as_str());
        match hash {
            Some(hash) => format!("{path}?hash={}", encode_segment(hash)),
            None => path,
        }
    }

    pub fn token(name: &str) -> String {
        format!("{TOKENS}/{}", encode_segment(name))
    }

    pub fn server_login(name: &str) -> String {
        format!("{SERVERS}/{}/login", encode_segment(name))
    }

    pub fn token_limits(name: &str) -> String {
        format!("{TOKENS}/{}/limits", encode_segment(name))
    }
}

/// Percent-encodes a path segment or query value (server names and tool ids may hold any
/// character; `/` is the one that would break the route, and `:` is fine in a path).
pub fn encode_segment(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b':' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}
