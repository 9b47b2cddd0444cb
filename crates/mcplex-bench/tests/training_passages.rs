//! The training script (`scripts/train_search_model.py`) pairs requests with the text the
//! gateway embeds for each tool, written again in Python because the training runs there. This
//! test holds the two to the same text: every tool of the catalogs it trains on whose name,
//! server and description are ASCII (where Python's and Rust's ideas of a letter and a digit
//! agree), in both passage styles the script can write.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use mcplex_search::{Document, PassageStyle, passage_styled};
use serde_json::{Value, json};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The catalogs the script trains on, as its `catalogs()` reads them: rows of server, tool
/// and description.
fn training_rows() -> Vec<(String, String, String)> {
    let mut rows = Vec::new();
    for catalog in ["livemcp527.tools.json", "metatool199.tools.json"] {
        let path = repo().join("crates/mcplex-bench/data").join(catalog);
        let text = std::fs::read_to_string(&path).expect("a training catalog");
        let corpus: Value = serde_json::from_str(&text).expect("JSON");
        for row in corpus["tools"].as_array().expect("tools") {
            let field = |name: &str| row[name].as_str().unwrap_or_default().to_owned();
            rows.push((field("server"), field("tool"), field("description")));
        }
    }
    rows
}

/// The script's passages of `rows`, plain and with the server's name, from its own `passage`.
fn python_passages(rows: &[(String, String, String)]) -> Vec<(String, String)> {
    const PROGRAM: &str = "import json, sys
sys.path.insert(0, sys.argv[1])
from train_search_model import passage
rows = json.load(sys.stdin)
json.dump([[passage(tool, description), passage(tool, description, server)]
           for server, tool, description in rows], sys.stdout)";
    let mut child = Command::new("python3")
        .args(["-c", PROGRAM])
        .arg(repo().join("scripts"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs the training script's passage (the suite's machines have it)");
    let input = serde_json::to_vec(&json!(rows)).expect("rows as JSON");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&input)
        .expect("rows written");
    let output = child.wait_with_output().expect("python3 finished");
    assert!(output.status.success(), "python3: {output:?}");
    serde_json::from_slice(&output.stdout).expect("passages as JSON")
}

#[test]
fn the_training_script_embeds_each_tool_as_the_gateway_does() {
    let rows = training_rows();
    let python = python_passages(&rows);
    assert_eq!(python.len(), rows.len());
    let mut compared = 0;
    for ((server, tool, description), (plain, with_server)) in rows.iter().zip(&python) {
        if !(server.is_ascii() && tool.is_ascii() && description.is_ascii()) {
            continue;
        }
        compared += 1;
        let document = Document {
            id: format!("{server}:{tool}"),
            names: Vec::new(),
            tool: tool.clone(),
            server: server.clone(),
            description: description.clone(),
            params: Vec::new(),
        };
        assert_eq!(
            &passage_styled(&document, PassageStyle::Summary),
            plain,
            "{server}:{tool}"
        );
        assert_eq!(
            &passage_styled(&document, PassageStyle::ServerSummary),
            with_server,
            "{server}:{tool} with its server"
        );
    }
    // livemcp527's English tools and all of MetaTool's: the comparison is not of a handful.
    assert!(compared > 500, "only {compared} ASCII tools compared");
}
