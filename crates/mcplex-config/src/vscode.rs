//! VS Code's config form, read as it is: its top-level `servers` (the same entries as
//! `mcpServers`), and its `inputs` (prompted values), which mcplex cannot prompt for: `inputs`
//! is reported, and a `${input:…}` reference in a server is refused with where it is.

use serde_json::{Map, Value};

use crate::ConfigError;
use crate::parse::Cx;

/// What a `${input:…}` reference starts with.
const INPUT_REFERENCE: &str = "${input:";

impl Cx<'_> {
    /// The servers' top-level key and value: `mcpServers` (Claude Desktop, Cursor, Claude Code)
    /// or VS Code's `servers`; `None` when there is neither.
    pub(crate) fn servers_key<'r>(
        &self,
        root: &'r Map<String, Value>,
    ) -> Result<Option<(&'static str, &'r Value)>, ConfigError> {
        let present = |key: &str| root.get(key).filter(|v| !v.is_null());
        match (present("mcpServers"), present("servers")) {
            (Some(_), Some(_)) => Err(self.err(
                "servers",
                "both \"mcpServers\" and VS Code's \"servers\" are set; keep one",
            )),
            (Some(value), None) => Ok(Some(("mcpServers", value))),
            (None, Some(value)) => Ok(Some(("servers", value))),
            (None, None) => Ok(None),
        }
    }

    /// Reports VS Code's `inputs`: their values are prompted for by VS Code, never by mcplex.
    pub(crate) fn warn_inputs(&self, root: &Map<String, Value>, warnings: &mut Vec<String>) {
        if root.get("inputs").is_some_and(|v| !v.is_null()) {
            warnings.push(format!(
                "{}: inputs: unsupported: mcplex does not prompt for VS Code inputs; write the values in the servers' \"env\" or \"headers\" instead of \"${{input:…}}\"",
                self.file
            ));
        }
    }

    /// Refuses a `${input:…}` reference anywhere in a server entry: the server would otherwise
    /// receive the reference's text as its value (a token, a path).
    pub(crate) fn refuse_input_references(
        &self,
        key: &str,
        value: &Value,
    ) -> Result<(), ConfigError> {
        match value {
            Value::String(text) if text.contains(INPUT_REFERENCE) => Err(self.err(
                key,
                format!(
                    "{:?} refers to a VS Code input, which mcplex cannot prompt for (\"inputs\" is unsupported); write the value itself",
                    input_reference(text)
                ),
            )),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .try_for_each(|(i, item)| self.refuse_input_references(&format!("{key}[{i}]"), item)),
            Value::Object(object) => object.iter().try_for_each(|(name, item)| {
                self.refuse_input_references(&format!("{key}.{name}"), item)
            }),
            _ => Ok(()),
        }
    }
}

/// The first `${input:…}` of `text`, alone: the rest of a header or an env value may be a secret.
fn input_reference(text: &str) -> &str {
    let Some(start) = text.find(INPUT_REFERENCE) else {
        return "";
    };
    let reference = &text[start..];
    // The input's id and the closing brace; an unclosed reference shows only what could be an
    // id, never the text after it, and a long one is cut.
    let id_end = reference[INPUT_REFERENCE.len()..]
        .char_indices()
        .take(64)
        .find(|(_, c)| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .map_or_else(
            || {
                let rest = &reference[INPUT_REFERENCE.len()..];
                rest.char_indices().nth(64).map_or(rest.len(), |(i, _)| i)
            },
            |(i, _)| i,
        );
    let end = INPUT_REFERENCE.len() + id_end;
    if reference[end..].starts_with('}') {
        &reference[..=end]
    } else {
        &reference[..end]
    }
}

#[cfg(test)]
mod tests {
    use super::input_reference;

    #[test]
    fn only_the_reference_is_shown_never_what_follows_it() {
        assert_eq!(
            input_reference("Bearer ${input:token} tail"),
            "${input:token}"
        );
        assert_eq!(
            input_reference("${input:token secret-value"),
            "${input:token"
        );
        assert_eq!(input_reference("${input:tok}en"), "${input:tok}");
        let long = format!("${{input:{}", "a".repeat(500));
        assert_eq!(input_reference(&long).len(), "${input:".len() + 64);
        assert_eq!(input_reference("no reference"), "");
    }
}
