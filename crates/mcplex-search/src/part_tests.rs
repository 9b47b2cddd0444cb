//! A request in parts: where it splits (steps, alternatives, a guess at the kind of server),
//! how the parts' rankings are taken in turn, a weak part's wait, and which part placed a match.

use crate::fusion::PartHits;
use crate::tests::{fleet, fleet_vectors};
use crate::{Document, Hit, Index, Semantic};

#[test]
fn a_request_for_several_things_splits_into_its_parts() {
    assert_eq!(
        crate::query_parts("Find the paper, summarise it and then email the summary to Bob."),
        ["Find the paper", "email the summary to Bob"],
        "\"summarise it\" names one thing only: it stays in the whole request"
    );
    assert_eq!(
        crate::query_parts("List the docker containers and show the web container's logs"),
        [
            "List the docker containers",
            "show the web container's logs"
        ]
    );
    assert!(
        crate::query_parts("fear and greed index").is_empty(),
        "one thing"
    );
    assert!(crate::query_parts("read a file").is_empty());
    assert_eq!(
        crate::query_texts("Can you list the files, then read the README file?", true),
        [
            "Can you list the files, then read the README file?",
            "list the files",
            "read the README file"
        ]
    );
}

#[test]
fn chinese_steps_are_parts_when_each_holds_more_than_one_word() {
    // Each step counts its pairs of characters as words.
    assert_eq!(
        crate::query_parts("网页抓取; 获取网页正文 + 写入文档"),
        ["获取网页正文", "写入文档"]
    );
    // A step of two characters is one word: it stays in the whole request only.
    assert_eq!(
        crate::query_parts("word; 新建文档 + 写入内容 + 保存"),
        ["新建文档", "写入内容"]
    );
    // A full-width semicolon ends a guess or a step as `;` does, and a long first step before
    // it is a step, not a guess (a guess has at most six words, counted as the index counts).
    assert_eq!(
        crate::query_parts("天气服务；查询明天北京天气"),
        ["查询明天北京天气"]
    );
    assert_eq!(
        crate::query_parts("读取文件内容并总结; 发送邮件给老板 + 写入文档"),
        ["读取文件内容并总结", "发送邮件给老板", "写入文档"]
    );
}

/// The ids of the fleet's best `limit` for `query`, whose whole request and parts have the
/// vectors `packed` (three numbers each), ranked with `tuning`.
fn fleet_ranked(query: &str, packed: &[f32], tuning: &crate::Tuning, limit: usize) -> Vec<String> {
    let docs = fleet();
    let vectors = fleet_vectors();
    let semantic = Semantic {
        query: packed,
        documents: &vectors,
    };
    Index::build(&docs)
        .search_tuned(query, Some(semantic), |_| true, limit, tuning)
        .hits
        .iter()
        .map(|h| docs[h.doc].id.clone())
        .collect()
}

#[test]
fn each_part_of_a_request_gets_its_best_match() {
    // No word in common with the fleet. The whole request reads as "files, some change"; its
    // parts as "files" and "time".
    let query = "open every document, and then check what the clock says";
    assert_eq!(
        crate::query_parts(query),
        ["open every document", "check what the clock says"]
    );
    let packed = [0.9, 0.436, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0];
    let ids = |split_parts: bool| {
        let tuning = crate::Tuning {
            split_parts,
            ..crate::Tuning::default()
        };
        fleet_ranked(query, &packed, &tuning, 3)
    };
    assert_eq!(
        ids(false),
        ["fs:list_directory", "fs:read_file", "fs:write_file"],
        "the whole request only"
    );
    assert_eq!(
        ids(true),
        ["fs:list_directory", "time:get_current_time", "fs:read_file"],
        "the whole request's best, then each part's best, then the seconds"
    );
}

