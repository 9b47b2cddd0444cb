//! Newline-delimited JSON-RPC over any byte stream pair: a child's stdin/stdout, or an in-process
//! duplex to a built-in server.

use std::sync::Arc;

use mcplex_config::Redactor;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::bounded_lines::{BoundedLines, Line};
use super::{BoxFuture, Incoming, IncomingStream, MAX_MESSAGE_BYTES, SendError, WireSend};

/// The writing half: one message per line. Lines queued while another sender is writing go out
/// with the next write, so concurrent calls share a system call (and the server's read) instead
/// of taking turns for one each.
pub(crate) struct LinesSender {
    queue: std::sync::Mutex<Queue>,
    pipe: Mutex<Pipe>,
    closed: CancellationToken,
}

/// Lines not yet taken by a writer.
#[derive(Default)]
struct Queue {
    bytes: Vec<u8>,
    /// A write failed: the wire is closed and takes no more lines.
    failed: bool,
}

/// The byte stream and the batch being written to it. A writer dropped halfway (its caller went
/// away) leaves the rest of the batch here for the next one, so no line is ever cut.
struct Pipe {
    out: Box<dyn AsyncWrite + Send + Unpin>,
    batch: Vec<u8>,
    written: usize,
}

fn lock_queue(queue: &std::sync::Mutex<Queue>) -> std::sync::MutexGuard<'_, Queue> {
    queue
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl LinesSender {
    fn new(out: Box<dyn AsyncWrite + Send + Unpin>, closed: CancellationToken) -> LinesSender {
        LinesSender {
            queue: std::sync::Mutex::default(),
            pipe: Mutex::new(Pipe {
                out,
                batch: Vec::new(),
                written: 0,
            }),
            closed,
        }
    }

    pub(crate) async fn write(&self, message: &Value) -> Result<(), SendError> {
        let mut line = serde_json::to_vec(message)?;
        line.push(b'\n');
        {
            let mut queue = lock_queue(&self.queue);
            if queue.failed {
                return Err(SendError::Write(closed_pipe()));
            }
            queue.bytes.extend_from_slice(&line);
        }
        let mut pipe = self.pipe.lock().await;
        // Whoever holds the pipe writes everything queued so far, this line included unless an
        // earlier holder already took it.
        let result = async {
            loop {
                if pipe.written == pipe.batch.len() {
                    let mut queue = lock_queue(&self.queue);
                    if queue.failed {
                        return Err(closed_pipe());
                    }
                    if queue.bytes.is_empty() {
                        break;
                    }
                    let Pipe { batch, written, .. } = &mut *pipe;
                    batch.clear();
                    *written = 0;
                    std::mem::swap(batch, &mut queue.bytes);
                }
                let Pipe {
                    out,
                    batch,
                    written,
                } = &mut *pipe;
                match out.write(&batch[*written..]).await? {
                    0 => return Err(std::io::ErrorKind::WriteZero.into()),
                    n => *written += n,
                }
            }
            pipe.out.flush().await
        }
        .await;
        result.map_err(|e| {
            lock_queue(&self.queue).failed = true;
            self.closed.cancel();
            SendError::Write(e)
        })
    }
}

fn closed_pipe() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::BrokenPipe,
        "an earlier write to the server failed",
    )
}

impl WireSend for LinesSender {
    fn send(&self, message: Value) -> BoxFuture<'_, Result<(), SendError>> {
        Box::pin(async move { self.write(&message).await })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let mut pipe = self.pipe.lock().await;
            let _ = pipe.out.shutdown().await;
            self.closed.cancel();
        })
    }
}

/// A wire over `reader` and `writer`. What it brings is read line by line as the connection
/// polls it; lines that are not JSON are reported (with `redactor`'s secrets removed: a server
/// may print its env on stdout) and skipped. The stream ends with the server's output (said as a
/// failure unless `closed` was cancelled first); the connection then closes the wire.
pub(crate) fn lines_wire(
    server: Arc<str>,
    redactor: Arc<Redactor>,
    reader: impl AsyncRead + Send + Unpin + 'static,
    writer: impl AsyncWrite + Send + Unpin + 'static,
    closed: CancellationToken,
) -> (Arc<LinesSender>, IncomingStream) {
    let sender = Arc::new(LinesSender::new(Box::new(writer), closed.clone()));
    let reading = Reading {
        server,
        redactor,
        closed,
        lines: BoundedLines::new(reader, MAX_MESSAGE_BYTES),
        garbage: GarbageReport::default(),
    };
    let incoming = futures::stream::unfold(reading, |mut reading| async move {
        let message = reading.next().await?;
        Some((message, reading))
    });
    (sender, Box::pin(incoming))
}

