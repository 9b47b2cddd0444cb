//! The root rewrite of input schemas, per provider.

use serde_json::json;

use crate::{Provider, schema};

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