#[test]
fn a_part_the_catalog_has_nothing_close_to_yields_its_places() {
    // The first part reads as "files" (a cosine of 1 with read_file); the second as nothing in
    // the fleet (no tool's cosine reaches 0.4), but it shares "log" with git_log.
    let query = "open every document, and then check what the log says";
    assert_eq!(
        crate::query_parts(query),
        ["open every document", "check what the log says"]
    );
    let files = [1.0, 0.0, 0.0];
    // Below 0 with every tool, so that even a lever set at 0 would call it weak.
    let nothing_close = [-0.6, -0.6, -0.529];
    let lever = Some(crate::WeakPart {
        below: 0.4,
        rounds: 3,
    });
    // The whole request reads as "files, some change".
    let close = [0.9, 0.436, 0.0];
    let ids = |whole: [f32; 3], parts: [[f32; 3]; 2], weak_part: Option<crate::WeakPart>| {
        let packed: Vec<f32> = whole
            .into_iter()
            .chain(parts.into_iter().flatten())
            .collect();
        let tuning = crate::Tuning {
            weak_part,
            ..crate::Tuning::default()
        };
        fleet_ranked(query, &packed, &tuning, 3)
    };
    assert_eq!(
        ids(close, [files, nothing_close], None),
        ["fs:list_directory", "git:git_log", "fs:read_file"],
        "without the lever the weak part's best takes the second place"
    );
    assert_eq!(
        ids(close, [files, nothing_close], lever),
        ["fs:list_directory", "fs:read_file", "fs:write_file"],
        "the weak part waits until every other list has had three places"
    );
    assert_eq!(
        ids(close, [nothing_close, nothing_close], lever),
        ["fs:list_directory", "fs:read_file", "fs:write_file"],
        "weak parts wait for a whole request that is not weak"
    );
    assert_eq!(
        ids(nothing_close, [nothing_close, nothing_close], lever),
        ids(nothing_close, [nothing_close, nothing_close], None),
        "when the whole request and every part are weak, none yields to another"
    );
}

#[test]
fn the_one_step_after_a_guess_waits_when_only_the_guess_finds_a_tool() {
    // "clock service" is the guess at the kind of server: the whole request reads as "time,
    // a little of files"; the step alone reads as nothing in the fleet, but shares "log" with
    // git_log.
    let query = "clock service; log the moment";
    assert_eq!(crate::query_parts(query), ["log the moment"]);
    let packed = [0.436, 0.0, 0.9, -0.6, -0.6, -0.529];
    let ids = |weak_part| {
        let tuning = crate::Tuning {
            weak_part,
            ..crate::Tuning::default()
        };
        fleet_ranked(query, &packed, &tuning, 2)
    };
    assert_eq!(
        ids(None),
        ["time:get_current_time", "git:git_log"],
        "without the lever the step's word match takes the second place"
    );
    let lever = crate::Tuning::default().weak_part;
    assert!(lever.is_some(), "the gateway lets weak parts wait");
    assert_eq!(
        ids(lever),
        ["time:get_current_time", "fs:list_directory"],
        "the step waits: the whole request's second comes before the step's first"
    );
}

#[test]
fn a_weak_parts_hits_join_the_turns_as_many_rounds_late_as_it_waits() {
    let docs: Vec<Document> = (0..11)
        .map(|n| Document {
            id: format!("s:t{n:02}"),
            names: Vec::new(),
            tool: format!("t{n:02}"),
            server: "s".to_owned(),
            description: String::new(),
            params: Vec::new(),
        })
        .collect();
    let index = Index::build(&docs);
    let list = |docs: &[usize]| -> Vec<Hit> {
        docs.iter()
            .enumerate()
            .map(|(rank, doc)| Hit {
                doc: *doc,
                score: 1.0 - rank as f32 / 10.0,
                part: None,
            })
            .collect()
    };
    // The whole request's list is the longest; the second part waits three rounds.
    let part = |docs: &[usize], delay: usize| PartHits {
        hits: list(docs),
        delay,
    };
    let merged = index.interleave(
        list(&[0, 1, 2, 3, 4, 5]),
        vec![part(&[6, 7], 0), part(&[8, 9, 10], 3)],
        5,
        1,
    );
    let placed: Vec<(usize, Option<usize>)> = merged.iter().map(|h| (h.doc, h.part)).collect();
    assert_eq!(
        placed,
        [
            (0, None),
            (6, Some(0)),
            (1, None),
            (7, Some(0)),
            (2, None),
            (3, None),
            (8, Some(1)),
            (4, None),
            (9, Some(1)),
            (10, Some(1)),
            (5, None),
        ],
        "three rounds late, each list's first five in turn, then the rest"
    );
    let scored = merged.iter().filter(|hit| hit.score > 0.0).count();
    assert_eq!(
        scored, 10,
        "the whole request's sixth is past the ordered five"
    );
    // A limit no list reaches does not overflow the rounds.
    let all = index.interleave(list(&[0, 1]), vec![part(&[2], 3)], usize::MAX, 1);
    assert_eq!(all.iter().map(|h| h.doc).collect::<Vec<_>>(), [0, 1, 2]);
}

