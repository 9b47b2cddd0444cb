//! Tidy: the repository's structural rules as tests, so `scripts/test.sh` keeps them true.
//!
//! - The crate dependency rules are the table under "Dependency rules" in `ARCHITECTURE.md`,
//!   parsed here, so the document and the check cannot disagree: every workspace crate has a
//!   row, its workspace dependencies are exactly the row's, rows come in data-flow order, and a
//!   crate marked pure depends on no I/O crate and no impure crate (and its source names no
//!   `std` I/O module).
//! - Every Rust file opens with a `//!` doc saying what it owns.
//! - No Rust file is over 600 lines.
//! - No source holds the literal `"__"` a split of a display name would need.
//! - No function of the gateway's source is over 100 lines, but the few listed (`functions.rs`).
//! - No library crate returns `Result<_, String>` (an allow-list names the files still to do).
//!
//! Each test reports every offender at once, not the first.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

#[path = "tidy/functions.rs"]
mod functions;
#[path = "tidy/string_errors.rs"]
mod string_errors;

/// The longest a Rust file may be (DEVELOPERS' standard: split by concept past it).
const MAX_LINES: usize = 600;

/// The heading of the rules' section in `ARCHITECTURE.md`.
const RULES_HEADING: &str = "## Dependency rules";

/// Source text a pure crate's non-test files must not contain: `std`'s I/O and process-wide
/// environment. A tripwire (a `use std::{fs, ..}` slips past it), behind the dependency rule.
const PURE_SOURCE_FORBIDS: [&str; 11] = [
    "std::fs",
    "std::net",
    "std::process",
    "std::env",
    "std::os",
    "stdin()",
    "stdout()",
    "stderr()",
    "println!",
    "eprintln!",
    "eprint!",
];

#[test]
fn crate_dependencies_follow_the_rules_in_architecture_md() {
    let architecture = repo().join("ARCHITECTURE.md");
    let text = std::fs::read_to_string(&architecture).expect("read ARCHITECTURE.md");
    let rules = match Rules::parse(&text) {
        Ok(rules) => rules,
        Err(problem) => panic!("ARCHITECTURE.md, \"{RULES_HEADING}\": {problem}"),
    };
    let packages = workspace_packages();
    let mut problems = rules.check(&packages);
    problems.extend(rules.check_pure_sources(&packages));
    report(
        "the crate dependency rules (the table under \"Dependency rules\" in ARCHITECTURE.md)",
        &problems,
    );
}

#[test]
fn every_rust_file_opens_with_a_module_doc() {
    let problems: Vec<String> = rust_files()
        .into_iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let first = text.lines().find(|line| !line.trim().is_empty());
            match first {
                Some(line) if line.starts_with("//!") => None,
                Some(line) => Some(format!(
                    "{}: opens with `{line}` instead of a `//!` doc saying what the file owns",
                    shown(&path)
                )),
                None => Some(format!("{}: is empty", shown(&path))),
            }
        })
        .collect();
    report("every Rust file opens with a `//!` module doc", &problems);
}

#[test]
fn no_rust_file_is_over_600_lines() {
    let problems: Vec<String> = rust_files()
        .into_iter()
        .filter_map(|path| {
            let lines = std::fs::read_to_string(&path)
                .unwrap_or_default()
                .lines()
                .count();
            (lines > MAX_LINES).then(|| {
                format!(
                    "{}: {lines} lines (limit {MAX_LINES}): split it by concept",
                    shown(&path)
                )
            })
        })
        .collect();
    report(
        &format!("no Rust file is over {MAX_LINES} lines"),
        &problems,
    );
}

