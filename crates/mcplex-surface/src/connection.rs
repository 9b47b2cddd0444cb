//! One HTTP connection's watch: whether a request is in flight, since when it has been idle, and
//! when the head of its next request began to arrive; the I/O wrapper that notices that first
//! byte, the request body that fails past its read deadline, and the response body that marks
//! the request finished when it ends or is dropped. The listener (`listener.rs`) closes a
//! connection by these facts; nothing here closes anything.
//!
//! "Idle" means no request in flight: a long SSE answer (a session's GET stream,
//! `subscriptions/listen`, a slow call streaming progress) is a request in flight for as long as
//! its body lasts, so no idle timeout ever cuts it.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::{Instant, Sleep};

/// What the listener knows about one connection.
pub(crate) struct Watch {
    state: Mutex<State>,
    /// Woken whenever the state changes, so the listener can recompute its deadline.
    pub(crate) changed: Notify,
}

struct State {
    /// Requests whose response body has not ended yet.
    in_flight: usize,
    /// Of those, requests whose body is still arriving: a connection holding only such requests
    /// may be closed to make room (a slow body cannot hold a place).
    arriving: usize,
    /// Of those, a session's GET streams, which a client resumes where it left off
    /// (`Last-Event-ID`): a connection holding only such streams may be closed to make room,
    /// after the idle and the arriving (streams kept open cannot hold every place).
    resumable: usize,
    /// When the last request finished (or the connection was accepted).
    idle_since: Instant,
    /// When the first byte of the next request head arrived, while idle.
    head_started: Option<Instant>,
}

/// Why the listener should close a connection now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expiry {
    /// A request head started arriving and did not finish in time.
    SlowHead,
    /// No request for the idle timeout.
    Idle,
}

