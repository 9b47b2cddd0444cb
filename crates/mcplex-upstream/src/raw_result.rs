//! A request's result as the upstream sent it. An answer read from one line of a stdio server
//! keeps its result as the server wrote it, unparsed: a tool result the gateway passes on
//! untouched is then never taken apart and put together again. Anything that needs the value
//! parses it ([`RawResult::into_value`]).

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::UpstreamError;

/// The `result` of an upstream's answer.
#[derive(Debug)]
pub enum RawResult {
    /// The result's JSON text as `server` wrote it (checked to be JSON, nothing more).
    Text {
        text: Box<RawValue>,
        server: Arc<str>,
    },
    /// The result, parsed (HTTP upstreams, and answers that arrived in a batch).
    Value(Value),
}

impl RawResult {
    /// The result as a JSON value. A kept text can be JSON that a value cannot hold: a number
    /// beyond the range of `f64` (`1e400`) or a string with a lone surrogate escape (`"\ud800"`,
    /// as JavaScript writes half an emoji) pass the reading that keeps the text, not this one.
    /// Such a result is the server's transport fault, said as such, never a silent `null`.
    pub fn into_value(self) -> Result<Value, UpstreamError> {
        match self {
            RawResult::Value(value) => Ok(value),
            RawResult::Text { text, server } => {
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
            RawResult::Value(value) => value.get("isError") == Some(&Value::Bool(true)),
            RawResult::Text { text, .. } => {
                /// The one field read; every other is skipped without being built.
                #[derive(Deserialize)]
                struct Flag {
                    #[serde(rename = "isError")]
                    is_error: Option<Value>,
                }
                let text = text.get();
                match serde_json::from_str::<Flag>(text) {
                    // A struct also reads from an array: only an object is a tool result.
                    Ok(flag) => text.starts_with('{') && flag.is_error == Some(Value::Bool(true)),
                    // A member twice: read as the parsed value reads it (the last one counts).
                    Err(_) => serde_json::from_str::<Value>(text)
                        .is_ok_and(|value| value.get("isError") == Some(&Value::Bool(true))),
                }
            }
        }
    }

    /// The length of the result's JSON text.
    pub fn json_len(&self) -> usize {
        match self {
            RawResult::Text { text, .. } => text.get().len(),
            RawResult::Value(value) => json_len(value),
        }
    }
}

/// The serialized size of `value`, without building the text.
pub fn json_len(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
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
        RawResult::Text {
            text: RawValue::from_string(json.to_owned()).expect("json"),
            server: Arc::from("kept"),
        }
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
