//! The projection of snapshots built from tool lists given as values: order, deferral, the
//! search tool, scope, search answers, and the root rewrite of input schemas.

use mcplex_protocol::ServerHealth;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use mcplex_catalog::{BuildInput, CatalogCache, Scope, Snapshot, UpstreamTools, build_snapshot};
use mcplex_config::{Overrides, parse_config};
use serde_json::{Value, json};

use crate::{Provider, SearchBy, schema, search_answer, tools};

/// `servers` as config entries (`{"name": {...extra}}`); each offers `add` and `echo`.
fn snapshot(servers: Value) -> Snapshot {
    let mut entries = servers.as_object().cloned().unwrap_or_default();
    for entry in entries.values_mut() {
        entry["command"] = json!("x");
    }
    let text = json!({"mcpServers": entries}).to_string();
    let config = parse_config(&text, "t.json", &Overrides::default()).expect("valid");
    let offered = json!([
        {"name": "echo", "description": "Echoes.", "inputSchema": {"type": "object"}},
        {"name": "add", "description": "Adds two numbers.", "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}}}
    ]);
    let upstreams: BTreeMap<String, UpstreamTools> = entries
        .keys()
        .map(|name| {
            let tools = offered.as_array().cloned().unwrap_or_default();
            (
                name.clone(),
                UpstreamTools {
                    status: ServerHealth::Ready,
                    tools: Arc::new(tools),
                    offer: Arc::default(),
                },
            )
        })
        .collect();
    let input = BuildInput {
        config: &config,
        hot: Default::default(),
        generation: 1,
        approvals: None,
    };
    build_snapshot(input, &upstreams, &mut CatalogCache::default()).snapshot
}

/// Each entry as `name` (Anthropic tools, OpenAI functions as `namespace/name`), `+d` when
/// deferred; search tools by their type.
fn shape(tools: &[Value]) -> Vec<String> {
    let one = |prefix: &str, t: &Value| {
        let deferred = if t["defer_loading"] == json!(true) {
            " +d"
        } else {
            ""
        };
        format!(
            "{prefix}{}{deferred}",
            t["name"].as_str().unwrap_or_default()
        )
    };
    tools
        .iter()
        .flat_map(|t| match t["type"].as_str() {
            Some("namespace") => {
                let prefix = format!("{}/", t["name"].as_str().unwrap_or_default());
                t["tools"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|f| one(&prefix, f))
                    .collect()
            }
            Some(kind) if kind.starts_with("tool_search") => vec![kind.to_owned()],
            _ => vec![one("", t)],
        })
        .collect()
}

#[test]
fn loaded_tools_come_first_then_the_search_tool_then_the_deferred() {
    let snap = snapshot(json!({"b": {"defer": true}, "a": {}, "c": {"tools": {"defer": ["add"]}}}));
    let anthropic = tools(
        &snap,
        &Scope::full(),
        Provider::Anthropic,
        SearchBy::Provider,
    );
    assert_eq!(
        shape(&anthropic),
        [
            "a__add",
            "a__echo",
            "c__echo",
            "tool_search_tool_bm25_20251119",
            "b__add +d",
            "b__echo +d",
            "c__add +d"
        ]
    );
    let openai = tools(&snap, &Scope::full(), Provider::OpenAi, SearchBy::Provider);
    assert_eq!(
        shape(&openai),
        [
            "a/a__add",
            "a/a__echo",
            "tool_search",
            "b/b__add +d",
            "b/b__echo +d",
            "c/c__echo",
            "c/c__add +d"
        ]
    );
    assert_eq!(openai[0]["tools"][0]["strict"], json!(false));
}

#[test]
fn nothing_deferred_means_no_search_tool() {
    let snap = snapshot(json!({"a": {}}));
    for provider in [Provider::Anthropic, Provider::OpenAi] {
        let projected = tools(&snap, &Scope::full(), provider, SearchBy::Provider);
        assert!(
            shape(&projected)
                .iter()
                .all(|entry| !entry.starts_with("tool_search")),
            "{provider:?}"
        );
    }
}

#[test]
fn a_client_search_tool_is_one_the_application_answers() {
    let snap = snapshot(json!({"a": {"defer": true}}));
    let anthropic = tools(&snap, &Scope::full(), Provider::Anthropic, SearchBy::Client);
    assert_eq!(anthropic[0]["name"], "tool_search");
    assert_eq!(anthropic[0]["input_schema"]["required"], json!(["query"]));
    let openai = tools(&snap, &Scope::full(), Provider::OpenAi, SearchBy::Client);
    assert_eq!(
        (&openai[0]["type"], &openai[0]["execution"]),
        (&json!("tool_search"), &json!("client"))
    );
}

#[test]
fn a_scope_sees_only_its_servers() {
    let snap = snapshot(json!({"a": {}, "b": {"defer": true}}));
    let only_a = Scope::full().within(&BTreeSet::from(["a".to_owned()]));
    let anthropic = tools(&snap, &only_a, Provider::Anthropic, SearchBy::Provider);
    assert_eq!(shape(&anthropic), ["a__add", "a__echo"]);
}

#[test]
fn search_answers_reference_or_load_the_matches_in_rank_order() {
    let snap = snapshot(json!({"a": {"defer": true}, "b": {"defer": true}}));
    let matches: Vec<_> = ["b__add", "a__add", "b__echo"]
        .iter()
        .filter_map(|n| snap.resolve(n))
        .collect();
    let anthropic = search_answer(Provider::Anthropic, &matches, Some("toolu_1"));
    assert_eq!(
        anthropic,
        json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": [
            {"type": "tool_reference", "tool_name": "b__add"},
            {"type": "tool_reference", "tool_name": "a__add"},
            {"type": "tool_reference", "tool_name": "b__echo"}
        ]})
    );
    let openai = search_answer(Provider::OpenAi, &matches, Some("call_1"));
    assert_eq!(
        shape(openai["tools"].as_array().expect("tools")),
        ["b/b__add", "b/b__echo", "a/a__add"]
    );
    assert_eq!(
        (&openai["call_id"], &openai["execution"]),
        (&json!("call_1"), &json!("client"))
    );
}

#[test]
fn refused_root_keywords_are_dropped_and_the_root_is_an_object() {
    let upstream = json!({
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
        "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
        "not": {"required": ["c"]},
        "additionalProperties": false
    });
    let anthropic = schema::for_provider(Some(&upstream), Provider::Anthropic);
    assert_eq!(
        anthropic,
        json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
            "not": {"required": ["c"]},
            "additionalProperties": false
        })
    );
    let openai = schema::for_provider(Some(&upstream), Provider::OpenAi);
    assert_eq!(
        openai,
        json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
            "additionalProperties": false
        })
    );
}

#[test]
fn a_missing_or_odd_root_becomes_an_empty_object_schema() {
    for input in [
        None,
        Some(json!(true)),
        Some(json!({"type": ["object", "null"]})),
    ] {
        for provider in [Provider::Anthropic, Provider::OpenAi] {
            assert_eq!(
                schema::for_provider(input.as_ref(), provider),
                json!({"type": "object", "properties": {}}),
                "{input:?} for {provider:?}"
            );
        }
    }
}

#[test]
fn providers_parse_from_their_names_only() {
    assert_eq!(Provider::parse("anthropic"), Some(Provider::Anthropic));
    assert_eq!(Provider::parse("openai"), Some(Provider::OpenAi));
    assert_eq!(Provider::parse("OpenAI"), None);
}
