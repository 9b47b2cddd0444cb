//! The fixture on a byte stream pair (stdio, or an in-process duplex for the demo).

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::Fixture;

/// Queued answers written together stop being gathered at this size.
const WRITE_BATCH_BYTES: usize = 64 * 1024;

/// Appends `message` as one line. A bare JSON string is never a JSON-RPC message: it is
/// sabotage, written raw.
fn push_line(batch: &mut Vec<u8>, message: Value) {
    match message {
        Value::String(raw) => batch.extend_from_slice(raw.as_bytes()),
        other => {
            // Writing a JSON value to a Vec cannot fail.
            let _ = serde_json::to_writer(&mut *batch, &other);
        }
    }
    batch.push(b'\n');
}

/// How answers reach the byte stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writes {
    /// Answers that are ready together go out in one write, as a busy server's would.
    Batched,
    /// Every answer is written and flushed on its own, as rmcp's stdio transport does.
    EachAlone,
}

/// Serves until the input ends or the `crash` tool is called. Requests run concurrently.
pub async fn serve_lines(
    fixture: Arc<Fixture>,
    reader: impl AsyncRead + Unpin,
    writer: impl AsyncWrite + Send + Unpin + 'static,
) {
    serve_lines_writing(fixture, reader, writer, Writes::Batched).await;
}

/// [`serve_lines`], writing answers as `writes` says.
pub async fn serve_lines_writing(
    fixture: Arc<Fixture>,
    reader: impl AsyncRead + Unpin,
    writer: impl AsyncWrite + Send + Unpin + 'static,
    writes: Writes,
) {
    let (out, mut outgoing) = mpsc::unbounded_channel::<Value>();
    let writer_task = tokio::spawn(async move {
        let mut writer = writer;
        let mut batch = Vec::new();
        while let Some(message) = outgoing.recv().await {
            batch.clear();
            push_line(&mut batch, message);
            while writes == Writes::Batched && batch.len() < WRITE_BATCH_BYTES {
                let Ok(message) = outgoing.try_recv() else {
                    break;
                };
                push_line(&mut batch, message);
            }
            if writer.write_all(&batch).await.is_err() || writer.flush().await.is_err() {
                break;
            }
        }
    });
    let mut sabotage_started = false;
    let mut lines = BufReader::new(reader).lines();
    loop {
        let line = tokio::select! {
            line = lines.next_line() => line,
            () = fixture.crash.cancelled() => break,
        };
        let Ok(Some(line)) = line else { break };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            let _ = out.send(json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse error"}}));
            continue;
        };
        let is_request =
            message.get("method").is_some() && message.get("id").is_some_and(|id| !id.is_null());
        if !sabotage_started && message.get("method").and_then(Value::as_str) == Some("initialize")
        {
            sabotage_started = true;
            start_sabotage(&fixture.options.sabotage, &out);
        }
        if is_request {
            let (fixture, out) = (fixture.clone(), out.clone());
            tokio::spawn(async move {
                let response = fixture.request(message, &out).await;
                let _ = out.send(response);
            });
        } else {
            fixture.notification(&message);
        }
    }
    drop(out);
    if !fixture.crash.is_cancelled() {
        let _ = writer_task.await;
    }
}

/// Starts the periodic misbehaviour the options ask for, writing through `out`.
fn start_sabotage(sabotage: &crate::Sabotage, out: &mpsc::UnboundedSender<Value>) {
    if let Some(per_second) = sabotage.flood_list_changed.filter(|n| *n > 0) {
        let out = out.clone();
        let every = std::time::Duration::from_secs(1) / per_second;
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                let notification =
                    json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
                if out.send(notification).is_err() {
                    return;
                }
            }
        });
    }
    if let Some(every) = sabotage.garbage_every {
        let out = out.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                if out
                    .send(Value::String("this is not JSON {{{".to_owned()))
                    .is_err()
                {
                    return;
                }
            }
        });
    }
}
