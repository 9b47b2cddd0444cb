//! The tokenizer, BM25F ranking over a small fleet (query → ordered tool ids), hybrid ranking with
//! given vectors, and what a tool is embedded as.

use crate::{Document, Index, Semantic, Vectors, passage, tokenize};

#[test]
fn tokenizer_splits_identifiers_and_stems() {
    assert_eq!(
        tokenize("list_directory_with_sizes"),
        ["list", "directory", "size"]
    );
    assert_eq!(tokenize("getCurrentTime"), ["current", "time"]);
    assert_eq!(
        tokenize("read-multiple-files"),
        ["read", "multiple", "file"]
    );
    assert_eq!(
        tokenize("base64 utf8Encode"),
        ["base", "64", "utf", "encode"]
    );
    assert_eq!(
        tokenize("Show me the folder's entries"),
        ["folder", "entry"]
    );
    assert_eq!(
        tokenize("committed running searches"),
        ["commit", "run", "search"]
    );
}

#[test]
fn tokenizer_pairs_the_characters_of_chinese_and_japanese() {
    assert_eq!(tokenize("查询车票"), ["查询", "询车", "车票"]);
    // A change of script splits, and a word of another script keeps its own rules.
    assert_eq!(tokenize("rust热门仓库"), ["rust", "热门", "门仓", "仓库"]);
    assert_eq!(
        tokenize("查询12306中转余票"),
        ["查询", "12306", "中转", "转余", "余票"]
    );
    // One character between other scripts is a term; kana pair like Han.
    assert_eq!(tokenize("PDF转Word"), ["pdf", "转", "word"]);
    assert_eq!(tokenize("カレンダー"), ["カレ", "レン", "ンダ", "ダー"]);
    // The iteration mark and half-width kana are of the script too.
    assert_eq!(tokenize("様々な"), ["様々", "々な"]);
    assert_eq!(tokenize("ｶﾚﾝ"), ["ｶﾚ", "ﾚﾝ"]);
    // Korean is written with spaces: its words stay whole.
    assert_eq!(tokenize("주가 조회"), ["주가", "조회"]);
}

#[test]
fn a_chinese_request_finds_the_tool_whose_description_shares_its_words() {
    let documents = [
        doc(
            "rates:exchange_rate",
            "查询两种货币之间的实时汇率，例如美元兑人民币。",
            &["from", "to"],
        ),
        doc(
            "calendar:lunar_date",
            "查询今日的农历日期和节气。",
            &["date"],
        ),
        doc(
            "trains:get_tickets",
            "查询12306余票信息。",
            &["date", "from", "to"],
        ),
    ];
    let index = Index::build(&documents);
    let ranked: Vec<&str> = index
        .search("美元兑人民币 今日汇率", None, |_| true, 3)
        .hits
        .iter()
        .map(|hit| documents[hit.doc].id.as_str())
        .collect();
    assert_eq!(ranked.first(), Some(&"rates:exchange_rate"), "{ranked:?}");
}

pub(crate) fn doc(id: &str, description: &str, params: &[&str]) -> Document {
    let (server, tool) = id.split_once(':').unwrap_or(("s", id));
    Document {
        id: id.to_owned(),
        names: vec![format!("{server}__{tool}")],
        tool: tool.to_owned(),
        server: server.to_owned(),
        description: description.to_owned(),
        params: params
            .iter()
            .map(|p| (p.to_string(), String::new()))
            .collect(),
    }
}

pub(crate) fn fleet() -> Vec<Document> {
    vec![
        doc(
            "fs:read_file",
            "Read the complete contents of a file from disk.",
            &["path"],
        ),
        doc(
            "fs:write_file",
            "Create a new file or overwrite an existing one.",
            &["path", "content"],
        ),
        doc(
            "fs:list_directory",
            "List the files and folders in a directory.",
            &["path"],
        ),
        doc(
            "git:git_log",
            "Show the commit history of a repository.",
            &["repo_path", "max_count"],
        ),
        doc(
            "time:get_current_time",
            "Get the current time in a timezone.",
            &["timezone"],
        ),
    ]
}

