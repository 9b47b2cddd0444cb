//! Each caller's own connection to a `per_user` OAuth server: opened at the caller's first
//! request with the caller's own login, or a token exchanged for the access token it presented
//! (never the gateway's, never another caller's), kept
//! while it is used, closed after [`IDLE`] without a request or when its login is gone. A
//! caller with no usable login gets [`UpstreamError::NotConnected`], carrying the link that
//! connects its account. The gateway's own connection (the supervisor's, with the operator's
//! login) lists the tools and serves the operator.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use mcplex_config::{PerUser, Transport};
use mcplex_oauth::{Logins, Secret};

use crate::connect::ShutdownOnDrop;
use crate::lifecycle;
use crate::rpc::RpcConnection;
use crate::supervisor::ServerSlot;
use crate::wire::http::{self, Bearer};
use crate::{ConnectError, UpstreamError};

/// A caller's connection unused this long is closed (the next request opens another).
pub(crate) const IDLE: Duration = Duration::from_secs(600);
/// Callers' connections held open at once per server; past it the least recently used closes.
pub(crate) const MAX_HELD: usize = 256;
/// The least time between two walks over the held connections (a request would walk them all).
const PRUNE_EVERY: Duration = Duration::from_secs(10);

/// One caller's connection, when it has one open.
#[derive(Default)]
struct Held {
    connection: Option<Arc<RpcConnection>>,
    last_used: Option<Instant>,
    /// The exchanged token it sends (token exchange): another token needs another connection.
    exchanged: Option<Secret>,
}

/// The callers' connections of one server.
#[derive(Default)]
pub(crate) struct CallerConnections {
    /// Each caller's cell; its async lock makes one caller's connection open once.
    by_caller: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Held>>>>,
    /// When the last walk was.
    pruned: Mutex<Option<Instant>>,
}

impl CallerConnections {
    fn cell(&self, caller: &str) -> Arc<tokio::sync::Mutex<Held>> {
        self.by_caller
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(caller.to_owned())
            .or_default()
            .clone()
    }

    /// Closes connections idle past [`IDLE`], and the least recently used past [`MAX_HELD`];
    /// cells in use are skipped. At most once per [`PRUNE_EVERY`], unless past the cap.
    fn prune(&self, now: Instant) {
        {
            let mut pruned = self.pruned.lock().unwrap_or_else(PoisonError::into_inner);
            let recent = pruned.is_some_and(|at| now.duration_since(at) < PRUNE_EVERY);
            let over = self
                .by_caller
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .len()
                > MAX_HELD;
            if recent && !over {
                return;
            }
            *pruned = Some(now);
        }
        let mut by_caller = self
            .by_caller
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut open: Vec<(Instant, String)> = Vec::new();
        by_caller.retain(|caller, cell| {
            // Another request holds the cell (it may be opening a connection into it).
            if Arc::strong_count(cell) > 1 {
                return true;
            }
            let Ok(mut held) = cell.try_lock() else {
                return true;
            };
            let last_used = held.last_used.unwrap_or(now);
            // A call in flight holds its connection: never closed under it.
            let in_use = held
                .connection
                .as_ref()
                .is_some_and(|c| Arc::strong_count(c) > 1);
            if in_use {
                return true;
            }
            if held.connection.is_none() || now.duration_since(last_used) >= IDLE {
                if let Some(connection) = held.connection.take() {
                    tokio::spawn(async move { connection.shutdown().await });
                }
                return false;
            }
            open.push((last_used, caller.clone()));
            true
        });
        if open.len() > MAX_HELD {
            open.sort();
            for (_, caller) in open.iter().take(open.len() - MAX_HELD) {
                if let Some(cell) = by_caller.remove(caller)
                    && let Ok(mut held) = cell.try_lock()
                    && let Some(connection) = held.connection.take()
                {
                    tokio::spawn(async move { connection.shutdown().await });
                }
            }
        }
    }

    /// Closes `caller`'s connection (its login is gone).
    async fn close(&self, caller: &str) {
        let cell = self
            .by_caller
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(caller);
        if let Some(cell) = cell
            && let Some(connection) = cell.lock().await.connection.take()
        {
            connection.shutdown().await;
        }
    }

    /// Every caller's connection, closed (the server stops).
    pub(crate) async fn close_all(&self) {
        let cells: Vec<_> = self
            .by_caller
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, cell)| cell)
            .collect();
        for cell in cells {
            if let Some(connection) = cell.lock().await.connection.take() {
                connection.shutdown().await;
            }
        }
    }
}

