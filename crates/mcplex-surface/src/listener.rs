//! The HTTP listener: the accept loop and one hyper HTTP/1.1 task per connection, with what
//! `axum::serve` lacks. A request head must arrive within the header timeout (counted from its
//! first byte, or from the accept for a connection's first request), its body within the body
//! timeout; a connection with no request in flight is closed after the idle timeout. At most
//! `max_connections` are open: past the cap, and when the process is out of file descriptors,
//! the connection idle the longest is closed to make room, else one that only waits for request
//! bodies to arrive (a slow body cannot lock an operator out); when none is, the newcomer gets
//! 503 at once. The accept loop never waits on a client and never spins.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::connection::{
    Expiry, Finishing, InFlight, Resumable, TimedBody, Timeouts, Watch, Watched,
};
use crate::door::Door;

/// The listener's timeouts and connection cap (`http_header_read_timeout`,
/// `http_body_read_timeout`, `http_idle_timeout`, `max_connections`).
#[derive(Debug, Clone, Copy)]
pub struct ListenerLimits {
    pub header_read_timeout: Duration,
    pub body_read_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_connections: usize,
}

impl ListenerLimits {
    pub fn from_config(config: &mcplex_config::Config) -> ListenerLimits {
        ListenerLimits {
            header_read_timeout: config.listener.header_read_timeout,
            body_read_timeout: config.listener.body_read_timeout,
            idle_timeout: config.listener.idle_timeout,
            max_connections: config.listener.max_connections,
        }
    }
}

/// How long shutdown waits for connections still answering.
const DRAIN: Duration = Duration::from_secs(5);
/// How long the accept loop rests when the process is out of file descriptors: until the idle
/// connection it closed has released its descriptor, at most this; this when none was idle.
const FD_BACKOFF: Duration = Duration::from_millis(50);

/// The open connections, for the cap and for eviction.
#[derive(Default)]
struct Connections {
    open: Mutex<HashMap<u64, Open>>,
    next: AtomicU64,
}

struct Open {
    watch: Arc<Watch>,
    evict: CancellationToken,
    /// Cancelled once the connection's task has ended and its socket is closed.
    closed: CancellationToken,
}

impl Connections {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Open>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn len(&self) -> usize {
        self.lock().len()
    }

    /// Registers a connection: its id, the token that evicts it, and the one its task cancels
    /// when it has ended.
    fn add(&self, watch: Arc<Watch>) -> (u64, CancellationToken, CancellationToken) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (evict, closed) = (CancellationToken::new(), CancellationToken::new());
        self.lock().insert(
            id,
            Open {
                watch,
                evict: evict.clone(),
                closed: closed.clone(),
            },
        );
        (id, evict, closed)
    }

    fn remove(&self, id: u64) {
        self.lock().remove(&id);
    }

    /// Closes the connection idle the longest, else the one waiting the longest for nothing but
    /// request bodies to arrive (a slow body cannot hold a place an operator needs), else the
    /// one holding nothing but resumable streams the longest (a client that keeps GET streams
    /// open cannot hold every place; it resumes them with `Last-Event-ID`): the token cancelled
    /// once its socket is closed; `None` when every connection is busy otherwise.
    fn evict_oldest_idle(&self) -> Option<CancellationToken> {
        let mut open = self.lock();
        let live = || open.iter().filter(|(_, c)| !c.evict.is_cancelled());
        let tiers: [fn(&Watch) -> Option<Instant>; 3] = [
            Watch::idle_since,
            Watch::only_arriving_since,
            Watch::only_resumable_since,
        ];
        let oldest = tiers.iter().find_map(|since| {
            live()
                .filter_map(|(id, c)| since(&c.watch).map(|since| (since, *id)))
                .min()
        });
        let connection = oldest.and_then(|(_, id)| open.remove(&id))?;
        connection.evict.cancel();
        Some(connection.closed)
    }
}