#[track_caller]
fn check(query: &str, expect: &[&str]) {
    let docs = fleet();
    let index = Index::build(&docs);
    let result = index.search(query, None, |_| true, expect.len());
    let ids: Vec<&str> = result
        .hits
        .iter()
        .map(|h| docs[h.doc].id.as_str())
        .collect();
    assert_eq!(ids, expect, "query {query:?}");
}

#[test]
fn ranking_by_meaningful_words() {
    check("read a file", &["fs:read_file"]);
    check("commit history", &["git:git_log"]);
    check(
        "what time is it in Tokyo timezone",
        &["time:get_current_time"],
    );
    check("list folders", &["fs:list_directory"]);
}

#[test]
fn an_exact_name_ranks_first() {
    check("fs__write_file", &["fs:write_file"]);
    check("git:git_log", &["git:git_log"]);
}

#[test]
fn empty_query_matches_everything_in_order() {
    let index = Index::build(&fleet());
    let result = index.search("  ", None, |_| true, 3);
    assert_eq!(result.total, 5);
    // fs:list_directory, fs:read_file, fs:write_file: id order.
    assert_eq!(
        result.hits.iter().map(|h| h.doc).collect::<Vec<_>>(),
        [2, 0, 1]
    );
    let visible = index.search("", None, |doc| doc != 0, 3);
    assert_eq!(visible.total, 4, "every visible document counts");
    assert_eq!(
        visible.hits.iter().map(|h| h.doc).collect::<Vec<_>>(),
        [2, 1, 3],
        "fs:list_directory, fs:write_file, git:git_log"
    );
}

#[test]
fn filtering_happens_before_the_cut() {
    let index = Index::build(&fleet());
    // "file" matches three fs tools; hiding the best one still returns two.
    let result = index.search("file", None, |doc| doc != 0, 2);
    assert_eq!(result.hits.len(), 2);
    assert!(result.hits.iter().all(|h| h.doc != 0));
    assert_eq!(result.total, 2);
}

#[test]
fn ties_break_by_id_so_results_are_deterministic() {
    let docs = vec![doc("b:x", "same words", &[]), doc("a:x", "same words", &[])];
    let index = Index::build(&docs);
    let first = index.search("same words", None, |_| true, 2);
    assert_eq!(
        first.hits.iter().map(|h| h.doc).collect::<Vec<_>>(),
        [1, 0],
        "a:x before b:x"
    );
    assert_eq!(first, index.search("same words", None, |_| true, 2));
    let all = index.search("", None, |_| true, 2);
    assert_eq!(
        all.hits.iter().map(|h| h.doc).collect::<Vec<_>>(),
        [1, 0],
        "empty query in id order"
    );
}

/// Vectors for [`fleet`] in a toy three-concept space: files, change history, time.
pub(crate) fn fleet_vectors() -> Vectors {
    let rows: [[f32; 3]; 5] = [
        [1.0, 0.0, 0.0], // fs:read_file
        [0.6, 0.8, 0.0], // fs:write_file: files, and a change
        [1.0, 0.0, 0.0], // fs:list_directory
        [0.0, 1.0, 0.0], // git:git_log
        [0.0, 0.0, 1.0], // time:get_current_time
    ];
    Vectors::new(rows.iter().map(|row| &row[..])).expect("one dimension")
}

const ABOUT_CHANGES: [f32; 3] = [0.0, 1.0, 0.0];

fn hybrid(query: &str, visible: impl Fn(usize) -> bool, limit: usize) -> (Vec<String>, usize) {
    let docs = fleet();
    let index = Index::build(&docs);
    let vectors = fleet_vectors();
    let semantic = Semantic {
        query: &ABOUT_CHANGES,
        documents: &vectors,
    };
    let result = index.search(query, Some(semantic), visible, limit);
    let ids = result.hits.iter().map(|h| docs[h.doc].id.clone()).collect();
    (ids, result.total)
}

