//! The BM25F index and its queries.

use std::collections::HashMap;

use crate::fusion::{PartHits, Similar};
use crate::query::{clean_query, query_parts};
use crate::semantic::Semantic;
use crate::tokenize::tokenize;
use crate::tuning::{Tuning, WeakPart};

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
pub(crate) enum Field {
    Name = 0,
    Server = 1,
    Description = 2,
    ParamName = 3,
    ParamDescription = 4,
}

pub(crate) const FIELDS: usize = 5;
/// Length normalisation per field (BM25's b).
const LENGTH_NORM: [f32; FIELDS] = [0.3, 0.0, 0.75, 0.5, 0.75];
const K1: f32 = 1.2;
/// Added to an exact name match so it outranks any other score.
const EXACT_BONUS: f32 = 1.0e6;

/// One ranked answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// Index of the document in the order it was given to [`Index::build`].
    pub doc: usize,
    pub score: f32,
    /// The part of the request ([`SearchResult::parts`]) whose ranking placed it, when the
    /// request was split and a part's, not the whole request's, placed it.
    pub part: Option<usize>,
}

/// Hits after the cut, and how many documents matched before it.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResult {
    pub hits: Vec<Hit>,
    pub total: usize,
    /// The parts the request was split into and ranked by, in order (`query_parts`); empty when
    /// it was ranked whole.
    pub parts: Vec<String>,
}