/// The reading half of a lines wire.
struct Reading<R> {
    server: Arc<str>,
    redactor: Arc<Redactor>,
    /// Cancelled by a shutdown: the end of output it causes is not a failure.
    closed: CancellationToken,
    lines: BoundedLines<R>,
    garbage: GarbageReport,
}

impl<R: AsyncRead + Unpin> Reading<R> {
    /// The next message, `None` once the output ended or cannot be read.
    async fn next(&mut self) -> Option<Incoming> {
        loop {
            match self.lines.next_line().await {
                Ok(Some(Line::Whole(line))) => {
                    let trimmed = line.trim_ascii();
                    if trimmed.is_empty() {
                        continue;
                    }
                    let parsed = match std::str::from_utf8(trimmed) {
                        Ok(text) => parse_line(text).map_err(|e| e.to_string()),
                        Err(e) => Err(format!("not UTF-8: {e}")),
                    };
                    match parsed {
                        Ok(message) => return Some(message),
                        Err(e) => {
                            let redactor = &self.redactor;
                            let shown =
                                || redactor.redact_start(&String::from_utf8_lossy(trimmed), 200);
                            self.garbage.report(&self.server, &e, shown);
                        }
                    }
                }
                Ok(Some(Line::TooLong { bytes })) => {
                    tracing::warn!(
                        server = %self.server,
                        "ignored a line of {bytes} bytes of the server's output: longer than a message may be ({MAX_MESSAGE_BYTES} bytes)"
                    );
                }
                Ok(None) => {
                    if !self.closed.is_cancelled() {
                        tracing::warn!(server = %self.server, "server closed its output");
                    }
                    return None;
                }
                Err(e) => {
                    if !self.closed.is_cancelled() {
                        tracing::warn!(server = %self.server, "cannot read the server's output: {e}");
                    }
                    return None;
                }
            }
        }
    }
}

/// One line of output: an answer with a result keeps its result as the server wrote it (the
/// answer's other members are `jsonrpc` and an integer `id`, nothing else); anything else is
/// parsed whole.
fn parse_line(line: &str) -> Result<Incoming, serde_json::Error> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Answer {
        #[serde(rename = "jsonrpc")]
        _version: Option<serde::de::IgnoredAny>,
        id: i64,
        result: Box<serde_json::value::RawValue>,
    }
    match serde_json::from_str::<Answer>(line) {
        Ok(Answer { id, result, .. }) => Ok(Incoming::Answer { id, result }),
        Err(_) => serde_json::from_str::<Value>(line).map(Incoming::Message),
    }
}

/// Reports output that is not JSON-RPC without letting a chatty server flood the log: the first
/// line in full, then at most one summary per interval with how many more were ignored.
#[derive(Default)]
struct GarbageReport {
    last: Option<std::time::Instant>,
    suppressed: u64,
}