#[test]
fn hybrid_search_finds_a_paraphrase_that_shares_no_word() {
    let query = "what changed recently";
    let index = Index::build(&fleet());
    assert_eq!(
        index.search(query, None, |_| true, 5).total,
        0,
        "no word in common"
    );
    // Similar enough: git_log (1.0) and write_file (0.8); the rest are below the floor.
    assert_eq!(
        hybrid(query, |_| true, 5),
        (
            vec!["git:git_log".to_owned(), "fs:write_file".to_owned()],
            2
        )
    );
}

#[test]
fn hybrid_search_keeps_exact_names_first_and_filters_before_the_cut() {
    let (ids, _) = hybrid("fs__read_file", |_| true, 1);
    assert_eq!(
        ids,
        ["fs:read_file"],
        "an exact name outranks any similarity"
    );
    let (ids, total) = hybrid("what changed recently", |doc| doc != 3, 1);
    assert_eq!((ids, total), (vec!["fs:write_file".to_owned()], 1));
    let (ids, total) = hybrid("", |_| true, 2);
    assert_eq!(
        ids,
        ["fs:list_directory", "fs:read_file"],
        "empty query: id order"
    );
    assert_eq!(total, 5);
}

#[test]
fn hybrid_search_still_weighs_words() {
    // Two tools equally similar to the query vector; the one whose words match wins.
    let docs = vec![
        doc("a:fetch_page", "Fetch a web page.", &["url"]),
        doc("b:open_page", "Open a document.", &["id"]),
    ];
    let index = Index::build(&docs);
    let vectors = Vectors::new([&[1.0f32, 0.0][..]; 2]).expect("one dimension");
    let semantic = Semantic {
        query: &[1.0, 0.0],
        documents: &vectors,
    };
    let result = index.search("fetch", Some(semantic), |_| true, 2);
    assert_eq!(
        result.hits.iter().map(|h| h.doc).collect::<Vec<_>>(),
        [0, 1]
    );
    assert!(result.hits[0].score > result.hits[1].score);
}

#[test]
fn vectors_must_share_one_dimension() {
    assert!(Vectors::new([&[1.0f32][..], &[1.0, 0.0][..]]).is_none());
    assert_eq!(
        Vectors::new([&[0.5f32, 0.5][..]; 3]).map(|v| v.len()),
        Some(3)
    );
}

#[test]
fn a_passage_is_the_name_in_words_and_the_first_paragraph() {
    let mut document = doc(
        "time:getCurrentTime",
        "  Get the current time.\n\nUse  IANA   names.",
        &[],
    );
    assert_eq!(
        passage(&document),
        "get current time: Get the current time."
    );
    document.description = String::new();
    assert_eq!(passage(&document), "get current time");
    // A description of any length gives a passage no longer than a model reads.
    document.description = "é".repeat(100_000);
    assert_eq!(
        passage(&document).chars().count(),
        crate::MAX_EMBEDDED_CHARS
    );
    assert_eq!(crate::embeddable("short"), "short");
}

#[test]
fn similarity_is_the_dot_product_at_any_dimension() {
    for dimension in [1, 3, 8, 384, 385] {
        let row: Vec<f32> = (0..dimension)
            .map(|i| ((i * 7 % 11) as f32 - 5.0) / 10.0)
            .collect();
        let query: Vec<f32> = (0..dimension)
            .map(|i| ((i * 3 % 5) as f32 - 2.0) / 4.0)
            .collect();
        let naive: f32 = row.iter().zip(&query).map(|(a, b)| a * b).sum();
        let vectors = Vectors::new([&row[..]]).expect("one row");
        let fast = vectors.similarity(0, &query);
        assert!(
            (fast - naive).abs() < 1e-4,
            "{dimension}: {fast} vs {naive}"
        );
        assert_eq!(
            vectors.similarity(0, &query[1..]),
            0.0,
            "dimension mismatch"
        );
        assert_eq!(vectors.similarity(1, &query), 0.0, "no such document");
    }
}

