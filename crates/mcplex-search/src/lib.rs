//! Tool search: a BM25F index over tool names, server names, descriptions and parameters.
//!
//! Built once per catalog snapshot from plain [`Document`]s; queries only read it. The tool name
//! is split into words (snake_case, camelCase, kebab-case, digits), every field is lowercased and
//! lightly stemmed, and each field has its own weight and length normalisation. An exact name
//! match always ranks first; ties break by id, so results are deterministic. A visibility filter applies before the top-k cut, so a
//! filtered answer is never short. Pure: no I/O, no async, no dependencies.

mod index;
mod tokenize;

pub use index::{Document, Hit, Index, SearchResult};
pub use tokenize::tokenize;

#[cfg(test)]
mod tests;