impl GarbageReport {
    const INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);

    /// Reports `line` (its start, redacted by the caller, made only when it is shown: a line
    /// may be up to a message long, and a chatty server writes many).
    fn report(&mut self, server: &str, error: &str, line: impl FnOnce() -> String) {
        match self.last {
            Some(at) if at.elapsed() < Self::INTERVAL => self.suppressed += 1,
            _ => {
                let more = std::mem::take(&mut self.suppressed);
                let earlier = if more > 0 {
                    format!(" ({more} more such lines ignored before this one)")
                } else {
                    String::new()
                };
                tracing::warn!(server = %server, "ignored output that is not JSON-RPC ({error}){earlier}: {}", line());
                self.last = Some(std::time::Instant::now());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;
    use tokio::io::{AsyncBufReadExt, BufReader};

    #[test]
    fn an_answer_keeps_its_result_as_written_and_everything_else_is_parsed() {
        let answer = r#"{"jsonrpc":"2.0","id":7,"result":{ "content" : [], "isError":true }}"#;
        match parse_line(answer) {
            Ok(Incoming::Answer { id, result }) => {
                assert_eq!(id, 7);
                assert_eq!(result.get(), r#"{ "content" : [], "isError":true }"#);
            }
            other => panic!("not kept raw: {other:?}"),
        }
        let parsed = [
            // An error, a notification, a request, an id we never send, a result and an error.
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"no"}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":"7","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{},"error":{"code":-1,"message":"no"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{},"result":{"content":[]}}"#,
            r#"[{"jsonrpc":"2.0","id":7,"result":{}}]"#,
        ];
        for line in parsed {
            let expected: Value = serde_json::from_str(line).expect("json");
            match parse_line(line) {
                Ok(Incoming::Message(message)) => assert_eq!(message, expected, "{line}"),
                other => panic!("{line}: {other:?}"),
            }
        }
        assert!(parse_line(r#"{"id":7,"result":"#).is_err());
    }

    #[tokio::test]
    async fn a_line_that_is_not_utf8_is_skipped_and_the_wire_reads_on() {
        use futures::StreamExt;
        let output = b"\xff\xfe not text\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n".to_vec();
        let (_, incoming) = lines_wire(
            "bytes".into(),
            Arc::default(),
            std::io::Cursor::new(output),
            tokio::io::sink(),
            CancellationToken::new(),
        );
        let messages: Vec<Incoming> = incoming.collect().await;
        assert!(
            matches!(messages.as_slice(), [Incoming::Answer { id: 1, .. }]),
            "{messages:?}"
        );
    }

    fn sender(capacity: usize) -> (Arc<LinesSender>, tokio::io::DuplexStream) {
        let (ours, theirs) = tokio::io::duplex(capacity);
        let sender = LinesSender::new(Box::new(ours), CancellationToken::new());
        (Arc::new(sender), theirs)
    }

    async fn read_lines(theirs: tokio::io::DuplexStream, count: usize) -> Vec<Value> {
        let mut lines = BufReader::new(theirs).lines();
        let mut out = Vec::new();
        while out.len() < count {
            let line = lines.next_line().await.expect("read").expect("a line");
            out.push(serde_json::from_str(&line).expect("every line is whole JSON"));
        }
        out
    }

    #[tokio::test]
    async fn concurrent_writes_arrive_as_whole_lines() {
        let (sender, theirs) = sender(64);
        let reader = tokio::spawn(read_lines(theirs, 100));
        let writes: Vec<_> = (0..100)
            .map(|i| {
                let sender = sender.clone();
                tokio::spawn(async move {
                    sender
                        .write(&json!({"id": i, "pad": "x".repeat(i * 7)}))
                        .await
                })
            })
            .collect();
        for write in writes {
            write.await.expect("task").expect("written");
        }
        let mut ids: Vec<i64> = reader
            .await
            .expect("reader")
            .iter()
            .map(|line| line["id"].as_i64().expect("id"))
            .collect();
        ids.sort_unstable();
        assert_eq!(ids, (0..100).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn a_writer_dropped_halfway_leaves_its_line_whole_for_the_next() {
        let (sender, theirs) = sender(16);
        let long = json!({"id": 1, "pad": "y".repeat(200)});
        // Nobody reads yet: the write stops after the first 16 bytes and is given up.
        let given_up = tokio::time::timeout(Duration::from_millis(50), sender.write(&long)).await;
        assert!(given_up.is_err(), "the write cannot have finished");
        let reader = tokio::spawn(read_lines(theirs, 2));
        sender.write(&json!({"id": 2})).await.expect("written");
        let lines = reader.await.expect("reader");
        assert_eq!(lines, vec![long, json!({"id": 2})]);
    }

    #[tokio::test]
    async fn after_a_failed_write_every_write_fails_and_the_wire_closes() {
        let (sender, theirs) = sender(16);
        drop(theirs);
        assert!(sender.write(&json!({"id": 1})).await.is_err());
        assert!(sender.closed.is_cancelled());
        assert!(sender.write(&json!({"id": 2})).await.is_err());
    }
}
