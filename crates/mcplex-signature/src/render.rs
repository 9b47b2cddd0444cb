//! The renderer. Every branch returns text plus a lossy flag; lossy flags only ever propagate up.

use serde_json::{Map, Value};

use crate::Signature;

/// Enums with more members than this collapse to their base type (lossy).
const MAX_ENUM_MEMBERS: usize = 8;
/// Enum members longer than this (rendered) collapse the enum (lossy).
const MAX_ENUM_MEMBER_LEN: usize = 24;
/// Nesting deeper than this is not followed (lossy).
const MAX_DEPTH: usize = 8;
/// Keywords that make the root something other than a plain parameter object.
const ROOT_COMBINATORS: [&str; 6] = ["$ref", "anyOf", "oneOf", "allOf", "not", "if"];

/// A rendered type: text, and whether anything was collapsed.
struct Rendered {
    text: String,
    lossy: bool,
}

impl Rendered {
    fn exact(text: impl Into<String>) -> Rendered {
        Rendered {
            text: text.into(),
            lossy: false,
        }
    }

    fn lossy(text: impl Into<String>) -> Rendered {
        Rendered {
            text: text.into(),
            lossy: true,
        }
    }
}

fn unreadable() -> Signature {
    Signature {
        params: "(~)".to_owned(),
        lossy: true,
    }
}

pub(crate) fn signature(schema: &Value) -> Signature {
    let Value::Object(root) = schema else {
        return unreadable();
    };
    if ROOT_COMBINATORS.iter().any(|k| root.contains_key(*k)) {
        return unreadable();
    }
    let declares_object = match root.get("type") {
        None => true,
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        Some(_) => false,
    };
    if !declares_object {
        return unreadable();
    }
    let empty = Map::new();
    let properties = match root.get("properties") {
        None => &empty,
        Some(Value::Object(properties)) => properties,
        Some(_) => return unreadable(),
    };
    let mut required: Vec<&str> = Vec::new();
    match root.get("required") {
        None => {}
        Some(Value::Array(names)) => {
            for name in names {
                let Some(name) = name.as_str() else {
                    return unreadable();
                };
                if !required.contains(&name) {
                    required.push(name);
                }
            }
        }
        Some(_) => return unreadable(),
    }
    let mut optional: Vec<&str> = properties
        .keys()
        .map(String::as_str)
        .filter(|k| !required.contains(k))
        .collect();
    optional.sort_unstable();

    let any = Value::Bool(true);
    let mut lossy = false;
    let mut params = Vec::with_capacity(required.len() + optional.len());
    for (name, is_required) in required
        .iter()
        .map(|n| (*n, true))
        .chain(optional.iter().map(|n| (*n, false)))
    {
        let schema = properties.get(name).unwrap_or(&any);
        let rendered = render_type(schema, root, 0);
        lossy |= rendered.lossy;
        let mut param = render_name(name);
        if is_required {
            param.push('*');
        }
        if rendered.lossy {
            param.push('~');
        }
        param.push(':');
        param.push_str(&rendered.text);
        if let Some(default) = schema.get("default").and_then(render_scalar) {
            param.push('=');
            param.push_str(&default);
        }
        params.push(param);
    }
    Signature {
        params: format!("({})", params.join(", ")),
        lossy,
    }
}

fn render_type(schema: &Value, root: &Map<String, Value>, depth: usize) -> Rendered {
    if depth > MAX_DEPTH {
        return Rendered::lossy("any");
    }
    let object = match schema {
        Value::Bool(true) => return Rendered::exact("any"),
        Value::Object(object) => object,
        _ => return Rendered::lossy("any"),
    };
    if let Some(Value::String(reference)) = object.get("$ref") {
        // Followed one level for a type name; a reference always collapses detail.
        let target = resolve_local(reference, root);
        let inner = target
            .map(|t| render_type(t, root, depth + 1).text)
            .unwrap_or_else(|| "any".to_owned());
        return Rendered::lossy(inner);
    }
    if let Some(constant) = object.get("const") {
        return match render_scalar(constant) {
            Some(value) => Rendered::exact(format!("enum[{value}]")),
            None => Rendered::lossy(base_type_of_value(constant)),
        };
    }
    if let Some(Value::Array(members)) = object.get("enum") {
        return render_enum(members, object);
    }
    for combinator in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = object.get(combinator) {
            return render_union(branches.iter().map(|b| render_type(b, root, depth + 1)));
        }
    }
    if let Some(Value::Array(branches)) = object.get("allOf") {
        let first = branches
            .first()
            .map(|b| render_type(b, root, depth + 1).text)
            .unwrap_or_else(|| "any".to_owned());
        return Rendered::lossy(first);
    }
    match object.get("type") {
        Some(Value::String(kind)) => render_kind(kind, object, root, depth),
        Some(Value::Array(kinds)) => render_union(kinds.iter().map(|k| match k.as_str() {
            Some(kind) => render_kind(kind, object, root, depth),
            None => Rendered::lossy("any"),
        })),
        Some(_) => Rendered::lossy("any"),
        None if object.contains_key("properties") => render_kind("object", object, root, depth),
        None if object.contains_key("items") => render_kind("array", object, root, depth),
        None => Rendered::exact("any"),
    }
}

