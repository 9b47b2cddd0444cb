//! Turning on hybrid search: loading the `search_model` the config names, in builds with the
//! `semantic` cargo feature, with its embeddings kept in the state database. Without the
//! feature, or without a model, search is BM25F.

use std::path::Path;
use std::sync::Arc;

use mcplex_config::Config;
use mcplex_dispatch::{EmbeddingStore, EmbeddingStoreError, PassageKey, SemanticSearch};
use mcplex_state::Store;

/// The model `config` names, loaded and with its embedding worker started (keeping embeddings
/// in `store`); `None` when the config names none, or this build cannot run one (a warning says
/// so).
pub fn load(config: &Config, store: Arc<Store>) -> anyhow::Result<Option<SemanticSearch>> {
    let Some(dir) = &config.search_model else {
        return Ok(None);
    };
    if !cfg!(feature = "semantic") {
        tracing::warn!(
            "search_model {} is ignored: this build has no semantic search (cargo feature `semantic`); searching with BM25F",
            dir.display()
        );
        return Ok(None);
    }
    let started = std::time::Instant::now();
    let semantic = load_dir(dir, Some(Arc::new(KeptEmbeddings(store))))?;
    tracing::info!(
        model = semantic.model(),
        ms = started.elapsed().as_millis() as u64,
        "semantic search: model loaded; searches turn hybrid once the tools are embedded"
    );
    Ok(Some(semantic))
}

/// The model in `dir` with its embedding worker started.
#[cfg(feature = "semantic")]
pub fn load_dir(
    dir: &Path,
    store: Option<Arc<dyn EmbeddingStore>>,
) -> anyhow::Result<SemanticSearch> {
    use anyhow::Context;
    let encoder = mcplex_embed::SentenceEncoder::load(dir)
        .with_context(|| format!("search_model: cannot load the model in {}", dir.display()))?;
    SemanticSearch::start(Arc::new(encoder), store)
        .context("search_model: cannot start the embedding worker")
}

#[cfg(not(feature = "semantic"))]
pub fn load_dir(
    dir: &Path,
    _store: Option<Arc<dyn EmbeddingStore>>,
) -> anyhow::Result<SemanticSearch> {
    anyhow::bail!(
        "cannot load the model in {}: this build has no semantic search (build with --features semantic)",
        dir.display()
    )
}

/// The state database as the place embeddings outlive the process.
struct KeptEmbeddings(Arc<Store>);

impl EmbeddingStore for KeptEmbeddings {
    fn load(&self, model: &str) -> Result<Vec<(PassageKey, Vec<f32>)>, EmbeddingStoreError> {
        let rows = self.0.load_embeddings(model)?;
        Ok(rows
            .into_iter()
            .filter_map(|(key, vector)| Some((PassageKey::try_from(key).ok()?, vector)))
            .collect())
    }

    fn save(
        &self,
        model: &str,
        embeddings: &[(PassageKey, Vec<f32>)],
    ) -> Result<(), EmbeddingStoreError> {
        let rows: Vec<(&[u8], &[f32])> = embeddings
            .iter()
            .map(|(key, vector)| (&key[..], &vector[..]))
            .collect();
        Ok(self.0.save_embeddings(model, &rows)?)
    }

    fn retain(&self, model: &str, keep: &[PassageKey]) -> Result<(), EmbeddingStoreError> {
        let keep: Vec<&[u8]> = keep.iter().map(|key| &key[..]).collect();
        Ok(self.0.retain_embeddings(model, &keep)?)
    }
}
