//! A streamable HTTP wire under a connection, against a raw HTTP server whose answer streams
//! never carry the answer: the request fails as a transport error, or, when the caller gives it
//! up first, its stream is let go.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::{Bearer, open};
use crate::UpstreamError;
use crate::rpc::{CallOptions, RpcConnection};

const PROGRESS: &str = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#;

/// What the server tells the test.
#[derive(Debug, PartialEq)]
enum Heard {
    /// A message POSTed to it other than the call (answered 202).
    Posted(Value),
    /// The client let go of the call's answer stream.
    LetGo,
}

/// A server whose answer to `tools/call` is an event stream carrying one progress notification,
/// then closed (`hold` false) or held open until the client lets go of it.
async fn server(hold: bool) -> (String, mpsc::UnboundedReceiver<Heard>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
    let (heard, hearing) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(answer(socket, hold, heard.clone()));
        }
    });
    let _ = rustls::crypto::ring::default_provider().install_default();
    (url, hearing)
}

async fn answer(mut socket: TcpStream, hold: bool, heard: mpsc::UnboundedSender<Heard>) {
    let Some(body) = request_body(&mut socket).await else {
        return;
    };
    let message: Value = serde_json::from_slice(&body).expect("JSON");
    if message["method"] != "tools/call" {
        let _ = heard.send(Heard::Posted(message));
        let _ = socket
            .write_all(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
            .await;
        return;
    }
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
    let _ = socket.write_all(head.as_bytes()).await;
    let _ = socket
        .write_all(format!("data: {PROGRESS}\n\n").as_bytes())
        .await;
    if hold {
        let mut rest = [0u8; 256];
        while socket.read(&mut rest).await.is_ok_and(|n| n > 0) {}
        let _ = heard.send(Heard::LetGo);
    }
}

/// The body of the request on `socket` (its head read up to the blank line, then as many bytes
/// as its `content-length` says).
async fn request_body(socket: &mut TcpStream) -> Option<Vec<u8>> {
    let mut read = Vec::new();
    let mut buffer = [0u8; 4096];
    let head_end = loop {
        let n = socket.read(&mut buffer).await.ok().filter(|&n| n > 0)?;
        read.extend_from_slice(&buffer[..n]);
        if let Some(at) = read.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&read[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|n| n.trim().parse().ok())?;
    while read.len() < head_end + length {
        let n = socket.read(&mut buffer).await.ok().filter(|&n| n > 0)?;
        read.extend_from_slice(&buffer[..n]);
    }
    Some(read[head_end..head_end + length].to_vec())
}

fn connection(url: &str) -> std::sync::Arc<RpcConnection> {
    let wire = open(
        "s".into(),
        std::sync::Arc::default(),
        url,
        &std::collections::BTreeMap::new(),
        Bearer::None,
        std::sync::Arc::new(AtomicBool::new(false)),
    )
    .expect("a wire");
    let (notifications, _) = crate::rpc::notifications::channel("test");
    RpcConnection::start("s".into(), std::sync::Arc::default(), wire, notifications)
}

#[tokio::test]
async fn an_answer_stream_that_ends_without_the_answer_fails_the_call_as_a_transport_error() {
    let (url, _) = server(false).await;
    let connection = connection(&url);
    let call = connection.request("tools/call", Some(json!({})), CallOptions::default());
    let outcome = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("the call fails at once, not at a timeout");
    match outcome {
        Err(UpstreamError::Transport { reason, .. }) => {
            assert!(reason.contains("ended without it"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_call_given_up_lets_its_answer_stream_go() {
    let (url, mut heard) = server(true).await;
    let options = CallOptions {
        timeout: Some(Duration::from_millis(300)),
        ..CallOptions::default()
    };
    let outcome = connection(&url)
        .request("tools/call", Some(json!({})), options)
        .await;
    assert!(
        matches!(outcome, Err(UpstreamError::Timeout { .. })),
        "{outcome:?}"
    );
    // The stream is let go as the cancellation is sent, so either may be heard first.
    let cancelled = |h: &Heard| {
        matches!(h, Heard::Posted(m) if m["method"] == "notifications/cancelled"
            && m["params"]["requestId"] == 1)
    };
    let mut all = Vec::new();
    while !(all.contains(&Heard::LetGo) && all.iter().any(cancelled)) {
        match tokio::time::timeout(Duration::from_secs(10), heard.recv()).await {
            Ok(Some(next)) => all.push(next),
            other => panic!("not let go and told: {other:?}, heard {all:?}"),
        }
    }
}

#[test]
fn what_an_event_stream_shows_hides_the_token_its_request_sent() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (incoming, _) = mpsc::channel(1);
    let sender = super::HttpSender {
        server: "s".into(),
        redactor: std::sync::Arc::new(mcplex_config::Redactor::of(["CONFIGURED-1".to_owned()])),
        client: super::client().expect("a client"),
        url: "http://127.0.0.1:9/mcp".to_owned(),
        shown_url: "http://127.0.0.1:9/mcp".to_owned(),
        headers: reqwest::header::HeaderMap::new(),
        session: std::sync::Mutex::new(None),
        protocol_version: std::sync::Mutex::new(None),
        incoming,
        closed: tokio_util::sync::CancellationToken::new(),
        listening: std::sync::Mutex::new(false),
        answer_streams: crate::wire::answer_streams::AnswerStreams::default(),
        bearer: Bearer::None,
        challenged: std::sync::Arc::new(AtomicBool::new(false)),
    };
    let token = mcplex_oauth::Secret::new("TOKEN-OF-THE-REQUEST");
    let echoed = "not JSON: TOKEN-OF-THE-REQUEST and CONFIGURED-1";
    let stream = sender.event_stream(super::Carries::Notifications, Some(&token));
    assert_eq!(
        stream.redactor.redact_start(echoed, 200),
        "not JSON: [redacted] and [redacted]"
    );
    let stream = sender.event_stream(super::Carries::Notifications, None);
    assert_eq!(
        stream.redactor.redact_start(echoed, 200),
        "not JSON: TOKEN-OF-THE-REQUEST and [redacted]"
    );
}