impl ServerSlot {
    /// `caller`'s own connection to this `per_user` server, with its own login or, on a
    /// token-exchange server, a token exchanged for `presented` (the access token the caller
    /// presented to the gateway).
    pub(crate) async fn caller_connection(
        &self,
        logins: Option<&Logins>,
        caller: &str,
        presented: Option<&Secret>,
    ) -> Result<Arc<RpcConnection>, UpstreamError> {
        let server = self.config.name.clone();
        let transport = |reason: String| UpstreamError::Transport {
            server: server.clone(),
            reason,
        };
        let logins = logins.ok_or_else(|| {
            transport("this gateway has no token store for its callers' credentials".to_owned())
        })?;
        let per_user = self.config.oauth.as_ref().and_then(|o| o.per_user);
        let credential = if per_user == Some(PerUser::TokenExchange) {
            let presented = presented.ok_or_else(|| {
                transport(format!(
                    "{server} acts with each caller's own OAuth access token (token exchange), and {caller} presented none: call with an access token of the gateway's issuer"
                ))
            })?;
            let gateway = self
                .login()
                .ok_or_else(|| transport("the server has no login of the gateway's".to_owned()))?;
            let token = logins
                .exchanges()
                .bearer(&gateway, caller, presented)
                .await
                .map_err(|e| transport(format!("the token exchange failed: {e}")))?;
            Bearer::Exchanged(token)
        } else {
            let login = logins.for_caller(&self.config, caller).ok_or_else(|| {
                transport("\"per_user\" needs a URL server with an \"oauth\" block".to_owned())
            })?;
            // Asked at every request: a revoked login ends the caller's connection at once.
            if let Err(e) = login.bearer().await {
                if !e.needs_login() {
                    return Err(transport(format!(
                        "the caller's login could not be renewed: {e}"
                    )));
                }
                self.callers.close(caller).await;
                return Err(UpstreamError::NotConnected {
                    link: logins.connect_link(&server, caller),
                    server,
                    caller: caller.to_owned(),
                });
            }
            Bearer::Login(login)
        };
        let now = Instant::now();
        let cell = self.callers.cell(caller);
        let connection = {
            let mut held = cell.lock().await;
            held.last_used = Some(now);
            let exchanged = match &credential {
                Bearer::Exchanged(token) => Some(token.clone()),
                _ => None,
            };
            let current = held
                .connection
                .clone()
                .filter(|c| !c.is_closed() && held.exchanged == exchanged);
            match current {
                Some(connection) => connection,
                None => {
                    if let Some(stale) = held.connection.take() {
                        tokio::spawn(async move { stale.shutdown().await });
                    }
                    let connection = self
                        .open_for_caller(credential)
                        .await
                        .map_err(|reason| transport(self.redactor.redact(&reason.to_string())))?;
                    held.connection = Some(connection.clone());
                    held.exchanged = exchanged;
                    connection
                }
            }
        };
        self.callers.prune(now);
        Ok(connection)
    }

    /// Opens a connection that sends the caller's own token: the handshake only (the gateway's
    /// own connection lists the tools).
    async fn open_for_caller(
        &self,
        credential: Bearer,
    ) -> Result<Arc<RpcConnection>, ConnectError> {
        let Transport::Http { url, headers, .. } = &self.config.transport else {
            return Err(ConnectError::PerUserNeedsHttp);
        };
        let server: Arc<str> = self.config.name.as_str().into();
        let wire = http::open(
            server.clone(),
            self.redactor.clone(),
            url,
            headers,
            credential,
            Arc::new(AtomicBool::new(false)),
        )?;
        // Nothing listens: listings and their changes come through the gateway's connection.
        let (notifications, _) = crate::rpc::notifications::channel(&server);
        let connection = RpcConnection::start(server, self.redactor.clone(), wire, notifications);
        if self.config.trace_context {
            connection.pass_trace_context_in_meta();
        }
        let guard = ShutdownOnDrop::new(connection.clone());
        tokio::time::timeout(
            self.config.init_timeout,
            lifecycle::open(&connection, self.config.lifecycle),
        )
        .await
        .map_err(|_| ConnectError::HandshakeTimeout)??;
        Ok(guard.defuse())
    }
}
