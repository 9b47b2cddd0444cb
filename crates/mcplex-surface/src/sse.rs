//! Server-sent events as the MCP routes write them: the bytes of one event, the priming event
//! that tells a client how long to wait before it reconnects, the response headers, and
//! [`SseBody`], the body of every stream a route opens (an answer that took a while, the GET
//! stream of a session, an idle second GET): events as they come, a keep-alive comment after
//! [`KEEP_ALIVE_EVERY`] of silence, and the end when its source ends or its session does.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use futures::Stream;
use tokio::sync::mpsc;
use tokio::time::Sleep;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// How long a client waits before it reconnects a stream that ended (the priming event's
/// `retry`).
pub(crate) const RETRY: Duration = Duration::from_secs(3);
/// The comment sent on a stream that has been silent this long, so that proxies keep it open.
pub(crate) const KEEP_ALIVE_EVERY: Duration = Duration::from_secs(15);
const KEEP_ALIVE: &[u8] = b":\n\n";

/// One event: `data` is one JSON-RPC message, `id` its event id. A line break in JSON can only
/// stand between tokens (a string holds it escaped), so where an upstream's own bytes have one
/// the event goes on in a new `data:` line: a client joins them with a line feed, which is the
/// same whitespace.
pub(crate) fn event(data: &[u8], id: Option<&str>) -> Bytes {
    let mut out = Vec::with_capacity(data.len() + 32);
    out.extend_from_slice(b"data: ");
    let mut lines = data.split(|byte| matches!(byte, b'\r' | b'\n'));
    if let Some(first) = lines.next() {
        out.extend_from_slice(first);
    }
    for line in lines {
        out.extend_from_slice(b"\ndata: ");
        out.extend_from_slice(line);
    }
    if let Some(id) = id {
        out.extend_from_slice(b"\nid: ");
        out.extend_from_slice(id.as_bytes());
    }
    out.extend_from_slice(b"\n\n");
    out.into()
}

/// A message the gateway sends a client, as the JSON an event carries (`None`, logged, when it
/// cannot be written).
pub(crate) fn json(message: &rmcp::model::ServerJsonRpcMessage) -> Option<Bytes> {
    match serde_json::to_vec(message) {
        Ok(json) => Some(json.into()),
        Err(e) => {
            tracing::error!("cannot serialize a message to a client: {e}");
            None
        }
    }
}

/// The event that opens a resumable stream: no data, the id a client resumes after, and
/// [`RETRY`].
pub(crate) fn priming(id: &str) -> Bytes {
    format!("data: \nid: {id}\nretry: {}\n\n", RETRY.as_millis()).into()
}

/// A `200 text/event-stream` response with `body`.
pub(crate) fn response(body: SseBody) -> Response {
    let mut response = Response::new(Body::from_stream(body));
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// The body of one stream: `first` events, then what `source` sends until it closes (none:
/// keep-alive comments only), ending early when `end` is cancelled. `guard` lives as long as
/// the body (the stream's place among its session's open streams).
pub(crate) struct SseBody {
    first: VecDeque<Bytes>,
    source: Option<mpsc::Receiver<Bytes>>,
    end: Pin<Box<WaitForCancellationFutureOwned>>,
    keep_alive: Option<Pin<Box<Sleep>>>,
    _guard: Box<dyn Send + Sync>,
}

impl SseBody {
    pub(crate) fn new(
        first: Vec<Bytes>,
        source: Option<mpsc::Receiver<Bytes>>,
        end: CancellationToken,
        guard: Box<dyn Send + Sync>,
    ) -> SseBody {
        SseBody {
            first: first.into(),
            source,
            end: Box::pin(end.cancelled_owned()),
            keep_alive: Some(Box::pin(tokio::time::sleep(KEEP_ALIVE_EVERY))),
            _guard: guard,
        }
    }

    /// A stream that sends `first` and ends (a resumption with nothing to resume).
    pub(crate) fn just(first: Vec<Bytes>) -> SseBody {
        let mut body = SseBody::new(first, None, CancellationToken::new(), Box::new(()));
        body.keep_alive = None;
        body
    }

    fn quiet(&mut self) {
        if let Some(keep_alive) = self.keep_alive.as_mut() {
            keep_alive
                .as_mut()
                .reset(tokio::time::Instant::now() + KEEP_ALIVE_EVERY);
        }
    }
}

impl Stream for SseBody {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if let Some(first) = self.first.pop_front() {
            return Poll::Ready(Some(Ok(first)));
        }
        // A body made by `just` ends with its first events.
        if self.keep_alive.is_none() {
            return Poll::Ready(None);
        }
        if self.end.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        if let Some(source) = self.source.as_mut() {
            match source.poll_recv(cx) {
                Poll::Ready(Some(bytes)) => {
                    self.quiet();
                    return Poll::Ready(Some(Ok(bytes)));
                }
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => {}
            }
        }
        let Some(keep_alive) = self.keep_alive.as_mut() else {
            return Poll::Ready(None);
        };
        match keep_alive.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.quiet();
                Poll::Ready(Some(Ok(Bytes::from_static(KEEP_ALIVE))))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    #[test]
    fn events_are_framed_with_and_without_ids() {
        assert_eq!(&event(b"{}", Some("1/7"))[..], b"data: {}\nid: 1/7\n\n");
        assert_eq!(&event(b"{}", None)[..], b"data: {}\n\n");
        assert_eq!(
            &event(b"{\"a\":\r\n1,\n\"b\":\"x\\ny\"}", Some("2/7"))[..],
            b"data: {\"a\":\ndata: \ndata: 1,\ndata: \"b\":\"x\\ny\"}\nid: 2/7\n\n",
            "a line break between tokens opens a data line; an escaped one is text"
        );
        assert_eq!(&priming("0/7")[..], b"data: \nid: 0/7\nretry: 3000\n\n");
    }

    #[tokio::test]
    async fn a_body_sends_its_first_events_then_its_source_and_ends_with_it() {
        let (tx, rx) = mpsc::channel(4);
        let body = SseBody::new(
            vec![Bytes::from_static(b"a")],
            Some(rx),
            CancellationToken::new(),
            Box::new(()),
        );
        tx.try_send(Bytes::from_static(b"b")).expect("open");
        drop(tx);
        let all: Vec<_> = body.map(|b| b.expect("bytes")).collect().await;
        assert_eq!(
            all,
            vec![Bytes::from_static(b"a"), Bytes::from_static(b"b")]
        );
    }

    #[tokio::test]
    async fn a_silent_body_lasts_until_its_end() {
        let end = CancellationToken::new();
        let mut body = SseBody::new(Vec::new(), None, end.clone(), Box::new(()));
        let waited = tokio::time::timeout(Duration::from_millis(50), body.next()).await;
        assert!(waited.is_err(), "nothing to send yet");
        end.cancel();
        assert!(body.next().await.is_none());
        assert!(SseBody::just(Vec::new()).next().await.is_none());
    }
}
