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

mod fusion;
mod index;
mod query;
mod semantic;
mod tokenize;
mod tuning;

pub use index::{Document, Hit, Index, SearchResult};
pub use query::{clean_query, embed_query, query_parts, query_texts};
pub use semantic::{
    EmbedError, Embedder, MAX_EMBEDDED_CHARS, PassageStyle, Semantic, Vectors, embeddable, passage,
    passage_styled, passages,
};
pub use tokenize::tokenize;
pub use tuning::{Fusion, ServerLean, Tuning, WeakPart};

#[cfg(test)]
mod lever_tests;
#[cfg(test)]
mod part_tests;
#[cfg(test)]
mod tests;
