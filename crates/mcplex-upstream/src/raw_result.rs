//! A request's result as the upstream sent it. An answer read from one line of a stdio server
//! keeps its result as the server wrote it, unparsed: a tool result the gateway passes on
//! untouched is then never taken apart and put together again. Anything that needs the value
//! parses it ([`RawResult::into_value`]).

use std::sync::{Arc, OnceLock};

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::UpstreamError;

/// The `result` of an upstream's answer.
#[derive(Debug)]
pub enum RawResult {
    /// The result's JSON text as `server` wrote it (checked to be JSON, nothing more), and its
    /// members the gateway reads, read once when first asked for ([`RawResult::written`]).
    Text {
        text: Box<RawValue>,
        server: Arc<str>,
        reading: OnceLock<Reading>,
    },
    /// The result, parsed (HTTP upstreams, and answers that arrived in a batch).
    Value(Value),
}

/// The members of a tool result that the gateway reads without building it: whether it reports
/// an error (for the audit log and the trace), and what the members that decide whether a
/// caller's era takes it as written hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Members {
    /// `isError` is `true`.
    pub is_error: bool,
    pub content: MemberKind,
    pub result_type: MemberKind,
    pub structured_content: MemberKind,
}

/// What the one reading of a kept text found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// An object naming each member the gateway reads at most once.
    Members(Members),
    /// An object naming one of them twice: only whether it reports an error is kept, read as
    /// the parsed value reads it (the last one counts).
    Duplicated { is_error: bool },
    /// Not an object: no member to read.
    NotAnObject,
}

impl Reading {
    fn of(text: &str) -> Reading {
        // Serde reads a struct from an array too: only an object is a result.
        if !text.trim_start().starts_with('{') {
            return Reading::NotAnObject;
        }
        match Members::read(text) {
            Some(members) => Reading::Members(members),
            None => Reading::Duplicated {
                is_error: serde_json::from_str::<Value>(text)
                    .is_ok_and(|value| value.get("isError") == Some(&Value::Bool(true))),
            },
        }
    }
}

/// What one member holds, by the kind of JSON written there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberKind {
    Absent,
    Null,
    Bool,
    Number,
    String,
    List,
    Object,
}

impl MemberKind {
    fn of_text(member: Option<&RawValue>) -> MemberKind {
        match member.map(|raw| raw.get().as_bytes().first()) {
            None => MemberKind::Absent,
            Some(Some(b'{')) => MemberKind::Object,
            Some(Some(b'[')) => MemberKind::List,
            Some(Some(b'"')) => MemberKind::String,
            Some(Some(b'n')) => MemberKind::Null,
            Some(Some(b't' | b'f')) => MemberKind::Bool,
            Some(_) => MemberKind::Number,
        }
    }

    fn of_value(member: Option<&Value>) -> MemberKind {
        match member {
            None => MemberKind::Absent,
            Some(Value::Null) => MemberKind::Null,
            Some(Value::Bool(_)) => MemberKind::Bool,
            Some(Value::Number(_)) => MemberKind::Number,
            Some(Value::String(_)) => MemberKind::String,
            Some(Value::Array(_)) => MemberKind::List,
            Some(Value::Object(_)) => MemberKind::Object,
        }
    }
}

impl Members {
    /// The members of the object `text` in one reading that builds nothing (every other member
    /// is skipped); `None` when it names one of them twice.
    fn read(text: &str) -> Option<Members> {
        #[derive(Deserialize)]
        struct Read<'a> {
            #[serde(default, borrow, rename = "isError")]
            is_error: Member<'a>,
            #[serde(default, borrow)]
            content: Member<'a>,
            #[serde(default, borrow, rename = "resultType")]
            result_type: Member<'a>,
            #[serde(default, borrow, rename = "structuredContent")]
            structured_content: Member<'a>,
        }
        let read = serde_json::from_str::<Read<'_>>(text).ok()?;
        Some(Members {
            is_error: read.is_error.0.is_some_and(|raw| raw.get() == "true"),
            content: MemberKind::of_text(read.content.0),
            result_type: MemberKind::of_text(read.result_type.0),
            structured_content: MemberKind::of_text(read.structured_content.0),
        })
    }

    fn of_value(value: &Value) -> Option<Members> {
        let object = value.as_object()?;
        Some(Members {
            is_error: object.get("isError") == Some(&Value::Bool(true)),
            content: MemberKind::of_value(object.get("content")),
            result_type: MemberKind::of_value(object.get("resultType")),
            structured_content: MemberKind::of_value(object.get("structuredContent")),
        })
    }
}

