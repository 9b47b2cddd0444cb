//! Real servers keep working inside the default sandbox: npm `server-filesystem` (writes in the
//! directory it was granted, refused by the sandbox in one it may only read), `server-memory`
//! (its file), PyPI `mcp-server-time`, `mcp-server-fetch` (network on) and `mcp-server-git` on
//! a repository it was granted. Each is called through the management API as a gateway serves
//! it, and each row of `/api/v1/servers` says the server is fully isolated.

use std::path::Path;

use serde_json::{Value, json};

use crate::harness::{Gateway, free_port, listening, tools};

fn node_server(package: &str) -> String {
    tools()
        .repo
        .join(format!(
            "tests/node/node_modules/@modelcontextprotocol/{package}/dist/index.js"
        ))
        .display()
        .to_string()
}

fn venv_bin(name: &str) -> String {
    tools().python.with_file_name(name).display().to_string()
}

/// Calls `tool` (a display name) through `POST /api/v1/call`: the tool's result. A first call
/// may install what the server needs (mcp-server-fetch's npm modules): it may take a minute.
fn call(gateway: &Gateway, tool: &str, arguments: Value) -> Value {
    let bearer = format!("Bearer {}", gateway.api_key());
    let reply = crate::http::exchange_within(
        gateway.authority(),
        crate::http::Version::Http10,
        "POST",
        "/api/v1/call",
        &[("Authorization", &bearer)],
        &json!({"name": tool, "arguments": arguments}).to_string(),
        std::time::Duration::from_secs(120),
    );
    assert_eq!(reply.status, 200, "{tool}: {}", reply.body);
    serde_json::from_str(&reply.body).unwrap_or(Value::String(reply.body))
}

fn text(result: &Value) -> String {
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn start(servers: Value) -> Gateway {
    let gateway = Gateway::start(json!({"mcpServers": servers}));
    gateway.wait_ready();
    let (_, rows) = gateway.api("GET", "/api/v1/servers", "");
    for row in rows["servers"].as_array().expect("rows") {
        assert_eq!(row["isolation"]["level"], "full", "{rows:#}");
    }
    gateway
}

fn dir_in(parent: &Path, name: &str) -> String {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).expect("mkdir");
    dir.display().to_string()
}

#[test]
fn server_filesystem_writes_where_granted_and_is_refused_where_not() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let granted = dir_in(scratch.path(), "granted");
    let read_only = dir_in(scratch.path(), "read-only");
    std::fs::write(Path::new(&read_only).join("kept.md"), "kept").expect("write");
    let gateway = start(json!({"files": {
        "command": "node",
        "args": [node_server("server-filesystem"), granted, read_only],
        "sandbox": {"write": [granted]},
    }}));
    let written = format!("{granted}/note.md");
    let wrote = call(
        &gateway,
        "files__write_file",
        json!({"path": written, "content": "# inside the sandbox"}),
    );
    assert_ne!(wrote["isError"], true, "{wrote:#}");
    assert_eq!(
        std::fs::read_to_string(&written).expect("the file on disk"),
        "# inside the sandbox"
    );
    let read = call(&gateway, "files__read_text_file", json!({"path": written}));
    assert!(text(&read).contains("inside the sandbox"), "{read:#}");
    // The server allows this directory; the sandbox does not let it write there.
    let refused = call(
        &gateway,
        "files__write_file",
        json!({"path": format!("{read_only}/new.md"), "content": "x"}),
    );
    assert_eq!(refused["isError"], true, "{refused:#}");
    assert!(
        !Path::new(&read_only).join("new.md").exists(),
        "the write went through"
    );
    let kept = call(
        &gateway,
        "files__read_text_file",
        json!({"path": format!("{read_only}/kept.md")}),
    );
    assert_eq!(text(&kept), "kept", "{kept:#}");
}