/// An immutable BM25F index. What a query would compute the same way every time (a field's
/// length normalisation, the documents' order by id) is computed here, once.
#[derive(Debug, Default)]
pub struct Index {
    /// term → (document, per-field term frequency)
    postings: HashMap<String, Vec<(u32, [u16; FIELDS])>>,
    /// Each document's BM25 length normalisation per field: `1 - b + b · length / average`.
    norms: Vec<[f32; FIELDS]>,
    exact: HashMap<String, Vec<u32>>,
    /// Each document's place in the order of the ids (equal ids, equal places): ties break by
    /// it, as by the ids, without comparing strings.
    id_rank: Vec<u32>,
    /// The documents in id order (the empty query's answer).
    by_id: Vec<u32>,
    /// Each document's server, numbered in order of first appearance.
    pub(crate) server_of: Vec<u32>,
    /// How many servers the documents name.
    pub(crate) servers: usize,
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
        let norms = lengths
            .iter()
            .map(|length: &[u16; FIELDS]| {
                std::array::from_fn(|f| {
                    1.0 - LENGTH_NORM[f] + LENGTH_NORM[f] * f32::from(length[f]) / average[f]
                })
            })
            .collect();
        let postings = postings
            .into_iter()
            .map(|(term, docs)| {
                let mut docs: Vec<(u32, [u16; FIELDS])> = docs.into_iter().collect();
                docs.sort_unstable_by_key(|(doc, _)| *doc);
                (term, docs)
            })
            .collect();
        let (id_rank, by_id) = id_order(documents);
        let mut server_numbers: HashMap<&str, u32> = HashMap::new();
        let server_of = documents
            .iter()
            .map(|document| {
                let next = u32::try_from(server_numbers.len()).unwrap_or(u32::MAX);
                *server_numbers
                    .entry(document.server.as_str())
                    .or_insert(next)
            })
            .collect();
        Index {
            postings,
            norms,
            exact,
            id_rank,
            by_id,
            server_of,
            servers: server_numbers.len(),
        }
    }

    pub fn len(&self) -> usize {
        self.norms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.norms.is_empty()
    }

    /// Better score first, then lower id.
    pub(crate) fn order(&self, a: &Hit, b: &Hit) -> std::cmp::Ordering {
        b.score
            .total_cmp(&a.score)
            .then_with(|| self.id_rank[a.doc].cmp(&self.id_rank[b.doc]))
    }

    /// Ranks the documents `visible` accepts against `query` the way the gateway does
    /// ([`Tuning::default`]); returns the best `limit` and the number that matched. With
    /// `semantic`, BM25 and cosine similarity are fused (hybrid); without, the ranking is plain
    /// BM25F. An exact name always ranks first, equal scores are ordered by id, and an empty
    /// query matches every visible document, in id order.
    pub fn search(
        &self,
        query: &str,
        semantic: Option<Semantic<'_>>,
        visible: impl Fn(usize) -> bool,
        limit: usize,
    ) -> SearchResult {
        self.search_tuned(query, semantic, visible, limit, &Tuning::default())
    }

    /// [`Index::search`] with the ranking's levers set by `tuning` (the benchmark compares them).
    pub fn search_tuned(
        &self,
        query: &str,
        semantic: Option<Semantic<'_>>,
        visible: impl Fn(usize) -> bool,
        limit: usize,
        tuning: &Tuning,
    ) -> SearchResult {
        // Not generic below this line: the ranking is compiled (and optimised) here, not in
        // each caller's crate.
        self.search_visible(query, semantic, &visible, limit, tuning)
    }

    fn search_visible(
        &self,
        query: &str,
        semantic: Option<Semantic<'_>>,
        visible: &dyn Fn(usize) -> bool,
        limit: usize,
        tuning: &Tuning,
    ) -> SearchResult {
        // A client's query is cut where the embedder cuts it: the work below grows with its
        // length, and the parts ranked must be the parts whose vectors were computed.
        let query = crate::embeddable(query);
        let cleaned = if tuning.clean_query {
            clean_query(query)
        } else {
            query.trim().to_owned()
        };
        let terms = tokenize(&cleaned);
        let exact = self.exact.get(&query.trim().to_lowercase());
        if query.trim().is_empty() || (terms.is_empty() && exact.is_none() && semantic.is_none()) {
            return self.everything(visible, limit);
        }
        let parts = if tuning.split_parts {
            query_parts(query)
        } else {
            Vec::new()
        };
        let (whole, part_semantics) = self.similar(semantic, parts.len());
        let delays = weak_part_delays(whole.as_ref(), &part_semantics, tuning.weak_part);
        let lean = match (tuning.server_lean, whole.as_ref()) {
            (Some(lean), Some(whole)) if !parts.is_empty() => {
                Some((self.server_lean(&whole.similarities, lean), lean.whole_too))
            }
            _ => None,
        };
        let whole_bonus = lean
            .as_ref()
            .filter(|(_, whole_too)| *whole_too)
            .map(|(bonus, _)| bonus.as_slice());
        let part_bonus = lean.as_ref().map(|(bonus, _)| bonus.as_slice());
        let mut hits = self.rank(&terms, whole, visible, tuning, whole_bonus);
        if !parts.is_empty() {
            let lists: Vec<PartHits> = parts
                .iter()
                .zip(part_semantics)
                .zip(delays)
                .map(|((part, similar), delay)| PartHits {
                    hits: self.rank(&tokenize(part), similar, visible, tuning, part_bonus),
                    delay,
                })
                .collect();
            hits = self.interleave(hits, lists, limit, tuning.whole_first);
        }
        self.add_exact(&mut hits, exact, visible);
        let total = hits.len();
        // Only the best `limit` are ordered: on a large fleet most matches are cut anyway.
        if limit < hits.len() {
            hits.select_nth_unstable_by(limit, |a, b| self.order(a, b));
            hits.truncate(limit);
        }
        hits.sort_by(|a, b| self.order(a, b));
        SearchResult { hits, total, parts }
    }

    /// The semantic half of the whole request and of each of its `parts` (`None` where there
    /// is no vector), their similarities computed in one pass over the vectors.
    fn similar<'a>(
        &self,
        semantic: Option<Semantic<'a>>,
        parts: usize,
    ) -> (Option<Similar<'a>>, Vec<Option<Similar<'a>>>) {
        let mut part_semantics = Vec::with_capacity(parts);
        let Some((Some(whole), part_vectors)) = semantic.map(Semantic::split) else {
            part_semantics.resize_with(parts, || None);
            return (None, part_semantics);
        };
        let semantics: Vec<Semantic<'a>> = std::iter::once(whole)
            .chain(part_vectors.into_iter().take(parts).map(|query| Semantic {
                query,
                documents: whole.documents,
            }))
            .collect();
        let queries: Vec<&[f32]> = semantics.iter().map(|s| s.query).collect();
        let similarities = whole.documents.similarities_of(&queries, self.len());
        let mut similar =
            semantics
                .into_iter()
                .zip(similarities)
                .map(|(semantic, similarities)| Similar {
                    semantic,
                    similarities,
                });
        let whole = similar.next();
        part_semantics.extend(similar.map(Some));
        part_semantics.resize_with(parts, || None);
        (whole, part_semantics)
    }

    /// Every visible document in id order (the empty query).
    fn everything(&self, visible: &dyn Fn(usize) -> bool, limit: usize) -> SearchResult {
        let mut hits = Vec::with_capacity(limit.min(self.len()));
        let mut total = 0;
        for doc in self.by_id.iter().map(|doc| *doc as usize) {
            if visible(doc) {
                total += 1;
                if hits.len() < limit {
                    hits.push(Hit {
                        doc,
                        score: 0.0,
                        part: None,
                    });
                }
            }
        }
        SearchResult {
            hits,
            total,
            parts: Vec::new(),
        }
    }

    fn add_exact(
        &self,
        hits: &mut Vec<Hit>,
        exact: Option<&Vec<u32>>,
        visible: &dyn Fn(usize) -> bool,
    ) {
        for &doc in exact.into_iter().flatten() {
            let doc = doc as usize;
            if !visible(doc) {
                continue;
            }
            match hits.iter_mut().find(|hit| hit.doc == doc) {
                Some(hit) => {
                    hit.score += EXACT_BONUS;
                    // First for its name, whatever part also found it.
                    hit.part = None;
                }
                None => hits.push(Hit {
                    doc,
                    score: EXACT_BONUS,
                    part: None,
                }),
            }
        }
    }

    /// Every visible match of `terms` (and of the query vector), scored.
    fn rank(
        &self,
        terms: &[String],
        similar: Option<Similar<'_>>,
        visible: &dyn Fn(usize) -> bool,
        tuning: &Tuning,
        bonus: Option<&[f32]>,
    ) -> Vec<Hit> {
        let lexical = self.bm25(terms, &tuning.field_weights);
        match similar {
            Some(similar) => self.fuse(&lexical, similar, visible, tuning, bonus),
            None => lexical
                .matched
                .iter()
                .filter(|&&doc| visible(doc as usize))
                .map(|&doc| Hit {
                    doc: doc as usize,
                    score: lexical.scores[doc as usize],
                    part: None,
                })
                .collect(),
        }
    }

    /// The BM25F score of every document (0 when it holds none of `terms`), in one dense
    /// array: on a large fleet a common word is in thousands of documents, and a hash map per
    /// query costs more than the arithmetic.
    fn bm25(&self, terms: &[String], weights: &[f32; FIELDS]) -> Lexical {
        let mut scores = vec![0f32; self.len()];
        let mut matched = Vec::new();
        let n = self.len() as f32;
        let mut seen: Vec<&String> = Vec::new();
        let mut ideal = 0f32;
        for term in terms {
            if seen.contains(&term) {
                continue;
            }
            seen.push(term);
            let docs = self.postings.get(term);
            let df = docs.map_or(0.0, |docs| docs.len() as f32);
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            ideal += idf;
            let Some(docs) = docs else {
                continue;
            };
            for (doc, tf) in docs {
                let norms = &self.norms[*doc as usize];
                let weighted: f32 = (0..FIELDS)
                    .map(|f| weights[f] * f32::from(tf[f]) / norms[f])
                    .sum();
                let score = &mut scores[*doc as usize];
                if *score == 0.0 {
                    matched.push(*doc);
                }
                *score += idf * weighted / (K1 + weighted);
            }
        }
        Lexical {
            scores,
            matched,
            ideal,
        }
    }
}

