//! The snapshot type and its read-only queries. Requests only ever read a snapshot.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use jsonschema::Validator;
use mcplex_config::{DirectToolResponseMode, HotSettings, ToolResponseMode};
use mcplex_names::{RegistrationTable, ToolId};
use mcplex_signature::Signature;
use serde_json::{Map, Value};

use crate::ServerStatus;

/// One upstream tool as the catalog knows it.
#[derive(Debug, Clone)]
pub struct CatalogTool {
    pub id: ToolId,
    /// The direct-surface name (`server__tool`, sanitized, maybe hashed).
    pub display_name: String,
    /// The tool object exactly as the upstream sent it.
    pub raw: Arc<Map<String, Value>>,
    /// The compact signature of its input schema.
    pub signature: Arc<Signature>,
    /// Its argument validator; `None` when the schema did not compile (calls pass unvalidated).
    pub validator: Option<Arc<Validator>>,
    /// Reached through `tool_search` / `call_tool` instead of being listed.
    pub deferred: bool,
}

/// What the catalog knows about one configured server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerView {
    pub status: ServerStatus,
    /// Number of tools the server offers in this snapshot.
    pub tool_count: usize,
}

/// An immutable view of every tool the gateway can route to.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub(crate) generation: u64,
    /// Sorted by display name: listings are deterministic so prefix caches hold.
    pub(crate) tools: Vec<CatalogTool>,
    pub(crate) index_by_id: HashMap<ToolId, usize>,
    pub(crate) table: RegistrationTable,
    pub(crate) servers: BTreeMap<String, ServerView>,
    /// How the surfaces render tools in this snapshot.
    pub(crate) hot: HotSettings,
    /// The direct surface's upstream entries in `mode`, computed once per snapshot.
    pub(crate) direct_listing: Arc<Vec<Value>>,
    /// BM25F over `tools` (document i is `tools[i]`).
    pub(crate) search_index: mcplex_search::Index,
}

impl Snapshot {
    /// A snapshot with no tools, for before anything connected.
    pub fn empty() -> Snapshot {
        Snapshot::default()
    }

    /// Increases by one with every rebuild; useful in logs and tests.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// All tools, sorted by display name.
    pub fn tools(&self) -> &[CatalogTool] {
        &self.tools
    }

    /// Resolves a name as a client may send it: the direct display name, or the canonical
    /// `server:tool`. Always through the registration table, never by splitting on `__`.
    pub fn resolve(&self, name: &str) -> Option<&CatalogTool> {
        let id = match self.table.resolve(name) {
            Some(id) => id.clone(),
            None => ToolId::parse(name)?,
        };
        self.tool(&id)
    }

    /// The tool with this canonical id.
    pub fn tool(&self, id: &ToolId) -> Option<&CatalogTool> {
        self.index_by_id.get(id).map(|&index| &self.tools[index])
    }

    /// Status of every configured server, by name.
    pub fn servers(&self) -> &BTreeMap<String, ServerView> {
        &self.servers
    }

    /// The direct surface's upstream entries, sorted, rendered in [`Snapshot::mode`].
    pub fn direct_listing(&self) -> &Arc<Vec<Value>> {
        &self.direct_listing
    }

    /// The direct surface's serialization mode.
    pub fn mode(&self) -> DirectToolResponseMode {
        self.hot.direct_tool_response_mode
    }

    /// How `retrieve_tools` renders matches.
    pub fn tool_response_mode(&self) -> ToolResponseMode {
        self.hot.tool_response_mode
    }
}
