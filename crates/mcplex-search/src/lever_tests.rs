//! The levers `bench retrieval` compares beyond the gateway's default: several vectors per
//! document, pseudo-relevance feedback, the coverage and gated fusions, and a question that
//! ends one request and starts the next.

use crate::{Document, Fusion, Index, PassageStyle, Semantic, Tuning, Vectors, passages};

fn doc(id: &str, description: &str) -> Document {
    let (server, tool) = id.split_once(':').unwrap_or(("s", id));
    Document {
        id: id.to_owned(),
        names: Vec::new(),
        tool: tool.to_owned(),
        server: server.to_owned(),
        description: description.to_owned(),
        params: Vec::new(),
    }
}

/// The ids of the best `limit` for `query` ranked with `tuning`.
pub(crate) fn ranked(
    index: &Index,
    docs: &[Document],
    query: &str,
    semantic: Semantic,
    tuning: &Tuning,
    limit: usize,
) -> Vec<String> {
    index
        .search_tuned(query, Some(semantic), |_| true, limit, tuning)
        .hits
        .iter()
        .map(|hit| docs[hit.doc].id.clone())
        .collect()
}

#[test]
fn a_document_with_several_vectors_is_as_similar_as_its_closest_one() {
    let rows: [&[f32]; 3] = [&[1.0, 0.0], &[0.0, 1.0], &[0.6, 0.8]];
    let vectors = Vectors::grouped([vec![rows[0], rows[1]], vec![rows[2]]]).expect("grouped");
    assert_eq!(vectors.len(), 2);
    assert_eq!(vectors.similarity(0, &[0.0, 1.0]), 1.0, "its second row");
    assert!((vectors.similarity(1, &[0.0, 1.0]) - 0.8).abs() < 1e-6);
    assert_eq!(vectors.similarity(2, &[0.0, 1.0]), 0.0, "no such document");
    assert!(
        Vectors::grouped([vec![rows[0]], Vec::new()]).is_none(),
        "a document without rows"
    );
}

#[test]
fn sentences_style_embeds_the_summary_and_each_sentence_with_the_name() {
    let document = doc(
        "audio:tempo",
        "Estimates the tempo of a track. Returns the beats per minute as a number.",
    );
    assert_eq!(
        passages(&document, PassageStyle::Sentences),
        [
            "tempo: Estimates the tempo of a track. Returns the beats per minute as a number.",
            "tempo: Estimates the tempo of a track.",
            "tempo: Returns the beats per minute as a number.",
        ]
    );
    assert_eq!(passages(&document, PassageStyle::Summary).len(), 1);
    let short = doc("audio:tempo", "Estimates the tempo of a track.");
    assert_eq!(
        passages(&short, PassageStyle::Sentences).len(),
        1,
        "one sentence: the summary"
    );
}

#[test]
fn feedback_moves_the_query_towards_its_best_documents() {
    // The query is d; its three closest are d itself, then a and b (ties keep their order):
    // the query plus their mean, [1, 0] + [0.867, 0.4], at unit length.
    let rows: [&[f32]; 5] = [
        &[0.8, 0.6],
        &[0.8, 0.6],
        &[0.8, 0.6],
        &[1.0, 0.0],
        &[0.0, 1.0],
    ];
    let vectors = Vectors::new(rows).expect("one dimension");
    let query = [1.0, 0.0];
    let similarities = vectors.similarities(&query, 5);
    let moved = vectors.feedback(&query, &similarities, 1.0).expect("moved");
    let norm: f32 = moved.iter().map(|m| m * m).sum();
    assert!((norm - 1.0).abs() < 1e-5, "a unit vector");
    let expected = [0.9778, 0.2095];
    assert!(
        moved
            .iter()
            .zip(expected)
            .all(|(m, e)| (m - e).abs() < 1e-3),
        "{moved:?}"
    );
}

#[test]
fn coverage_and_gated_fusion_give_a_match_on_one_common_word_little_say() {
    // "read" is in most tools, "pillars" and "destiny" in none. bazi is the closest in meaning,
    // read_file a little less. BM25 divided by its best score lifts read_file to the top;
    // divided by the query's ideal score it does not. Gated, a tool at the bottom of the
    // cosine scale gains nothing from the word it shares.
    let docs = vec![
        doc("fs:read_file", "Read a file."),
        doc("fs:read_dir", "Read a directory."),
        doc("notes:read_note", "Read a note."),
        doc("fortune:bazi", "Chinese fortune telling from a birth date."),
    ];
    let index = Index::build(&docs);
    let rows: [&[f32]; 4] = [&[0.6, 0.8], &[0.0, 1.0], &[0.0, 1.0], &[0.8, 0.6]];
    let vectors = Vectors::new(rows).expect("one dimension");
    let semantic = Semantic {
        query: &[0.8, 0.6],
        documents: &vectors,
    };
    let query = "four pillars of destiny reading";
    let with = |fusion| Tuning {
        fusion,
        split_parts: false,
        ..Tuning::default()
    };
    let relative = with(Fusion::Relative {
        semantic_weight: 0.6,
    });
    let coverage = with(Fusion::Coverage {
        semantic_weight: 0.6,
    });
    assert_eq!(
        ranked(&index, &docs, query, semantic, &relative, 5)[0],
        "fs:read_file"
    );
    assert_eq!(
        ranked(&index, &docs, query, semantic, &coverage, 5)[0],
        "fortune:bazi"
    );
    let score_of_read_dir = |tuning: &Tuning| {
        index
            .search_tuned(query, Some(semantic), |_| true, 5, tuning)
            .hits
            .iter()
            .find(|hit| hit.doc == 1)
            .map(|hit| hit.score)
    };
    let gated = with(Fusion::Gated {
        semantic_weight: 0.6,
    });
    assert!(score_of_read_dir(&relative).is_some_and(|score| score > 0.3));
    assert_eq!(score_of_read_dir(&gated), Some(0.0));
}

#[test]
fn a_question_ends_one_request_and_starts_the_next() {
    assert_eq!(
        crate::query_parts(
            "What's trending on Hacker News? Open the top story and read the comments!"
        ),
        [
            "What's trending on Hacker News",
            "Open the top story",
            "read the comments"
        ]
    );
}