/// Serves `app` on `listener` until `shutdown` is cancelled. Sockets get TCP_NODELAY: SSE answers
/// are written in several small pieces, and Nagle's algorithm against the client's delayed ACK
/// would hold each answer back ~40 ms.
pub async fn serve_http(
    listener: TcpListener,
    app: Door,
    limits: ListenerLimits,
    shutdown: CancellationToken,
) -> io::Result<()> {
    let connections = Arc::new(Connections::default());
    let timeouts = Timeouts {
        header_read: limits.header_read_timeout,
        body_read: limits.body_read_timeout,
        idle: limits.idle_timeout,
    };
    let tasks = tokio_util::task::TaskTracker::new();
    let mut fd_warned: Option<Instant> = None;
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let tcp = match accepted {
            Ok((tcp, _)) => tcp,
            Err(e) if out_of_descriptors(&e) => {
                if fd_warned.is_none_or(|at| at.elapsed() > Duration::from_secs(10)) {
                    tracing::warn!(
                        "cannot accept a connection ({e}); closing the longest idle one (raise the open-file limit or lower max_connections)"
                    );
                    fd_warned = Some(Instant::now());
                }
                // After an eviction, the next accept waits for the evicted socket to be closed:
                // retrying at once would still find no descriptor and evict the next idle
                // connection, and the next, down to a client's between two requests.
                let evicted = connections.evict_oldest_idle();
                let room = async {
                    match evicted {
                        // Closed in time or not, the accept is tried again after this.
                        Some(closed) => {
                            let _ = tokio::time::timeout(FD_BACKOFF, closed.cancelled()).await;
                        }
                        None => tokio::time::sleep(FD_BACKOFF).await,
                    }
                };
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = room => {}
                }
                continue;
            }
            Err(e) => {
                // Aborted handshakes and the like concern one client only.
                tracing::debug!("accept failed: {e}");
                continue;
            }
        };
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY: {e}");
        }
        if connections.len() >= limits.max_connections && connections.evict_oldest_idle().is_none()
        {
            tasks.spawn(refuse_busy(tcp));
            continue;
        }
        let watch = Watch::accepted();
        let (id, evict, closed) = connections.add(watch.clone());
        let connections = connections.clone();
        let app = app.clone();
        let shutdown = shutdown.clone();
        tasks.spawn(async move {
            serve_connection(tcp, app, watch, timeouts, evict, shutdown).await;
            connections.remove(id);
            closed.cancel();
        });
    }
    tasks.close();
    if tokio::time::timeout(DRAIN, tasks.wait()).await.is_err() {
        tracing::debug!("connections still open after {DRAIN:?}; closing them");
    }
    Ok(())
}

/// The errors that mean the process (or the system) has no file descriptor or buffer to spare.
fn out_of_descriptors(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// Answers a connection over the cap with 503 and closes it, without reading it.
async fn refuse_busy(mut tcp: TcpStream) {
    const BODY: &str = r#"{"error":"too many open connections; retry shortly"}"#;
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{BODY}",
        BODY.len()
    );
    let write = async {
        tcp.write_all(response.as_bytes()).await?;
        tcp.shutdown().await
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), write).await;
}

async fn serve_connection(
    tcp: TcpStream,
    app: Door,
    watch: Arc<Watch>,
    timeouts: Timeouts,
    evict: CancellationToken,
    shutdown: CancellationToken,
) {
    let peer = tcp.peer_addr().ok();
    let io = TokioIo::new(Watched {
        inner: tcp,
        watch: watch.clone(),
    });
    let service = ConnectionService {
        app,
        watch: watch.clone(),
        body_read: timeouts.body_read,
        peer,
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    // The header timeout is ours (counted from a head's first byte, not from the last answer).
    builder.keep_alive(true).header_read_timeout(None);
    let connection = builder.serve_connection(io, service);
    let mut connection = std::pin::pin!(connection);
    let mut draining = false;
    loop {
        let deadline = watch.deadline(&timeouts);
        let expires = async {
            match deadline {
                Some((at, _)) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            served = connection.as_mut() => {
                if let Err(e) = served {
                    tracing::debug!("connection ended: {e}");
                }
                return;
            }
            () = evict.cancelled() => return,
            () = shutdown.cancelled(), if !draining => {
                draining = true;
                connection.as_mut().graceful_shutdown();
            }
            () = watch.changed.notified() => {}
            () = expires => {
                if let Some((at, why)) = watch.deadline(&timeouts)
                    && at <= Instant::now()
                {
                    if why == Expiry::SlowHead {
                        tracing::debug!("closing a connection: request head too slow");
                    }
                    return;
                }
            }
        }
    }
}

/// The address a request came from (in its extensions), for limits per client.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub std::net::SocketAddr);

/// The router, seen from one connection: marks each request in flight until its answer ends,
/// puts the body-read deadline on its body and its client's address in its extensions.
#[derive(Clone)]
struct ConnectionService {
    app: Door,
    watch: Arc<Watch>,
    body_read: Duration,
    peer: Option<std::net::SocketAddr>,
}

impl hyper::service::Service<http::Request<Incoming>> for ConnectionService {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<http::Response<Body>, Infallible>> + Send>>;

    fn call(&self, request: http::Request<Incoming>) -> Self::Future {
        let in_flight: InFlight = self.watch.request_started();
        let body_read = self.body_read;
        // Any body still arriving: a credential header proves nothing until the guard checked it,
        // and an honest request's body arrives at once.
        let arriving =
            (!hyper::body::Body::is_end_stream(request.body())).then(|| self.watch.body_arriving());
        let mut request = request.map(|body| Body::new(TimedBody::new(body, body_read, arriving)));
        if let Some(peer) = self.peer {
            request.extensions_mut().insert(Peer(peer));
        }
        let app = self.app.clone();
        Box::pin(async move {
            let response = app.serve(request).await;
            let in_flight = if response.extensions().get::<Resumable>().is_some() {
                in_flight.resumable()
            } else {
                in_flight
            };
            Ok(response.map(|inner| Body::new(Finishing::new(inner, in_flight))))
        })
    }
}
