//! The README is a contract with a new user: its command list and `--help` agree both ways
//! (every command and flag of one is in the other), and its SDK snippets run as written against
//! `mcplex serve --demo`.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::json;

use crate::harness::{Gateway, tools};

/// Flags every command shares, said once in the README's sentence above the list.
const SHARED: &[&str] = &["--config", "--data-dir", "--store", "--log-format"];
/// Flags clap adds to every command.
const CLAP: &[&str] = &["--help", "--version"];

fn readme() -> String {
    std::fs::read_to_string(tools().repo.join("README.md")).expect("README.md")
}

fn help(path: &[&str]) -> String {
    let output = Command::new(&tools().mcplex)
        .args(path)
        .arg("--help")
        .output()
        .expect("run mcplex --help");
    assert!(output.status.success(), "mcplex {path:?} --help failed");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The subcommands a help text lists under `Commands:` (clap's own `help` left out).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| !line.starts_with("Commands:"))
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// Every `--flag` in `text`.
fn flags(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|word| word.starts_with("--") && word.len() > 2)
        .map(str::to_owned)
        .collect()
}

/// The flags in `text` but the shared ones and clap's.
fn own_flags(text: &str) -> BTreeSet<String> {
    flags(text)
        .into_iter()
        .filter(|flag| !SHARED.contains(&flag.as_str()) && !CLAP.contains(&flag.as_str()))
        .collect()
}

/// Every command that runs (`tools list`; `activity`, which also has `activity export`) with the
/// flags its `--help` names, shared ones left out.
fn commands_in_help() -> BTreeMap<String, BTreeSet<String>> {
    let mut leaves = BTreeMap::new();
    let mut stack: Vec<Vec<String>> = subcommands(&help(&[]))
        .into_iter()
        .map(|name| vec![name])
        .collect();
    while let Some(path) = stack.pop() {
        let words: Vec<&str> = path.iter().map(String::as_str).collect();
        let text = help(&words);
        let children = subcommands(&text);
        let options = own_flags(text.split("Options:").nth(1).unwrap_or_default());
        // A command that runs on its own has flags of its own, subcommands or not
        // (`activity` and `activity export`).
        if children.is_empty() || !options.is_empty() {
            leaves.insert(path.join(" "), options);
        }
        stack.extend(children.into_iter().map(|child| {
            let mut longer = path.clone();
            longer.push(child);
            longer
        }));
    }
    leaves
}

/// The README's command list: each `mcplex …` line of the block after its marker, as the
/// longest known command path it starts with and the flags on the line.
fn commands_in_readme(
    readme: &str,
    known: &BTreeMap<String, BTreeSet<String>>,
) -> BTreeMap<String, BTreeSet<String>> {
    let block = readme
        .split("<!-- commands:")
        .nth(1)
        .and_then(|rest| rest.split("```sh\n").nth(1))
        .and_then(|rest| rest.split("```").next())
        .expect("the README's command list, after its <!-- commands: … --> marker");
    let mut listed: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in block.lines().filter(|line| line.starts_with("mcplex ")) {
        let line = line.split("  #").next().unwrap_or(line);
        let words: Vec<&str> = line.split_whitespace().skip(1).collect();
        let path = (1..=words.len())
            .rev()
            .map(|n| words[..n].join(" "))
            .find(|candidate| known.contains_key(candidate))
            .unwrap_or_else(|| panic!("README lists a command --help does not know: {line}"));
        listed.entry(path).or_default().extend(own_flags(line));
    }
    listed
}

#[test]
fn every_command_and_flag_in_help_is_in_the_readme_and_the_reverse() {
    let readme = readme();
    let mut in_help = commands_in_help();
    // Builds without the bench feature have no bench subcommands to compare.
    let bench_built = in_help.keys().any(|path| path.starts_with("bench "));
    in_help.retain(|path, _| path != "bench");
    let mut in_readme = commands_in_readme(&readme, &in_help);
    if !bench_built {
        in_readme.retain(|path, _| !path.starts_with("bench "));
    }
    let missing: Vec<&String> = in_help
        .keys()
        .filter(|p| !in_readme.contains_key(*p))
        .collect();
    assert!(
        missing.is_empty(),
        "commands not in the README: {missing:?}"
    );
    for (path, flags) in &in_help {
        let listed = &in_readme[path];
        let undocumented: Vec<&String> = flags.difference(listed).collect();
        let unknown: Vec<&String> = listed.difference(flags).collect();
        assert!(
            undocumented.is_empty() && unknown.is_empty(),
            "mcplex {path}: flags in --help but not the README: {undocumented:?}; \
             in the README but not --help: {unknown:?}"
        );
    }
    for shared in SHARED {
        assert!(readme.contains(shared), "the README never names {shared}");
    }
    // Every variable a flag reads is named too.
    let mut variables = BTreeSet::new();
    for path in in_help.keys() {
        let words: Vec<&str> = path.split(' ').collect();
        for piece in help(&words).split("[env: ").skip(1) {
            if let Some(name) = piece.split(['=', ']']).next() {
                variables.insert(name.to_owned());
            }
        }
    }
    let unnamed: Vec<&String> = variables.iter().filter(|v| !readme.contains(*v)).collect();
    assert!(
        unnamed.is_empty(),
        "variables not in the README: {unnamed:?}"
    );
}

/// The fenced block after `<!-- snippet: NAME -->`, with the default URL replaced by `url`.
fn snippet(readme: &str, name: &str, url: &str) -> String {
    readme
        .split(&format!("<!-- snippet: {name} -->"))
        .nth(1)
        .and_then(|rest| rest.split("```").nth(1))
        .and_then(|fenced| fenced.split_once('\n'))
        .map(|(_language, code)| code.replace("http://127.0.0.1:8080/mcp", url))
        .unwrap_or_else(|| panic!("the README's {name} snippet"))
}

#[test]
fn the_readme_sdk_snippets_run_against_the_demo() {
    let gateway = Gateway::start_with(json!({}), &["--demo"]);
    gateway.wait_ready();
    let readme = readme();
    let dir = tempfile::tempdir().expect("tempdir");

    let python = dir.path().join("agent.py");
    std::fs::write(&python, snippet(&readme, "python", &gateway.url)).expect("write");
    let stdout = run(Command::new(&tools().python).arg(&python));
    assert!(
        stdout.contains("'demo__add'") && stdout.contains("{'sum': 3.0}"),
        "{stdout}"
    );

    // Node resolves the SDK from a node_modules beside the script.
    std::os::unix::fs::symlink(
        tools().repo.join("tests/node/node_modules"),
        dir.path().join("node_modules"),
    )
    .expect("link node_modules");
    let script = dir.path().join("agent.mjs");
    std::fs::write(&script, snippet(&readme, "javascript", &gateway.url)).expect("write");
    let stdout = run(Command::new("node").arg(&script));
    assert!(
        stdout.contains("'demo__add'") && stdout.contains("{ sum: 3 }"),
        "{stdout}"
    );
}

/// Runs `command` to success and returns its stdout.
fn run(command: &mut Command) -> String {
    let output = command.output().expect("run the snippet");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}
