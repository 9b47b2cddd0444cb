//! Hybrid ranking: BM25 scores fused with cosine similarity, and the answers to the parts of a
//! request merged into one list.

use crate::index::{Hit, Index, Lexical};
use crate::semantic::Semantic;
use crate::tuning::{Fusion, ServerLean, Tuning};

/// The semantic half of one ranking: the query's vector and its similarity with each document.
pub(crate) struct Similar<'a> {
    pub semantic: Semantic<'a>,
    pub similarities: Vec<f32>,
}

/// One part's ranking, and how many rounds of the interleaving it waits before its hits join
/// the turns (a weak part's: see `Tuning::weak_part`).
pub(crate) struct PartHits {
    pub hits: Vec<Hit>,
    pub delay: usize,
}

/// A document that shares no word with the query joins a hybrid ranking only when its cosine
/// similarity reaches this; sentence models place unrelated text below it. Without a floor every
/// query would match every tool, and `total` would say nothing.
const SEMANTIC_FLOOR: f32 = 0.15;

/// The server lean is scaled by the servers' spread of relevance, but never by less than
/// this: servers whose relevance differs by a few hundredths of a cosine are about as
/// relevant, and in a catalog of two such servers neither takes the whole lean. Over
/// livemcp527's 70 servers the spread is wider, and no ranking of its sets changed by it.
const SERVER_SPREAD_FLOOR: f32 = 0.2;

impl Index {
    /// BM25 scores fused with cosine similarity. Both are scaled over the whole index, not only
    /// what the caller sees, so a tool's score never depends on who asks and filtering never
    /// reorders. A document matches when it shares a word with the query or its similarity
    /// reaches [`SEMANTIC_FLOOR`]; only matches are checked for visibility. `bonus`, one per
    /// document, is added to the fused scores (a part's lean towards the request's servers:
    /// [`Index::server_lean`]); it never decides what matches.
    pub(crate) fn fuse(
        &self,
        lexical: &Lexical,
        similar: Similar<'_>,
        visible: &dyn Fn(usize) -> bool,
        tuning: &Tuning,
        bonus: Option<&[f32]>,
    ) -> Vec<Hit> {
        let Similar {
            semantic,
            mut similarities,
        } = similar;
        if tuning.feedback > 0.0
            && let Some(moved) =
                semantic
                    .documents
                    .feedback(semantic.query, &similarities, tuning.feedback)
        {
            similarities = semantic.documents.similarities(&moved, self.len());
        }
        let best = lexical.scores.iter().fold(0f32, |best, s| best.max(*s));
        let mut fused = match tuning.fusion {
            Fusion::Relative { semantic_weight } => {
                relative(&similarities, &lexical.scores, best, semantic_weight)
            }
            Fusion::Coverage { semantic_weight } => relative(
                &similarities,
                &lexical.scores,
                lexical.ideal,
                semantic_weight,
            ),
            Fusion::Gated { semantic_weight } => {
                gated(&similarities, &lexical.scores, best, semantic_weight)
            }
            Fusion::Reciprocal { k } => reciprocal(&similarities, &lexical.scores, k),
        };
        for (score, bonus) in fused.iter_mut().zip(bonus.unwrap_or_default()) {
            *score += bonus;
        }
        let lexical = &lexical.scores;
        similarities
            .iter()
            .zip(lexical)
            .zip(fused)
            .enumerate()
            .filter_map(|(doc, ((&similarity, &lexical), score))| {
                let matches = lexical > 0.0 || similarity >= SEMANTIC_FLOOR;
                (matches && visible(doc)).then_some(Hit {
                    doc,
                    score,
                    part: None,
                })
            })
            .collect()
    }

    /// What each document's server adds to its fused score in a part's ranking
    /// ([`ServerLean`]): the server's relevance to the whole request (the mean of its `top`
    /// best similarities), scaled over the servers ([`SERVER_SPREAD_FLOOR`]), times the weight.
    /// Over the whole index, like every other scale: a tool's score never depends on who asks.
    pub(crate) fn server_lean(&self, whole: &[f32], lean: ServerLean) -> Vec<f32> {
        let top = lean.top.clamp(1, self.len().max(1));
        // Each server's best `top` similarities, unordered; unfilled slots stay -∞.
        let mut best = vec![f32::NEG_INFINITY; self.servers.saturating_mul(top)];
        for (server, similarity) in self.server_of.iter().zip(whole) {
            let server = *server as usize;
            let Some(slots) = best.get_mut(server * top..(server + 1) * top) else {
                continue;
            };
            let lowest = slots
                .iter_mut()
                .reduce(|low, slot| if *slot < *low { slot } else { low });
            if let Some(lowest) = lowest.filter(|lowest| similarity > lowest) {
                *lowest = *similarity;
            }
        }
        let relevance: Vec<f32> = best
            .chunks_exact(top)
            .map(|slots| {
                let (sum, kept) = slots
                    .iter()
                    .filter(|s| s.is_finite())
                    .fold((0f32, 0usize), |(sum, kept), s| (sum + s, kept + 1));
                sum / kept.max(1) as f32
            })
            .collect();
        let (low, spread) = min_and_spread(&relevance);
        let spread = spread.max(SERVER_SPREAD_FLOOR);
        self.server_of
            .iter()
            .map(|server| {
                relevance
                    .get(*server as usize)
                    .map_or(0.0, |r| lean.weight * (r - low) / spread)
            })
            .collect()
    }

