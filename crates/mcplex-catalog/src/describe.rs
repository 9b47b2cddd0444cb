//! Answers for `describe_tool`: definitions and availability verdicts. Reasons come from a closed
//! set documented in `docs/direct-surface.md`; an id the caller cannot see is always `not_found`.

use mcplex_names::ToolId;
use mcplex_protocol::ServerHealth;
use serde_json::{Map, Value};

use crate::render::full_description;
use crate::{CatalogTool, Snapshot};
use mcplex_trust::Scope;

/// Why a tool cannot be called right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnavailableReason {
    NotFound,
    ServerDisabled,
    ServerInitializing,
    ServerUnhealthy,
    ServerQuarantined,
    ToolPendingApproval,
    ToolChanged,
    ToolBlocked,
}

impl UnavailableReason {
    pub fn as_str(self) -> &'static str {
        match self {
            UnavailableReason::NotFound => "not_found",
            UnavailableReason::ServerDisabled => "server_disabled",
            UnavailableReason::ServerInitializing => "server_initializing",
            UnavailableReason::ServerUnhealthy => "server_unhealthy",
            UnavailableReason::ServerQuarantined => "server_quarantined",
            UnavailableReason::ToolPendingApproval => "tool_pending_approval",
            UnavailableReason::ToolChanged => "tool_changed",
            UnavailableReason::ToolBlocked => "tool_blocked",
        }
    }
}

impl std::fmt::Display for UnavailableReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for UnavailableReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl Snapshot {
    /// Whether `name` (display name or `server:tool`) can be called now by a caller with
    /// `scope`, and if not, why. Anything outside the scope is `not_found`, exactly like a name
    /// that never existed: no reason, no hint that it is there.
    pub fn availability(
        &self,
        name: &str,
        scope: &Scope,
    ) -> Result<&CatalogTool, UnavailableReason> {
        if let Some(tool) = self.resolve(name) {
            if !self.visible(tool, scope) {
                return Err(UnavailableReason::NotFound);
            }
            return match self.servers.get(tool.id.server.as_ref()).map(|v| &v.status) {
                Some(ServerHealth::Ready) => Ok(tool),
                Some(ServerHealth::Connecting) => Err(UnavailableReason::ServerInitializing),
                Some(ServerHealth::Unhealthy { .. } | ServerHealth::NeedsLogin { .. }) => {
                    Err(UnavailableReason::ServerUnhealthy)
                }
                Some(ServerHealth::Disabled) | None => Err(UnavailableReason::NotFound),
            };
        }
        // Withheld, named by its canonical id or by the display name it has when served: the
        // reason, if the caller may see that tool at all.
        if let Some(withheld) = self.withheld_named(name) {
            return Err(if scope.admits(&withheld.id.server, withheld.permission) {
                withheld.reason
            } else {
                UnavailableReason::NotFound
            });
        }
        // Not served. A canonical id names its server, which may explain why, if the caller
        // may know about that server.
        let Some(id) = ToolId::parse(name).filter(|id| scope.admits_server(&id.server)) else {
            return Err(UnavailableReason::NotFound);
        };
        let server = self.servers.get(id.server.as_ref());
        Err(match server.map(|v| &v.status) {
            Some(ServerHealth::Disabled) => UnavailableReason::ServerDisabled,
            Some(ServerHealth::Connecting) => UnavailableReason::ServerInitializing,
            Some(ServerHealth::NeedsLogin { .. }) => UnavailableReason::ServerUnhealthy,
            _ => UnavailableReason::NotFound,
        })
    }

    /// The full definition of a tool: real input schema, untruncated description, annotations,
    /// and `output_schema` when the tool declares one.
    pub fn definition(&self, tool: &CatalogTool) -> Value {
        let mut out = Map::new();
        out.insert("id".to_owned(), Value::String(tool.id.to_string()));
        out.insert("name".to_owned(), Value::String(tool.display_name.clone()));
        out.insert(
            "description".to_owned(),
            Value::String(full_description(tool)),
        );
        out.insert(
            "signature".to_owned(),
            Value::String(tool.signature.render(&tool.id.tool)),
        );
        if let Some(schema) = tool.raw.get("inputSchema") {
            out.insert("input_schema".to_owned(), schema.clone());
        }
        if let Some(schema) = tool.raw.get("outputSchema") {
            out.insert("output_schema".to_owned(), schema.clone());
        }
        if let Some(annotations) = tool.raw.get("annotations") {
            out.insert("annotations".to_owned(), annotations.clone());
        }
        Value::Object(out)
    }

    /// Validates `arguments` (the call's `arguments` object; absent counts as `{}`) against the
    /// tool's stored upstream schema. Fail-open: a tool whose schema did not compile always passes.
    pub fn check_arguments(
        &self,
        tool: &CatalogTool,
        arguments: Option<&Value>,
    ) -> Result<(), crate::ArgumentProblems> {
        let Some(validator) = &tool.validator else {
            return Ok(());
        };
        match arguments {
            Some(arguments) => crate::validate::check(validator, arguments),
            None => crate::validate::check(validator, &Value::Object(Map::new())),
        }
    }
}