fn render_kind(
    kind: &str,
    object: &Map<String, Value>,
    root: &Map<String, Value>,
    depth: usize,
) -> Rendered {
    match kind {
        "string" => Rendered::exact("str"),
        "integer" => Rendered::exact("int"),
        "number" => Rendered::exact("num"),
        "boolean" => Rendered::exact("bool"),
        "null" => Rendered::exact("null"),
        "object" => {
            let has_properties = object
                .get("properties")
                .is_some_and(|p| p.as_object().is_none_or(|p| !p.is_empty()));
            let typed_extras = object
                .get("additionalProperties")
                .is_some_and(Value::is_object)
                || object.contains_key("patternProperties");
            if has_properties || typed_extras {
                Rendered::lossy("obj")
            } else {
                Rendered::exact("obj")
            }
        }
        "array" => match object.get("items") {
            None | Some(Value::Bool(true)) => Rendered::exact("[any]"),
            Some(items @ Value::Object(_)) => {
                let inner = render_type(items, root, depth + 1);
                // Arrays of objects are always lossy: the element shape is what an agent needs.
                let of_objects = inner.text.split('|').any(|t| t == "obj");
                Rendered {
                    text: format!("[{}]", inner.text),
                    lossy: inner.lossy || of_objects,
                }
            }
            Some(_) => Rendered::lossy("[any]"),
        },
        _ => Rendered::lossy("any"),
    }
}

fn render_union(branches: impl Iterator<Item = Rendered>) -> Rendered {
    let mut members: Vec<String> = Vec::new();
    let mut lossy = false;
    for branch in branches {
        lossy |= branch.lossy;
        for member in split_union(&branch.text) {
            if !members.iter().any(|m| m == member) {
                members.push(member.to_owned());
            }
        }
    }
    if members.is_empty() {
        return Rendered::lossy("any");
    }
    Rendered {
        text: members.join("|"),
        lossy,
    }
}

/// Splits `a|b` at top level only (not inside `enum[…]` or `[…]`).
fn split_union(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start, mut in_string, mut escaped) = (0i32, 0usize, false, false);
    for (index, c) in text.char_indices() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '[' => depth += 1,
            ']' => depth -= 1,
            '|' if depth == 0 => {
                parts.push(&text[start..index]);
                start = index + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn render_enum(members: &[Value], object: &Map<String, Value>) -> Rendered {
    let rendered: Option<Vec<String>> = members.iter().map(render_scalar).collect();
    match rendered {
        Some(values)
            if !values.is_empty()
                && values.len() <= MAX_ENUM_MEMBERS
                && values
                    .iter()
                    .all(|v| v.chars().count() <= MAX_ENUM_MEMBER_LEN) =>
        {
            Rendered::exact(format!("enum[{}]", values.join("|")))
        }
        _ => {
            let base = match object.get("type").and_then(Value::as_str) {
                Some(kind) => render_kind_name(kind),
                None => members.first().map(base_type_of_value).unwrap_or("any"),
            };
            Rendered::lossy(base)
        }
    }
}

fn render_kind_name(kind: &str) -> &'static str {
    match kind {
        "string" => "str",
        "integer" => "int",
        "number" => "num",
        "boolean" => "bool",
        "null" => "null",
        "object" => "obj",
        "array" => "[any]",
        _ => "any",
    }
}

fn base_type_of_value(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int",
        Value::Number(_) => "num",
        Value::String(_) => "str",
        Value::Array(_) => "[any]",
        Value::Object(_) => "obj",
    }
}

fn resolve_local<'a>(reference: &str, root: &'a Map<String, Value>) -> Option<&'a Value> {
    let path = reference.strip_prefix("#/")?;
    let mut parts = path.split('/');
    let mut current = root.get(parts.next()?)?;
    for part in parts {
        current = current.get(part.replace("~1", "/").replace("~0", "~"))?;
    }
    Some(current)
}

/// A scalar as it appears in a signature (enum members, defaults); `None` for arrays and objects.
/// Strings stay bare when they are plain words that cannot be misread as another literal;
/// everything else is a JSON string literal.
fn render_scalar(value: &Value) -> Option<String> {
    match value {
        Value::Null => Some("null".to_owned()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(if is_bare_word(s) { s.clone() } else { quote(s) }),
        Value::Array(_) | Value::Object(_) => None,
    }
}

fn is_bare_word(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_./:+-".contains(&b))
        && !matches!(text, "true" | "false" | "null")
        && text.parse::<f64>().is_err()
}

/// Parameter names stay bare when they look like identifiers; anything else is a JSON string.
fn render_name(name: &str) -> String {
    let mut bytes = name.bytes();
    let identifier = bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    if identifier {
        name.to_owned()
    } else {
        quote(name)
    }
}

/// A JSON string literal in which `~` is escaped (`\u007e`), so that `~` in a signature only
/// ever means "lossy".
fn quote(text: &str) -> String {
    Value::String(text.to_owned())
        .to_string()
        .replace('~', "\\u007e")
}
