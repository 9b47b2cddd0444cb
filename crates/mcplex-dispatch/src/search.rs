//! Every search of the catalog the gateway runs (`tool_search`, `retrieve_tools`, the
//! management API's search, the model APIs' client-side search, and the closest names offered
//! for an unknown one) goes through [`Gateway::search`], so each is ranked the same way and
//! counted in `search_seconds`, and traced (`mcplex.search`).

use mcplex_catalog::{CatalogTool, Matches, Snapshot};
use tracing::Instrument;

use crate::Gateway;

/// What to search for.
#[derive(Debug, Clone, Copy)]
pub struct ToolQuery<'q> {
    pub text: &'q str,
    /// Only tools of this server.
    pub server: Option<&'q str>,
    pub limit: usize,
    pub rank_by: RankBy,
}

/// How a search ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RankBy {
    /// Hybrid (BM25F and the sentence model) once the model and the snapshot's vectors are
    /// there, BM25F until then.
    Meaning,
    /// BM25F only: the closest names to a mistyped one, where embedding the query would cost
    /// more than it finds.
    Words,
}

/// What a search found.
pub struct Found<'s> {
    pub matches: Matches<'s>,
    /// Whether the ranking was hybrid (the query was embedded and the tools were).
    pub hybrid: bool,
}

impl Gateway {
    /// Searches the tools of `snapshot` that `visible` accepts. The query's embedding is timed
    /// in `query_embedding_seconds`, the ranking in `search_seconds`.
    pub async fn search<'s>(
        &self,
        snapshot: &'s Snapshot,
        query: ToolQuery<'_>,
        visible: impl Fn(&CatalogTool) -> bool,
    ) -> Found<'s> {
        let span = mcplex_trace::search(match query.rank_by {
            RankBy::Meaning => "meaning",
            RankBy::Words => "words",
        });
        let vector = match query.rank_by {
            RankBy::Meaning => {
                self.query_vector(snapshot, query.text)
                    .instrument(span.clone())
                    .await
            }
            RankBy::Words => None,
        };
        let _ranking = span.enter();
        let started = std::time::Instant::now();
        let matches = snapshot.search(
            query.text,
            vector.as_deref(),
            query.server,
            query.limit,
            visible,
        );
        mcplex_telemetry::metrics()
            .search_seconds
            .observe(started.elapsed().as_secs_f64());
        span.record("mcplex.search.matches", matches.tools.len());
        span.record("mcplex.search.hybrid", vector.is_some());
        Found {
            matches,
            hybrid: vector.is_some(),
        }
    }
}
