//! `limits`: how many tool calls one caller (an agent token or an OAuth subject) may make per
//! minute and at once, overall and for `write` and `destructive` tools. The top-level `"limits"`
//! is every caller's default; a token's own limits (`mcplex token create --limit …`, stored with
//! the token) override it key by key. The same JSON shape and the same reader serve both, so a
//! token's limits are validated exactly as the file's are. Counting and refusing are the dispatch
//! crate's business; this module only reads, validates and merges.

use serde_json::{Map, Value};

use crate::parse::{Cx, kind, warn_unknown};
use crate::{ConfigError, LimitsError};

/// The keys of a `limits` object.
const LIMITS_KEYS: &[&str] = &[
    "calls_per_minute",
    "concurrent_calls",
    "write",
    "destructive",
];
/// The keys of a class of tools inside it.
const RATE_KEYS: &[&str] = &["calls_per_minute", "concurrent_calls"];
/// The largest number a limit may be (a typo of a few more digits is refused, not obeyed).
pub const MAX_LIMIT: u32 = 1_000_000;

/// One class's limits; `None`: not limited (or, in an override, inherited).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rate {
    /// Calls started in any 60 seconds.
    pub calls_per_minute: Option<u32>,
    /// Calls in flight at once.
    pub concurrent_calls: Option<u32>,
}

impl Rate {
    fn over(self, base: Rate) -> Rate {
        Rate {
            calls_per_minute: self.calls_per_minute.or(base.calls_per_minute),
            concurrent_calls: self.concurrent_calls.or(base.concurrent_calls),
        }
    }

    fn is_empty(self) -> bool {
        self.calls_per_minute.is_none() && self.concurrent_calls.is_none()
    }

    fn to_json(self) -> Map<String, Value> {
        let mut object = Map::new();
        if let Some(n) = self.calls_per_minute {
            object.insert("calls_per_minute".into(), n.into());
        }
        if let Some(n) = self.concurrent_calls {
            object.insert("concurrent_calls".into(), n.into());
        }
        object
    }
}

/// A caller's limits: on every call, and tighter ones on calls to `write` and `destructive`
/// tools (each class counted on its own; every call also counts in `all`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CallLimits {
    pub all: Rate,
    pub write: Rate,
    pub destructive: Rate,
}

impl CallLimits {
    /// Nothing limited.
    pub fn is_empty(&self) -> bool {
        self.all.is_empty() && self.write.is_empty() && self.destructive.is_empty()
    }

    /// These limits, each one not set here taken from `base`.
    pub fn over(&self, base: &CallLimits) -> CallLimits {
        CallLimits {
            all: self.all.over(base.all),
            write: self.write.over(base.write),
            destructive: self.destructive.over(base.destructive),
        }
    }

    /// The JSON form `limits` is written in (only the keys that are set).
    pub fn to_json(&self) -> Value {
        let mut object = self.all.to_json();
        for (key, rate) in [("write", self.write), ("destructive", self.destructive)] {
            if !rate.is_empty() {
                object.insert(key.into(), Value::Object(rate.to_json()));
            }
        }
        Value::Object(object)
    }

    /// Reads a `limits` object from anywhere but the config file (a token's stored limits, an
    /// API request): unknown keys are refused, not warned of. `what` names it in the error.
    pub fn from_json(value: &Value, what: &str) -> Result<CallLimits, LimitsError> {
        let mut warnings = Vec::new();
        let limits = read_limits(&Cx { file: what }, Some(value), "limits", &mut warnings)?;
        match warnings.first() {
            Some(warning) => Err(LimitsError::UnknownKey(warning.replace(", ignored", ""))),
            None => Ok(limits),
        }
    }

    /// Reads `key=value` assignments (`calls_per_minute=60`, `write.concurrent_calls=2`), the
    /// command line's form of the same object.
    pub fn from_assignments(assignments: &[String]) -> Result<CallLimits, LimitsError> {
        let mut object = Map::new();
        for assignment in assignments {
            let Some((key, value)) = assignment.split_once('=') else {
                return Err(LimitsError::NoValue {
                    assignment: assignment.clone(),
                });
            };
            let number: u64 = value.trim().parse().map_err(|_| LimitsError::NotANumber {
                assignment: assignment.clone(),
                value: value.to_owned(),
            })?;
            let (class, key) = match key.trim().split_once('.') {
                Some((class, key)) => (Some(class), key),
                None => (None, key.trim()),
            };
            let target = match class {
                None => &mut object,
                Some(class) => object
                    .entry(class.to_owned())
                    .or_insert_with(|| Value::Object(Map::new()))
                    .as_object_mut()
                    .ok_or_else(|| LimitsError::NotAClass {
                        assignment: assignment.clone(),
                        class: class.to_owned(),
                    })?,
            };
            target.insert(key.to_owned(), Value::from(number));
        }
        CallLimits::from_json(&Value::Object(object), "--limit")
    }
}

/// One `limits` value as written: absent or `null` (nothing limited) or an object.
pub(crate) fn read_limits(
    cx: &Cx<'_>,
    value: Option<&Value>,
    key: &str,
    warnings: &mut Vec<String>,
) -> Result<CallLimits, ConfigError> {
    let object = match value {
        None | Some(Value::Null) => return Ok(CallLimits::default()),
        Some(Value::Object(object)) => object,
        Some(other) => {
            return Err(cx.err(
                key,
                format!(
                    "must be an object (calls_per_minute, concurrent_calls, write, destructive), found {}",
                    kind(other)
                ),
            ));
        }
    };
    warn_unknown(object, LIMITS_KEYS, &format!("{key}."), cx.file, warnings)?;
    let mut limits = CallLimits {
        all: read_rate(cx, object, key)?,
        ..CallLimits::default()
    };
    for (class, slot) in [
        ("write", &mut limits.write),
        ("destructive", &mut limits.destructive),
    ] {
        let key = format!("{key}.{class}");
        match object.get(class) {
            None | Some(Value::Null) => {}
            Some(Value::Object(inner)) => {
                warn_unknown(inner, RATE_KEYS, &format!("{key}."), cx.file, warnings)?;
                *slot = read_rate(cx, inner, &key)?;
            }
            Some(other) => {
                return Err(cx.err(
                    key,
                    format!(
                        "must be an object (calls_per_minute, concurrent_calls), found {}",
                        kind(other)
                    ),
                ));
            }
        }
    }
    Ok(limits)
}

fn read_rate(cx: &Cx<'_>, object: &Map<String, Value>, key: &str) -> Result<Rate, ConfigError> {
    let number = |name: &str| -> Result<Option<u32>, ConfigError> {
        match object.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => value
                .as_u64()
                .filter(|n| (1..=u64::from(MAX_LIMIT)).contains(n))
                .and_then(|n| u32::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| {
                    cx.err(
                        format!("{key}.{name}"),
                        format!("must be a whole number from 1 to {MAX_LIMIT}, found {value}"),
                    )
                }),
        }
    };
    Ok(Rate {
        calls_per_minute: number("calls_per_minute")?,
        concurrent_calls: number("concurrent_calls")?,
    })
}
