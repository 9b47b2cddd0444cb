//! Hybrid search with a real sentence model (builds with the `semantic` feature, the default):
//! a gateway with no `search_model` set embeds its tools with the built-in model in the
//! background and finds them by meaning, each tool is embedded once however many snapshots and
//! restarts hold it, a model that does not load leaves search to BM25F with one warning, the
//! retrieval benchmark measures BM25F, hybrid and each lever side by side, and recall holds its
//! floors on every query set.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Gateway, MODES, eventually, fixture_server, tools};

fn ref45(file: &str) -> PathBuf {
    tools().repo.join("crates/mcplex-fixtures/data").join(file)
}

/// A deferred server serving the ref45 rows of `server`.
fn corpus_server(server: &str) -> Value {
    let corpus = ref45("ref45.tools.json");
    let mut entry = fixture_server(
        server,
        &[
            "--no-kit",
            "--corpus",
            &corpus.to_string_lossy(),
            "--corpus-server",
            server,
        ],
    );
    entry["defer"] = json!(true);
    entry
}

/// The fields of the semantic search's log records that carry `field`, in order (the gateway
/// logs JSON: `--log-format json`).
fn semantic_records(gateway: &Gateway, field: &str) -> Vec<Value> {
    gateway
        .log_events()
        .into_iter()
        .filter(|event| {
            event["target"]
                .as_str()
                .is_some_and(|target| target.ends_with("::semantic"))
        })
        .map(|event| event["fields"].clone())
        .filter(|fields| !fields[field].is_null())
        .collect()
}

/// How many tools each published snapshot's embedding pass embedded (the record that makes
/// search hybrid), in order.
fn embeddings_logged(gateway: &Gateway) -> Vec<usize> {
    semantic_records(gateway, "embedded")
        .iter()
        .filter_map(|fields| fields["embedded"].as_u64())
        .map(|n| n as usize)
        .collect()
}

