//! The function-length rule: no function in the gateway's non-test source is over
//! [`MAX_FUNCTION_LINES`] lines, but those on [`LONG_FUNCTIONS`], which may not grow.
//!
//! A function is counted from its `fn` line to the closing brace at the same indentation; the
//! source is every crate's `src/` but the benchmarks' and the fixtures', without unit-test
//! files and `#[cfg(test)]` items.

use std::path::PathBuf;

use super::{is_test_file, repo, report, rs_files_under, shown};

/// The longest a function may be. Past it, split it where the split names a real step.
const MAX_FUNCTION_LINES: usize = 100;

/// Functions over the limit today, each with its length when it was listed: it may not grow
/// past that. Split one and remove its row (the check says so when it fits); add none. None is
/// left: the last one (an MCP route's POST) was split in two.
const LONG_FUNCTIONS: &[(&str, &str, usize)] = &[];

/// Crates under `crates/` whose source is not the gateway's (benchmarks, test fixtures).
const NOT_THE_GATEWAY: [&str; 2] = ["mcplex-bench", "mcplex-fixtures"];

#[test]
fn no_function_is_over_100_lines() {
    let mut problems = Vec::new();
    let mut listed_seen = vec![false; LONG_FUNCTIONS.len()];
    for path in gateway_sources() {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let file = shown(&path);
        for (name, line, length) in long_functions(&text, MAX_FUNCTION_LINES) {
            let listed = LONG_FUNCTIONS
                .iter()
                .position(|(f, n, _)| *f == file && *n == name);
            match listed {
                Some(at) if length <= LONG_FUNCTIONS[at].2 => listed_seen[at] = true,
                Some(at) => {
                    listed_seen[at] = true;
                    problems.push(format!(
                        "{file}:{line}: `{name}` is {length} lines, longer than the {} it was \
                         allowed in LONG_FUNCTIONS: split it where the split names a real step \
                         (it may not grow)",
                        LONG_FUNCTIONS[at].2
                    ));
                }
                None => problems.push(format!(
                    "{file}:{line}: `{name}` is {length} lines (limit {MAX_FUNCTION_LINES}): \
                     split it where the split names a real step, each part a function whose \
                     name says the step"
                )),
            }
        }
    }
    for ((file, name, _), seen) in LONG_FUNCTIONS.iter().zip(listed_seen) {
        if !seen {
            problems.push(format!(
                "{file}: `{name}` is listed in LONG_FUNCTIONS but is no longer over \
                 {MAX_FUNCTION_LINES} lines (or is gone): remove its row"
            ));
        }
    }
    report(
        &format!("no function is over {MAX_FUNCTION_LINES} lines"),
        &problems,
    );
}

/// The non-test Rust files of the gateway's crates.
fn gateway_sources() -> Vec<PathBuf> {
    let crates = repo().join("crates");
    let Ok(entries) = std::fs::read_dir(&crates) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|dir| {
            let name = dir.file_name().unwrap_or_default().to_string_lossy();
            (name == "mcplex" || name.starts_with("mcplex-"))
                && !NOT_THE_GATEWAY.contains(&name.as_ref())
        })
        .collect();
    dirs.sort();
    dirs.iter()
        .flat_map(|dir| rs_files_under(&dir.join("src")))
        .filter(|path| !is_test_file(path))
        .collect()
}

/// The functions of `text` over `limit` lines: name, line of `fn` (from 1), length. Items
/// under `#[cfg(test)]` are skipped.
fn long_functions(text: &str, limit: usize) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut at = 0;
    while at < lines.len() {
        let line = lines[at];
        let indent = indentation(line);
        if line.trim() == "#[cfg(test)]" {
            // The test item: its one line (`mod tests;`), or to its closing brace.
            at = match body_start(&lines, at + 1) {
                Some(open) => closing(&lines, open, indent).map_or(lines.len(), |end| end + 1),
                None => at + 2,
            };
            continue;
        }
        if let Some(name) = fn_name(line)
            && let Some(open) = body_start(&lines, at)
            && let Some(end) = closing(&lines, open, indent)
        {
            let length = end - at + 1;
            if length > limit {
                found.push((name.to_owned(), at + 1, length));
            }
        }
        at += 1;
    }
    found
}

fn indentation(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The function a line declares: `fn name`, after any of `pub(…)`, `const`, `async`, `unsafe`,
/// `extern "…"`.
fn fn_name(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    loop {
        if let Some(after) = rest.strip_prefix("fn ") {
            let end = after
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            return (end > 0).then(|| &after[..end]);
        }
        let word_end = if rest.starts_with("pub(") {
            rest.find(')')? + 1
        } else {
            rest.find(' ')?
        };
        let word = &rest[..word_end];
        let qualifier = word.starts_with("pub")
            || ["const", "async", "unsafe", "extern", "\"C\"", "\"Rust\""].contains(&word);
        if !qualifier {
            return None;
        }
        rest = rest[word_end..].trim_start();
    }
}

/// The line where the body of the function declared at `at` opens; `None` for a declaration
/// without one (`fn f();` in a trait) or a body that closes on the line it opens.
fn body_start(lines: &[&str], at: usize) -> Option<usize> {
    for (offset, line) in lines[at..].iter().enumerate() {
        let code = line.trim_end();
        if code.ends_with(';') {
            return None;
        }
        if code.ends_with('{') {
            return Some(at + offset);
        }
        if code.contains('{') && code.ends_with('}') {
            return None;
        }
    }
    None
}

/// The first line from `from` on that is only `}` at `indent` spaces.
fn closing(lines: &[&str], from: usize, indent: usize) -> Option<usize> {
    (from..lines.len()).find(|&n| {
        let line = lines[n].trim_end();
        line.len() == indent + 1 && indentation(line) == indent && line.ends_with('}')
    })
}

#[test]
fn functions_are_measured_from_fn_to_their_closing_brace() {
    let body = |n: usize| "        work();\n".repeat(n);
    let text = format!(
        "#[cfg(test)]\nmod tests;\nimpl X {{\n    pub(crate) async fn long(\n        a: u8,\n    ) -> u8 {{\n{}    }}\n\n    fn short() {{\n{}    }}\n    fn declared(&self);\n    fn one() {{ 1 }}\n}}\n\n#[cfg(test)]\nmod tests {{\n    fn long_test() {{\n{}    }}\n}}\n",
        body(5),
        body(2),
        body(9)
    );
    assert_eq!(
        long_functions(&text, 4),
        vec![("long".to_owned(), 4, 9)],
        "{text}"
    );
    assert_eq!(fn_name("pub const unsafe fn f<T>()"), Some("f"));
    assert_eq!(fn_name("let fn_ptr = 1;"), None);
    assert_eq!(fn_name("// fn in a comment"), None);
}
