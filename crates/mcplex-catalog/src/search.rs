//! The catalog's search: one BM25F index per snapshot over its tools, joined by their embeddings
//! once a model has computed them, queried with a visibility filter applied before the cut.

use mcplex_search::{Document, Index, Semantic, Vectors};
use serde_json::Value;

use crate::{CatalogTool, Snapshot};

/// The searchable text of one tool.
pub(crate) fn document(tool: &CatalogTool) -> Document {
    let text = |value: Option<&Value>| value.and_then(Value::as_str).unwrap_or_default().to_owned();
    let params = tool
        .raw
        .get("inputSchema")
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .iter()
                .map(|(name, p)| (name.clone(), text(p.get("description"))))
                .collect()
        })
        .unwrap_or_default();
    Document {
        id: tool.id.to_string(),
        names: vec![tool.display_name.clone(), tool.id.tool.to_string()],
        tool: tool.id.tool.to_string(),
        server: tool.id.server.to_string(),
        description: text(tool.raw.get("description")),
        params,
    }
}

pub(crate) fn index(tools: &[CatalogTool]) -> Index {
    let documents: Vec<Document> = tools.iter().map(document).collect();
    Index::build(&documents)
}

/// Ranked tools for a query, and how many matched before the cut.
pub struct Matches<'a> {
    pub tools: Vec<Match<'a>>,
    pub total: usize,
    /// The parts the query was split into and ranked by, in order
    /// (`mcplex_search::query_parts`); empty when it was ranked whole.
    pub parts: Vec<String>,
}

/// One tool a search found, with its score and the part of the query whose ranking placed it
/// (an index into [`Matches::parts`]; `None` when the whole query or an exact name did).
pub struct Match<'a> {
    pub tool: &'a CatalogTool,
    pub score: f32,
    pub part: Option<usize>,
}

impl Snapshot {
    /// Searches the tools `visible` accepts (optionally only those of `server`). An empty query
    /// matches every visible tool in listing order. With the query's embedding and once this
    /// snapshot's tools are embedded ([`Snapshot::set_vectors`]), the ranking is hybrid;
    /// otherwise it is BM25F.
    pub fn search(
        &self,
        query: &str,
        query_vector: Option<&[f32]>,
        server: Option<&str>,
        limit: usize,
        visible: impl Fn(&CatalogTool) -> bool,
    ) -> Matches<'_> {
        let semantic = query_vector
            .zip(self.vectors.get())
            .map(|(query, documents)| Semantic { query, documents });
        let result = self.search_index.search(
            query,
            semantic,
            |doc| {
                let tool = &self.tools[doc];
                server.is_none_or(|s| *tool.id.server == *s) && visible(tool)
            },
            limit,
        );
        Matches {
            tools: result
                .hits
                .iter()
                .map(|hit| Match {
                    tool: &self.tools[hit.doc],
                    score: hit.score,
                    part: hit.part,
                })
                .collect(),
            total: result.total,
            parts: result.parts,
        }
    }

    /// The searchable text of each tool, in `tools()` order: what the index ranks (the
    /// retrieval benchmark ranks it with each lever of `mcplex_search::Tuning`).
    pub fn search_documents(&self) -> Vec<Document> {
        self.tools.iter().map(document).collect()
    }

    /// The text each tool is embedded as, in `tools()` order.
    pub fn passages(&self) -> Vec<String> {
        self.tools
            .iter()
            .map(|tool| mcplex_search::passage(&document(tool)))
            .collect()
    }

    /// Attaches the embeddings of [`Snapshot::passages`]; from then on searches given a query
    /// vector are hybrid. Refused (false) when the count does not match or vectors are already
    /// attached.
    pub fn set_vectors(&self, vectors: Vectors) -> bool {
        vectors.len() == self.tools.len() && self.vectors.set(vectors).is_ok()
    }

    /// Whether this snapshot's tools are embedded, so that a query vector would be used.
    pub fn has_vectors(&self) -> bool {
        self.vectors.get().is_some()
    }
}
