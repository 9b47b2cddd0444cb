//! Semantic search's moving parts: the model, the embeddings it already computed, and the worker
//! that embeds each published snapshot's tools off the request path (the gateway embeds only
//! queries, with the [`QueryEmbedder`] this hands it).
//!
//! A snapshot is searched with plain BM25F until its tools are embedded; then the worker attaches
//! the vectors and searches turn hybrid. Embeddings are kept by a hash of the passage text, so a
//! new snapshot costs only the tools whose text is new (a server joining, a description
//! changing), and a snapshot published while the worker is busy is skipped in favour of the
//! newest one. With an [`EmbeddingStore`] they also outlive the process: a restart embeds only
//! what changed while it was down.

use std::collections::HashMap;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use mcplex_catalog::{EmbedError, Embedder, Snapshot, Vectors};
use mcplex_dispatch::{Gateway, QueryEmbedder};
use sha2::{Digest, Sha256};

/// Passages embedded per model call: large enough to amortise the call, small enough that a
/// newer snapshot is not kept waiting long.
const BATCH: usize = 32;

/// The SHA-256 of a passage's text: how its embedding is found again.
pub type PassageKey = [u8; 32];

/// Why the place embeddings are kept failed: the store's own error, kept whole (with its
/// source chain) for the log line.
pub type EmbeddingStoreError = Box<dyn std::error::Error + Send + Sync>;

/// Where embeddings outlive the process (the state database). Failures are logged by the caller
/// and cost only a re-embedding later.
pub trait EmbeddingStore: Send + Sync {
    /// Every embedding kept for `model` (and only for it: others may be forgotten).
    fn load(&self, model: &str) -> Result<Vec<(PassageKey, Vec<f32>)>, EmbeddingStoreError>;
    /// Keeps `embeddings` of `model`.
    fn save(
        &self,
        model: &str,
        embeddings: &[(PassageKey, Vec<f32>)],
    ) -> Result<(), EmbeddingStoreError>;
    /// Forgets the embeddings of `model` whose key is not in `keep`.
    fn retain(&self, model: &str, keep: &[PassageKey]) -> Result<(), EmbeddingStoreError>;
}

/// The characters of an embedding pass's error kept for the management API.
const FAILURE_CHARS: usize = 500;

/// Why a catalog's tools could not be embedded (its searches stay BM25F).
#[derive(Debug)]
pub enum EmbeddingError {
    /// The model itself failed.
    Model(EmbedError),
    /// The model answered another number of vectors than it was given passages.
    Count { vectors: usize, passages: usize },
    /// The model's vectors were of different sizes, or too few.
    Ragged,
}

impl std::fmt::Display for EmbeddingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EmbeddingError::Model(error) => error.fmt(f),
            EmbeddingError::Count { vectors, passages } => write!(
                f,
                "the model answered {vectors} vectors for {passages} passages"
            ),
            EmbeddingError::Ragged => {
                f.write_str("the model answered vectors of different sizes, or too few")
            }
        }
    }
}

impl std::error::Error for EmbeddingError {}

/// The model, its query embedder and the worker that embeds catalogs.
pub struct SemanticSearch {
    shared: Arc<Shared>,
    queries: Arc<QueryEmbedder>,
    snapshots: Mutex<Sender<Arc<Snapshot>>>,
}

/// What the worker thread shares with the handle.
struct Shared {
    embedder: Arc<dyn Embedder>,
    store: Option<Arc<dyn EmbeddingStore>>,
    passages: Mutex<HashMap<PassageKey, Vec<f32>>>,
    /// Why the worker's last pass could not embed its snapshot; `None` once a pass succeeds.
    failure: Mutex<Option<String>>,
}

impl SemanticSearch {
    /// Starts the worker thread; it ends when this value is dropped. With `store`, the worker
    /// first loads the embeddings kept there, and keeps every new one.
    pub fn start(
        embedder: Arc<dyn Embedder>,
        store: Option<Arc<dyn EmbeddingStore>>,
    ) -> std::io::Result<SemanticSearch> {
        let queries = Arc::new(QueryEmbedder::new(Arc::clone(&embedder)));
        let shared = Arc::new(Shared {
            embedder,
            store,
            passages: Mutex::new(HashMap::new()),
            failure: Mutex::new(None),
        });
        let (snapshots, pending) = channel();
        let worker = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("mcplex-embed".to_owned())
            .spawn(move || work(&worker, &pending))?;
        Ok(SemanticSearch {
            shared,
            queries,
            snapshots: Mutex::new(snapshots),
        })
    }

    /// What the gateway embeds queries with (`GatewaySetup::queries`).
    pub fn queries(&self) -> Arc<QueryEmbedder> {
        Arc::clone(&self.queries)
    }