fn first_match(answer: &Value) -> String {
    answer["result"]["structuredContent"]["tools"][0]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn out_of_the_box_tool_search_finds_tools_by_meaning_and_embeds_each_tool_once_across_restarts() {
    // No search_model: the built-in model.
    let config = json!({
        "mcpServers": {"time": corpus_server("time"), "git": corpus_server("git")}
    });
    let mut gateway = Gateway::start_as_given(config.clone(), &["--log-format", "json"]);
    gateway.wait_ready();
    let loaded = semantic_records(&gateway, "model");
    assert!(
        loaded
            .first()
            .and_then(|fields| fields["model"].as_str())
            .is_some_and(|model| { model.starts_with("all-MiniLM-L6-v2-tools int8 (built in)") }),
        "{loaded:?}"
    );
    eventually("the tools embedded", Duration::from_secs(120), || {
        (embeddings_logged(&gateway).iter().sum::<usize>() == 14).then_some(())
    });
    let (_, effective) = gateway.api("GET", "/api/v1/config", "");
    let search = &effective["search"];
    assert_eq!(search["ranking"], "hybrid", "{effective}");
    assert!(
        search["model"]
            .as_str()
            .is_some_and(|model| model.starts_with("all-MiniLM-L6-v2-tools int8 (built in)"))
            && search.get("without_model").is_none(),
        "the API names the model: {effective}"
    );
    let tiers = ["portable", "avx2", "avx512", "avx512-vnni"];
    assert!(
        search["instructions"]
            .as_str()
            .is_some_and(|tier| tiers.contains(&tier))
            && loaded[0]["instructions"] == search["instructions"],
        "the API and the log name the instructions: {effective} {loaded:?}"
    );
    // No word of this request is in the time tools' definitions: BM25 alone finds nothing.
    let request = r#"{"query": "what does the clock say right now"}"#;
    let search = gateway.client("legacy", "call", &["tool_search", request]);
    assert_eq!(first_match(&search), "time__get_current_time", "{search}");
    let retrieve = gateway.client_at(
        "/mcp/call",
        None,
        MODES[1],
        "call",
        &["retrieve_tools", request],
    );
    assert_eq!(
        first_match(&retrieve),
        "time__get_current_time",
        "{retrieve}"
    );

    // A server joins: only its tools are embedded; the others come from the cache.
    let mut bigger = config;
    bigger["mcpServers"]["sqlite"] = corpus_server("sqlite");
    std::fs::write(gateway.dir.path().join("config.json"), bigger.to_string()).expect("write");
    gateway.approve_server("sqlite");
    eventually(
        "the new server's tools embedded",
        Duration::from_secs(120),
        || (embeddings_logged(&gateway).iter().sum::<usize>() == 14 + 6).then_some(()),
    );
    let request = r#"{"query": "which tables does the database have"}"#;
    let search = gateway.client("legacy", "call", &["tool_search", request]);
    assert_eq!(first_match(&search), "sqlite__list_tables", "{search}");

    // The embeddings are kept in the state: a restart embeds nothing again.
    let hybrid_before = embeddings_logged(&gateway).len();
    gateway.restart();
    eventually(
        "the restarted gateway hybrid",
        Duration::from_secs(60),
        || {
            semantic_records(&gateway, "embedded")[hybrid_before..]
                .iter()
                .any(|fields| fields["tools"] == 20)
                .then_some(())
        },
    );
    let loaded: Vec<Value> = semantic_records(&gateway, "count")
        .iter()
        .map(|fields| fields["count"].clone())
        .collect();
    assert_eq!(
        loaded,
        [json!(0), json!(20)],
        "embeddings loaded from the state at each start"
    );
    assert_eq!(embeddings_logged(&gateway).iter().sum::<usize>(), 20);
    let request = r#"{"query": "what does the clock say right now"}"#;
    let search = gateway.client("legacy", "call", &["tool_search", request]);
    assert_eq!(first_match(&search), "time__get_current_time", "{search}");
}

/// `MCPLEX_EMBED_ISA` caps a running gateway's instructions: capped to the portable tier (no
/// vector instructions chosen by hand, f32 products), the built-in model still finds tools by
/// meaning, and the API and the log say which instructions it runs.
#[test]
fn a_gateway_capped_to_portable_instructions_searches_by_meaning_and_says_so() {
    let config = json!({"search_model": null, "mcpServers": {
        "time": corpus_server("time"), "git": corpus_server("git")
    }});
    let gateway = Gateway::start_with_env(
        config,
        &["--log-format", "json"],
        &[("MCPLEX_EMBED_ISA", "portable")],
    );
    gateway.wait_ready();
    eventually("the tools embedded", Duration::from_secs(120), || {
        (embeddings_logged(&gateway).iter().sum::<usize>() == 14).then_some(())
    });
    let loaded = semantic_records(&gateway, "model");
    assert_eq!(loaded[0]["instructions"], "portable", "{loaded:?}");
    let (_, effective) = gateway.api("GET", "/api/v1/config", "");
    assert_eq!(effective["search"]["ranking"], "hybrid", "{effective}");
    assert_eq!(
        effective["search"]["instructions"], "portable",
        "{effective}"
    );
    let request = r#"{"query": "what does the clock say right now"}"#;
    let search = gateway.client("legacy", "call", &["tool_search", request]);
    assert_eq!(first_match(&search), "time__get_current_time", "{search}");
}

#[test]
fn a_model_that_does_not_load_leaves_search_to_bm25_with_one_warning() {
    let missing = tempfile::tempdir().expect("tempdir");
    let corrupt = tempfile::tempdir().expect("tempdir");
    std::fs::write(corrupt.path().join("config.json"), "{\"hidden_size\": 384").expect("write");
    // What the reason says, and how many I/O errors it names (once, not again as its cause).
    for (dir, reason, io_errors) in [
        (missing.path().join("no-model"), "no-model/config.json", 1),
        (corrupt.path().to_path_buf(), "is not a BERT config", 0),
    ] {
        let config = json!({"search_model": dir, "mcpServers": {"time": corpus_server("time")}});
        let gateway = Gateway::start_with(config, &["--log-format", "json"]);
        gateway.wait_ready();
        let warnings: Vec<String> = gateway
            .log_events()
            .into_iter()
            .filter(|event| event["level"] == "WARN")
            .filter_map(|event| event["fields"]["message"].as_str().map(str::to_owned))
            .filter(|message| message.starts_with("semantic search:"))
            .collect();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("search_model: cannot load the model in")
                && warnings[0].contains(reason)
                && warnings[0].ends_with("; searching with BM25F"),
            "{warnings:?}"
        );
        // The management API (and the dashboard's config page) says why, for the process's life.
        let (_, config) = gateway.api("GET", "/api/v1/config", "");
        let search = &config["search"];
        assert_eq!(search["ranking"], "bm25", "{config}");
        assert!(
            search.get("model").is_none()
                && search["without_model"]["because"] == "failed"
                && search["without_model"]["message"]
                    .as_str()
                    .is_some_and(|why| {
                        why.starts_with("search_model: cannot load the model in")
                            && why.contains(reason)
                            && why.matches("(os error").count() == io_errors
                    }),
            "{config}"
        );
        // BM25F still answers: the request shares words with the tool.
        let search = gateway.client(
            "legacy",
            "call",
            &["tool_search", r#"{"query": "current time"}"#],
        );
        assert_eq!(first_match(&search), "time__get_current_time", "{search}");
    }
}

#[test]
fn search_model_false_is_bm25_only_and_says_so() {
    let config = json!({"search_model": false, "mcpServers": {"time": corpus_server("time")}});
    let gateway = Gateway::start_as_given(config, &["--log-format", "json"]);
    gateway.wait_ready();
    let said: Vec<Value> = gateway
        .log_events()
        .into_iter()
        .filter(|event| {
            event["fields"]["message"]
                .as_str()
                .is_some_and(|message| message.starts_with("semantic search:"))
        })
        .collect();
    assert_eq!(said.len(), 1, "{said:?}");
    assert_eq!(
        said[0]["fields"]["message"],
        "semantic search: off (search_model: false); searching with BM25F"
    );
    let (_, config) = gateway.api("GET", "/api/v1/config", "");
    assert_eq!(
        config["search"],
        json!({"ranking": "bm25", "without_model": {
            "because": "config",
            "message": "the config turns it off (search_model: false)"
        }})
    );
}

/// `mcplex bench` exists in builds with the `bench` feature (`scripts/test.sh` turns it on).
#[cfg(feature = "bench")]
#[test]
fn the_retrieval_benchmark_measures_bm25_hybrid_and_the_levers_side_by_side() {
    let corpus = ref45("ref45.tools.json");
    let queries = ref45("ref45.golden.json");
    let (report, stdout) = retrieval(&corpus, &[queries], &["--rounds", "1"]);
    let recall =
        |ranker: &str| report["sets"][0]["rankers"][ranker]["quality"]["recall@5"].as_f64();
    let (bm25, hybrid) = (
        recall("bm25").expect("bm25"),
        recall("hybrid").expect("hybrid"),
    );
    assert!(hybrid > bm25, "{stdout}");
    assert!(recall("gateway").is_some(), "{stdout}");
    assert_eq!(report["embedding"]["tools"], 45, "{report}");
    assert_eq!(
        report["latency"][1]["tools"].as_u64().map(|n| n >= 10_000),
        Some(true),
        "{report}"
    );
    assert!(
        stdout.lines().any(|line| line.contains("metric")
            && line.contains("bm25 |")
            && line.contains("hybrid |")
            && line.ends_with("gateway")),
        "one table, the rankers side by side: {stdout}"
    );
}

/// `--rankings` writes the candidates a second stage would reorder (`scripts/study_rerank.py`):
/// each query's ranking as measured (its top 5 give the recall@5 reported beside it), with the
/// parts of a request in parts and the part that placed each hit; without it, none.
#[cfg(feature = "bench")]
#[test]
fn the_retrieval_benchmark_writes_each_querys_ranking_when_asked() {
    let corpus = ref45("ref45.tools.json");
    let queries = tools()
        .repo
        .join("crates/mcplex-bench/data/ref45.agent-forms.dev.json");
    let gateway = ["--rounds", "0", "--rankers", "gateway"];
    let (plain, _) = retrieval(&corpus, std::slice::from_ref(&queries), &gateway);
    assert!(plain["sets"][0]["rankers"]["gateway"]["rankings"].is_null());

    let (report, stdout) = retrieval(
        &corpus,
        std::slice::from_ref(&queries),
        &[&gateway[..], &["--rankings"]].concat(),
    );
    let set: Value = serde_json::from_slice(&std::fs::read(&queries).expect("set")).expect("json");
    let ranker = &report["sets"][0]["rankers"]["gateway"];
    let rankings = ranker["rankings"].as_array().expect("rankings");
    assert_eq!(
        rankings.len(),
        set["queries"].as_array().map_or(0, Vec::len)
    );
    let mut recall = 0.0;
    let mut placed_by_a_part = 0;
    for ranking in rankings {
        let query = set["queries"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|q| q["query"] == ranking["query"])
            .expect("a query of the set");
        let relevant: Vec<&Value> = query["labels"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|label| &label["tool_id"])
            .collect();
        let hits = ranking["hits"].as_array().expect("hits");
        assert!((1..=30).contains(&hits.len()), "{ranking}");
        let found = hits
            .iter()
            .take(5)
            .filter(|hit| relevant.contains(&&hit[0]))
            .count();
        recall += found as f64 / relevant.len() as f64;
        let parts = ranking["parts"].as_array().map_or(0, Vec::len);
        for hit in hits {
            if let Some(part) = hit[1].as_u64() {
                assert!((part as usize) < parts, "{ranking}");
                placed_by_a_part += 1;
            }
        }
    }
    let reported = ranker["quality"]["recall@5"].as_f64().expect("recall@5");
    assert!(
        (recall / rankings.len() as f64 - reported).abs() < 1e-9,
        "the rankings are the ones measured: {stdout}"
    );
    assert!(
        placed_by_a_part > 0,
        "requests in parts name the part of each hit"
    );
}

/// `bench retrieval` over `corpus` with `queries`: its JSON report and its output.
#[cfg(feature = "bench")]
fn retrieval(corpus: &std::path::Path, queries: &[PathBuf], extra: &[&str]) -> (Value, String) {
    let out = tempfile::tempdir().expect("tempdir");
    let report = out.path().join("retrieval.json");
    let mut args = vec![
        "bench".to_owned(),
        "retrieval".to_owned(),
        "--corpus".to_owned(),
        corpus.to_string_lossy().into_owned(),
        "--model".to_owned(),
        "builtin".to_owned(),
        "--out".to_owned(),
        report.to_string_lossy().into_owned(),
    ];
    for set in queries {
        args.extend(["--queries".to_owned(), set.to_string_lossy().into_owned()]);
    }
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, stdout, stderr) = crate::harness::mcplex(&args);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let report: Value =
        serde_json::from_slice(&std::fs::read(&report).expect("report")).expect("json");
    (report, stdout)
}