#[test]
fn server_memory_keeps_its_file_where_it_may_write() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let granted = dir_in(scratch.path(), "memory");
    let file = format!("{granted}/memory.jsonl");
    let gateway = start(json!({"memory": {
        "command": "node",
        "args": [node_server("server-memory")],
        "env": {"MEMORY_FILE_PATH": file},
        "sandbox": {"write": [granted]},
    }}));
    let created = call(
        &gateway,
        "memory__create_entities",
        json!({"entities": [{"name": "mcplex", "entityType": "gateway", "observations": ["sandboxed"]}]}),
    );
    assert_ne!(created["isError"], true, "{created:#}");
    let graph = call(&gateway, "memory__read_graph", json!({}));
    assert!(text(&graph).contains("sandboxed"), "{graph:#}");
    assert!(
        std::fs::read_to_string(&file)
            .expect("the memory file")
            .contains("sandboxed")
    );
}

#[test]
fn mcp_server_time_answers_without_network() {
    let gateway = start(json!({"time": {
        "command": venv_bin("mcp-server-time"),
        "sandbox": {"network": false},
    }}));
    let now = call(
        &gateway,
        "time__get_current_time",
        json!({"timezone": "UTC"}),
    );
    assert_ne!(now["isError"], true, "{now:#}");
    assert!(text(&now).contains("UTC"), "{now:#}");
}

#[test]
fn mcp_server_fetch_reaches_the_network() {
    let site = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        site.path().join("page.html"),
        "<html><body><h1>Fetched through the sandbox</h1></body></html>",
    )
    .expect("page");
    let port = free_port();
    let mut server = std::process::Command::new(&tools().python);
    server
        .args([
            "-m",
            "http.server",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
        ])
        .current_dir(site.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let _site = listening(server, port, "python -m http.server");
    // Its HTML extraction installs readability's npm modules into its own package on first use:
    // that directory is granted, as a user grants what a server needs to write.
    let venv = tools()
        .python
        .parent()
        .and_then(Path::parent)
        .expect("the venv");
    let readability = std::fs::read_dir(venv.join("lib"))
        .expect("the venv's lib")
        .flatten()
        .map(|python| python.path().join("site-packages/readabilipy/javascript"))
        .find(|dir| dir.is_dir())
        .expect("readabilipy's javascript directory");
    let gateway = start(json!({"fetch": {
        "command": venv_bin("mcp-server-fetch"),
        "args": ["--ignore-robots-txt", "--allow-private-ips"],
        "sandbox": {"write": [readability]},
    }}));
    let page = call(
        &gateway,
        "fetch__fetch",
        json!({"url": format!("http://127.0.0.1:{port}/page.html")}),
    );
    assert_ne!(page["isError"], true, "{page:#}");
    assert!(
        text(&page).contains("Fetched through the sandbox"),
        "{page:#}"
    );
}

#[test]
fn mcp_server_git_reads_the_repository_it_was_granted() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let repo = dir_in(scratch.path(), "repo");
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(&repo)
            .output()
            .expect("git");
        assert!(status.status.success(), "git {args:?}: {status:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(Path::new(&repo).join("README.md"), "hello").expect("write");
    git(&["add", "README.md"]);
    git(&["commit", "-q", "-m", "first commit inside the sandbox test"]);
    let gateway = start(json!({"git": {
        "command": venv_bin("mcp-server-git"),
        "args": ["--repository", repo],
        "sandbox": {"write": [repo]},
    }}));
    let log = call(&gateway, "git__git_log", json!({"repo_path": repo}));
    assert_ne!(log["isError"], true, "{log:#}");
    assert!(
        text(&log).contains("first commit inside the sandbox test"),
        "{log:#}"
    );
    let status = call(&gateway, "git__git_status", json!({"repo_path": repo}));
    assert!(text(&status).contains("main"), "{status:#}");
}

/// The way most configs start a server, `npx -y <package>`, works inside the default sandbox:
/// npm writes its cache and logs under `~/.npm`, which the sandbox lets package runners write.
#[test]
fn a_server_started_with_npx_runs_inside_the_default_sandbox() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let granted = dir_in(scratch.path(), "memory");
    let file = format!("{granted}/memory.jsonl");
    let gateway = start(json!({"memory": {
        "command": "npx",
        "args": ["-y", "@modelcontextprotocol/server-memory"],
        "working_dir": tools().repo.join("tests/node").display().to_string(),
        "env": {"MEMORY_FILE_PATH": file},
        "sandbox": {"write": [granted]},
    }}));
    let graph = call(&gateway, "memory__read_graph", json!({}));
    assert_ne!(graph["isError"], true, "{graph:#}");
}
