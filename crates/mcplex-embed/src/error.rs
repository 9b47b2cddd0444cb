//! [`BertError`]: why a model's files cannot make an encoder, or why it gave no vectors.

/// A model the forward pass refuses, named by what is wrong with it. The texts are the ones a
/// person sees after the file's path (`LoadError`), so they name the key or tensor at fault.
#[derive(Debug, thiserror::Error)]
pub enum BertError {
    /// `config.json` is not JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A size in `config.json` (`hidden_size`, ...) is absent, zero or not a number.
    #[error("{0} is missing or not a positive number")]
    Size(String),
    #[error("hidden_act {0:?} is not supported")]
    Activation(String),
    #[error("position_embedding_type {0:?} is not supported")]
    PositionEmbedding(String),
    /// Another family (RoBERTa, ...) would give wrong vectors without an error.
    #[error("model_type {0:?} is not supported (BERT only)")]
    ModelType(String),
    #[error("layer_norm_eps is not a positive number")]
    Epsilon,
    #[error("hidden_size is not a multiple of num_attention_heads")]
    Heads,
    /// The weights have no word embeddings, with or without the `bert.` prefix.
    #[error("no embeddings.word_embeddings.weight tensor")]
    NoEmbeddings,
    /// A tensor the model needs, by its full name.
    #[error("{0} is missing")]
    MissingTensor(String),
    #[error("{name} has shape {found:?}, expected {expected:?}")]
    Shape {
        name: String,
        found: Vec<usize>,
        expected: Vec<Option<usize>>,
    },
    /// The attention block (e.g. `encoder.layer.0.attention.self`) whose query, key and value
    /// matrices cannot be one product.
    #[error("{0}: query, key and value do not stack")]
    Stack(String),
    /// A dense layer whose weights are fewer than its shape needs.
    #[error("{0}: its weights do not fill its shape")]
    Fill(String),
    /// `tokenizer.json` cannot be read, or a text cannot be tokenized.
    #[error("{0}")]
    Tokenizer(String),
    #[error("the tokenizer has {ids} token ids, the model's word embeddings only {rows}")]
    Vocabulary { ids: usize, rows: usize },
    /// Weights with an infinite or NaN value would rank garbage first, silently.
    #[error("the model gave a vector that is not finite")]
    NotFinite,
}
