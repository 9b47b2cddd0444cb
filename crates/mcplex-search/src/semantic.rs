//! The semantic half of hybrid search: what a document is embedded as, the model interface, and
//! the vectors of one index. The model itself lives elsewhere (`mcplex-embed`, behind a cargo
//! feature); this module only does arithmetic on what a model returned.

use crate::Document;
use crate::tokenize::split_words;

/// A sentence-embedding model. Implementations must be deterministic: the same text always gives
/// the same vector, so vectors can be cached by text.
pub trait Embedder: Send + Sync {
    /// Identifies the model and its settings; vectors of different models never mix.
    fn model(&self) -> &str;
    /// One unit-length vector per text, in order, all of the same dimension.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// Why a model could not embed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedError(pub String);

impl std::fmt::Display for EmbedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EmbedError {}

/// Characters of a passage or query worth embedding: sentence models read a few hundred tokens
/// at most, so anything longer only costs tokenizing (and, for a query, cache memory).
pub const MAX_EMBEDDED_CHARS: usize = 2048;

/// `text` cut to its first [`MAX_EMBEDDED_CHARS`] characters.
pub fn embeddable(text: &str) -> &str {
    match text.char_indices().nth(MAX_EMBEDDED_CHARS) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// The text a tool is embedded as: its name in plain words and the first paragraph of its
/// description (`read_file` + "Read a file.\n\nDetails…" → `read file: Read a file.`). The first
/// paragraph is the summary a description leads with; what follows is usage detail that dilutes
/// a single vector, and sentence models are trained on passages of about that length.
pub fn passage(document: &Document) -> String {
    passage_styled(document, PassageStyle::default())
}

/// Which text of a tool is embedded (the benchmark compares them; [`passage`] is the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PassageStyle {
    /// The name in words and the description's first paragraph.
    #[default]
    Summary,
    /// The name in words and the whole description.
    Whole,
    /// [`PassageStyle::Summary`], then the parameter names in words.
    SummaryParams,
    /// The server name in words, then [`PassageStyle::Summary`].
    ServerSummary,
    /// [`PassageStyle::Summary`], and the name with each further sentence of the description,
    /// one vector each: a document is as similar as its most similar vector (see [`passages`]).
    Sentences,
}

/// Sentences of a description embedded on their own, at most, after the summary.
const MAX_SENTENCES: usize = 4;

/// The texts `document` is embedded as in `style`, one vector each: the passage of
/// [`passage_styled`], and with [`PassageStyle::Sentences`] the name with each sentence of the
/// description that is not already the whole summary.
pub fn passages(document: &Document, style: PassageStyle) -> Vec<String> {
    let mut texts = vec![passage_styled(document, style)];
    if style != PassageStyle::Sentences {
        return texts;
    }
    let name = words_of(&document.tool);
    let flat = document
        .description
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let sentences: Vec<&str> = flat
        .split_inclusive(". ")
        .map(str::trim)
        .filter(|s| s.chars().filter(|c| c.is_alphanumeric()).count() >= 12)
        .collect();
    if sentences.len() < 2 {
        return texts;
    }
    texts.extend(
        sentences
            .iter()
            .take(MAX_SENTENCES)
            .map(|sentence| embeddable(&format!("{name}: {sentence}")).to_owned()),
    );
    texts
}

/// The words of an identifier, lowercased: `getWeather_byCity` → `get weather by city`.
fn words_of(text: &str) -> String {
    split_words(text)
        .into_iter()
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The text `document` is embedded as in `style`.
pub fn passage_styled(document: &Document, style: PassageStyle) -> String {
    let name = words_of(&document.tool);
    let description = document.description.trim();
    let text = match style {
        PassageStyle::Whole => description,
        _ => description.split("\n\n").next().unwrap_or(description),
    };
    let summary = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut passage = match style {
        PassageStyle::ServerSummary => format!("{} {name}", words_of(&document.server)),
        _ => name,
    };
    if !summary.is_empty() {
        passage = format!("{passage}: {summary}");
    }
    if style == PassageStyle::SummaryParams && !document.params.is_empty() {
        let params: Vec<String> = document.params.iter().map(|(n, _)| words_of(n)).collect();
        passage = format!("{passage} ({})", params.join(", "));
    }
    embeddable(&passage).to_owned()
}

/// One unit vector per document of an [`crate::Index`], in the same order, packed in one
/// row-major matrix so that scoring a query walks memory once; or several per document
/// ([`Vectors::grouped`]), a document then being as similar as its most similar row.
#[derive(Debug, Clone, Default)]
pub struct Vectors {
    dimension: usize,
    matrix: Vec<f32>,
    /// With several rows per document: the first row of each, then the number of rows.
    /// Empty when every document has one row.
    starts: Vec<usize>,
}

/// Documents whose vectors pseudo-relevance feedback averages.
const FEEDBACK_DOCUMENTS: usize = 3;

impl Vectors {
    /// The rows packed, or `None` when they do not all have the same dimension.
    pub fn new<'a>(rows: impl IntoIterator<Item = &'a [f32]>) -> Option<Vectors> {
        let mut rows = rows.into_iter().peekable();
        let dimension = rows.peek().map_or(0, |row| row.len());
        let mut matrix = Vec::new();
        for row in rows {
            if row.len() != dimension {
                return None;
            }
            matrix.extend_from_slice(row);
        }
        Some(Vectors {
            dimension,
            matrix,
            starts: Vec::new(),
        })
    }

    /// Several rows per document, in document order; `None` when the rows do not all have
    /// the same dimension or a document has none.
    pub fn grouped<'a>(documents: impl IntoIterator<Item = Vec<&'a [f32]>>) -> Option<Vectors> {
        let mut starts = Vec::new();
        let mut rows = Vec::new();
        for group in documents {
            if group.is_empty() {
                return None;
            }
            starts.push(rows.len());
            rows.extend(group);
        }
        starts.push(rows.len());
        let mut vectors = Vectors::new(rows)?;
        vectors.starts = starts;
        Some(vectors)
    }

