//! Tidy's rule that library crates return their own error types, never `Result<_, String>`.

use std::collections::BTreeSet;

use super::{is_test_file, repo, report, rust_files, shown};

/// Library crates whose source the string-error rule does not cover: a benchmark and the test
/// servers, which end in a binary's report.
const STRING_ERRORS_EXEMPT_CRATES: [&str; 2] = ["mcplex-bench", "mcplex-fixtures"];

/// Library files that may still return `Result<_, String>`, each with why. Temporary: whoever
/// touches one next gives it a typed error and removes it here (the test fails while an entry
/// has nothing left to excuse). None today.
const STRING_ERRORS_ALLOWED: [(&str, &str); 0] = [];

/// ARCHITECTURE.md's promise: a library crate's errors are its own types, not `String`, so a
/// caller can tell failures apart without matching on text. Every `Result<..., String>` in a
/// library crate's non-test source (`#[cfg(test)]` modules and test files excluded) fails,
/// also across lines and inside generics, except the files [`STRING_ERRORS_ALLOWED`] names.
#[test]
fn library_crates_return_typed_errors_not_strings() {
    let root = repo();
    let mut problems = Vec::new();
    let mut excused = BTreeSet::new();
    for path in rust_files() {
        let relative = shown(&path);
        let Some(krate) = relative
            .strip_prefix("crates/")
            .and_then(|rest| rest.split_once("/src/"))
            .map(|(krate, _)| krate)
        else {
            continue;
        };
        if !krate.starts_with("mcplex-")
            || STRING_ERRORS_EXEMPT_CRATES.contains(&krate)
            || is_test_file(&path)
        {
            continue;
        }
        let text = without_test_modules(&std::fs::read_to_string(&path).unwrap_or_default());
        let lines = string_error_lines(&text);
        if lines.is_empty() {
            continue;
        }
        if STRING_ERRORS_ALLOWED
            .iter()
            .any(|(file, _)| *file == relative)
        {
            excused.insert(relative);
            continue;
        }
        for line in lines {
            problems.push(format!(
                "{relative}:{line}: `Result<_, String>`; return an error enum of the crate \
                 (in its `error.rs`, say) whose variants name the failure, and turn it into \
                 text only where a binary reports it"
            ));
        }
    }
    for (file, _) in STRING_ERRORS_ALLOWED {
        if root.join(file).exists() && !excused.contains(file) {
            problems.push(format!(
                "{file}: has no `Result<_, String>` left; remove it from STRING_ERRORS_ALLOWED"
            ));
        }
    }
    report("library crates' errors are typed, not String", &problems);
}

/// `text` up to its first `#[cfg(test)]` module's `{` and from after its closing `}` on,
/// each test module blanked (lines kept, so line numbers stay true).
fn without_test_modules(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        let after = &rest[at..];
        let opens_module = after
            .lines()
            .skip(1)
            .find(|line| !line.trim().is_empty())
            .is_some_and(|line| line.trim_start().starts_with("mod ") && line.ends_with('{'));
        let Some(open) = after.find('{').filter(|_| opens_module) else {
            out.push_str(&rest[..at + 1]);
            rest = &rest[at + 1..];
            continue;
        };
        out.push_str(&rest[..at]);
        let mut depth = 0usize;
        let mut end = after.len();
        for (i, c) in after[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.extend(after[..end].chars().filter(|c| *c == '\n'));
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// The 1-based lines where a `Result<` opens whose second type argument is `String`
/// (`Result<T, String>`, also split over lines with a trailing comma; not `io::Result<String>`
/// nor `Result<String, E>`).
fn string_error_lines(text: &str) -> Vec<usize> {
    let mut lines = Vec::new();
    for (at, _) in text.match_indices("Result<") {
        let start = at + "Result<".len();
        let mut depth = 1usize;
        let mut arguments = Vec::new();
        let mut from = start;
        for (i, c) in text[start..].char_indices() {
            let i = start + i;
            match c {
                '<' | '(' | '[' => depth += 1,
                '>' | ')' | ']' => {
                    depth -= 1;
                    if depth == 0 {
                        arguments.push(text[from..i].trim());
                        break;
                    }
                }
                ',' if depth == 1 => {
                    arguments.push(text[from..i].trim());
                    from = i + 1;
                }
                _ => {}
            }
        }
        arguments.retain(|argument| !argument.is_empty());
        if arguments.len() == 2 && arguments[1] == "String" {
            lines.push(text[..at].matches('\n').count() + 1);
        }
    }
    lines
}
