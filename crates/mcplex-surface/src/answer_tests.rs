//! The answer writer's tests: the envelope of a result written as the upstream wrote it, JSON
//! or a stream by what happens first, and the framing of both eras.
#![allow(deprecated)] // logging: the simplest message a handler sends meanwhile
use super::*;
use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, ServerNotification, ServerResult,
};

fn reply(id: i64) -> Reply {
    Reply::Message(Box::new(ServerJsonRpcMessage::response(
        ServerResult::empty(()),
        RequestId::Number(id),
    )))
}

fn log() -> Bytes {
    let log = ServerJsonRpcMessage::notification(ServerNotification::LoggingMessageNotification(
        rmcp::model::Notification::new(LoggingMessageNotificationParam::new(
            LoggingLevel::Info,
            serde_json::json!("x"),
        )),
    ));
    crate::sse::json(&log).expect("json")
}

fn pending(
    reply: impl Future<Output = Reply> + Send + 'static,
    framing: Framing<'static>,
) -> (Pending<'static>, mpsc::Sender<Bytes>) {
    let (sender, events) = mpsc::channel(64);
    let ended = CancellationToken::new();
    let pending = Pending {
        reply: Box::pin(reply),
        events,
        stop: ended.child_token(),
        ended,
        framing,
        guard: Box::new(()),
    };
    (pending, sender)
}

/// Stream `stream` of a session that lasts as long as the test.
fn in_session(stream: u64) -> Framing<'static> {
    let session = crate::session::tests::session(crate::kept_events::KeptBudget::new(usize::MAX));
    Framing::Session {
        session: Box::leak(Box::new(session)),
        stream,
    }
}

async fn body_text(response: Response) -> String {
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    String::from_utf8(bytes.to_vec()).expect("utf-8")
}

#[test]
fn a_result_as_written_goes_out_verbatim_in_the_envelope() {
    let result = r#"{"content":[{"text":"a","type":"text"}], "extra" : 1.50}"#;
    let written = |id| Reply::AsWritten {
        id,
        result: RawValue::from_string(result.to_owned()).expect("json"),
    };
    let json = |reply: Reply| String::from_utf8(reply.to_json().expect("json")).expect("utf-8");
    assert_eq!(
        json(written(RequestId::Number(4))),
        format!(r#"{{"jsonrpc":"2.0","id":4,"result":{result}}}"#)
    );
    assert_eq!(
        json(written(RequestId::String("a\"b".into()))),
        format!(r#"{{"jsonrpc":"2.0","id":"a\"b","result":{result}}}"#)
    );
    // The typed envelope starts the same way.
    assert!(json(reply(4)).starts_with(r#"{"jsonrpc":"2.0","id":4,"result":"#));
}

#[tokio::test]
async fn a_quick_answer_alone_is_json() {
    let (pending, _events) = pending(async { reply(1) }, in_session(3));
    let response = respond(pending).await;
    assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
    assert_eq!(
        body_text(response).await,
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
    );
}

#[tokio::test]
async fn an_answer_after_a_message_is_a_numbered_stream_in_a_session() {
    let (go, wait) = tokio::sync::oneshot::channel::<()>();
    let (pending, events) = pending(
        async move {
            let _ = wait.await;
            reply(1)
        },
        in_session(3),
    );
    events.try_send(log()).expect("open");
    let response = respond(pending).await;
    assert_eq!(
        response.headers()[header::CONTENT_TYPE],
        "text/event-stream"
    );
    let _ = go.send(());
    let text = body_text(response).await;
    assert!(
        text.starts_with("data: \nid: 0/3\nretry: 3000\n\n"),
        "{text}"
    );
    assert!(text.contains("notifications/message\""), "{text}");
    assert!(text.contains("\nid: 1/3\n\n"), "{text}");
    assert!(
        text.ends_with("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\nid: 2/3\n\n"),
        "{text}"
    );
}

#[tokio::test]
async fn a_stateless_stream_has_no_priming_and_no_ids() {
    let (pending, events) = pending(
        async { reply(1) },
        Framing::Stateless {
            meta_malformed: false,
        },
    );
    events.try_send(log()).expect("open");
    let text = body_text(respond(pending).await).await;
    assert!(text.starts_with("data: {"), "{text}");
    assert!(!text.contains("\nid: "), "{text}");
}

#[tokio::test]
async fn a_stateless_error_carries_its_status() {
    let error = Reply::Message(Box::new(ServerJsonRpcMessage::error(
        rmcp::ErrorData::new(ErrorCode::METHOD_NOT_FOUND, "no", None),
        Some(RequestId::Number(2)),
    )));
    let (pending, _events) = pending(
        async move { error },
        Framing::Stateless {
            meta_malformed: false,
        },
    );
    assert_eq!(respond(pending).await.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_cancelled_request_ends_its_stream_without_the_answer() {
    let (pending, _events) = pending(
        async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            reply(1)
        },
        in_session(0),
    );
    let cancel = pending.stop.clone();
    let response = respond(pending).await;
    cancel.cancel();
    let text = body_text(response).await;
    assert_eq!(text, "data: \nid: 0/0\nretry: 3000\n\n");
}

#[tokio::test]
async fn a_reader_behind_a_burst_of_a_session_stream_gets_all_of_it() {
    let (go, wait) = tokio::sync::oneshot::channel::<()>();
    let (pending, events) = pending(
        async move {
            let _ = wait.await;
            reply(1)
        },
        in_session(5),
    );
    let response = respond(pending).await;
    // Past the stream's queue before its client reads a byte.
    let burst = STREAM_QUEUE * 2;
    for _ in 0..burst {
        events.send(log()).await.expect("open");
    }
    let _ = go.send(());
    let text = body_text(response).await;
    assert_eq!(
        text.matches("notifications/message").count(),
        burst,
        "{text}"
    );
    assert!(
        text.ends_with(&format!(
            "data: {{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{}}}}\nid: {}/5\n\n",
            burst + 1
        )),
        "{text}"
    );
}

#[tokio::test]
async fn a_cancel_ends_a_stream_whose_writer_waits_on_a_reader_that_reads_nothing() {
    let (pending, events) = pending(std::future::pending(), in_session(6));
    let cancel = pending.stop.clone();
    let response = respond(pending).await;
    // One more than the connection's queue holds: the writer waits for its client.
    for _ in 0..=STREAM_QUEUE {
        events.send(log()).await.expect("open");
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    cancel.cancel();
    // The writer lets go of the handler's messages once it stops; nothing reads the body.
    tokio::time::timeout(STALLED_CONNECTION / 2, events.closed())
        .await
        .expect("the writer stopped with the cancel, not after the wait");
    let text = body_text(response).await;
    assert!(!text.contains("\"result\""), "{text}");
}