impl Watch {
    /// A freshly accepted connection: its first request head is due within the header timeout.
    pub(crate) fn accepted() -> Arc<Watch> {
        let now = Instant::now();
        Arc::new(Watch {
            state: Mutex::new(State {
                in_flight: 0,
                arriving: 0,
                resumable: 0,
                idle_since: now,
                head_started: Some(now),
            }),
            changed: Notify::new(),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Bytes arrived from the client.
    fn bytes_arrived(&self) {
        let mut state = self.state();
        if state.in_flight == 0 && state.head_started.is_none() {
            state.head_started = Some(Instant::now());
            drop(state);
            self.changed.notify_one();
        }
    }

    /// A request head arrived whole; the request is in flight until the guard is dropped.
    pub(crate) fn request_started(self: &Arc<Watch>) -> InFlight {
        let mut state = self.state();
        state.in_flight += 1;
        state.head_started = None;
        drop(state);
        self.changed.notify_one();
        InFlight(self.clone(), false)
    }

    /// Since when the connection has had no request in flight; `None` while one is.
    pub(crate) fn idle_since(&self) -> Option<Instant> {
        let state = self.state();
        (state.in_flight == 0).then_some(state.idle_since)
    }

    /// A request whose body is arriving: counted until the guard is dropped (the body ended,
    /// failed or was dropped).
    pub(crate) fn body_arriving(self: &Arc<Watch>) -> ArrivingBody {
        self.state().arriving += 1;
        ArrivingBody(self.clone())
    }

    /// Since when the connection has done nothing but wait for request bodies to arrive (`None`
    /// when it serves anything else, or nothing).
    pub(crate) fn only_arriving_since(&self) -> Option<Instant> {
        let state = self.state();
        (state.in_flight > 0 && state.arriving >= state.in_flight).then_some(state.idle_since)
    }

    /// Since when the connection has done nothing but hold resumable streams open (`None` when
    /// it serves anything else, or nothing).
    pub(crate) fn only_resumable_since(&self) -> Option<Instant> {
        let state = self.state();
        (state.in_flight > 0 && state.resumable >= state.in_flight).then_some(state.idle_since)
    }

    /// When the connection expires if nothing changes (`None`: not while a request is in
    /// flight), and why.
    pub(crate) fn deadline(&self, limits: &Timeouts) -> Option<(Instant, Expiry)> {
        let state = self.state();
        if state.in_flight > 0 {
            return None;
        }
        Some(match state.head_started {
            Some(started) => (started + limits.header_read, Expiry::SlowHead),
            None => (state.idle_since + limits.idle, Expiry::Idle),
        })
    }
}

/// The timeouts the listener enforces.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    pub header_read: Duration,
    pub body_read: Duration,
    pub idle: Duration,
}

/// A request in flight on a connection; dropping it makes the connection idle again (when it
/// was the last one).
pub(crate) struct InFlight(Arc<Watch>, bool);

/// In a response's extensions: its body is a stream the client resumes where it left off (a
/// session's GET stream), so its connection may be closed to make room.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resumable;

impl InFlight {
    /// Counts this request's response as a [`Resumable`] stream until it ends.
    pub(crate) fn resumable(mut self) -> InFlight {
        if !self.1 {
            self.0.state().resumable += 1;
            self.1 = true;
        }
        self
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut state = self.0.state();
        if self.1 {
            state.resumable = state.resumable.saturating_sub(1);
        }
        state.in_flight = state.in_flight.saturating_sub(1);
        if state.in_flight == 0 {
            state.idle_since = Instant::now();
        }
        drop(state);
        self.0.changed.notify_one();
    }
}

/// A request body that is still arriving (see [`Watch::body_arriving`]).
pub(crate) struct ArrivingBody(Arc<Watch>);

impl Drop for ArrivingBody {
    fn drop(&mut self) {
        let mut state = self.0.state();
        state.arriving = state.arriving.saturating_sub(1);
    }
}

/// The TCP stream, reporting arriving bytes to its [`Watch`].
pub(crate) struct Watched<T> {
    pub inner: T,
    pub watch: Arc<Watch>,
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.watch.bytes_arrived();
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// The body of a request took longer than the body-read timeout to arrive.
#[derive(Debug)]
pub struct BodyTimedOut;

impl std::fmt::Display for BodyTimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request body did not arrive within the body read timeout")
    }
}

impl std::error::Error for BodyTimedOut {}

/// Whether `error` (or what it wraps) is a [`BodyTimedOut`].
pub(crate) fn is_body_timeout(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(e) = current {
        if e.is::<BodyTimedOut>() {
            return true;
        }
        current = e.source();
    }
    false
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A request body that must end by a deadline.
pub(crate) struct TimedBody<B> {
    inner: B,
    deadline: Pin<Box<Sleep>>,
    ended: bool,
    /// Held while the body arrives; released when it ends.
    arriving: Option<ArrivingBody>,
}

impl<B> TimedBody<B> {
    pub(crate) fn new(inner: B, limit: Duration, arriving: Option<ArrivingBody>) -> TimedBody<B> {
        TimedBody {
            inner,
            deadline: Box::pin(tokio::time::sleep(limit)),
            ended: false,
            arriving,
        }
    }
}

impl<B> Body for TimedBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if self.ended {
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(None) => {
                self.ended = true;
                self.arriving = None;
                Poll::Ready(None)
            }
            Poll::Ready(Some(frame)) => Poll::Ready(Some(frame.map_err(Into::into))),
            Poll::Pending => match self.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    self.ended = true;
                    self.arriving = None;
                    Poll::Ready(Some(Err(Box::new(BodyTimedOut))))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body that keeps its request in flight until it ends or is dropped. After each
/// data frame it looks one frame ahead: when the body ends there, hyper learns it with the last
/// data and writes that data and the end of the body in one write (one packet) instead of two.
/// rmcp ends an answer's stream a moment after sending the answer, often from another thread, so
/// when the next frame is not ready the data waits for one more look (a single yield to the
/// scheduler, never longer).
pub(crate) struct Finishing<B: Body> {
    inner: B,
    in_flight: Option<InFlight>,
    /// A frame read ahead of its turn, or held back for one more look ahead.
    ahead: Option<Result<Frame<Bytes>, B::Error>>,
    /// The frame in `ahead` has already waited once.
    waited: bool,
    /// The inner body has ended (found while looking ahead).
    ended: bool,
}

// The frame read ahead is only ever moved, never pinned: the body is as movable as its inner one.
impl<B: Body + Unpin> Unpin for Finishing<B> {}

impl<B: Body> Finishing<B> {
    pub(crate) fn new(inner: B, in_flight: InFlight) -> Finishing<B> {
        Finishing {
            inner,
            in_flight: Some(in_flight),
            ahead: None,
            waited: false,
            ended: false,
        }
    }
}

impl<B> Body for Finishing<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = self.get_mut();
        let frame = match this.ahead.take() {
            Some(frame) => frame,
            None if this.ended => return Poll::Ready(None),
            None => match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Ready(Some(frame)) => frame,
                Poll::Ready(None) => {
                    this.end();
                    return Poll::Ready(None);
                }
                Poll::Pending => return Poll::Pending,
            },
        };
        if frame.as_ref().is_ok_and(Frame::is_data) && !this.ended {
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Ready(Some(next)) => this.ahead = Some(next),
                Poll::Ready(None) => this.end(),
                Poll::Pending if !this.waited => {
                    this.waited = true;
                    this.ahead = Some(frame);
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                Poll::Pending => {}
            }
        }
        this.waited = false;
        Poll::Ready(Some(frame))
    }

