//! Schema → signature examples, what counts as lossy, and the properties: any JSON compiles,
//! deterministically, lossy exactly when the text contains `~`.

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::compile;

#[track_caller]
fn check(schema: Value, expect: &str) {
    let signature = compile(&schema);
    assert_eq!(signature.render("t"), format!("t{expect}"));
    assert_eq!(
        signature.is_lossy(),
        expect.contains('~'),
        "lossy flag disagrees with the text"
    );
}

#[test]
fn the_seed_example() {
    check(
        json!({"type": "object", "required": ["owner", "repo", "title"], "properties": {
            "title": {"type": "string"}, "owner": {"type": "string"}, "repo": {"type": "string"},
            "labels": {"type": "array", "items": {"type": "string"}},
            "milestone": {"type": "object", "properties": {"number": {"type": "integer"}}}
        }}),
        "(owner*:str, repo*:str, title*:str, labels:[str], milestone~:obj)",
    );
}

#[test]
fn scalar_types_and_defaults() {
    check(
        json!({"type": "object", "properties": {
            "ttl": {"type": "integer", "default": 3600}, "ratio": {"type": "number", "default": 0.5},
            "on": {"type": "boolean", "default": false}, "name": {"type": "string", "default": "main"},
            "label": {"type": "string", "default": "two words"}, "nothing": {"type": "null"},
            "anything": {}, "numeric_text": {"type": "string", "default": "42"}
        }}),
        "(anything:any, label:str=\"two words\", name:str=main, nothing:null, numeric_text:str=\"42\", on:bool=false, ratio:num=0.5, ttl:int=3600)",
    );
}

#[test]
fn required_order_is_the_required_array_then_optional_by_name() {
    check(
        json!({"type": "object", "required": ["z", "a"], "properties": {"b": {"type": "string"}, "a": {"type": "string"}, "z": {"type": "string"}, "c": {}}}),
        "(z*:str, a*:str, b:str, c:any)",
    );
    // A required name without a property is still listed, as any.
    check(json!({"type": "object", "required": ["x"]}), "(x*:any)");
}

#[test]
fn unions_enums_and_null() {
    check(
        json!({"type": "object", "properties": {
            "id": {"type": ["string", "integer"]},
            "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "format": {"type": "string", "enum": ["json", "text"]},
            "level": {"enum": [1, 2, 3]},
            "only": {"const": "x"},
            "spaced": {"enum": ["a b", "c|d"]}
        }}),
        "(format:enum[json|text], id:str|int, level:enum[1|2|3], maybe:str|null, only:enum[x], spaced:enum[\"a b\"|\"c|d\"])",
    );
}

#[test]
fn long_enums_collapse_to_their_base_type() {
    let many: Vec<String> = (0..9).map(|i| format!("v{i}")).collect();
    check(
        json!({"type": "object", "properties": {"e": {"type": "string", "enum": many}}}),
        "(e~:str)",
    );
    check(
        json!({"type": "object", "properties": {"e": {"enum": ["a-very-long-enum-member-name-indeed"]}}}),
        "(e~:str)",
    );
}

#[test]
fn what_is_lossy() {
    check(
        json!({"type": "object", "properties": {"rows": {"type": "array", "items": {"type": "object"}}}}),
        "(rows~:[obj])",
    );
    check(
        json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "string"}}}}),
        "(m~:obj)",
    );
    check(
        json!({"type": "object", "properties": {"free": {"type": "object"}}}),
        "(free:obj)",
    );
    check(
        json!({"type": "object", "properties": {"r": {"$ref": "#/$defs/R"}}, "$defs": {"R": {"type": "object", "properties": {"a": {}}}}}),
        "(r~:obj)",
    );
    check(
        json!({"type": "object", "properties": {"r": {"$ref": "#/$defs/Missing"}}}),
        "(r~:any)",
    );
    check(
        json!({"type": "object", "properties": {"x": {"allOf": [{"type": "string"}, {"minLength": 1}]}}}),
        "(x~:str)",
    );
    check(
        json!({"type": "object", "properties": {"grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}}}),
        "(grid:[[int]])",
    );
}

#[test]
fn scalar_constraints_are_not_lossy() {
    // Limits, patterns and formats are left to validation, which answers with the full schema.
    check(
        json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 9}, "s": {"type": "string", "pattern": "^a", "format": "uri"}}}),
        "(n:int, s:str)",
    );
}

#[test]
fn unreadable_schemas() {
    check(json!("nope"), "(~)");
    check(json!({"type": "string"}), "(~)");
    check(json!({"type": "object", "properties": []}), "(~)");
    check(json!({"type": "object", "required": "a"}), "(~)");
    check(json!({"oneOf": [{"type": "object"}]}), "(~)");
    check(json!({"type": "object"}), "()");
    check(json!({}), "()");
}

#[test]
fn names_that_need_quoting() {
    check(
        json!({"type": "object", "properties": {"my param": {"type": "string"}, "ok_name-1.x": {"type": "string"}, "9lives": {}}}),
        "(\"9lives\":any, \"my param\":str, ok_name-1.x:str)",
    );
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "[a-z|\\[\\]~*\" ]{0,6}".prop_map(Value::String),
        prop_oneof![
            Just("object"),
            Just("string"),
            Just("array"),
            Just("integer"),
            Just("null")
        ]
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("type".to_owned()),
                    Just("properties".to_owned()),
                    Just("items".to_owned()),
                    Just("required".to_owned()),
                    Just("enum".to_owned()),
                    Just("anyOf".to_owned()),
                    Just("$ref".to_owned()),
                    Just("default".to_owned()),
                    Just("const".to_owned()),
                    "[a-z ]{1,4}",
                ],
                inner,
                0..6,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

#[test]
fn a_tilde_in_a_name_or_value_is_escaped() {
    check(
        json!({"type": "object", "properties": {"a~b": {"enum": ["x~y"], "default": "~"}}}),
        "(\"a\\u007eb\":enum[\"x\\u007ey\"]=\"\\u007e\")",
    );
}

fn flat_schema() -> impl Strategy<Value = Value> {
    let value = prop_oneof![
        "\\PC{0,6}".prop_map(Value::String),
        any::<i32>().prop_map(Value::from),
        any::<bool>().prop_map(Value::Bool),
    ];
    let property = (
        proptest::collection::vec(value.clone(), 0..4),
        proptest::option::of(value),
    )
        .prop_map(|(members, default)| {
            let mut property = serde_json::Map::new();
            if !members.is_empty() {
                property.insert("enum".to_owned(), Value::Array(members));
            }
            if let Some(default) = default {
                property.insert("default".to_owned(), default);
            }
            Value::Object(property)
        });
    proptest::collection::btree_map("\\PC{1,6}", property, 0..6)
        .prop_map(|properties| json!({"type": "object", "properties": properties}))
}

proptest! {
    #[test]
    fn any_names_and_values_keep_lossy_iff_tilde(schema in flat_schema()) {
        let signature = compile(&schema);
        prop_assert_eq!(signature.is_lossy(), signature.params().contains('~'), "{}", signature.params());
    }

    #[test]
    fn never_panics_is_deterministic_and_lossy_iff_tilde(schema in arbitrary_json()) {
        let first = compile(&schema);
        let second = compile(&schema);
        prop_assert_eq!(&first, &second);
        prop_assert_eq!(first.is_lossy(), first.params().contains('~'), "{}", first.params());
        prop_assert!(first.params().starts_with('(') && first.params().ends_with(')'));
    }
}
