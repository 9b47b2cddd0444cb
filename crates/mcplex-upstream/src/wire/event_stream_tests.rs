//! The event-stream reader against raw HTTP servers: what each kind of stream's end means, and
//! that an answer stream's reading stops at its answer or when its request is given up.

use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;

use super::*;
use crate::wire::answer_streams::AnswerStreams;
use crate::wire::bounded_events::events;

/// A stream carrying `carries` into a fresh channel, and what it sent there.
fn stream(carries: Carries, closed: &CancellationToken) -> (EventStream, mpsc::Receiver<Incoming>) {
    let (incoming, received) = mpsc::channel(16);
    let stream = EventStream {
        server: Arc::from("s"),
        redactor: Arc::new(Redactor::default()),
        incoming,
        closed: closed.clone(),
        carries,
    };
    (stream, received)
}

fn drained(received: &mut mpsc::Receiver<Incoming>) -> Vec<Incoming> {
    let mut all = Vec::new();
    while let Ok(message) = received.try_recv() {
        all.push(message);
    }
    all
}

/// What `body` (events each at most 100 bytes), read as `carries`, brought, and whether it
/// closed the wire.
async fn read(body: String, carries: Carries) -> (Vec<Incoming>, bool) {
    let response = crate::wire::tests::answered(body).await;
    let closed = CancellationToken::new();
    let (stream, mut received) = stream(carries, &closed);
    stream.read(events(response, 100)).await;
    (drained(&mut received), closed.is_cancelled())
}

/// An answer stream of request 7, as a wire with `streams` starts it.
fn answer(streams: &AnswerStreams, closed: &CancellationToken) -> Carries {
    let id = json!(7);
    let reading = streams.start(&id, closed);
    Carries::Answer { id, reading }
}

/// A response whose body is `body`, after which the server holds the connection open; the
/// receiver hears when the client lets it go.
async fn held_open(body: String) -> (reqwest::Response, oneshot::Receiver<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    let (let_go, heard) = oneshot::channel();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.expect("accept");
        let mut request = [0u8; 1024];
        let _ = socket.read(&mut request).await;
        let head =
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
        let _ = socket.write_all(head.as_bytes()).await;
        let _ = socket.write_all(body.as_bytes()).await;
        // Nothing more is sent: the read ends only when the client closes the connection.
        while socket.read(&mut request).await.is_ok_and(|n| n > 0) {}
        let _ = let_go.send(());
    });
    let _ = rustls::crypto::ring::default_provider().install_default();
    let response = reqwest::get(format!("http://{address}/"))
        .await
        .expect("an answer");
    (response, heard)
}

const PROGRESS: &str = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#;

fn long() -> String {
    format!("data: {}\n\n", "x".repeat(200))
}

/// The reason request 7 failed with, when that is the last thing `messages` holds.
fn failure(messages: &[Incoming]) -> &str {
    match messages.last() {
        Some(Incoming::Failed { id, reason }) if *id == json!(7) => reason,
        other => panic!("no failure of request 7: {other:?}"),
    }
}

#[tokio::test]
async fn a_refused_answer_stream_fails_its_request_at_once() {
    let streams = AnswerStreams::default();
    let closed = CancellationToken::new();
    let body = format!("data: {PROGRESS}\n\n{}", long());
    let (messages, closed) = read(body, answer(&streams, &closed)).await;
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(
        matches!(&messages[0], Incoming::Related { message, request } if message["method"] == "notifications/progress" && *request == json!(7))
    );
    let reason = failure(&messages);
    assert!(reason.contains("longer than a message may be"), "{reason}");
    assert!(!closed, "the wire's other requests go on");
    assert_eq!(streams.len(), 0, "the reading is forgotten once it ends");
}

#[tokio::test]
async fn an_answer_stream_that_ends_without_the_answer_fails_its_request() {
    let streams = AnswerStreams::default();
    let closed = CancellationToken::new();
    let body = format!("data: {PROGRESS}\n\n");
    let (messages, closed) = read(body, answer(&streams, &closed)).await;
    assert_eq!(messages.len(), 2, "{messages:?}");
    let reason = failure(&messages);
    assert!(reason.contains("ended without it"), "{reason}");
    assert!(!closed);
}

#[tokio::test]
async fn an_answer_streams_reading_stops_at_its_answer() {
    let streams = AnswerStreams::default();
    let closed = CancellationToken::new();
    let answer_7 = r#"{"jsonrpc":"2.0","id":7,"result":{}}"#;
    let (response, let_go) = held_open(format!("data: {answer_7}\n\ndata: {PROGRESS}\n\n")).await;
    let (stream, mut received) = stream(answer(&streams, &closed), &closed);
    let reading = stream.read(events(response, 100));
    tokio::time::timeout(Duration::from_secs(10), reading)
        .await
        .expect("the reading ends at the answer though the server holds the stream open");
    let messages = drained(&mut received);
    assert!(
        matches!(messages.as_slice(), [Incoming::Message(m)] if m["id"] == 7),
        "only the answer, no failure after it: {messages:?}"
    );
    tokio::time::timeout(Duration::from_secs(10), let_go)
        .await
        .expect("the connection is let go")
        .expect("heard");
}

#[tokio::test]
async fn a_given_up_request_lets_its_answer_stream_go() {
    let streams = AnswerStreams::default();
    let closed = CancellationToken::new();
    let (response, let_go) = held_open(format!("data: {PROGRESS}\n\n")).await;
    let (stream, mut received) = stream(answer(&streams, &closed), &closed);
    let reading = tokio::spawn(stream.read(events(response, 100)));
    // The progress arrives; the server then says nothing more and never closes.
    let first = tokio::time::timeout(Duration::from_secs(10), received.recv()).await;
    assert!(
        matches!(first, Ok(Some(Incoming::Related { ref request, .. })) if *request == json!(7)),
        "{first:?}"
    );
    assert_eq!(streams.len(), 1);
    streams.give_up(&json!(7));
    tokio::time::timeout(Duration::from_secs(10), let_go)
        .await
        .expect("giving up lets the connection go")
        .expect("heard");
    tokio::time::timeout(Duration::from_secs(10), reading)
        .await
        .expect("the reading ends")
        .expect("no panic");
    assert!(
        drained(&mut received).is_empty(),
        "a request given up is not failed again"
    );
    assert_eq!(streams.len(), 0);
    assert!(!closed.is_cancelled(), "the wire goes on");
}

#[tokio::test]
async fn a_get_stream_closes_the_wire_only_when_refused() {
    let (messages, closed) = read(long(), Carries::Notifications).await;
    assert!(messages.is_empty(), "{messages:?}");
    assert!(closed, "the connection is lost and reconnected");
    let body = format!("data: {PROGRESS}\n\n");
    let (messages, closed) = read(body, Carries::Notifications).await;
    assert_eq!(
        messages.len(),
        1,
        "a GET stream answers no request: {messages:?}"
    );
    assert!(!closed, "a GET stream's plain end leaves the wire open");
}

#[tokio::test]
async fn a_legacy_stream_passes_message_events_and_its_end_closes_the_wire() {
    let body = format!(
        "event: endpoint\ndata: {PROGRESS}\n\nevent: message\ndata: {PROGRESS}\n\ndata: {PROGRESS}\n\n"
    );
    let (messages, closed) = read(body, Carries::Session).await;
    assert_eq!(
        messages.len(),
        2,
        "the endpoint event is no message: {messages:?}"
    );
    assert!(closed, "the legacy stream's end is the wire's");
}
