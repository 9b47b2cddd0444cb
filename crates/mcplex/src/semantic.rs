//! Turning on hybrid search: loading the model `search_model` names (not set: the one built into
//! the binary), in builds with the `semantic` cargo feature (the default), with its embeddings
//! kept in the state database. Without the feature, with `search_model: false`, or when the
//! model does not load, search is BM25F, and one log line says which and why.

use std::path::Path;
use std::sync::Arc;

use mcplex_api::{NoModel, WithoutModel};
use mcplex_config::{Config, SearchModel};
use mcplex_runtime::{EmbeddingStore, EmbeddingStoreError, PassageKey, SemanticSearch};
use mcplex_state::Store;

/// What `bench retrieval --model` calls the model built into the binary.
#[cfg(feature = "bench")]
pub const BUILTIN_MODEL_ARGUMENT: &str = "builtin";

/// The model `config` names, loaded and with its embedding worker started (keeping embeddings
/// in `store`); else why searches are BM25F (logged, and shown by the management API) because
/// `config` names none, this build has none, or it does not load.
pub fn load(config: &Config, store: Arc<Store>) -> Result<SemanticSearch, WithoutModel> {
    let store: Arc<dyn EmbeddingStore> = Arc::new(KeptEmbeddings(store));
    let started = std::time::Instant::now();
    let without = |because, message: String| WithoutModel { because, message };
    let loaded = match &config.search_model {
        SearchModel::Off => {
            tracing::info!("semantic search: off (search_model: false); searching with BM25F");
            return Err(without(
                NoModel::Config,
                "the config turns it off (search_model: false)".to_owned(),
            ));
        }
        _ if !cfg!(feature = "semantic") => {
            let why = "this build has none (built without the cargo feature `semantic`)";
            tracing::warn!("semantic search: {why}; searching with BM25F");
            return Err(without(NoModel::Build, why.to_owned()));
        }
        SearchModel::BuiltIn => load_builtin(Some(store)),
        SearchModel::Dir(dir) => load_dir(dir, Some(store)),
    };
    match loaded {
        Ok(semantic) => {
            tracing::info!(
                model = semantic.model(),
                instructions = instructions(),
                ms = started.elapsed().as_millis() as u64,
                "semantic search: model loaded; searches turn hybrid once the tools are embedded"
            );
            Ok(semantic)
        }
        Err(error) => {
            tracing::warn!("semantic search: {error:#}; searching with BM25F");
            Err(without(NoModel::Failed, format!("{error:#}")))
        }
    }
}

/// The model for `bench retrieval --model DIR`: the built-in one for
/// [`BUILTIN_MODEL_ARGUMENT`], else the directory; no store.
#[cfg(feature = "bench")]
pub fn load_for_bench(dir: &Path) -> anyhow::Result<SemanticSearch> {
    if dir == Path::new(BUILTIN_MODEL_ARGUMENT) {
        load_builtin(None)
    } else {
        load_dir(dir, None)
    }
}

/// The model built into the binary with its embedding worker started.
#[cfg(feature = "semantic")]
fn load_builtin(store: Option<Arc<dyn EmbeddingStore>>) -> anyhow::Result<SemanticSearch> {
    use anyhow::Context;
    let encoder = mcplex_embed::SentenceEncoder::builtin()
        .context("cannot load the model built into this binary")?;
    SemanticSearch::start(Arc::new(encoder), store).context("cannot start the embedding worker")
}

/// The model in `dir` with its embedding worker started.
#[cfg(feature = "semantic")]
fn load_dir(dir: &Path, store: Option<Arc<dyn EmbeddingStore>>) -> anyhow::Result<SemanticSearch> {
    use anyhow::Context;
    let encoder = encoder_in(dir)?;
    SemanticSearch::start(Arc::new(encoder), store).context("cannot start the embedding worker")
}

#[cfg(not(feature = "semantic"))]
fn load_builtin(_store: Option<Arc<dyn EmbeddingStore>>) -> anyhow::Result<SemanticSearch> {
    anyhow::bail!("this build has no model (built without the cargo feature `semantic`)")
}

#[cfg(not(feature = "semantic"))]
fn load_dir(dir: &Path, _store: Option<Arc<dyn EmbeddingStore>>) -> anyhow::Result<SemanticSearch> {
    match encoder_in(dir)? {}
}

/// The encoder of the model in `dir`; its error says which directory and why.
#[cfg(feature = "semantic")]
fn encoder_in(dir: &Path) -> anyhow::Result<mcplex_embed::SentenceEncoder> {
    use anyhow::Context;
    mcplex_embed::SentenceEncoder::load(dir)
        .with_context(|| format!("search_model: cannot load the model in {}", dir.display()))
}

#[cfg(not(feature = "semantic"))]
fn encoder_in(dir: &Path) -> anyhow::Result<std::convert::Infallible> {
    anyhow::bail!(
        "search_model: cannot load the model in {}: this build has no semantic search (built without the cargo feature `semantic`)",
        dir.display()
    )
}

/// Whether the model in `dir` loads (`config check`); why not, as `serve` would say it before
/// searching with BM25F alone. Nothing is embedded. An instruction cap it cannot read is
/// [`check_instructions`]'s to report: the files are read and checked before it.
pub fn check_dir(dir: &Path) -> Result<(), String> {
    match encoder_in(dir) {
        Ok(_) => Ok(()),
        Err(error) if refused_only_the_cap(&error) => Ok(()),
        Err(error) => Err(format!("{error:#}")),
    }
}

#[cfg(feature = "semantic")]
fn refused_only_the_cap(error: &anyhow::Error) -> bool {
    matches!(
        error.downcast_ref::<mcplex_embed::LoadError>(),
        Some(mcplex_embed::LoadError::Instructions(_))
    )
}

#[cfg(not(feature = "semantic"))]
fn refused_only_the_cap(_: &anyhow::Error) -> bool {
    false
}

/// Whether the instructions the model would run can be read (`config check`): where
/// `MCPLEX_EMBED_ISA` names none, no model loads.
#[cfg(feature = "semantic")]
pub fn check_instructions() -> Result<(), String> {
    mcplex_embed::instructions()
        .map(drop)
        .map_err(|e| e.to_string())
}

#[cfg(not(feature = "semantic"))]
pub fn check_instructions() -> Result<(), String> {
    Ok(())
}

/// The instructions a loaded model's products run with, as `MCPLEX_EMBED_ISA` spells them
/// (`avx512-vnni`, `avx512`, `avx2`, `portable`): the CPU's best, at most the cap. One tier
/// serves the whole process.
#[cfg(feature = "semantic")]
pub fn instructions() -> Option<&'static str> {
    mcplex_embed::instructions()
        .ok()
        .map(mcplex_embed::Isa::name)
}

#[cfg(not(feature = "semantic"))]
pub fn instructions() -> Option<&'static str> {
    None
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