/// `mcplex-names`' invariant: the only way from a display name back to a tool is
/// `RegistrationTable::resolve`, never cutting the name at `__` (server and tool names may
/// contain `__` themselves). A tripwire on the literal a split would need.
#[test]
fn no_source_takes_a_display_name_apart_at_double_underscores() {
    let problems: Vec<String> = rust_files()
        .into_iter()
        .filter(|path| !is_test_file(path))
        .filter_map(|path| {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let lines: Vec<String> = text
                .lines()
                .enumerate()
                .filter(|(_, line)| line.contains(r#""__""#))
                .map(|(n, _)| (n + 1).to_string())
                .collect();
            (!lines.is_empty()).then(|| {
                format!(
                    "{} (line {}): the literal \"__\"; resolve names through the \
                     registration table instead",
                    shown(&path),
                    lines.join(", ")
                )
            })
        })
        .collect();
    report("no source splits a display name on `__`", &problems);
}

/// Every search of the catalog goes through `Gateway::search` (`mcplex-dispatch/src/search.rs`),
/// so each is ranked alike and counted in `search_seconds`. A tripwire on a `.search(` call that
/// is not the gateway's, outside the crates that implement ranking and the benchmark.
#[test]
fn every_search_goes_through_the_gateway() {
    let exempt = [
        "crates/mcplex-dispatch/src/search.rs",
        "crates/mcplex-catalog/",
        "crates/mcplex-search/",
        "crates/mcplex-bench/",
    ];
    let problems = lines_of_library_source(&exempt, |line, previous| {
        let trimmed = line.trim_start();
        line.match_indices(".search(").any(|(at, _)| {
            let before = if trimmed.starts_with(".search(") {
                previous.trim_end()
            } else {
                &line[..at]
            };
            !before.ends_with("gateway")
        })
    })
    .into_iter()
    .map(|(path, line)| {
        format!("{path} (line {line}): a search that is not `Gateway::search`; call that instead")
    })
    .collect::<Vec<_>>();
    report("searches going through `Gateway::search`", &problems);
}

/// The protocol era of a revision is decided in one place (`ProtocolEra::of` in
/// `mcplex-protocol/src/era.rs`): no other source compares revisions, so none names one.
#[test]
fn no_source_outside_the_era_module_names_a_protocol_revision() {
    let exempt = [
        "crates/mcplex-protocol/src/era.rs",
        "crates/mcplex-bench/",
        "crates/mcplex-fixtures/",
    ];
    let problems = lines_of_library_source(&exempt, |line, _| {
        line.contains("ProtocolVersion::V_") || has_revision_literal(line)
    })
    .into_iter()
    .map(|(path, line)| {
        format!(
            "{path} (line {line}): a protocol revision outside the era module; ask \
             `ProtocolEra::of` or use the constants of `mcplex-protocol`"
        )
    })
    .collect::<Vec<_>>();
    report("protocol revisions named only by the era module", &problems);
}

/// Whether `line` holds a quoted `"YYYY-MM-DD"`.
fn has_revision_literal(line: &str) -> bool {
    line.as_bytes().windows(12).any(|w| {
        w[0] == b'"'
            && w[11] == b'"'
            && w[1..11].iter().enumerate().all(|(i, b)| match i {
                4 | 7 => *b == b'-',
                _ => b.is_ascii_digit(),
            })
    })
}

/// (file, line number) of every line of the gateway's non-test source (before a file's
/// `#[cfg(test)]`) that `matches` (given the line and the one before it), skipping paths that
/// start with one of `exempt` (relative to the repository) and comment lines.
fn lines_of_library_source(
    exempt: &[&str],
    matches: impl Fn(&str, &str) -> bool,
) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    for path in rs_files_under(&repo().join("crates")) {
        let shown = shown(&path);
        if is_test_file(&path) || exempt.iter().any(|e| shown.starts_with(e)) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let mut previous = "";
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("#[cfg(test)]") {
                break;
            }
            if !line.trim_start().starts_with("//") && matches(line, previous) {
                found.push((shown.clone(), n + 1));
            }
            previous = line;
        }
    }
    found
}

/// The dependency rules as `ARCHITECTURE.md` states them.
#[derive(Debug)]
struct Rules {
    /// Rows in table order, which is data-flow order.
    rows: Vec<Row>,
    /// Crates a pure crate may not depend on.
    io_crates: BTreeSet<String>,
}

/// One crate's row: whether it is pure (`none` in the I/O column) and its workspace dependencies.
#[derive(Debug)]
struct Row {
    name: String,
    pure: bool,
    depends_on: BTreeSet<String>,
}

