//! [`QueryEmbedder`]: the sentence model as a search query needs it, on the request path: a
//! query's vectors computed on a blocking thread and remembered (agents repeat searches). The
//! tools' vectors are attached to each snapshot off the request path, by the embedding worker
//! of `mcplex-runtime`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use mcplex_catalog::{EmbedError, Embedder, embeddable};

/// Query embeddings remembered; the cache empties when it is full.
const QUERY_CACHE: usize = 512;

/// The model and the query embeddings it computed.
pub struct QueryEmbedder {
    embedder: Arc<dyn Embedder>,
    queries: Mutex<HashMap<String, Arc<[f32]>>>,
}

impl QueryEmbedder {
    pub fn new(embedder: Arc<dyn Embedder>) -> QueryEmbedder {
        QueryEmbedder {
            embedder,
            queries: Mutex::new(HashMap::new()),
        }
    }

    /// The model's identity, for logs and the management API.
    pub fn model(&self) -> &str {
        self.embedder.model()
    }

    /// The query's vectors as search wants them: the request's as written, then each part's of
    /// a request for several things (`mcplex_catalog::embed_query`), in one model call, on this
    /// thread and uncached.
    pub fn embed_query(&self, query: &str) -> Result<Arc<[f32]>, EmbedError> {
        // The gateway ranks with the default tuning: the vectors it needs are that tuning's.
        let split_parts = mcplex_catalog::Tuning::default().split_parts;
        mcplex_catalog::embed_query(self.embedder.as_ref(), query, split_parts).map(Arc::from)
    }

    /// The embedding of `query` (its first characters: see [`embeddable`]), computed on a
    /// blocking thread; `None` when the model fails (logged; the search falls back to BM25).
    pub(crate) async fn query_vector(self: &Arc<Self>, query: &str) -> Option<Arc<[f32]>> {
        let query = embeddable(query);
        let cached = self.cache().get(query).cloned();
        if cached.is_some() {
            return cached;
        }
        let this = Arc::clone(self);
        let text = query.to_owned();
        let started = Instant::now();
        let embedded = tokio::task::spawn_blocking(move || this.embed_query(&text)).await;
        mcplex_telemetry::metrics()
            .query_embedding_seconds
            .observe(started.elapsed().as_secs_f64());
        let vector = match embedded {
            Ok(Ok(vector)) => vector,
            Ok(Err(error)) => {
                tracing::warn!(%error, "semantic search: could not embed a query; using BM25");
                return None;
            }
            Err(error) => {
                tracing::warn!(%error, "semantic search: the query embedding task failed");
                return None;
            }
        };
        let mut queries = self.cache();
        if queries.len() >= QUERY_CACHE {
            queries.clear();
        }
        queries.insert(query.to_owned(), Arc::clone(&vector));
        Some(vector)
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<[f32]>>> {
        self.queries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