    fn is_end_stream(&self) -> bool {
        self.ahead.is_none() && (self.ended || self.inner.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl<B: Body> Finishing<B> {
    fn end(&mut self) {
        self.ended = true;
        self.in_flight = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    fn timeouts() -> Timeouts {
        Timeouts {
            header_read: Duration::from_secs(10),
            body_read: Duration::from_secs(30),
            idle: Duration::from_secs(60),
        }
    }

    #[tokio::test]
    async fn a_request_in_flight_never_expires_and_its_end_starts_the_idle_clock() {
        let watch = Watch::accepted();
        let (_, why) = watch
            .deadline(&timeouts())
            .expect("fresh connection has a deadline");
        assert_eq!(
            why,
            Expiry::SlowHead,
            "the first head is due within the header timeout"
        );
        let request = watch.request_started();
        assert!(watch.deadline(&timeouts()).is_none());
        assert!(watch.idle_since().is_none());
        watch.bytes_arrived();
        assert!(
            watch.deadline(&timeouts()).is_none(),
            "bytes while busy start nothing"
        );
        drop(request);
        let (_, why) = watch.deadline(&timeouts()).expect("idle again");
        assert_eq!(why, Expiry::Idle);
        watch.bytes_arrived();
        let (_, why) = watch.deadline(&timeouts()).expect("a head is arriving");
        assert_eq!(why, Expiry::SlowHead);
    }

    /// A body that answers each poll with the next scripted step (`None` data: not ready yet).
    struct Scripted(std::collections::VecDeque<Poll<Option<&'static str>>>);

    impl Body for Scripted {
        type Data = Bytes;
        type Error = Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            match self.0.pop_front() {
                Some(Poll::Ready(Some(text))) => {
                    Poll::Ready(Some(Ok(Frame::data(Bytes::from(text)))))
                }
                Some(Poll::Pending) => Poll::Pending,
                Some(Poll::Ready(None)) | None => Poll::Ready(None),
            }
        }
    }

    fn poll_data(body: &mut Finishing<Scripted>) -> Poll<Option<Bytes>> {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        Pin::new(body)
            .poll_frame(&mut cx)
            .map(|frame| frame.map(|f| f.ok().and_then(|f| f.into_data().ok()).unwrap_or_default()))
    }

    #[test]
    fn the_last_data_frame_is_known_as_the_end_and_releases_the_request() {
        let watch = Watch::accepted();
        let steps = [
            Poll::Ready(Some("a")),
            Poll::Ready(Some("b")),
            Poll::Ready(None),
        ];
        let mut body = Finishing::new(Scripted(steps.into()), watch.request_started());
        assert_eq!(poll_data(&mut body), Poll::Ready(Some(Bytes::from("a"))));
        assert!(!body.is_end_stream(), "b is still to come");
        assert!(watch.idle_since().is_none());
        assert_eq!(poll_data(&mut body), Poll::Ready(Some(Bytes::from("b"))));
        assert!(body.is_end_stream(), "the body ended right after b");
        assert!(watch.idle_since().is_some(), "the request is over");
        assert_eq!(poll_data(&mut body), Poll::Ready(None));
    }

    #[test]
    fn a_frame_whose_successor_is_not_ready_waits_for_one_more_look_only() {
        let watch = Watch::accepted();
        let steps = [
            Poll::Ready(Some("a")),
            Poll::Pending,
            Poll::Pending,
            Poll::Ready(Some("b")),
            Poll::Pending,
            Poll::Ready(None),
        ];
        let mut body = Finishing::new(Scripted(steps.into()), watch.request_started());
        assert_eq!(poll_data(&mut body), Poll::Pending, "a waits for one look");
        assert_eq!(poll_data(&mut body), Poll::Ready(Some(Bytes::from("a"))));
        assert!(!body.is_end_stream(), "a goes out though the body goes on");
        assert_eq!(poll_data(&mut body), Poll::Pending, "b waits for one look");
        assert_eq!(poll_data(&mut body), Poll::Ready(Some(Bytes::from("b"))));
        assert!(body.is_end_stream(), "the second look found the end");
        assert!(watch.idle_since().is_some());
        assert_eq!(poll_data(&mut body), Poll::Ready(None));
    }

    #[test]
    fn a_body_timeout_is_found_through_wrapping_errors() {
        let wrapped = axum::Error::new(BodyTimedOut);
        assert!(is_body_timeout(&wrapped));
        assert!(!is_body_timeout(&axum::Error::new(std::io::Error::other(
            "other"
        ))));
    }
}
