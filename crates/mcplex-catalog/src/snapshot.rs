//! The snapshot type and its read-only queries. Requests only ever read a snapshot.

use mcplex_protocol::ServerHealth;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use jsonschema::Validator;
use mcplex_config::{DirectToolResponseMode, HotSettings, ToolResponseMode};
use mcplex_names::{RegistrationTable, ToolId};
use mcplex_signature::Signature;
use serde_json::{Map, Value};

use crate::UnavailableReason;
use mcplex_trust::{Permission, Scope, Verdict};

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
    /// What calling it needs (from its annotations); token scopes filter on this.
    pub permission: Permission,
    /// Its pin hash (name, description, input and output schema).
    pub pin: String,
}

/// A tool an upstream offers that is not served: its server is quarantined, or the tool is
/// pending approval, changed since approval, or blocked. Visible only to the operator.
#[derive(Debug, Clone)]
pub struct WithheldTool {
    pub id: ToolId,
    pub raw: Arc<Map<String, Value>>,
    pub pin: String,
    pub permission: Permission,
    /// The tool's own verdict (a quarantined server's tools may be approved ones).
    pub verdict: Verdict,
    /// What a caller in scope is told.
    pub reason: UnavailableReason,
}

/// What the catalog knows about one configured server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerView {
    pub status: ServerHealth,
    /// Number of tools the server offers in this snapshot.
    pub tool_count: usize,
    /// Not approved: none of its tools is served.
    pub quarantined: bool,
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
    /// For each entry of `direct_listing`, its index in `tools`.
    pub(crate) direct_owners: Vec<usize>,
    /// Offered but not served, by id.
    pub(crate) withheld: Vec<WithheldTool>,
    /// The display name each withheld tool has when served → its id (only names no served tool
    /// holds): resolved for the reason it is withheld, never for a call or a listing.
    pub(crate) withheld_names: HashMap<String, ToolId>,
    /// BM25F over `tools` (document i is `tools[i]`).
    pub(crate) search_index: mcplex_search::Index,
    /// Embeddings of `tools` for hybrid search, set once when a model has embedded them (off the
    /// request path, after the snapshot is published). Until then, and without a model, search
    /// is plain BM25F.
    pub(crate) vectors: std::sync::OnceLock<mcplex_search::Vectors>,
    /// Prompts, resources and templates.
    pub(crate) offers: crate::Offers,
}

impl Snapshot {
    /// A snapshot with no tools, for before anything connected.
    pub fn empty() -> Snapshot {
        Snapshot::default()
    }

    /// The served prompts, resources and resource templates.
    pub fn offers(&self) -> &crate::Offers {
        &self.offers
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

    /// The entries of [`Snapshot::direct_listing`] that `scope` may see, in order.
    pub fn direct_listing_for<'a>(&'a self, scope: &'a Scope) -> impl Iterator<Item = &'a Value> {
        self.direct_listing
            .iter()
            .zip(&self.direct_owners)
            .filter(move |(_, owner)| self.visible(&self.tools[**owner], scope))
            .map(|(entry, _)| entry)
    }

    /// For each entry of [`Snapshot::direct_listing`], whether `scope` may see it.
    pub fn direct_visibility<'a>(&'a self, scope: &'a Scope) -> impl Iterator<Item = bool> + 'a {
        self.direct_owners
            .iter()
            .map(move |&owner| self.visible(&self.tools[owner], scope))
    }

    /// Whether `scope` may see (and so call) `tool`.
    pub fn visible(&self, tool: &CatalogTool, scope: &Scope) -> bool {
        scope.admits(&tool.id.server, tool.permission)
    }

    /// Tools offered but not served (quarantined server, pending, changed, blocked), by id.
    pub fn withheld(&self) -> &[WithheldTool] {
        &self.withheld
    }

    /// The withheld tool a name as a client may send it means: the display name it has when
    /// served, or its canonical `server:tool`. For the reason only: it is never called.
    pub fn withheld_named(&self, name: &str) -> Option<&WithheldTool> {
        match self.withheld_names.get(name) {
            Some(id) => self.withheld_tool(id),
            None => self.withheld_tool(&ToolId::parse(name)?),
        }
    }

    /// The withheld tool with this id.
    pub fn withheld_tool(&self, id: &ToolId) -> Option<&WithheldTool> {
        self.withheld
            .binary_search_by(|w| w.id.cmp(id))
            .ok()
            .map(|i| &self.withheld[i])
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