impl Rules {
    fn parse(text: &str) -> Result<Rules, String> {
        let section =
            section(text, RULES_HEADING).ok_or_else(|| format!("no `{RULES_HEADING}` section"))?;
        let io_crates: BTreeSet<String> = section
            .split("\n\n")
            .find(|paragraph| paragraph.trim_start().starts_with("**I/O crates**"))
            .map(backticked)
            .ok_or("no paragraph starting with **I/O crates**")?
            .into_iter()
            .collect();
        let rows = section
            .lines()
            .filter(|line| line.starts_with('|'))
            .skip(2) // the header and its separator
            .map(Row::parse)
            .collect::<Result<Vec<_>, _>>()?;
        if rows.is_empty() {
            return Err("the table has no rows".to_owned());
        }
        Ok(Rules { rows, io_crates })
    }

    fn row(&self, name: &str) -> Option<(usize, &Row)> {
        self.rows
            .iter()
            .enumerate()
            .find(|(_, row)| row.name == name)
    }

    /// Every way the workspace's manifests differ from the table.
    fn check(&self, packages: &[Package]) -> Vec<String> {
        let mut problems = Vec::new();
        let names: BTreeSet<&str> = packages.iter().map(|p| p.name.as_str()).collect();
        let mut seen = BTreeSet::new();
        for row in &self.rows {
            if !seen.insert(row.name.as_str()) {
                problems.push(format!("`{}` has two rows: keep one", row.name));
            }
            if !names.contains(row.name.as_str()) {
                problems.push(format!(
                    "the row `{}` names no workspace crate: remove it",
                    row.name
                ));
            }
        }
        for package in packages {
            match self.row(&package.name) {
                Some((position, row)) => {
                    problems.extend(self.check_package(package, position, row));
                }
                None => problems.push(format!(
                    "`{name}` has no row: declare it in the table as \
                     \"| `{name}` | none or allowed | its workspace dependencies |\", \
                     below every crate it depends on",
                    name = package.name
                )),
            }
        }
        problems
    }

    fn check_package(&self, package: &Package, position: usize, row: &Row) -> Vec<String> {
        let name = &package.name;
        let mut problems = Vec::new();
        let workspace: BTreeSet<&str> = package.workspace_deps().collect();
        for dep in &workspace {
            if !row.depends_on.contains(*dep) {
                problems.push(format!(
                    "`{name}` depends on `{dep}`, which its row does not list: a new crate edge \
                     is a design change; add it to the row if intended, else drop the dependency"
                ));
            }
            match self.row(dep) {
                Some((at, _)) if at > position => problems.push(format!(
                    "`{name}` depends on `{dep}`, whose row comes after it: rows are in \
                     data-flow order; move `{dep}` above `{name}`"
                )),
                Some((_, dep_row)) if row.pure && !dep_row.pure => problems.push(format!(
                    "`{name}` is pure but depends on `{dep}`, which may do I/O"
                )),
                _ => {}
            }
        }
        for listed in &row.depends_on {
            if !workspace.contains(listed.as_str()) {
                problems.push(format!(
                    "`{name}`'s row lists `{listed}`, which it does not depend on: remove it \
                     from the row (the table is the map, so it is kept exact)"
                ));
            }
        }
        if row.pure {
            for dep in package.external_deps() {
                if self.io_crates.contains(dep) {
                    problems.push(format!(
                        "`{name}` is pure but depends on the I/O crate `{dep}`"
                    ));
                }
            }
        }
        problems
    }

