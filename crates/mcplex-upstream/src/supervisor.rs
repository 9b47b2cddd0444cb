//! The supervisor: one task per enabled server that connects, opens the lifecycle, lists tools,
//! re-lists on `notifications/tools/list_changed` (coalescing bursts), and reconnects with
//! exponential backoff after a crash or disconnect. It reports every change as an
//! [`UpstreamEvent`] and never blocks on one server to serve another: each server has its own
//! task, and the gateway serves from the first moment with whatever has connected. An OAuth
//! server with no usable login is `NeedsLogin`: it waits, without retrying, until the logins
//! change (`mcplex auth login`, another replica), and the other servers never notice. A URL
//! server whose config says nothing of OAuth but that answers 401 with a Bearer challenge is
//! taken as one at once (its login made with the defaults discovery fills in): `NeedsLogin`,
//! not a failure retried with backoff.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use mcplex_config::{Config, Redactor, ServerConfig};
use mcplex_oauth::{Logins, ServerLogin};
use mcplex_protocol::{Offer, ServerHealth};
use mcplex_sandbox::Report;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{broadcast, mpsc, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::backoff::back_off;
use crate::connect::open;
use mcplex_protocol::ServerEventKind;

use crate::history::History;
use crate::isolation::{Denied, Isolation};
use crate::login::{Login, await_login, needs_login_now};
use crate::rpc::{RpcConnection, notifications};
use crate::serve::{Listed, Watch, serve};
use crate::succession::Successions;

/// Opens an in-process byte stream to a built-in server (`Transport::Builtin { kind }`).
pub type BuiltinConnector = Arc<
    dyn Fn(
            &str,
        ) -> Option<(
            Box<dyn AsyncRead + Send + Unpin>,
            Box<dyn AsyncWrite + Send + Unpin>,
        )> + Send
        + Sync,
>;

/// What a server's supervisor reports: a fresh listing, or a health without one.
#[derive(Debug, Clone)]
pub enum UpstreamReport {
    /// Connected (so [`ServerHealth::Ready`]); these are its tools as raw JSON objects, all
    /// pages, and what else it offers.
    Listed {
        tools: Arc<Vec<Value>>,
        offer: Arc<Offer>,
    },
    /// Connecting, failed (the supervisor retries after a backoff), or an OAuth server whose
    /// login is missing, expired or refused (nothing is tried until the logins change).
    Health(ServerHealth),
}

impl UpstreamReport {
    /// The server's health as this report says it.
    pub fn health(&self) -> ServerHealth {
        match self {
            UpstreamReport::Listed { .. } => ServerHealth::Ready,
            UpstreamReport::Health(health) => health.clone(),
        }
    }
}

/// A report about one upstream.
#[derive(Debug, Clone)]
pub struct UpstreamEvent {
    pub server: String,
    pub report: UpstreamReport,
}

/// A notification an upstream sent that is about no call and changes no listing (such as
/// `notifications/resources/updated`), for whoever subscribed to it downstream.
#[derive(Debug, Clone)]
pub struct UpstreamNotice {
    pub server: Arc<str>,
    pub method: String,
    pub params: Value,
}

/// How many notices may wait for a slow subscriber before it misses some.
const NOTICE_BUFFER: usize = 256;

pub(crate) struct ServerSlot {
    pub(crate) config: ServerConfig,
    /// The server's secrets: every text about it (states, errors, logs) passes through this.
    pub(crate) redactor: Arc<Redactor>,
    pub(crate) connection: RwLock<Option<Arc<RpcConnection>>>,
    /// For "not connected" errors: what the supervisor last knew.
    pub(crate) health: Mutex<ServerHealth>,
    /// Stops this server's supervisor (a child of the gateway-wide shutdown).
    pub(crate) stop: CancellationToken,
    /// An OAuth server's login (`None` for the others, and for an OAuth server of a gateway
    /// with no token store); set once a server configured without `"oauth"` asks for a login.
    pub(crate) login: RwLock<Option<Arc<ServerLogin>>>,
    /// Set by the HTTP wire when the server answered 401 with a Bearer challenge and no login
    /// was sent.
    pub(crate) challenged: Arc<AtomicBool>,
    /// How stdio servers are sandboxed (shared by every slot of the gateway).
    pub(crate) isolation: Arc<Isolation>,
    /// How this server's process was isolated at its last start (`None`: not a process, or
    /// not started yet).
    pub(crate) report: Mutex<Option<Report>>,
    /// The last stderr line of its process that looked like the sandbox refusing something.
    pub(crate) denied: Denied,
    /// What happened to it (kept across an operator's restart).
    pub(crate) history: Arc<Mutex<History>>,
    /// A `per_user` server's callers' own connections.
    pub(crate) callers: crate::callers::CallerConnections,
    /// Cancelled once its supervisor has ended (its process terminated).
    pub(crate) finished: CancellationToken,
}

/// All upstream connections of a gateway. Servers can be added and removed while it runs
/// ([`Upstreams::reconcile`]).
pub struct Upstreams {
    pub(crate) servers: RwLock<HashMap<String, Arc<ServerSlot>>>,
    call_timeout: Duration,
    builtin: Option<BuiltinConnector>,
    /// Where OAuth servers' tokens come from.
    pub(crate) logins: Option<Arc<Logins>>,
    events: mpsc::UnboundedSender<UpstreamEvent>,
    notices: broadcast::Sender<UpstreamNotice>,
    pub(crate) shutdown: CancellationToken,
    tasks: TaskTracker,
    pub(crate) isolation: Arc<Isolation>,
    successions: Successions,
}

impl Upstreams {
    /// Starts one supervisor task per enabled server in `config`. Returns at once. `logins`
    /// gives OAuth servers their tokens (without it they need a login that cannot happen).
    pub fn start(
        config: &Config,
        builtin: Option<BuiltinConnector>,
        logins: Option<Arc<Logins>>,
        events: mpsc::UnboundedSender<UpstreamEvent>,
        isolation: Isolation,
    ) -> Upstreams {
        let upstreams = Upstreams {
            isolation: Arc::new(isolation),
            servers: RwLock::new(HashMap::new()),
            call_timeout: config.call_timeout,
            builtin,
            logins,
            events,
            notices: broadcast::Sender::new(NOTICE_BUFFER),
            shutdown: CancellationToken::new(),
            tasks: TaskTracker::new(),
            successions: Successions::default(),
        };
        upstreams.reconcile(config);
        upstreams
    }

    /// Makes the running servers those of `config`: stops the supervisors (and terminates the
    /// processes) of servers that were removed, disabled or changed, and starts the new ones.
    /// Untouched servers keep their connections.
    pub fn reconcile(&self, config: &Config) {
        if self.shutdown.is_cancelled() {
            return;
        }
        let wanted: HashMap<&str, &ServerConfig> = config
            .servers
            .iter()
            .filter(|s| s.enabled)
            .map(|s| (s.name.as_str(), s))
            .collect();
        let mut servers = self.servers.write().unwrap_or_else(PoisonError::into_inner);
        if self.shutdown.is_cancelled() {
            return;
        }
        servers.retain(|name, slot| {
            let keep = wanted.get(name.as_str()).is_some_and(|wanted| wanted.same_connection(&slot.config));
            if !keep {
                tracing::info!(server = %name, "stopping upstream (removed or changed in the config)");
                self.stop_slot(name, slot);
            }
            keep
        });
        for (name, server) in wanted {
            if servers.contains_key(name) {
                continue;
            }
            self.start_slot_with(&mut servers, server, Arc::default());
        }
    }

    /// Stops `slot` of `server`; the next slot of that name starts once it has ended.
    pub(crate) fn stop_slot(&self, server: &str, slot: &ServerSlot) {
        slot.stop.cancel();
        self.successions.stopped(server, &slot.finished);
    }

    /// Starts the supervisor of `server` in a new slot that goes on with `history`, once the
    /// slot it replaces has ended (`succession.rs`). The new slot is in place at once, so the
    /// server stays known (its page, its history, a call's answer) while the old process ends;
    /// stopped while it waits, it starts nothing, and it counts as ended only once its
    /// predecessor has too, so whatever replaces it in turn waits for both.
    pub(crate) fn start_slot_with(
        &self,
        servers: &mut HashMap<String, Arc<ServerSlot>>,
        server: &ServerConfig,
        history: Arc<Mutex<History>>,
    ) {
        let slot = Arc::new(ServerSlot {
            config: server.clone(),
            redactor: Arc::new(crate::redactor::redactor_of(server)),
            connection: RwLock::new(None),
            health: Mutex::new(ServerHealth::Connecting),
            stop: self.shutdown.child_token(),
            login: RwLock::new(self.logins.as_ref().and_then(|l| l.for_server(server))),
            challenged: Arc::new(AtomicBool::new(false)),
            isolation: self.isolation.clone(),
            report: Mutex::new(None),
            denied: Denied::default(),
            history,
            callers: Default::default(),
            finished: CancellationToken::new(),
        });
        servers.insert(server.name.clone(), slot.clone());
        let stop = slot.stop.clone();
        let supervised = supervise(
            slot.clone(),
            self.builtin.clone(),
            self.logins.clone(),
            self.events.clone(),
            self.notices.clone(),
            stop.clone(),
        );
        let predecessor = self.successions.predecessor(&server.name);
        self.tasks.spawn(async move {
            let stopped = tokio::select! {
                biased;
                () = stop.cancelled() => true,
                () = predecessor.ended() => false,
            };
            if !stopped {
                supervised.await;
            }
            // The server stopped: so do its callers' own connections.
            slot.callers.close_all().await;
            predecessor.ended().await;
            slot.finished.cancel();
        });
    }

    pub(crate) fn slot(&self, server: &str) -> Option<Arc<ServerSlot>> {
        self.servers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(server)
            .cloned()
    }

    /// `text` as the records of `server` may keep it: its secrets hidden, and every URL's
    /// credentials and query values (a resource's URI may carry a token).
    pub fn redact(&self, server: &str, text: &str) -> String {
        match self.slot(server) {
            Some(slot) => slot.redactor.redact(text),
            None => mcplex_config::redact_urls(text),
        }
    }

    /// The call timeout that applies to `server`.
    pub fn call_timeout(&self, server: &str) -> Duration {
        self.slot(server).map_or(self.call_timeout, |slot| {
            slot.config.effective_call_timeout(self.call_timeout)
        })
    }

    /// Notices from every upstream, from now on.
    pub fn notices(&self) -> broadcast::Receiver<UpstreamNotice> {
        self.notices.subscribe()
    }

    /// Stops every supervisor and terminates every upstream (whole process groups), then returns.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        self.tasks.close();
        self.tasks.wait().await;
    }
}

