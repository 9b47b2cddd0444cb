//! What the supervisor asks before it connects an OAuth server: whether its login gives a
//! token now, needs a person (said once per reason, then waiting for the logins to change), or
//! failed for a while; and after a connection ended, whether it needs a login now. Also
//! a slot's login, and taking up a server that asked for a login its config did not announce.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use mcplex_config::ServerConfig;
use mcplex_oauth::{Logins, Secret, ServerLogin};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use mcplex_protocol::ServerHealth;

use crate::UpstreamReport;
use crate::supervisor::{ServerSlot, set_health};

/// Whether an OAuth server can connect now.
pub(crate) enum LoginCheck {
    /// Yes, with this token (none for a server that is not OAuth).
    Ready(Option<Secret>),
    /// Only a person can fix it.
    NeedsLogin(String),
    /// The authorization server failed; retried with backoff.
    Failed(String),
}

/// Whether `config`'s server can connect now with `login` (`None`: it has none: not an OAuth
/// server, unless its config says it is).
pub(crate) async fn check_login(config: &ServerConfig, login: Option<&ServerLogin>) -> LoginCheck {
    let Some(login) = login else {
        return if config.oauth.is_none() {
            LoginCheck::Ready(None)
        } else {
            LoginCheck::NeedsLogin("this gateway has no token store for OAuth logins".into())
        };
    };
    match login.bearer().await {
        Ok(token) => LoginCheck::Ready(Some(token)),
        Err(e) if e.needs_login() => LoginCheck::NeedsLogin(format!(
            "{e}{}",
            if e.to_string().contains("mcplex auth login") {
                String::new()
            } else {
                format!("; run `mcplex auth login {}`", config.name)
            }
        )),
        Err(e) => LoginCheck::Failed(e.to_string()),
    }
}

/// Waits until the logins change; false when the gateway shuts down first.
pub(crate) async fn logins_change(
    changes: Option<&mut watch::Receiver<u64>>,
    shutdown: &CancellationToken,
) -> bool {
    match changes {
        Some(changes) => tokio::select! {
            changed = changes.changed() => changed.is_ok() || { shutdown.cancelled().await; false },
            () = shutdown.cancelled() => false,
        },
        None => {
            shutdown.cancelled().await;
            false
        }
    }
}

/// Returns when the logins change; never without a receiver (a server that is not OAuth).
pub(crate) async fn login_change(changes: Option<&mut watch::Receiver<u64>>) {
    let changed = match changes {
        Some(changes) => changes.changed().await.is_ok(),
        None => false,
    };
    if !changed {
        std::future::pending::<()>().await;
    }
}

impl ServerSlot {
    /// Its login, if it has one (see [`ServerSlot::login`]'s field).
    pub(crate) fn login(&self) -> Option<Arc<ServerLogin>> {
        self.login
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// After a failed connection: when the server asked for an OAuth login that its config did
    /// not announce, it gets one (from `logins`); true when it did.
    pub(crate) fn take_up_login(&self, logins: Option<&Logins>) -> bool {
        if !self.challenged.swap(false, Ordering::AcqRel) || self.login().is_some() {
            return false;
        }
        let Some(login) = logins.and_then(|l| l.for_url_server(&self.config)) else {
            return false;
        };
        tracing::info!(
            server = %self.config.name,
            "the server asks for an OAuth login (HTTP 401 with a Bearer challenge): it is an OAuth server"
        );
        *self.login.write().unwrap_or_else(PoisonError::into_inner) = Some(login);
        true
    }
}

/// The `WWW-Authenticate` challenge a URL server answers an unauthenticated MCP request with
/// (a `ping`), when it answers 401 with one: where an OAuth login's discovery starts. `None`
/// when it answers otherwise or not at all (discovery then tries the well-known URLs).
pub async fn oauth_challenge(server_url: &str) -> Option<String> {
    let http = mcplex_oauth::http_client().ok()?;
    let ping = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "ping"});
    let response = http
        .post(server_url)
        .header(
            reqwest::header::ACCEPT,
            "application/json, text/event-stream",
        )
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(ping.to_string())
        .send()
        .await
        .ok()?;
    if response.status() != reqwest::StatusCode::UNAUTHORIZED {
        return None;
    }
    response
        .headers()
        .get_all(reqwest::header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.trim_start().to_ascii_lowercase().starts_with("bearer"))
        .map(str::to_owned)
}

/// Where a server's login stands before a connection attempt.
pub(crate) enum Login {
    /// Go ahead, with this bearer (none for a server that is not OAuth).
    Ready(Option<Secret>),
    /// It needed a person; the logins changed since, so check again.
    Waited,
    /// The authorization server failed: back off.
    Failed(String),
    /// The gateway is shutting down.
    Stopped,
}

/// Checks the server's login; when only a person can fix it, says so (once per reason) and
/// waits until the logins change.
pub(crate) async fn await_login(
    slot: &ServerSlot,
    emit: &impl Fn(UpstreamReport),
    announced: &mut Option<String>,
    logins_changed: Option<&mut watch::Receiver<u64>>,
    shutdown: &CancellationToken,
) -> Login {
    match check_login(&slot.config, slot.login().as_deref()).await {
        LoginCheck::Ready(bearer) => {
            *announced = None;
            Login::Ready(bearer)
        }
        LoginCheck::NeedsLogin(reason) => {
            let reason = slot.redactor.redact(&reason);
            if announced.as_ref() != Some(&reason) {
                let name = &slot.config.name;
                tracing::warn!(server = %name, "upstream needs an OAuth login: {reason}");
                *announced = Some(reason.clone());
            }
            set_health(slot, emit, ServerHealth::NeedsLogin { reason });
            if logins_change(logins_changed, shutdown).await {
                Login::Waited
            } else {
                Login::Stopped
            }
        }
        LoginCheck::Failed(reason) => Login::Failed(reason),
    }
}

/// Whether a connection that just ended needs a login before the next attempt (which is then
/// not a failure to back off from): a server that asked for one it was not configured for, or
/// one whose login is gone.
pub(crate) async fn needs_login_now(slot: &ServerSlot, logins: Option<&Logins>) -> bool {
    if slot.take_up_login(logins) {
        return true;
    }
    match slot.login() {
        Some(login) => matches!(
            check_login(&slot.config, Some(&login)).await,
            LoginCheck::NeedsLogin(_)
        ),
        None => false,
    }
}
