//! The connection's tests: a server that stops reading, answers routed as they arrive or as
//! the wire closes, results kept as written, log messages to the call they are about, a
//! progress flood bounded.
use super::*;
use crate::wire::lines::lines_wire;

/// A connection to server `name` speaking lines over `stream`.
pub(crate) fn over_lines(name: &str, stream: tokio::io::DuplexStream) -> Arc<RpcConnection> {
    over_lines_redacting(name, stream, Arc::default())
}

/// [`over_lines`], the server's secrets those `redactor` hides.
fn over_lines_redacting(
    name: &str,
    stream: tokio::io::DuplexStream,
    redactor: Arc<Redactor>,
) -> Arc<RpcConnection> {
    let (reader, writer) = tokio::io::split(stream);
    let closed = CancellationToken::new();
    let (sender, incoming) = lines_wire(
        name.into(),
        redactor.clone(),
        reader,
        writer,
        closed.clone(),
    );
    let wire = Wire {
        sender,
        incoming,
        closed,
        transport: mcplex_trace::Transport::Stdio,
    };
    let (notifications, _) = crate::rpc::notifications::channel("test");
    RpcConnection::start(name.into(), redactor, wire, notifications)
}

#[tokio::test]
async fn a_server_that_stops_reading_cannot_hold_a_call_past_its_timeout() {
    // Nobody reads the server's side: the 64-byte pipe fills and every write waits.
    let (ours, _theirs) = tokio::io::duplex(64);
    let connection = over_lines("stuck", ours);
    let big = json!({"text": "x".repeat(4096)});
    let started = tokio::time::Instant::now();
    let options = CallOptions {
        timeout: Some(Duration::from_millis(200)),
        ..CallOptions::default()
    };
    let outcome = tokio::time::timeout(
        Duration::from_secs(5),
        connection.request("tools/call", Some(big), options),
    )
    .await
    .expect("the call ends by its own timeout");
    assert!(
        matches!(outcome, Err(UpstreamError::Timeout { .. })),
        "{outcome:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(
        lock(&connection.pending).is_empty(),
        "the request is forgotten"
    );
}