/// Records `health` for "not connected" errors and reports it.
pub(crate) fn set_health(slot: &ServerSlot, emit: &impl Fn(UpstreamReport), health: ServerHealth) {
    *slot.health.lock().unwrap_or_else(PoisonError::into_inner) = health.clone();
    emit(UpstreamReport::Health(health));
}

fn set_connection(slot: &ServerSlot, connection: Option<Arc<RpcConnection>>) {
    *slot
        .connection
        .write()
        .unwrap_or_else(PoisonError::into_inner) = connection;
}

/// Keeps one server connected until the gateway shuts down: a login when it needs one, a
/// connection served until it is lost, a backoff after each failure.
async fn supervise(
    slot: Arc<ServerSlot>,
    builtin: Option<BuiltinConnector>,
    logins: Option<Arc<Logins>>,
    events: mpsc::UnboundedSender<UpstreamEvent>,
    notices: broadcast::Sender<UpstreamNotice>,
    shutdown: CancellationToken,
) {
    let mut logins_changed = logins.as_ref().map(|l| l.subscribe());
    let name = slot.config.name.clone();
    let emit = |report: UpstreamReport| {
        let _ = events.send(UpstreamEvent {
            server: name.clone(),
            report,
        });
    };
    set_health(&slot, &emit, ServerHealth::Connecting);
    let mut failures: u32 = 0;
    let mut announced: Option<String> = None;
    loop {
        let login = await_login(
            &slot,
            &emit,
            &mut announced,
            logins_changed.as_mut(),
            &shutdown,
        );
        let bearer = match login.await {
            Login::Ready(bearer) => bearer,
            Login::Waited => {
                failures = 0;
                continue;
            }
            Login::Failed(reason) => {
                let failure = (ServerEventKind::Failed, reason);
                if !back_off(&slot, &emit, &mut failures, failure, &shutdown).await {
                    return;
                }
                continue;
            }
            Login::Stopped => return,
        };
        let connection = Connection {
            slot: &slot,
            emit: &emit,
            notices: &notices,
            shutdown: &shutdown,
        };
        let attempt =
            connection.open_and_serve(builtin.as_ref(), bearer.as_ref(), logins_changed.as_mut());
        let failure = match attempt.await {
            Attempt::Lost(reason) => {
                failures = 0;
                (ServerEventKind::Lost, reason)
            }
            Attempt::Failed(reason) => (ServerEventKind::Failed, reason),
            Attempt::Stopped => return,
        };
        if needs_login_now(&slot, logins.as_deref()).await {
            continue;
        }
        if !back_off(&slot, &emit, &mut failures, failure, &shutdown).await {
            return;
        }
    }
}

