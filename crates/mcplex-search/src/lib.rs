//! Tool search: a BM25F index over tool names, server names, descriptions and parameters, and
//! its fusion with a sentence-embedding model when one is configured (hybrid search).
//!
//! Built once per catalog snapshot from plain [`Document`]s; queries only read it. The tool name
//! is split into words (snake_case, camelCase, kebab-case, digits), every field is lowercased and
//! lightly stemmed, and each field has its own weight and length normalisation. With document and
//! query vectors ([`Semantic`]), the BM25 score and the cosine similarity are scaled and mixed;
//! without them the ranking is plain BM25F, which is also the fallback. An exact name match
//! always ranks first; ties break by id, so results are deterministic. A visibility filter
//! applies before the top-k cut, so a filtered answer is never short. Pure: no I/O, no async, no
//! dependencies; the model behind [`Embedder`] lives outside.

mod index;
mod semantic;
mod tokenize;

pub use index::{Document, Hit, Index, SearchResult};
pub use semantic::{
    EmbedError, Embedder, MAX_EMBEDDED_CHARS, Semantic, Vectors, embeddable, passage,
};
pub use tokenize::tokenize;

#[cfg(test)]
mod tests;