#[test]
fn an_agents_guess_at_the_kind_of_server_is_split_off_and_never_a_part() {
    use crate::query::split_kind;
    assert_eq!(
        split_kind("file system; write file + create markdown document"),
        (Some("file system"), "write file + create markdown document")
    );
    assert_eq!(
        split_kind("weather or forecast service; get tomorrow's forecast for a city"),
        (
            Some("weather or forecast service"),
            "get tomorrow's forecast for a city"
        )
    );
    // A request before the `;`, not a kind: it starts with an action, or the text after it
    // goes on with "then", or the guess is too long to be one.
    for query in [
        "read the file; email it to Bob",
        "Can you read the file; email it to Bob",
        "I need to read the file; email it to Bob",
        "Istanbul weather forecast; then read the file",
        "the thing that my team uses for all of its notes; list them",
        "database;",
        "no semicolon here",
    ] {
        assert_eq!(split_kind(query), (None, query), "{query}");
    }
}

#[test]
fn agent_forms_split_into_steps_and_alternatives() {
    assert_eq!(
        crate::query_parts("file system; write file + create markdown document"),
        ["write file", "create markdown document"]
    );
    assert_eq!(
        crate::query_parts(
            "code hosting platform; list open pull requests or search issues for repo"
        ),
        ["list open pull requests", "search issues for repo"]
    );
    assert_eq!(
        crate::query_parts("notes; recipe for pad thai -> calories per serving"),
        ["recipe for pad thai", "calories per serving"]
    );
    // After a guess the request is a part even alone: a wrong guess is ranked with the whole
    // request, never instead of the request itself.
    assert_eq!(
        crate::query_parts("database; list my notes about the roadmap"),
        ["list my notes about the roadmap"]
    );
    // "or" between words that are not each a request stays one part.
    assert!(crate::query_parts("heads or tails").is_empty());
    assert_eq!(
        crate::query_parts("coin flip; heads or tails"),
        ["heads or tails"]
    );
}

#[test]
fn long_requests_split_at_their_own_words() {
    // A count with its alternative is one request, not two.
    assert_eq!(
        crate::query_parts("Check the variant, then find me two or three recent papers about it"),
        [
            "Check the variant",
            "find me two or three recent papers about it"
        ]
    );
    assert_eq!(
        crate::query_parts("news; fetch the top 5 or 10 stories from hacker news"),
        ["fetch the top 5 or 10 stories from hacker news"]
    );
    // Only that "or" is kept: another in the same request still splits it.
    assert_eq!(
        crate::query_parts("find two or three papers about genomics or search the web for reviews"),
        [
            "find two or three papers about genomics",
            "search the web for reviews"
        ]
    );
    // Chinese sentences end without a space.
    assert_eq!(
        crate::query_parts("帮我查明天北京到西安的高铁，要二等座。再告诉我它停哪些站，几点到"),
        [
            "帮我查明天北京到西安的高铁，要二等座",
            "再告诉我它停哪些站，几点到"
        ]
    );
}

#[test]
fn each_match_says_which_part_of_the_request_placed_it() {
    let docs = fleet();
    let index = Index::build(&docs);
    let result = index.search("files; read file + current time", None, |_| true, 5);
    assert_eq!(result.parts, ["read file", "current time"]);
    let placed: Vec<(&str, Option<&str>)> = result
        .hits
        .iter()
        .map(|hit| {
            (
                docs[hit.doc].id.as_str(),
                hit.part.map(|p| result.parts[p].as_str()),
            )
        })
        .collect();
    assert_eq!(
        placed.first(),
        Some(&("time:get_current_time", None)),
        "the whole request's best comes first"
    );
    assert_eq!(
        placed.get(1),
        Some(&("fs:read_file", Some("read file"))),
        "then the best of the first part the whole request did not already place"
    );
}

/// A code host ("hub") and a tracker ("desk") that answer "search issues" alike: the same
/// name, the same description, and vectors equally close to the step and to the request; only
/// their servers differ. The request reads as the code host, whose other tool it is close to.
fn hub_and_desk() -> (Vec<Document>, crate::Vectors) {
    let docs = vec![
        crate::tests::doc("hub:list_pull_requests", "List pull requests.", &[]),
        crate::tests::doc("hub:search_issues", "Search issues.", &[]),
        crate::tests::doc("desk:search_issues", "Search issues.", &[]),
        crate::tests::doc("desk:create_ticket", "Open a ticket.", &[]),
    ];
    let rows: [[f32; 4]; 4] = [
        [1.0, 0.0, 0.0, 0.0],
        [0.0, 0.8, 0.0, 0.6],
        [0.0, 0.8, 0.0, -0.6],
        [0.0, 0.0, 1.0, 0.0],
    ];
    let vectors = crate::Vectors::new(rows.iter().map(|row| &row[..])).expect("one dimension");
    (docs, vectors)
}