    /// How many documents have vectors.
    pub fn len(&self) -> usize {
        match self.starts.len() {
            0 => self.matrix.len().checked_div(self.dimension).unwrap_or(0),
            n => n - 1,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.matrix.is_empty()
    }

    /// Cosine similarity of document `doc` with the unit vector `query`; 0 when the dimensions
    /// differ or the document has no vector.
    pub(crate) fn similarity(&self, doc: usize, query: &[f32]) -> f32 {
        if query.len() != self.dimension {
            return 0.0;
        }
        self.rows(doc)
            .map(|row| dot(row, query))
            .fold(None, |best: Option<f32>, s| {
                Some(best.map_or(s, |b| b.max(s)))
            })
            .unwrap_or(0.0)
    }

    /// The similarity of each of the first `count` documents with `query`.
    pub(crate) fn similarities(&self, query: &[f32], count: usize) -> Vec<f32> {
        (0..count).map(|doc| self.similarity(doc, query)).collect()
    }

    /// [`Vectors::similarities`] of each of `queries` (a request and its parts), in one pass
    /// over the matrix: a document's rows are read from memory once for all of them, the
    /// pass that costs most on a large fleet.
    pub(crate) fn similarities_of(&self, queries: &[&[f32]], count: usize) -> Vec<Vec<f32>> {
        let mut all = vec![Vec::with_capacity(count); queries.len()];
        for doc in 0..count {
            for (query, similarities) in queries.iter().zip(all.iter_mut()) {
                similarities.push(self.similarity(doc, query));
            }
        }
        all
    }

    /// The rows of document `doc` (none when it has no vector).
    fn rows(&self, doc: usize) -> impl Iterator<Item = &[f32]> {
        let (first, end) = match self.starts.len() {
            0 => (doc, doc + 1),
            _ => (
                self.starts.get(doc).copied().unwrap_or(0),
                self.starts.get(doc + 1).copied().unwrap_or(0),
            ),
        };
        let dimension = self.dimension.max(1);
        (first..end).filter_map(move |row| self.matrix.get(row * dimension..(row + 1) * dimension))
    }

    /// `query` moved towards the mean of the first row of its [`FEEDBACK_DOCUMENTS`] most
    /// similar documents by `weight`, as a unit vector; `None` when there is nothing to move.
    pub(crate) fn feedback(
        &self,
        query: &[f32],
        similarities: &[f32],
        weight: f32,
    ) -> Option<Vec<f32>> {
        let mut best: Vec<usize> = (0..similarities.len()).collect();
        best.sort_by(|a, b| similarities[*b].total_cmp(&similarities[*a]));
        best.truncate(FEEDBACK_DOCUMENTS);
        let mut moved = query.to_vec();
        for doc in &best {
            let row = self.rows(*doc).next()?;
            for (m, r) in moved.iter_mut().zip(row) {
                *m += weight * r / best.len() as f32;
            }
        }
        let norm = dot(&moved, &moved).sqrt();
        (norm > 0.0).then(|| moved.iter().map(|m| m / norm).collect())
    }
}

/// A dot product in eight independent lanes, which the compiler turns into SIMD (a single
/// running sum cannot be reordered, so it would not vectorise).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 8;
    let mut lanes = [0f32; LANES];
    let (a_chunks, a_tail) = a.as_chunks::<LANES>();
    let (b_chunks, b_tail) = b.as_chunks::<LANES>();
    let tail: f32 = a_tail.iter().zip(b_tail).map(|(x, y)| x * y).sum();
    for (x, y) in a_chunks.iter().zip(b_chunks) {
        for lane in 0..LANES {
            lanes[lane] += x[lane] * y[lane];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// What the semantic half of a search needs: the query's vectors and the index's vectors (all
/// from the same model).
#[derive(Debug, Clone, Copy)]
pub struct Semantic<'a> {
    /// The unit vector of the query's first text of [`crate::query_texts`], optionally followed
    /// by one per further text (the parts of a request for several things), packed as
    /// [`crate::embed_query`] does. A length that is not a whole number of document-sized
    /// vectors gives every document a similarity of 0.
    pub query: &'a [f32],
    pub documents: &'a Vectors,
}

impl<'a> Semantic<'a> {
    /// The whole query's half, and the vector of each part.
    pub(crate) fn split(self) -> (Option<Semantic<'a>>, Vec<&'a [f32]>) {
        let dimension = self.documents.dimension;
        if dimension == 0
            || self.query.len() <= dimension
            || !self.query.len().is_multiple_of(dimension)
        {
            return (Some(self), Vec::new());
        }
        let mut chunks = self.query.chunks_exact(dimension);
        let whole = chunks.next().map(|query| Semantic {
            query,
            documents: self.documents,
        });
        (whole, chunks.collect())
    }
}