/// One member as written, `None` when it is absent (a `null` is kept as the text `null`, where
/// an `Option` would read it as absent).
#[derive(Default)]
struct Member<'a>(Option<&'a RawValue>);

impl<'de: 'a, 'a> Deserialize<'de> for Member<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(deserializer).map(|raw| Member(Some(raw)))
    }
}

impl RawResult {
    /// A result kept as `server` wrote it.
    pub fn written(text: Box<RawValue>, server: Arc<str>) -> RawResult {
        RawResult::Text {
            text,
            server,
            reading: OnceLock::new(),
        }
    }

    /// The members the gateway reads, `None` when the result is not an object (or a kept text
    /// names one of them twice). A kept text is read once, however often this is asked.
    pub fn members(&self) -> Option<Members> {
        match self {
            RawResult::Text { text, reading, .. } => {
                match reading.get_or_init(|| Reading::of(text.get())) {
                    Reading::Members(members) => Some(*members),
                    Reading::Duplicated { .. } | Reading::NotAnObject => None,
                }
            }
            RawResult::Value(value) => Members::of_value(value),
        }
    }

    /// The result as a JSON value. A kept text can be JSON that a value cannot hold: a number
    /// beyond the range of `f64` (`1e400`) or a string with a lone surrogate escape (`"\ud800"`,
    /// as JavaScript writes half an emoji) pass the reading that keeps the text, not this one.
    /// Such a result is the server's transport fault, said as such, never a silent `null`.
    pub fn into_value(self) -> Result<Value, UpstreamError> {
        match self {
            RawResult::Value(value) => Ok(value),
            RawResult::Text { text, server, .. } => {
                serde_json::from_str(text.get()).map_err(|e| UpstreamError::Transport {
                    server: server.to_string(),
                    reason: format!("its result is JSON the gateway cannot read as a value: {e}"),
                })
            }
        }
    }

    /// The text as the server wrote it, when the result was kept unparsed.
    pub fn text(&self) -> Option<&RawValue> {
        match self {
            RawResult::Text { text, .. } => Some(text),
            RawResult::Value(_) => None,
        }
    }

    /// Whether the result is a tool result marked `"isError": true`.
    pub fn is_error(&self) -> bool {
        match self {
            RawResult::Text { text, reading, .. } => {
                match reading.get_or_init(|| Reading::of(text.get())) {
                    Reading::Members(Members { is_error, .. })
                    | Reading::Duplicated { is_error } => *is_error,
                    Reading::NotAnObject => false,
                }
            }
            RawResult::Value(value) => Members::of_value(value).is_some_and(|m| m.is_error),
        }
    }

    /// The length of the result's JSON text.
    pub fn json_len(&self) -> usize {
        match self {
            RawResult::Text { text, .. } => text.get().len(),
            RawResult::Value(value) => mcplex_protocol::json_len(value, usize::MAX),
        }
    }
}

