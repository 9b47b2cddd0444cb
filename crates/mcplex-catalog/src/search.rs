//! The catalog's search: one BM25F index per snapshot over its tools, queried with a visibility
//! filter applied before the cut.

use mcplex_search::{Document, Index};
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
    pub tools: Vec<(&'a CatalogTool, f32)>,
    pub total: usize,
}

impl Snapshot {
    /// Searches the tools `visible` accepts (optionally only those of `server`). An empty query
    /// matches every visible tool in listing order.
    pub fn search(
        &self,
        query: &str,
        server: Option<&str>,
        limit: usize,
        visible: impl Fn(&CatalogTool) -> bool,
    ) -> Matches<'_> {
        let result = self.search_index.search(
            query,
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
                .map(|hit| (&self.tools[hit.doc], hit.score))
                .collect(),
            total: result.total,
        }
    }
}