/// How one connection attempt ended.
enum Attempt {
    /// It never became ready.
    Failed(String),
    /// It was ready, then was lost.
    Lost(String),
    /// The gateway is shutting down.
    Stopped,
}

/// What one connection attempt reports through and stops with.
struct Connection<'a, E> {
    slot: &'a ServerSlot,
    emit: &'a E,
    notices: &'a broadcast::Sender<UpstreamNotice>,
    shutdown: &'a CancellationToken,
}

impl<E: Fn(UpstreamReport)> Connection<'_, E> {
    /// Opens a connection within `init_timeout` and, once it is ready, serves it until it is
    /// lost.
    async fn open_and_serve(
        &self,
        builtin: Option<&BuiltinConnector>,
        bearer: Option<&mcplex_oauth::Secret>,
        logins_changed: Option<&mut watch::Receiver<u64>>,
    ) -> Attempt {
        let slot = self.slot;
        slot.record(ServerEventKind::Connecting, None);
        let (notifications_tx, mut notifications) = notifications::channel(&slot.config.name);
        let init_timeout = slot.config.init_timeout;
        let opened = tokio::select! {
            biased;
            () = self.shutdown.cancelled() => return Attempt::Stopped,
            opened = tokio::time::timeout(init_timeout, open(slot, builtin, bearer, notifications_tx)) => opened,
        };
        let (connection, handshake, tools, offer) = match opened {
            Ok(Ok(opened)) => opened,
            Ok(Err(error)) => return Attempt::Failed(error.to_string()),
            Err(_) => {
                let secs = init_timeout.as_secs_f32();
                return Attempt::Failed(format!("not ready within init_timeout ({secs}s)"));
            }
        };
        tracing::info!(
            server = %slot.config.name,
            tools = tools.len(),
            protocol = %handshake.protocol_version,
            upstream = %slot.redactor.redact(&handshake.server_info.to_string()),
            "upstream ready"
        );
        set_connection(slot, Some(connection.clone()));
        *slot.health.lock().unwrap_or_else(PoisonError::into_inner) = ServerHealth::Ready;
        let ready = format!(
            "{} tools, protocol {}",
            tools.len(),
            handshake.protocol_version
        );
        slot.record(ServerEventKind::Ready, Some(slot.redactor.redact(&ready)));
        let listed = Listed {
            tools: Arc::new(tools),
            offer: Arc::new(offer),
        };
        (self.emit)(listed.report());
        let watch = Watch {
            slot,
            connection: &connection,
            logins_changed: logins_changed.filter(|_| slot.login().is_some()),
            shutdown: self.shutdown,
        };
        let ended = serve(watch, &mut notifications, listed, self.emit, self.notices).await;
        set_connection(slot, None);
        connection.shutdown().await;
        ended.map_or(Attempt::Stopped, Attempt::Lost)
    }
}