/// The request as the code host's: a cosine of 0.98 with `list_pull_requests`, 0.16 with
/// either `search_issues`.
const ABOUT_THE_CODE_HOST: [f32; 4] = [0.98, 0.2, 0.0, 0.0];

#[test]
fn the_server_a_request_reads_as_decides_between_equivalent_tools_of_a_step() {
    let (docs, vectors) = hub_and_desk();
    let index = Index::build(&docs);
    let ids = |query: &str, packed: &[f32], tuning: &crate::Tuning| -> Vec<String> {
        let semantic = Semantic {
            query: packed,
            documents: &vectors,
        };
        crate::lever_tests::ranked(&index, &docs, query, semantic, tuning, 2)
    };
    let query = "code hosting platform; search issues for repo";
    assert_eq!(crate::query_parts(query), ["search issues for repo"]);
    // The whole request, then the step: a cosine of 0.8 with either `search_issues`.
    let packed: Vec<f32> = ABOUT_THE_CODE_HOST
        .into_iter()
        .chain([0.0, 1.0, 0.0, 0.0])
        .collect();
    let gateway = crate::Tuning::default();
    let without = crate::Tuning {
        server_lean: None,
        ..crate::Tuning::default()
    };
    assert_eq!(
        ids(query, &packed, &without),
        ["hub:list_pull_requests", "desk:search_issues"],
        "without the lean the step's tie breaks by id"
    );
    assert_eq!(
        ids(query, &packed, &gateway),
        ["hub:list_pull_requests", "hub:search_issues"],
        "the step's tool on the server the request reads as"
    );
    // A request not split into parts is ranked as it reads: its own ranking does not lean, so
    // the two tools it is equally close to still tie.
    let whole = "search issues for repo";
    assert!(crate::query_parts(whole).is_empty());
    assert_eq!(
        ids(whole, &ABOUT_THE_CODE_HOST, &gateway),
        ["hub:list_pull_requests", "desk:search_issues"]
    );
}

#[test]
fn a_servers_lean_is_its_relevance_scaled_over_the_servers() {
    let (docs, _) = hub_and_desk();
    let lean = crate::ServerLean {
        weight: 0.2,
        top: 3,
        whole_too: false,
    };
    let near = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(a, b)| (a - b).abs() < 1e-6);
    // hub: the mean of 0.98 and 0.16; desk: of 0.16 and 0. The spread (0.49) is wide: hub's
    // tools take the whole lean, desk's none.
    let whole = [0.98, 0.16, 0.16, 0.0];
    let index = Index::build(&docs);
    let bonus = index.server_lean(&whole, lean);
    assert!(near(&bonus, &[0.2, 0.2, 0.0, 0.0]), "{bonus:?}");
    // Closer than the spread floor (0.05 apart): a quarter of the lean.
    let bonus = index.server_lean(&[0.6, 0.5, 0.5, 0.5], lean);
    assert!(near(&bonus, &[0.05, 0.05, 0.0, 0.0]), "{bonus:?}");
    // A server is as relevant as its `top` closest tools: with one, hub's is 0.98.
    let bonus = index.server_lean(&[0.98, 0.0, 0.5, 0.5], crate::ServerLean { top: 1, ..lean });
    assert!(near(&bonus, &[0.2, 0.2, 0.0, 0.0]), "{bonus:?}");
    let bonus = index.server_lean(&[0.98, 0.0, 0.5, 0.5], lean);
    assert!(
        near(&bonus, &[0.0, 0.0, 0.01, 0.01]),
        "the mean of two: hub 0.49, desk 0.5, a twentieth of the lean: {bonus:?}"
    );
    // One server: nothing to tell apart.
    let one_server: Vec<Document> = docs
        .iter()
        .map(|doc| Document {
            server: "all".to_owned(),
            ..doc.clone()
        })
        .collect();
    let bonus = Index::build(&one_server).server_lean(&whole, lean);
    assert_eq!(bonus, [0.0; 4]);
}