impl From<Value> for RawResult {
    fn from(value: Value) -> RawResult {
        RawResult::Value(value)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn text(json: &str) -> RawResult {
        RawResult::written(
            RawValue::from_string(json.to_owned()).expect("json"),
            Arc::from("kept"),
        )
    }

    #[test]
    fn text_and_value_agree_on_everything_read_from_them() {
        let cases = [
            r#"{"content":[{"type":"text","text":"x"}],"isError":true}"#,
            r#"{"isError":false,"content":[]}"#,
            r#"{"isError":"true","content":[]}"#,
            r#"{"content":[{"type":"text","text":"é \" \\ ü"}],"structuredContent":{"a":[1,2.5,null]}}"#,
            r#"[1,2]"#,
            r#"[true]"#,
            r#"{"isError":false,"isError":true}"#,
            r#"{"isError":true,"isError":false}"#,
            r#""just text""#,
        ];
        for case in cases {
            let value: Value = serde_json::from_str(case).expect("json");
            let (raw, parsed) = (text(case), RawResult::from(value.clone()));
            assert_eq!(raw.is_error(), parsed.is_error(), "{case}");
            // The size is the text's as written: the same where the text is what serde writes.
            if serde_json::to_string(&value).ok().as_deref() == Some(case) {
                assert_eq!(raw.json_len(), parsed.json_len(), "{case}");
            } else {
                assert_eq!(raw.json_len(), case.len(), "{case}");
            }
            assert_eq!(raw.text().map(RawValue::get), Some(case));
            assert!(parsed.text().is_none());
            assert_eq!(raw.into_value().expect("a value"), value, "{case}");
        }
        assert!(text(r#"{"isError":true}"#).is_error());
        assert!(!text(r#"{"isError":1}"#).is_error());
        assert_eq!(
            RawResult::from(json!({"a": 1}))
                .into_value()
                .expect("a value"),
            json!({"a": 1})
        );
    }

    #[test]
    fn the_members_read_from_a_text_are_those_of_its_value_and_read_once() {
        for case in [
            r#"{"content":[{"type":"text","text":"x"}],"isError":true}"#,
            r#"{"resultType":"complete","content":[],"structuredContent":{"a":null}}"#,
            r#"{"content":null,"structuredContent":[1],"resultType":7,"isError":false}"#,
            r#"{"x-vendor":{"content":1}}"#,
            r#"[{"content":[]}]"#,
        ] {
            let value: Value = serde_json::from_str(case).expect("json");
            let raw = text(case);
            assert_eq!(raw.members(), RawResult::from(value).members(), "{case}");
            let RawResult::Text { reading, .. } = &raw else {
                unreachable!()
            };
            let kept = reading.get().map(|reading| match reading {
                Reading::Members(members) => Some(*members),
                _ => None,
            });
            assert_eq!(kept, Some(raw.members()), "kept: {case}");
        }
        let members = text(r#"{"content":[],"resultType":"complete"}"#).members();
        assert_eq!(
            members,
            Some(Members {
                is_error: false,
                content: MemberKind::List,
                result_type: MemberKind::String,
                structured_content: MemberKind::Absent,
            })
        );
        assert_eq!(text(r#"{"content":[],"content":[]}"#).members(), None);
    }

    #[test]
    fn a_text_naming_a_member_twice_is_parsed_once_however_often_it_is_asked() {
        let raw = text(r#"{"isError":false,"content":[],"isError":true}"#);
        assert!(raw.is_error(), "the last one counts");
        assert_eq!(raw.members(), None, "never taken as written");
        let RawResult::Text { reading, .. } = &raw else {
            unreachable!()
        };
        assert_eq!(reading.get(), Some(&Reading::Duplicated { is_error: true }));
        assert!(raw.is_error());
    }

    #[test]
    fn json_a_value_cannot_hold_is_the_servers_fault_not_a_null() {
        for case in [
            r#"{"content":[],"n":1e400}"#,
            r#"{"content":[],"n":-1e309}"#,
            r#"{"content":[{"type":"text","text":"half an emoji \ud83d"}]}"#,
            r#"{"content":[{"type":"text","text":"\udc00 alone"}]}"#,
        ] {
            match text(case).into_value() {
                Err(UpstreamError::Transport { server, reason }) => {
                    assert_eq!(server, "kept", "{case}");
                    assert!(
                        reason.contains("cannot read as a value"),
                        "{case}: {reason}"
                    );
                }
                other => panic!("{case}: {other:?}"),
            }
        }
    }
}
