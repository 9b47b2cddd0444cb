use crate::{Document, Index, tokenize};

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

fn doc(id: &str, description: &str, params: &[&str]) -> Document {
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

fn fleet() -> Vec<Document> {
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
    let result = index.search(query, |_| true, expect.len());
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
    let result = index.search("  ", |_| true, 3);
    assert_eq!(result.total, 5);
    // fs:list_directory, fs:read_file, fs:write_file: id order.
    assert_eq!(
        result.hits.iter().map(|h| h.doc).collect::<Vec<_>>(),
        [2, 0, 1]
    );
}

#[test]
fn filtering_happens_before_the_cut() {
    let index = Index::build(&fleet());
    // "file" matches three fs tools; hiding the best one still returns two.
    let result = index.search("file", |doc| doc != 0, 2);
    assert_eq!(result.hits.len(), 2);
    assert!(result.hits.iter().all(|h| h.doc != 0));
    assert_eq!(result.total, 2);
}

#[test]
fn ties_break_by_id_so_results_are_deterministic() {
    let docs = vec![doc("b:x", "same words", &[]), doc("a:x", "same words", &[])];
    let index = Index::build(&docs);
    let first = index.search("same words", |_| true, 2);
    assert_eq!(
        first.hits.iter().map(|h| h.doc).collect::<Vec<_>>(),
        [1, 0],
        "a:x before b:x"
    );
    assert_eq!(first, index.search("same words", |_| true, 2));
    let all = index.search("", |_| true, 2);
    assert_eq!(
        all.hits.iter().map(|h| h.doc).collect::<Vec<_>>(),
        [1, 0],
        "empty query in id order"
    );
}
