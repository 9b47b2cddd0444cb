//! The BM25F index and its queries.

use std::collections::HashMap;

use crate::semantic::Semantic;
use crate::tokenize::tokenize;

/// One searchable tool.
#[derive(Debug, Clone, Default)]
pub struct Document {
    /// Canonical id (`server:tool`); an exact match ranks first.
    pub id: String,
    /// Other names that count as an exact match (the display name, the bare tool name).
    pub names: Vec<String>,
    /// The tool name, split into words for matching.
    pub tool: String,
    pub server: String,
    pub description: String,
    /// Parameter names and their descriptions.
    pub params: Vec<(String, String)>,
}

#[derive(Clone, Copy)]
enum Field {
    Name = 0,
    Server = 1,
    Description = 2,
    ParamName = 3,
    ParamDescription = 4,
}

const FIELDS: usize = 5;
/// Field weights: a word of the tool's name says more than one of its description.
const WEIGHT: [f32; FIELDS] = [3.0, 1.5, 1.0, 1.5, 0.4];
/// Length normalisation per field (BM25's b).
const LENGTH_NORM: [f32; FIELDS] = [0.3, 0.0, 0.75, 0.5, 0.75];
const K1: f32 = 1.2;
/// Added to an exact name match so it outranks any other score.
const EXACT_BONUS: f32 = 1.0e6;
/// The semantic score's share in hybrid ranking. Both scores are scaled to 0..1 over the visible
/// documents (cosine min-max, BM25 by its maximum) and mixed (relative score fusion). The vector
/// side carries paraphrase and synonyms, the BM25 side rare exact words; leaning towards the
/// vector side is the usual default of engines that fuse this way.
const SEMANTIC_WEIGHT: f32 = 0.75;
/// A document that shares no word with the query joins a hybrid ranking only when its cosine
/// similarity reaches this; sentence models place unrelated text below it. Without a floor every
/// query would match every tool, and `total` would say nothing.
const SEMANTIC_FLOOR: f32 = 0.15;

/// One ranked answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// Index of the document in the order it was given to [`Index::build`].
    pub doc: usize,
    pub score: f32,
}

/// Hits after the cut, and how many documents matched before it.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResult {
    pub hits: Vec<Hit>,
    pub total: usize,
}

/// An immutable BM25F index.
#[derive(Debug, Default)]
pub struct Index {
    /// term → (document, per-field term frequency)
    postings: HashMap<String, Vec<(u32, [u16; FIELDS])>>,
    lengths: Vec<[u16; FIELDS]>,
    average: [f32; FIELDS],
    exact: HashMap<String, Vec<u32>>,
    /// Document ids, for deterministic tie-breaking and id-ordered empty queries.
    ids: Vec<String>,
}

