//! The rankings `bench retrieval` compares, side by side: BM25F and hybrid as they were before
//! the levers of issue #20, each lever on its own, and the gateway's ranking (every kept lever,
//! `Tuning::default()`), with the vectors each one needs.

use std::collections::HashMap;

use anyhow::{Result, bail};
use mcplex_search::{
    Document, Embedder, Fusion, PassageStyle, ServerLean, Tuning, Vectors, WeakPart, passages,
};

/// Which vector a ranking gives the query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryVector {
    /// None: plain BM25F.
    None,
    /// The query's text as written.
    Raw,
    /// The request phrasing stripped (`clean_query`).
    Cleaned,
    /// The request, then each of its parts (`embed_query` for a ranking that splits).
    Parts,
    /// What the gateway embeds (`embed_query` for `Tuning::default()`).
    Gateway,
}

/// The name of the gateway's own ranking, the column the others are compared with.
pub const GATEWAY: &str = "gateway";

/// One column of the tables.
pub struct Variant {
    pub name: &'static str,
    pub tuning: Tuning,
    pub passage: PassageStyle,
    pub vector: QueryVector,
}

/// The starting point: relative fusion 0.75, no query clean-up, no parts.
fn before() -> Tuning {
    Tuning {
        fusion: Fusion::Relative {
            semantic_weight: 0.75,
        },
        clean_query: false,
        split_parts: false,
        whole_first: 1,
        field_weights: [3.0, 1.5, 1.0, 1.5, 0.4],
        feedback: 0.0,
        weak_part: None,
        server_lean: None,
    }
}

/// The columns: with a model, every lever; without, the two BM25F rankings.
pub fn variants(with_model: bool) -> Vec<Variant> {
    let variant = |name, tuning, passage, vector| Variant {
        name,
        tuning,
        passage,
        vector,
    };
    let summary = PassageStyle::Summary;
    let mut columns = vec![
        variant("bm25", before(), summary, QueryVector::None),
        variant("bm25*", Tuning::default(), summary, QueryVector::None),
        variant(
            "bm25*+cl",
            Tuning {
                clean_query: true,
                ..Tuning::default()
            },
            summary,
            QueryVector::None,
        ),
    ];
    if !with_model {
        return columns;
    }
    let clean = Tuning {
        clean_query: true,
        ..before()
    };
    columns.extend([
        variant("hybrid", before(), summary, QueryVector::Raw),
        variant("+clean", clean.clone(), summary, QueryVector::Cleaned),
        variant(
            "+parts",
            Tuning {
                split_parts: true,
                ..before()
            },
            summary,
            QueryVector::Parts,
        ),
        variant(
            "+parts2",
            Tuning {
                split_parts: true,
                whole_first: 2,
                ..before()
            },
            summary,
            QueryVector::Parts,
        ),
        variant(
            "+parts3",
            Tuning {
                split_parts: true,
                whole_first: 3,
                ..before()
            },
            summary,
            QueryVector::Parts,
        ),
        variant(
            "rrf60",
            Tuning {
                fusion: Fusion::Reciprocal { k: 60.0 },
                ..clean.clone()
            },
            summary,
            QueryVector::Cleaned,
        ),
        variant(
            "w0.5",
            Tuning {
                fusion: Fusion::Relative {
                    semantic_weight: 0.5,
                },
                ..clean.clone()
            },
            summary,
            QueryVector::Cleaned,
        ),
        variant(
            "w0.9",
            Tuning {
                fusion: Fusion::Relative {
                    semantic_weight: 0.9,
                },
                ..clean.clone()
            },
            summary,
            QueryVector::Cleaned,
        ),
        variant(
            "fields",
            Tuning {
                field_weights: [2.0, 1.0, 1.0, 1.0, 0.6],
                ..clean.clone()
            },
            summary,
            QueryVector::Cleaned,
        ),
        variant(
            "p:whole",
            clean.clone(),
            PassageStyle::Whole,
            QueryVector::Cleaned,
        ),
        variant(
            "p:param",
            clean.clone(),
            PassageStyle::SummaryParams,
            QueryVector::Cleaned,
        ),
        variant(
            "p:server",
            clean,
            PassageStyle::ServerSummary,
            QueryVector::Cleaned,
        ),
    ]);
    columns.extend(on_the_gateway());
    columns.push(variant(
        GATEWAY,
        Tuning::default(),
        PassageStyle::default(),
        QueryVector::Gateway,
    ));
    columns
}