#[test]
fn several_queries_score_in_one_pass_as_each_would_alone() {
    let row = |seed: usize| -> Vec<f32> {
        (0..20)
            .map(|i| ((i * seed % 13) as f32 - 6.0) / 9.0)
            .collect()
    };
    let rows: Vec<Vec<f32>> = (1..=5).map(row).collect();
    let one_each = Vectors::new(rows.iter().map(Vec::as_slice)).expect("one dimension");
    let grouped = Vectors::grouped([
        vec![&rows[0][..], &rows[1][..]],
        vec![&rows[2][..]],
        vec![&rows[3][..], &rows[4][..], &rows[0][..]],
    ])
    .expect("one dimension");
    let (first, second, wrong) = (row(7), row(11), vec![1.0; 19]);
    let queries = [&first[..], &second[..], &wrong[..]];
    for vectors in [&one_each, &grouped] {
        // One document more than there are vectors: it has none, so similarity 0.
        let count = vectors.len() + 1;
        let together = vectors.similarities_of(&queries, count);
        assert_eq!(together.len(), 3);
        for (query, similarities) in queries.iter().zip(&together) {
            assert_eq!(similarities, &vectors.similarities(query, count));
        }
        assert!(together[2].iter().all(|s| *s == 0.0), "dimension mismatch");
        assert_eq!(together[0][count - 1], 0.0, "a document without a vector");
    }
}

#[test]
fn request_phrasing_is_stripped_from_a_query() {
    assert_eq!(
        crate::clean_query("Hi, can you please find a tool that converts PDFs?"),
        "converts PDFs"
    );
    assert_eq!(
        crate::clean_query("I need a tool to read pdf text."),
        "read pdf text"
    );
    assert_eq!(
        crate::clean_query("Can I generate bibtex?"),
        "generate bibtex"
    );
    assert_eq!(
        crate::clean_query("github create issue"),
        "github create issue"
    );
    // Nothing left but phrasing: the query stays as it was.
    assert_eq!(crate::clean_query("can you help me?"), "can you help me?");
    assert_eq!(
        crate::clean_query("helpful tools"),
        "helpful tools",
        "whole words only"
    );
}

#[test]
fn a_query_whose_lowercase_moves_byte_offsets_is_split_without_panicking() {
    // "İ" grows and "ẞ" shrinks when lowercased whole: the lengths match, the offsets do not.
    for query in [
        "İ; ẞ",
        "ẞẞ then İİ list files",
        "Kelvin K, then read files and write notes",
    ] {
        let _ = crate::query_parts(query);
        let _ = crate::query_texts(query, true);
        let index = Index::build(&fleet());
        let _ = index.search(query, None, |_| true, 5);
    }
    // Non-ASCII text before a break still splits there.
    assert_eq!(
        crate::query_parts("İstanbul weather forecast; then read the file"),
        ["İstanbul weather forecast", "read the file"]
    );
}

#[test]
fn a_huge_query_is_ranked_as_its_first_characters() {
    assert_eq!(
        crate::clean_query(&format!("{}read file", "please ".repeat(10_000))),
        "read file"
    );
    let docs = fleet();
    let index = Index::build(&docs);
    let first = |query: &str| {
        let result = index.search(query, None, |_| true, 1);
        result.hits.first().map(|hit| docs[hit.doc].id.clone())
    };
    // What lies past the cut (`MAX_EMBEDDED_CHARS`) is never read: neither its words nor its
    // length count.
    let filler = "x ".repeat(crate::MAX_EMBEDDED_CHARS);
    let tail = "commit history repository log ".repeat(50);
    assert_eq!(
        first(&format!("read file {filler}{tail}")).as_deref(),
        Some("fs:read_file")
    );
}