    /// The best hits of the whole request and of each part, taken in turn (the whole request's
    /// best `whole_first`, then each part's best, then the seconds…), each document once; a
    /// part's hits join its `delay` rounds late. The result is scored by that order; `limit`
    /// hits are ordered, the other matches follow.
    pub(crate) fn interleave(
        &self,
        whole: Vec<Hit>,
        parts: Vec<PartHits>,
        limit: usize,
        whole_first: usize,
    ) -> Vec<Hit> {
        let order = |a: &Hit, b: &Hit| self.order(a, b);
        // Each list with its delay: the whole request's first, none.
        let (mut lists, delays): (Vec<Vec<Hit>>, Vec<usize>) = std::iter::once((whole, 0))
            .chain(parts.into_iter().map(|part| (part.hits, part.delay)))
            .unzip();
        for list in &mut lists {
            if limit < list.len() {
                list.select_nth_unstable_by(limit, order);
            }
            let head = limit.min(list.len());
            list[..head].sort_by(order);
        }
        let mut taken = vec![false; self.len()];
        // Each document with the list that placed it (0: the whole request, i: part i - 1).
        let mut merged: Vec<(usize, usize)> = Vec::new();
        for hit in lists[0].iter().take(whole_first.min(limit)) {
            taken[hit.doc] = true;
            merged.push((hit.doc, 0));
        }
        // Enough rounds for the longest list's first `limit`, however late it joins.
        let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
        let rounds = longest
            .min(limit)
            .saturating_add(delays.iter().copied().max().unwrap_or(0));
        for round in 0..rounds {
            for (list_index, list) in lists.iter().enumerate() {
                if let Some(hit) = round
                    .checked_sub(delays[list_index])
                    .filter(|rank| *rank < limit)
                    .and_then(|rank| list.get(rank))
                    && !taken[hit.doc]
                {
                    taken[hit.doc] = true;
                    merged.push((hit.doc, list_index));
                }
            }
        }
        let ordered = merged.len();
        for (list_index, list) in lists.iter().enumerate() {
            for hit in list {
                if !taken[hit.doc] {
                    taken[hit.doc] = true;
                    merged.push((hit.doc, list_index));
                }
            }
        }
        merged
            .into_iter()
            .enumerate()
            .map(|(position, (doc, list_index))| Hit {
                doc,
                score: if position < ordered {
                    1.0 / (position as f32 + 1.0)
                } else {
                    0.0
                },
                part: list_index.checked_sub(1),
            })
            .collect()
    }
}

/// The lowest of `values` and how far the highest is above it (at least `f32::EPSILON`, so
/// that it divides): what min-max scaling needs.
fn min_and_spread(values: &[f32]) -> (f32, f32) {
    let (low, high) = values.iter().fold((f32::MAX, f32::MIN), |(low, high), v| {
        (low.min(*v), high.max(*v))
    });
    (low, (high - low).max(f32::EPSILON))
}

/// Relative score fusion: cosine min-max scaled, BM25 divided by `lexical_bound` (its maximum,
/// or the query's ideal score).
fn relative(
    similarities: &[f32],
    lexical: &[f32],
    lexical_bound: f32,
    semantic_weight: f32,
) -> Vec<f32> {
    let (low, spread) = min_and_spread(similarities);
    let lexical_scale = if lexical_bound > 0.0 {
        1.0 / lexical_bound
    } else {
        0.0
    };
    similarities
        .iter()
        .zip(lexical)
        .map(|(similarity, lexical)| {
            semantic_weight * (similarity - low) / spread
                + (1.0 - semantic_weight) * lexical * lexical_scale
        })
        .collect()
}

/// Gated fusion: cosine min-max scaled, BM25 divided by its maximum and multiplied by the
/// scaled cosine.
fn gated(similarities: &[f32], lexical: &[f32], best: f32, semantic_weight: f32) -> Vec<f32> {
    let scaled = relative(similarities, lexical, best, 1.0);
    let lexical_scale = if best > 0.0 { 1.0 / best } else { 0.0 };
    scaled
        .iter()
        .zip(lexical)
        .map(|(similarity, lexical)| {
            similarity * (semantic_weight + (1.0 - semantic_weight) * lexical * lexical_scale)
        })
        .collect()
}

/// Reciprocal rank fusion; a document without a BM25 score gets no BM25 share.
fn reciprocal(similarities: &[f32], lexical: &[f32], k: f32) -> Vec<f32> {
    let ranks = |scores: &[f32]| {
        let mut order: Vec<usize> = (0..scores.len()).collect();
        order.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]));
        let mut rank = vec![0f32; scores.len()];
        for (position, doc) in order.into_iter().enumerate() {
            rank[doc] = position as f32;
        }
        rank
    };
    let (semantic_rank, lexical_rank) = (ranks(similarities), ranks(lexical));
    (0..similarities.len())
        .map(|doc| {
            let lexical_share = if lexical[doc] > 0.0 {
                1.0 / (k + lexical_rank[doc] + 1.0)
            } else {
                0.0
            };
            1.0 / (k + semantic_rank[doc] + 1.0) + lexical_share
        })
        .collect()
}