/// Recall floors: recall@5 of the gateway's ranking (and of BM25F alone) on ref45, a sample of
/// the MetaTool dev half's validation fifth (the requests the built-in model was not tuned on;
/// 1,000 queries by hash, to keep the run short) and the livemcp527
/// sets (hard and easy, dev and held out). A change that lowers recall fails here; one that
/// raises it should raise the floor.
#[cfg(feature = "bench")]
#[test]
fn recall_holds_its_floors_on_every_query_set() {
    let bench_data = tools().repo.join("crates/mcplex-bench/data");
    // (catalog, MetaTool-style sample size, each query set with its (BM25F, gateway) floor)
    type Case = (PathBuf, &'static str, Vec<(PathBuf, (f64, f64))>);
    let cases: [Case; 3] = [
        (
            ref45("ref45.tools.json"),
            "0",
            vec![
                (ref45("ref45.golden.json"), FLOORS_REF45),
                (
                    bench_data.join("ref45.agent-forms.dev.json"),
                    FLOORS_REF45_FORMS_DEV,
                ),
                (
                    bench_data.join("ref45.agent-forms.heldout.json"),
                    FLOORS_REF45_FORMS_HELDOUT,
                ),
            ],
        ),
        (
            bench_data.join("metatool199.tools.json"),
            "1000",
            vec![
                (
                    bench_data.join("metatool199.dev-validation.json"),
                    FLOORS_METATOOL,
                ),
                (
                    bench_data.join("metatool199.agent-forms.dev.json"),
                    FLOORS_METATOOL_FORMS_DEV,
                ),
                (
                    bench_data.join("metatool199.agent-forms.heldout.json"),
                    FLOORS_METATOOL_FORMS_HELDOUT,
                ),
            ],
        ),
        (
            bench_data.join("livemcp527.tools.json"),
            "0",
            FLOORS_LIVEMCP
                .iter()
                .map(|(set, floors)| (bench_data.join(format!("livemcp527.{set}.json")), *floors))
                .collect(),
        ),
    ];
    for (corpus, sample, sets) in cases {
        let paths: Vec<PathBuf> = sets.iter().map(|(path, _)| path.clone()).collect();
        let (report, stdout) = retrieval(
            &corpus,
            &paths,
            &[
                "--rounds",
                "0",
                "--sample",
                sample,
                "--rankers",
                "bm25*,gateway",
            ],
        );
        for (i, (path, (bm25_floor, gateway_floor))) in sets.iter().enumerate() {
            let recall = |ranker: &str| {
                report["sets"][i]["rankers"][ranker]["quality"]["recall@5"]
                    .as_f64()
                    .unwrap_or_default()
            };
            assert!(
                recall("bm25*") >= *bm25_floor && recall("gateway") >= *gateway_floor,
                "{}: recall@5 below its floors ({bm25_floor}, {gateway_floor})\n{stdout}",
                path.display()
            );
        }
    }
}

/// (BM25F, gateway) recall@5 floors, a little under what was measured (ref45: 0.766, 0.940).
#[cfg(feature = "bench")]
const FLOORS_REF45: (f64, f64) = (0.75, 0.93);
/// The agent-form sets (`agent_forms_sets.py`: a guess at the kind of server before `;`, steps
/// joined by `+`, alternatives by "or"), measured (`bm25*`, gateway) with the model trained on
/// users' tasks as well (issue #34, fifth round): ref45 dev (0.849, 0.980), held out (0.884,
/// 0.957); MetaTool dev (0.880, 0.977), held out (0.855, 0.982); livemcp527 below.
#[cfg(feature = "bench")]
const FLOORS_REF45_FORMS_DEV: (f64, f64) = (0.83, 0.96);
#[cfg(feature = "bench")]
const FLOORS_REF45_FORMS_HELDOUT: (f64, f64) = (0.86, 0.91);
#[cfg(feature = "bench")]
const FLOORS_METATOOL_FORMS_DEV: (f64, f64) = (0.86, 0.96);
#[cfg(feature = "bench")]
const FLOORS_METATOOL_FORMS_HELDOUT: (f64, f64) = (0.83, 0.96);
/// Measured on the 1,000-query sample of the validation fifth: BM25F 0.608 (`bm25*`), gateway
/// 0.919 (second round; the whole fifth: 0.920 then, 0.919 in the third, 0.920 in the fifth).
#[cfg(feature = "bench")]
const FLOORS_METATOOL: (f64, f64) = (0.59, 0.90);
/// Each livemcp527 set and its (BM25F, gateway) floor, a little under what was measured with
/// the model trained on users' tasks as well (issue #34, fifth round): the hard sets
/// agent-search (dev, held out) (0.625, 0.907), (0.712, 0.953) and agent-tasks (0.470, 0.760),
/// (0.536, 0.710); the easy sets search (0.952, 0.987), (0.975, 1.000) and tasks (0.873,
/// 0.904), (0.855, 0.935); the agent-form sets (0.803, 0.910), (0.811, 0.919); the blind sets
/// (searches typed by agents who never saw the catalog) blind-search (0.747, 0.837), (0.779,
/// 0.864) and blind-tasks (0.420, 0.537), (0.362, 0.564); with weak parts yielding their places
/// (seventh round) blind-tasks (0.420, 0.562), (0.362, 0.569), the rest within a query or label;
/// and with the model trained on strings typed without the catalog (seventh round) blind-search
/// (0.747, 0.861), (0.779, 0.902), blind-tasks (0.420, 0.601), (0.362, 0.611), agent-tasks
/// (0.470, 0.745), (0.536, 0.758), agent-search (0.625, 0.929), (0.712, 0.951). The blind
/// tasks' dev floor is over what the ranking reaches without weak parts waiting (0.553). With
/// Chinese and Japanese indexed by pairs of characters (eighth round) the cold sets (searches
/// typed for tasks written without the catalog) measure cold-search (0.739, 0.863), (0.701,
/// 0.824); the length normalisation moved, so BM25F alone moved too: agent-search (0.621,
/// 0.936), (0.705, 0.951), agent-tasks (0.460, 0.745), (0.512, 0.758), blind-search (0.754,
/// 0.861), (0.766, 0.902), blind-tasks (0.411, 0.601), (0.385, 0.613). With the whole request
/// counting among the lists that let a weak part wait (ninth round) the gateway's ranking
/// moves on the search strings only: cold-search 0.868, 0.827, blind-search 0.865, 0.902. With
/// the model trained with hard negatives (eleventh round) the gateway measures cold-search
/// 0.872, 0.852, blind-search 0.876, 0.914, blind-tasks 0.600, 0.648, agent-forms 0.927, 0.938,
/// agent-search 0.939, 0.950, agent-tasks 0.765, 0.736, search 0.992, 1.000, tasks 0.930, 0.953.
/// With each part leaning towards the servers the whole request reads as (twelfth round):
/// cold-search 0.876, 0.864, blind-search 0.885, 0.926, blind-tasks 0.619, 0.645, agent-forms
/// 0.931, 0.941, agent-tasks 0.780, 0.750, tasks 0.930, 0.969, the rest unchanged; the blind
/// tasks' and agent tasks' dev floors are over what the ranking reaches without it (0.600,
/// 0.765).
#[cfg(feature = "bench")]
const FLOORS_LIVEMCP: [(&str, (f64, f64)); 16] = [
    ("cold-search.dev", (0.72, 0.86)),
    ("cold-search.heldout", (0.68, 0.85)),
    ("blind-search.dev", (0.73, 0.87)),
    ("blind-search.heldout", (0.76, 0.91)),
    ("blind-tasks.dev", (0.40, 0.605)),
    ("blind-tasks.heldout", (0.34, 0.63)),
    ("agent-forms.dev", (0.78, 0.92)),
    ("agent-forms.heldout", (0.79, 0.93)),
    ("agent-search.dev", (0.61, 0.90)),
    ("agent-search.heldout", (0.70, 0.93)),
    ("agent-tasks.dev", (0.45, 0.77)),
    ("agent-tasks.heldout", (0.50, 0.73)),
    ("search.dev", (0.93, 0.97)),
    ("search.heldout", (0.95, 0.98)),
    ("tasks.dev", (0.85, 0.91)),
    ("tasks.heldout", (0.83, 0.95)),
];
