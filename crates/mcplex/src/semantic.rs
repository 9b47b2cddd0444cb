//! Turning on hybrid search: loading the `search_model` the config names, in builds with the
//! `semantic` cargo feature. Without the feature, or without a model, search is BM25F.

use std::path::Path;

use mcplex_config::Config;
use mcplex_dispatch::SemanticSearch;

/// The model `config` names, loaded and with its embedding worker started; `None` when the
/// config names none, or this build cannot run one (a warning says so).
pub fn load(config: &Config) -> anyhow::Result<Option<SemanticSearch>> {
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
    let semantic = load_dir(dir)?;
    tracing::info!(
        model = semantic.model(),
        ms = started.elapsed().as_millis() as u64,
        "semantic search: model loaded; searches turn hybrid once the tools are embedded"
    );
    Ok(Some(semantic))
}

/// The model in `dir` with its embedding worker started.
#[cfg(feature = "semantic")]
pub fn load_dir(dir: &Path) -> anyhow::Result<SemanticSearch> {
    use anyhow::Context;
    let encoder = mcplex_embed::SentenceEncoder::load(dir)
        .with_context(|| format!("search_model: cannot load the model in {}", dir.display()))?;
    SemanticSearch::start(std::sync::Arc::new(encoder))
        .context("search_model: cannot start the embedding worker")
}

#[cfg(not(feature = "semantic"))]
pub fn load_dir(dir: &Path) -> anyhow::Result<SemanticSearch> {
    anyhow::bail!(
        "cannot load the model in {}: this build has no semantic search (build with --features semantic)",
        dir.display()
    )
}