    /// Embeds `gateway`'s current snapshot and every one it publishes after, until the gateway
    /// or this worker is gone.
    pub fn follow(self: &Arc<Self>, gateway: &Arc<Gateway>) {
        let mut published = gateway.snapshot_changes();
        let gateway = Arc::downgrade(gateway);
        let worker = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let (Some(gateway), Some(worker)) = (gateway.upgrade(), worker.upgrade()) else {
                    return;
                };
                published.mark_unchanged();
                worker.embed_later(gateway.snapshot());
                drop((gateway, worker));
                if published.changed().await.is_err() {
                    return;
                }
            }
        });
    }

    /// The model's identity, for logs.
    pub fn model(&self) -> &str {
        self.shared.embedder.model()
    }

    /// Why the worker's last pass could not embed the catalog it was given (searches of that
    /// catalog are BM25F); `None` before the first pass and once one succeeds.
    pub fn embedding_failure(&self) -> Option<String> {
        self.shared
            .failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Queues `snapshot` for embedding (the worker takes the newest queued).
    pub fn embed_later(&self, snapshot: Arc<Snapshot>) {
        let sender = self
            .snapshots
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if sender.send(snapshot).is_err() {
            tracing::warn!("semantic search: the embedding worker has stopped; search stays BM25");
        }
    }

    /// Embeds `snapshot`'s tools now, on this thread, and attaches the vectors (the benchmarks).
    pub fn embed_now(&self, snapshot: &Snapshot) -> Result<(), EmbeddingError> {
        embed_snapshot(&self.shared, snapshot)
    }

    /// The model itself (the benchmarks embed passages of their own with it).
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.shared.embedder
    }

    /// The embedding of `query`, on this thread and uncached.
    pub fn embed_query(&self, query: &str) -> Result<Arc<[f32]>, EmbedError> {
        self.queries.embed_query(query)
    }
}

fn work(shared: &Shared, pending: &Receiver<Arc<Snapshot>>) {
    if let Some(store) = &shared.store {
        let model = shared.embedder.model();
        match store.load(model) {
            Ok(kept) => {
                let count = kept.len();
                let mut cache = shared
                    .passages
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                cache.extend(kept);
                tracing::info!(count, "semantic search: embeddings loaded from the state");
            }
            Err(error) => {
                tracing::warn!(%error, "semantic search: cannot load the kept embeddings; embedding anew");
            }
        }
    }
    while let Ok(mut snapshot) = pending.recv() {
        while let Ok(newer) = pending.try_recv() {
            snapshot = newer;
        }
        let outcome = embed_snapshot(shared, &snapshot);
        if let Err(error) = &outcome {
            tracing::warn!(
                %error,
                generation = snapshot.generation(),
                "semantic search: could not embed the tools; this catalog is searched with BM25 only"
            );
        }
        // The model's own words, bounded: they reach the management API.
        *shared
            .failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = outcome
            .err()
            .map(|error| truncated(&error.to_string(), FAILURE_CHARS).to_owned());
    }
}

/// Embeds the passages not yet cached, then attaches the snapshot's vectors.
fn embed_snapshot(shared: &Shared, snapshot: &Snapshot) -> Result<(), EmbeddingError> {
    if snapshot.has_vectors() {
        return Ok(());
    }
    let started = Instant::now();
    let passages = snapshot.passages();
    let keys: Vec<PassageKey> = passages.iter().map(|p| passage_key(p)).collect();
    let mut missing: Vec<(&str, PassageKey)> = {
        let cache = shared
            .passages
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        passages
            .iter()
            .map(String::as_str)
            .zip(keys.iter().copied())
            .filter(|(_, key)| !cache.contains_key(key))
            .collect()
    };
    missing.sort_unstable_by_key(|(_, key)| *key);
    missing.dedup_by_key(|(_, key)| *key);
    // Similar lengths batch together, so little of each batch is padding.
    missing.sort_by_key(|(passage, _)| passage.len());
    for batch in missing.chunks(BATCH) {
        let texts: Vec<&str> = batch.iter().map(|(passage, _)| *passage).collect();
        let vectors = shared
            .embedder
            .embed(&texts)
            .map_err(EmbeddingError::Model)?;
        if vectors.len() != batch.len() {
            return Err(EmbeddingError::Count {
                vectors: vectors.len(),
                passages: batch.len(),
            });
        }
        let embedded: Vec<(PassageKey, Vec<f32>)> = batch
            .iter()
            .zip(vectors)
            .map(|((_, key), vector)| (*key, vector))
            .collect();
        if let Some(store) = &shared.store
            && let Err(error) = store.save(shared.embedder.model(), &embedded)
        {
            tracing::warn!(%error, "semantic search: cannot keep new embeddings; a restart embeds them again");
        }
        shared
            .passages
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(embedded);
    }
    let vectors = {
        let mut cache = shared
            .passages
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let rows: Option<Vec<&[f32]>> = keys
            .iter()
            .map(|key| cache.get(key).map(Vec::as_slice))
            .collect();
        let vectors = rows.and_then(Vectors::new).ok_or(EmbeddingError::Ragged)?;
        // Forget tools long gone, but keep recent ones: a server that reconnects costs nothing.
        if cache.len() > 2 * keys.len() + 1024 {
            let current: std::collections::HashSet<&PassageKey> = keys.iter().collect();
            cache.retain(|key, _| current.contains(key));
            if let Some(store) = &shared.store
                && let Err(error) = store.retain(shared.embedder.model(), &keys)
            {
                tracing::warn!(%error, "semantic search: cannot forget old embeddings");
            }
        }
        vectors
    };
    if snapshot.set_vectors(vectors) {
        tracing::info!(
            generation = snapshot.generation(),
            tools = passages.len(),
            embedded = missing.len(),
            ms = started.elapsed().as_millis() as u64,
            "semantic search: tools embedded; search is hybrid"
        );
    }
    Ok(())
}

/// At most the first `max` characters of `text`, cut at a character boundary.
fn truncated(text: &str, max: usize) -> &str {
    text.char_indices()
        .nth(max)
        .map_or(text, |(at, _)| &text[..at])
}

/// The key of a passage's embedding.
pub fn passage_key(passage: &str) -> PassageKey {
    Sha256::digest(passage.as_bytes()).into()
}