/// BM25F scores by document, and the documents that matched.
pub(crate) struct Lexical {
    pub(crate) scores: Vec<f32>,
    matched: Vec<u32>,
    /// The most a document could score: the sum of the IDF of the query's distinct terms (a
    /// term no document holds counts with the IDF it would have in one).
    pub(crate) ideal: f32,
}

/// Each document's place in the order of the ids (equal ids sharing one), and the documents in
/// that order.
fn id_order(documents: &[Document]) -> (Vec<u32>, Vec<u32>) {
    let as_u32 = |i: usize| u32::try_from(i).unwrap_or(u32::MAX);
    let mut by_id: Vec<u32> = (0..documents.len()).map(as_u32).collect();
    by_id.sort_by(|a, b| documents[*a as usize].id.cmp(&documents[*b as usize].id));
    let mut id_rank = vec![0u32; documents.len()];
    let mut place = 0;
    for (position, doc) in by_id.iter().enumerate() {
        let previous = position.checked_sub(1).map(|p| by_id[p] as usize);
        if previous.is_some_and(|p| documents[p].id != documents[*doc as usize].id) {
            place = as_u32(position);
        }
        id_rank[*doc as usize] = place;
    }
    (id_rank, by_id)
}

/// How many rounds of the interleaving each part's hits wait: `weak.rounds` for a weak part
/// (its best cosine similarity with any tool under `weak.below`) when the whole request or
/// another part is not weak, none otherwise. A clause the catalog has nothing close to ("Once
/// it's up", "My LeetCode handle is wei_codes") then yields its place in the top k to the steps
/// the catalog answers, and the one step after a guess at the kind of server ("stock quotes;
/// closing price VOO QQQ SCHD") to the whole request when only the guess gives it a match; when
/// every list is weak the order is the plain interleaving's. A request or part without a
/// vector is not weak: nothing says it is. The similarities are over the whole catalog, so the
/// delay never depends on who asks.
fn weak_part_delays(
    whole: Option<&Similar<'_>>,
    parts: &[Option<Similar<'_>>],
    weak: Option<WeakPart>,
) -> Vec<usize> {
    let Some(weak) = weak.filter(|_| !parts.is_empty()) else {
        return vec![0; parts.len()];
    };
    let weak_one = |similar: Option<&Similar<'_>>| {
        similar.is_some_and(|similar| {
            let best = similar
                .similarities
                .iter()
                .fold(f32::MIN, |best, s| best.max(*s));
            best < weak.below
        })
    };
    let is_weak: Vec<bool> = parts.iter().map(|part| weak_one(part.as_ref())).collect();
    if is_weak.iter().all(|weak| *weak) && weak_one(whole) {
        return vec![0; parts.len()];
    }
    is_weak
        .iter()
        .map(|is_weak| if *is_weak { weak.rounds } else { 0 })
        .collect()
}