/// The levers measured on top of the gateway's ranking (every kept lever).
fn on_the_gateway() -> Vec<Variant> {
    let fused = |name, fusion| Variant {
        name,
        tuning: Tuning {
            fusion,
            ..Tuning::default()
        },
        passage: PassageStyle::default(),
        vector: QueryVector::Gateway,
    };
    let gateway = |name, tuning, passage| Variant {
        name,
        tuning,
        passage,
        vector: QueryVector::Gateway,
    };
    let lean = |weight, top, whole_too| Tuning {
        server_lean: Some(ServerLean {
            weight,
            top,
            whole_too,
        }),
        ..Tuning::default()
    };
    let summary = PassageStyle::default();
    vec![
        gateway(
            "lean-off",
            Tuning {
                server_lean: None,
                ..Tuning::default()
            },
            summary,
        ),
        gateway("lean.1", lean(0.1, 3, false), summary),
        gateway("lean.3", lean(0.3, 3, false), summary),
        gateway("lean.t1", lean(0.2, 1, false), summary),
        gateway("lean.t5", lean(0.2, 5, false), summary),
        gateway("lean+whole", lean(0.2, 3, true), summary),
        gateway(
            "weak-off",
            Tuning {
                weak_part: None,
                ..Tuning::default()
            },
            summary,
        ),
        gateway(
            "weak.35",
            Tuning {
                weak_part: Some(WeakPart {
                    below: 0.35,
                    rounds: 3,
                }),
                ..Tuning::default()
            },
            summary,
        ),
        gateway(
            "weak.45",
            Tuning {
                weak_part: Some(WeakPart {
                    below: 0.45,
                    rounds: 3,
                }),
                ..Tuning::default()
            },
            summary,
        ),
        gateway(
            "weak.4r2",
            Tuning {
                weak_part: Some(WeakPart {
                    below: 0.4,
                    rounds: 2,
                }),
                ..Tuning::default()
            },
            summary,
        ),
        gateway("p:sent", Tuning::default(), PassageStyle::Sentences),
        gateway(
            "gw+p:server",
            Tuning::default(),
            PassageStyle::ServerSummary,
        ),
        gateway(
            "prf.3",
            Tuning {
                feedback: 0.3,
                ..Tuning::default()
            },
            summary,
        ),
        gateway(
            "prf.6",
            Tuning {
                feedback: 0.6,
                ..Tuning::default()
            },
            summary,
        ),
        gateway(
            "fields2",
            Tuning {
                field_weights: [3.0, 1.5, 1.0, 0.5, 0.2],
                ..Tuning::default()
            },
            summary,
        ),
        fused(
            "gate.5",
            Fusion::Gated {
                semantic_weight: 0.5,
            },
        ),
        fused(
            "gate.75",
            Fusion::Gated {
                semantic_weight: 0.75,
            },
        ),
        fused(
            "sem",
            Fusion::Relative {
                semantic_weight: 1.0,
            },
        ),
        fused(
            "cov.5",
            Fusion::Coverage {
                semantic_weight: 0.5,
            },
        ),
        fused(
            "rel.75",
            Fusion::Relative {
                semantic_weight: 0.75,
            },
        ),
        fused(
            "cov.75",
            Fusion::Coverage {
                semantic_weight: 0.75,
            },
        ),
    ]
}

/// Passages embedded per model call.
const BATCH: usize = 32;

/// The documents' vectors in `style`.
pub fn passage_vectors(
    embedder: &dyn Embedder,
    documents: &[Document],
    style: PassageStyle,
) -> Result<Vectors> {
    let texts: Vec<Vec<String>> = documents.iter().map(|d| passages(d, style)).collect();
    let flat: Vec<String> = texts.iter().flatten().cloned().collect();
    let rows = embed_all(embedder, &flat)?;
    let mut rest = rows.as_slice();
    let mut groups = Vec::with_capacity(texts.len());
    for document in &texts {
        let (group, after) = rest.split_at(document.len().min(rest.len()));
        groups.push(group.iter().map(Vec::as_slice).collect());
        rest = after;
    }
    match Vectors::grouped(groups) {
        Some(vectors) => Ok(vectors),
        None => bail!("the model answered vectors of different sizes"),
    }
}

/// Every text's vector, in batches.
pub fn embed_all(embedder: &dyn Embedder, texts: &[String]) -> Result<Vec<Vec<f32>>> {
    let mut rows = Vec::with_capacity(texts.len());
    for batch in texts.chunks(BATCH) {
        let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
        let vectors = embedder.embed(&refs).map_err(anyhow::Error::msg)?;
        if vectors.len() != refs.len() {
            bail!(
                "the model answered {} vectors for {} texts",
                vectors.len(),
                refs.len()
            );
        }
        rows.extend(vectors);
    }
    Ok(rows)
}

/// Each query's vectors of each kind, by query text.
#[derive(Default)]
pub struct QueryVectors {
    pub raw: HashMap<String, Vec<f32>>,
    /// By the query as written: the vector of its cleaned text.
    pub cleaned: HashMap<String, Vec<f32>>,
    /// By the query as written: its vector and its parts'.
    pub parts: HashMap<String, Vec<f32>>,
    pub gateway: HashMap<String, Vec<f32>>,
}

impl QueryVectors {
    /// The vector `kind` gives `query`.
    pub fn of(&self, kind: QueryVector, query: &str) -> Option<&[f32]> {
        match kind {
            QueryVector::None => None,
            QueryVector::Raw => self.raw.get(query).map(Vec::as_slice),
            QueryVector::Gateway => self.gateway.get(query).map(Vec::as_slice),
            QueryVector::Cleaned => self.cleaned.get(query).map(Vec::as_slice),
            QueryVector::Parts => self.parts.get(query).map(Vec::as_slice),
        }
    }
}