    /// Pure crates' non-test sources name no `std` I/O.
    fn check_pure_sources(&self, packages: &[Package]) -> Vec<String> {
        let mut problems = Vec::new();
        for package in packages {
            let pure = self.row(&package.name).is_some_and(|(_, row)| row.pure);
            if !pure {
                continue;
            }
            for path in rs_files_under(&package.dir.join("src")) {
                if is_test_file(&path) {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                for forbidden in PURE_SOURCE_FORBIDS {
                    if text.contains(forbidden) {
                        problems.push(format!(
                            "{}: `{}` is pure but this file uses `{forbidden}`",
                            shown(&path),
                            package.name
                        ));
                    }
                }
            }
        }
        problems
    }
}

impl Row {
    /// `| `crate` | none or allowed | `dep`, `dep` |` (`—` for no dependencies).
    fn parse(line: &str) -> Result<Row, String> {
        let cells: Vec<&str> = line
            .trim()
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        let [name, io, depends_on] = cells.as_slice() else {
            return Err(format!(
                "a row needs three cells (crate | I/O | depends on): {line}"
            ));
        };
        let name = match backticked(name).as_slice() {
            [one] => one.clone(),
            _ => {
                return Err(format!(
                    "the first cell names one crate in backticks: {line}"
                ));
            }
        };
        let pure = match *io {
            "none" => true,
            "allowed" => false,
            other => {
                return Err(format!(
                    "the I/O cell of `{name}` is `none` or `allowed`, not `{other}`"
                ));
            }
        };
        Ok(Row {
            name,
            pure,
            depends_on: backticked(depends_on).into_iter().collect(),
        })
    }
}

/// A workspace package as `cargo metadata` reports it.
#[derive(Debug)]
struct Package {
    name: String,
    dir: PathBuf,
    /// Normal and build dependencies (dev-dependencies are free): (name, is a workspace crate).
    deps: Vec<(String, bool)>,
}

impl Package {
    fn workspace_deps(&self) -> impl Iterator<Item = &str> {
        self.deps
            .iter()
            .filter(|(_, ws)| *ws)
            .map(|(n, _)| n.as_str())
    }

    fn external_deps(&self) -> impl Iterator<Item = &str> {
        self.deps
            .iter()
            .filter(|(_, ws)| !*ws)
            .map(|(n, _)| n.as_str())
    }
}

/// The workspace's packages, from `cargo metadata --no-deps` (no resolution, no network).
fn workspace_packages() -> Vec<Package> {
    let cargo = std::env::var_os("CARGO")
        .or_else(|| option_env!("CARGO").map(Into::into))
        .unwrap_or_else(|| "cargo".into());
    let output = Command::new(&cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .arg("--manifest-path")
        .arg(repo().join("Cargo.toml"))
        .output()
        .expect("run cargo metadata");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout).expect("cargo metadata JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    let names: BTreeSet<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    packages
        .iter()
        .map(|package| {
            let deps = package["dependencies"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|dep| dep["kind"].is_null() || dep["kind"] == "build")
                .filter_map(|dep| {
                    let name = dep["name"].as_str()?;
                    let workspace = dep["path"].is_string() && names.contains(name);
                    Some((name.to_owned(), workspace))
                })
                .collect();
            let manifest = PathBuf::from(package["manifest_path"].as_str().expect("manifest"));
            Package {
                name: package["name"].as_str().expect("name").to_owned(),
                dir: manifest.parent().expect("manifest dir").to_owned(),
                deps,
            }
        })
        .collect()
}

/// The text from `heading` to the next heading of its level.
fn section<'a>(text: &'a str, heading: &str) -> Option<&'a str> {
    let start = text.find(&format!("\n{heading}\n"))? + 1;
    let body = &text[start + heading.len()..];
    let end = body.find("\n## ").unwrap_or(body.len());
    Some(&body[..end])
}

/// Every `name` in backticks, in order.
fn backticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The repository's root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root")
}

/// A path as the report shows it: relative to the repository.
fn shown(path: &Path) -> String {
    let root = repo();
    path.strip_prefix(&root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The Rust files the rules cover: the workspace's crates and the fuzz targets.
fn rust_files() -> Vec<PathBuf> {
    let root = repo();
    let mut files = rs_files_under(&root.join("crates"));
    files.extend(rs_files_under(&root.join("fuzz")));
    files
}

/// `.rs` files under `dir`, sorted, skipping build output, fuzz corpora and hidden directories.
fn rs_files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let skipped =
                name.starts_with('.') || ["target", "corpus", "artifacts"].contains(&name.as_str());
            if path.is_dir() && !skipped {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Unit-test modules (`tests.rs`, `*_tests.rs`) and integration tests (`tests/`).
fn is_test_file(path: &Path) -> bool {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    name == "tests.rs"
        || name.ends_with("_tests.rs")
        || path.components().any(|c| c.as_os_str() == "tests")
}

/// Fails with every problem, one a line, under `rule`.
fn report(rule: &str, problems: &[String]) {
    assert!(
        problems.is_empty(),
        "{} problem(s) with {rule}:\n  - {}",
        problems.len(),
        problems.join("\n  - ")
    );
}