impl Index {
    pub fn build(documents: &[Document]) -> Index {
        let mut postings: HashMap<String, HashMap<u32, [u16; FIELDS]>> = HashMap::new();
        let mut lengths = Vec::with_capacity(documents.len());
        let mut totals = [0f64; FIELDS];
        let mut exact: HashMap<String, Vec<u32>> = HashMap::new();
        for (doc, document) in documents.iter().enumerate() {
            let doc = u32::try_from(doc).unwrap_or(u32::MAX);
            let mut length = [0u16; FIELDS];
            let params: String = document
                .params
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(" ");
            let param_descriptions: String = document
                .params
                .iter()
                .map(|(_, d)| d.as_str())
                .collect::<Vec<_>>()
                .join(" ");
            for (field, text) in [
                (Field::Name, document.tool.as_str()),
                (Field::Server, document.server.as_str()),
                (Field::Description, document.description.as_str()),
                (Field::ParamName, params.as_str()),
                (Field::ParamDescription, param_descriptions.as_str()),
            ] {
                let terms = tokenize(text);
                length[field as usize] = u16::try_from(terms.len()).unwrap_or(u16::MAX);
                totals[field as usize] += terms.len() as f64;
                for term in terms {
                    let tf = postings
                        .entry(term)
                        .or_default()
                        .entry(doc)
                        .or_insert([0; FIELDS]);
                    tf[field as usize] = tf[field as usize].saturating_add(1);
                }
            }
            lengths.push(length);
            for name in std::iter::once(&document.id).chain(document.names.iter()) {
                let entry = exact.entry(name.to_lowercase()).or_default();
                if !entry.contains(&doc) {
                    entry.push(doc);
                }
            }
        }
        let count = documents.len().max(1) as f64;
        let average = totals.map(|total| ((total / count) as f32).max(1.0));
        let postings = postings
            .into_iter()
            .map(|(term, docs)| {
                let mut docs: Vec<(u32, [u16; FIELDS])> = docs.into_iter().collect();
                docs.sort_unstable_by_key(|(doc, _)| *doc);
                (term, docs)
            })
            .collect();
        let ids = documents.iter().map(|d| d.id.clone()).collect();
        Index {
            postings,
            lengths,
            average,
            exact,
            ids,
        }
    }

    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    /// Ranks the documents `visible` accepts against `query`; returns the best `limit` and the
    /// number that matched. With `semantic`, BM25 and cosine similarity are fused (hybrid);
    /// without, the ranking is plain BM25F. An exact name always ranks first, equal scores are
    /// ordered by id, and an empty query matches every visible document, in id order.
    pub fn search(
        &self,
        query: &str,
        semantic: Option<Semantic<'_>>,
        visible: impl Fn(usize) -> bool,
        limit: usize,
    ) -> SearchResult {
        let terms = tokenize(query);
        let exact = self.exact.get(&query.trim().to_lowercase());
        if query.trim().is_empty() || (terms.is_empty() && exact.is_none() && semantic.is_none()) {
            let mut all: Vec<usize> = (0..self.len()).filter(|&doc| visible(doc)).collect();
            all.sort_by(|a, b| self.ids[*a].cmp(&self.ids[*b]));
            let hits = all
                .iter()
                .take(limit)
                .map(|&doc| Hit { doc, score: 0.0 })
                .collect();
            return SearchResult {
                hits,
                total: all.len(),
            };
        }
        let mut scores: HashMap<u32, f32> = HashMap::new();
        let n = self.len() as f32;
        let mut seen = Vec::new();
        for term in terms {
            if seen.contains(&term) {
                continue;
            }
            let Some(docs) = self.postings.get(&term) else {
                seen.push(term);
                continue;
            };
            let df = docs.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for (doc, tf) in docs {
                let length = self.lengths[*doc as usize];
                let weighted: f32 = (0..FIELDS)
                    .map(|f| {
                        let norm = 1.0 - LENGTH_NORM[f]
                            + LENGTH_NORM[f] * f32::from(length[f]) / self.average[f];
                        WEIGHT[f] * f32::from(tf[f]) / norm
                    })
                    .sum();
                *scores.entry(*doc).or_insert(0.0) += idf * weighted / (K1 + weighted);
            }
            seen.push(term);
        }
        let mut hits: Vec<Hit> = match semantic {
            Some(semantic) => self.fuse(&scores, semantic, &visible),
            None => scores
                .into_iter()
                .filter(|(doc, _)| visible(*doc as usize))
                .map(|(doc, score)| Hit {
                    doc: doc as usize,
                    score,
                })
                .collect(),
        };
        for &doc in exact.into_iter().flatten() {
            let doc = doc as usize;
            if !visible(doc) {
                continue;
            }
            match hits.iter_mut().find(|hit| hit.doc == doc) {
                Some(hit) => hit.score += EXACT_BONUS,
                None => hits.push(Hit {
                    doc,
                    score: EXACT_BONUS,
                }),
            }
        }
        let total = hits.len();
        let order = |a: &Hit, b: &Hit| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| self.ids[a.doc].cmp(&self.ids[b.doc]))
        };
        // Only the best `limit` are ordered: on a large fleet most matches are cut anyway.
        if limit < hits.len() {
            hits.select_nth_unstable_by(limit, order);
            hits.truncate(limit);
        }
        hits.sort_by(order);
        SearchResult { hits, total }
    }

    /// Relative score fusion of the BM25 scores with cosine similarity. Both are scaled over the
    /// whole index, not only what the caller sees, so a tool's score never depends on who asks
    /// and filtering never reorders. A document matches when it shares a word with the query or
    /// its similarity reaches [`SEMANTIC_FLOOR`]; only matches are checked for visibility.
    fn fuse(
        &self,
        bm25: &HashMap<u32, f32>,
        semantic: Semantic<'_>,
        visible: &impl Fn(usize) -> bool,
    ) -> Vec<Hit> {
        let similarities: Vec<f32> = (0..self.len())
            .map(|doc| semantic.documents.similarity(doc, semantic.query))
            .collect();
        let (low, high) = similarities
            .iter()
            .fold((f32::MAX, f32::MIN), |(low, high), s| {
                (low.min(*s), high.max(*s))
            });
        let spread = (high - low).max(f32::EPSILON);
        let mut lexical = vec![0f32; self.len()];
        for (&doc, &score) in bm25 {
            lexical[doc as usize] = score;
        }
        let best_lexical = lexical.iter().fold(0f32, |best, score| best.max(*score));
        let lexical_scale = if best_lexical > 0.0 {
            1.0 / best_lexical
        } else {
            0.0
        };
        similarities
            .iter()
            .enumerate()
            .zip(&lexical)
            .filter_map(|((doc, &similarity), &lexical)| {
                let matches = lexical > 0.0 || similarity >= SEMANTIC_FLOOR;
                (matches && visible(doc)).then(|| Hit {
                    doc,
                    score: SEMANTIC_WEIGHT * (similarity - low) / spread
                        + (1.0 - SEMANTIC_WEIGHT) * lexical * lexical_scale,
                })
            })
            .collect()
    }
}
