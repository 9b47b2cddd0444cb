//! An HTTP upstream that redirects to another origin gets nothing followed there: neither its
//! configured headers nor the `initialize` body reach the other origin, and its status says why
//! the gateway stopped (the third adversarial review's sixth defect).

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Gateway, eventually, free_port, listening, tools};

/// A Python HTTP server on `port`: with `redirect_to`, it answers every request 307 to that
/// URL; without, it records each request's headers and body as a JSON line in `log`.
fn python_server(
    port: u16,
    redirect_to: Option<&str>,
    log: &std::path::Path,
) -> std::process::Command {
    let script = r#"
import http.server, json, sys
port, target, log = int(sys.argv[1]), sys.argv[2], sys.argv[3]
class Handler(http.server.BaseHTTPRequestHandler):
    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        if target:
            self.send_response(307)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with open(log, "a") as f:
            f.write(json.dumps({"headers": dict(self.headers), "body": body}) + "\n")
        self.send_response(500)
        self.send_header("Content-Length", "0")
        self.end_headers()
    do_GET = do_POST = do_DELETE = answer
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"#;
    let mut command = std::process::Command::new(&tools().python);
    command
        .args(["-c", script, &port.to_string(), redirect_to.unwrap_or("")])
        .arg(log)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    command
}

#[test]
fn a_redirect_to_another_origin_is_not_followed_and_takes_no_header_there() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let log = scratch.path().join("elsewhere.jsonl");
    let (elsewhere, redirecting) = (free_port(), free_port());
    let _elsewhere = listening(
        python_server(elsewhere, None, &log),
        elsewhere,
        "the other origin",
    );
    let target = format!("http://127.0.0.1:{elsewhere}/mcp");
    let _redirecting = listening(
        python_server(redirecting, Some(&target), &log),
        redirecting,
        "the redirecting upstream",
    );
    for protocol in ["http", "sse"] {
        let gateway = Gateway::start(json!({"mcpServers": {"r": {
            "url": format!("http://127.0.0.1:{redirecting}/mcp"),
            "protocol": protocol,
            "headers": {"X-Api-Key": "sk-redirect-secret-7"},
        }}}));
        let status = eventually("the upstream's refusal", Duration::from_secs(20), || {
            let (_, body) = gateway.get("/readyz");
            let body: Value = serde_json::from_str(&body).ok()?;
            let status = body["servers"]["r"]["status"].as_str()?.to_owned();
            status.starts_with("unhealthy").then_some(status)
        });
        assert!(
            status.contains(&format!("redirected to http://127.0.0.1:{elsewhere}"))
                && status.contains("does not follow"),
            "{protocol}: {status}"
        );
        assert!(!status.contains("sk-redirect-secret-7"), "{status}");
    }
    let reached = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        reached.is_empty(),
        "the other origin was reached: {reached}"
    );
}
