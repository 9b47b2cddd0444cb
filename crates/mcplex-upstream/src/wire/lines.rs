//! Newline-delimited JSON-RPC over any byte stream pair: a child's stdin/stdout, or an in-process
//! duplex to a built-in server.

use std::sync::Arc;

use mcplex_config::Redactor;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, mpsc};
use tokio_util::sync::CancellationToken;

use super::{BoxFuture, INCOMING_BUFFER, SendError, WireSend, snippet};

/// The writing half: one message per line, flushed at once.
pub(crate) struct LinesSender {
    writer: Mutex<Box<dyn AsyncWrite + Send + Unpin>>,
    closed: CancellationToken,
}

impl LinesSender {
    pub(crate) async fn write(&self, message: &Value) -> Result<(), SendError> {
        let mut line = serde_json::to_vec(message)?;
        line.push(b'\n');
        let mut writer = self.writer.lock().await;
        let result = async {
            writer.write_all(&line).await?;
            writer.flush().await
        }
        .await;
        result.map_err(|e| {
            self.closed.cancel();
            SendError::Write(e)
        })
    }
}

impl WireSend for LinesSender {
    fn send(&self, message: Value) -> BoxFuture<'_, Result<(), SendError>> {
        Box::pin(async move { self.write(&message).await })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let mut writer = self.writer.lock().await;
            let _ = writer.shutdown().await;
            self.closed.cancel();
        })
    }
}

/// Starts reading `reader` line by line. Lines that are not JSON are reported (with `redactor`'s
/// secrets removed: a server may print its env on stdout) and skipped; the end of the stream
/// cancels `closed`.
pub(crate) fn lines_wire(
    server: Arc<str>,
    redactor: Arc<Redactor>,
    reader: impl AsyncRead + Send + Unpin + 'static,
    writer: impl AsyncWrite + Send + Unpin + 'static,
    closed: CancellationToken,
) -> (Arc<LinesSender>, mpsc::Receiver<Value>) {
    let (incoming_tx, incoming_rx) = mpsc::channel(INCOMING_BUFFER);
    let sender = Arc::new(LinesSender {
        writer: Mutex::new(Box::new(writer)),
        closed: closed.clone(),
    });
    tokio::spawn(async move {
        let mut lines = BufReader::new(reader).lines();
        let mut garbage = GarbageReport::default();
        loop {
            // Closing first: the end of output that a shutdown causes is not a failure.
            let line = tokio::select! {
                biased;
                () = closed.cancelled() => break,
                line = lines.next_line() => line,
            };
            match line {
                Ok(Some(line)) => {
                    let trimmed = line.trim();
                    if trimmed.is_empty() {
                        continue;
                    }
                    match serde_json::from_str::<Value>(trimmed) {
                        Ok(message) => {
                            if incoming_tx.send(message).await.is_err() {
                                break;
                            }
                        }
                        Err(e) => garbage.report(&server, &e, &redactor.redact(trimmed)),
                    }
                }
                Ok(None) => {
                    tracing::warn!(server = %server, "server closed its output");
                    break;
                }
                Err(e) => {
                    tracing::warn!(server = %server, "cannot read the server's output: {e}");
                    break;
                }
            }
        }
        closed.cancel();
    });
    (sender, incoming_rx)
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

    fn report(&mut self, server: &str, error: &serde_json::Error, line: &str) {
        match self.last {
            Some(at) if at.elapsed() < Self::INTERVAL => self.suppressed += 1,
            _ => {
                let more = std::mem::take(&mut self.suppressed);
                let earlier = if more > 0 {
                    format!(" ({more} more such lines ignored before this one)")
                } else {
                    String::new()
                };
                tracing::warn!(server = %server, "ignored output that is not JSON-RPC ({error}){earlier}: {}", snippet(line, 200));
                self.last = Some(std::time::Instant::now());
            }
        }
    }
}