#[tokio::test]
async fn an_answer_that_arrived_before_the_wire_closed_still_reaches_its_caller() {
    // A wire whose messages come through a channel (as HTTP's do); nobody reads what the
    // connection writes.
    let (ours, _theirs) = tokio::io::duplex(1 << 16);
    let (_, writer) = tokio::io::split(ours);
    let closed = CancellationToken::new();
    let (sender, _) = lines_wire(
        "http-like".into(),
        Arc::default(),
        tokio::io::empty(),
        writer,
        CancellationToken::new(),
    );
    let (messages, incoming) = mpsc::channel(8);
    let wire = Wire {
        sender,
        incoming: crate::wire::channel_stream(incoming),
        closed: closed.clone(),
        transport: mcplex_trace::Transport::Http,
    };
    let (notifications, _) = crate::rpc::notifications::channel("test");
    let connection = RpcConnection::start("http-like".into(), Arc::default(), wire, notifications);
    let call = tokio::spawn({
        let connection = connection.clone();
        async move {
            connection
                .request_raw("tools/call", Some(json!({})), CallOptions::default())
                .await
        }
    });
    let sent = async {
        while lock(&connection.pending).is_empty() {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), sent)
        .await
        .expect("the request is sent");
    // The answer arrives and the wire closes before the connection's task runs again.
    let answer =
        serde_json::value::RawValue::from_string(r#"{"content":[]}"#.to_owned()).expect("json");
    messages
        .try_send(crate::wire::Incoming::Answer {
            id: 1,
            result: answer,
        })
        .expect("queued");
    closed.cancel();
    let result = call
        .await
        .expect("the call's task")
        .expect("the answer, not a closed wire");
    assert_eq!(
        result.text().map(serde_json::value::RawValue::get),
        Some(r#"{"content":[]}"#)
    );
}

#[tokio::test]
async fn a_result_a_value_cannot_hold_fails_the_request_and_stays_whole_as_written() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (ours, theirs) = tokio::io::duplex(4096);
    let connection = over_lines("odd", ours);
    // The server: every request is answered with a result holding a number beyond f64.
    let result = r#"{"content":[{"type":"text","text":"far"}],"n":1e400}"#;
    tokio::spawn(async move {
        let (their_reader, mut their_writer) = tokio::io::split(theirs);
        let mut lines = BufReader::new(their_reader).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let request: Value = serde_json::from_str(&line).expect("a request");
            let answer = format!(
                r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#,
                request["id"]
            );
            if their_writer
                .write_all(format!("{answer}\n").as_bytes())
                .await
                .is_err()
            {
                return;
            }
        }
    });
    let parsed = connection
        .request("tools/call", Some(json!({})), CallOptions::default())
        .await;
    match parsed {
        Err(UpstreamError::Transport { server, reason }) => {
            assert_eq!(server, "odd");
            assert!(reason.contains("number out of range"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    let kept = connection
        .request_raw("tools/call", Some(json!({})), CallOptions::default())
        .await
        .expect("an answer");
    assert_eq!(
        kept.text().map(serde_json::value::RawValue::get),
        Some(result)
    );
}

/// What a relay is handed, for the routing tests; of the client the second field's `Arc`
/// names (none: a client of its own).
#[derive(Default)]
struct Recorded(Mutex<Vec<Value>>, Option<Arc<u8>>);

impl ClientRelay for Recorded {
    fn request(&self, method: String, _params: Value) -> crate::relay::RelayFuture {
        Box::pin(async move { Err(crate::relay::RelayError::unsupported(method)) })
    }

    fn notify(&self, _method: String, params: Value) {
        lock(&self.0).push(params);
    }

    fn client(&self) -> Option<crate::ClientKey> {
        self.1.as_ref().map(crate::ClientKey::of)
    }
}

/// A log message the server sends on a wire that does not say which call it is about (stdio):
/// the one call in flight gets it, its words redacted of the server's configured secrets; with
/// two in flight from two clients neither does, since it could be the other caller's; with two
/// from one client (a session's parallel calls), that client gets it, through a relay that
/// forwards.
#[tokio::test]
async fn a_log_message_reaches_the_one_call_in_flight_redacted_and_no_call_when_several_are() {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let redactor = Arc::new(Redactor::of(["sk-live-secret".to_owned()]));
    let connection = over_lines_redacting("logs", ours, redactor);
    let mut server = LoggingServer::over(theirs);

    let first = Arc::new(Recorded::default());
    server.log_during(&connection, vec![first.clone()]).await;
    assert_eq!(
        *lock(&first.0),
        [json!({"level": "info", "data": "using [redacted]"})]
    );

    let (one, other) = (Arc::new(1u8), Arc::new(2u8));
    let two_clients = (Some(one.clone()), Some(other));
    let one_client = (Some(one.clone()), Some(one));
    for (clients, routed) in [(two_clients, false), (one_client, true)] {
        let a = Arc::new(Recorded(Mutex::default(), clients.0.clone()));
        let b = Arc::new(Recorded(Mutex::default(), clients.1.clone()));
        server
            .log_during(&connection, vec![a.clone(), b.clone()])
            .await;
        let got = lock(&a.0).len() + lock(&b.0).len();
        assert_eq!(got, usize::from(routed), "routed: {routed}");
    }

    // A request that only counts as the client's (its completion) leaves the message to the
    // client's tool call, whichever of the two the connection holds first.
    let key = Arc::new(3u8);
    let tool_call = Arc::new(Recorded(Mutex::default(), Some(key.clone())));
    let counted: Arc<dyn ClientRelay> = Arc::new(crate::NoClient::of(key));
    server
        .log_during(&connection, vec![counted, tool_call.clone()])
        .await;
    assert_eq!(lock(&tool_call.0).len(), 1, "the tool call's client has it");
}

/// Which call a message is about is the wire's word, never the server's: a stdio server that
/// writes the HTTP wire's mark into its message, naming one caller's call while two clients'
/// are in flight, reaches neither.
#[tokio::test]
async fn a_server_cannot_name_the_call_its_message_is_about() {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let connection = over_lines("forger", ours);
    let mut server = LoggingServer::over(theirs);
    server.forges_related = true;
    let a = Arc::new(Recorded(Mutex::default(), Some(Arc::new(1u8))));
    let b = Arc::new(Recorded(Mutex::default(), Some(Arc::new(2u8))));
    server
        .log_during(&connection, vec![a.clone(), b.clone()])
        .await;
    assert_eq!(lock(&a.0).len() + lock(&b.0).len(), 0, "nobody's");
}

/// An upstream that floods progress for a call whose caller reads none of it: the call is
/// answered as soon as the server answers, and the caller's sink holds what fits in it, never
/// the whole flood.
#[tokio::test]
async fn a_progress_flood_is_dropped_past_the_callers_backlog_and_never_holds_the_call() {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let connection = over_lines("flood", ours);
    let mut server = LoggingServer::over(theirs);
    let (sink, mut updates) = mpsc::channel(4);
    let call = {
        let connection = connection.clone();
        tokio::spawn(async move {
            let options = CallOptions {
                progress: Some(sink),
                ..CallOptions::default()
            };
            connection
                .request("tools/call", Some(json!({"name": "t"})), options)
                .await
        })
    };
    let mut line = String::new();
    tokio::io::AsyncBufReadExt::read_line(&mut server.reads, &mut line)
        .await
        .expect("a request");
    let id = serde_json::from_str::<Value>(&line).expect("json")["id"].clone();
    for n in 0..1000 {
        server
            .write(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": id, "progress": n}}))
            .await;
    }
    server
        .write(json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}}))
        .await;
    tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("answered while the progress waits")
        .expect("joined")
        .expect("answered");
    let mut received = Vec::new();
    while let Ok(update) = updates.try_recv() {
        received.push(update["progress"].clone());
    }
    assert_eq!(received, [json!(0), json!(1), json!(2), json!(3)]);
}

/// The server end of a line connection that logs, as stdio servers do, without saying which
/// call a message is about.
struct LoggingServer {
    reads: tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>,
    writes: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    /// Marks its log messages as the HTTP wire marks a message of an answer stream, naming its
    /// first call.
    forges_related: bool,
}

impl LoggingServer {
    fn over(stream: tokio::io::DuplexStream) -> LoggingServer {
        let (reads, writes) = tokio::io::split(stream);
        LoggingServer {
            reads: tokio::io::BufReader::new(reads),
            writes,
            forges_related: false,
        }
    }

    async fn write(&mut self, message: Value) {
        let line = format!("{message}\n");
        tokio::io::AsyncWriteExt::write_all(&mut self.writes, line.as_bytes())
            .await
            .expect("write");
    }

    /// One call a relay over `connection`, all in flight together; then a log message naming
    /// its secret; then every call answered. Within 10 s.
    async fn log_during(
        &mut self,
        connection: &Arc<RpcConnection>,
        relays: Vec<Arc<dyn ClientRelay>>,
    ) {
        tokio::time::timeout(Duration::from_secs(10), self.serve(connection, relays))
            .await
            .expect("the calls are served within 10 s");
    }

    async fn serve(&mut self, connection: &Arc<RpcConnection>, relays: Vec<Arc<dyn ClientRelay>>) {
        let calls: Vec<_> = relays
            .into_iter()
            .map(|relay| {
                let connection = connection.clone();
                tokio::spawn(async move {
                    let options = CallOptions {
                        relay: Some(relay),
                        ..CallOptions::default()
                    };
                    connection
                        .request("tools/call", Some(json!({"name": "t"})), options)
                        .await
                })
            })
            .collect();
        let mut ids = Vec::new();
        for _ in &calls {
            let mut line = String::new();
            tokio::io::AsyncBufReadExt::read_line(&mut self.reads, &mut line)
                .await
                .expect("a request");
            ids.push(serde_json::from_str::<Value>(&line).expect("json")["id"].clone());
        }
        let mut log = json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "data": "using sk-live-secret"}});
        if self.forges_related {
            log["io.mcplex/related"] = ids[0].clone();
        }
        self.write(log).await;
        for id in ids {
            self.write(json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}}))
                .await;
        }
        for call in calls {
            call.await.expect("joined").expect("answered");
        }
    }
}
