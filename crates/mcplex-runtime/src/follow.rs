//! A serving gateway follows its store. The store is the one source of truth for approvals and
//! credentials (agent tokens, dashboard logouts); what the gateway holds in memory is a cache
//! of it. Any process may write the store
//! (the CLI, another gateway on the same data directory, this gateway's own API); each such
//! write moves the store's generation, and this task polls it: when it moves, the credentials are
//! reloaded at once (a revoked token's next request is refused, in open sessions too) and the
//! catalog task reloads the approvals and republishes (clients whose tools changed get
//! `list_changed`).
//!
//! It also registers the gateway in the store (its bound address, pid and start time) and keeps
//! a heartbeat there, so that the CLI finds the running gateway whatever flag, variable or file
//! set its address.
//!
//! Where the store has a change signal of its own (PostgreSQL's `LISTEN`/`NOTIFY`), a write
//! wakes the follower at once; the poll stays as the safety net.
//!
//! A store that cannot be read is logged loudly and the gateway goes on serving from the last
//! state it read, with `/readyz` at 503 (writes fail with 503: nothing is saved); when the
//! store answers again, everything is reloaded.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mcplex_state::{StateError, Store};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The in-memory copy of the store's credentials that a serving gateway checks requests
/// against (agent tokens, ended dashboard sessions); the follower refreshes it whenever the
/// store moves.
pub trait Credentials: Send + Sync + 'static {
    /// Re-reads the credentials from the store.
    fn reload_credentials(&self) -> Result<(), StateError>;
}

/// How often the generation is read: a write is in force on every gateway within this (plus a
/// reload), well inside the 1 s the control plane promises. One indexed row read per tick.
pub const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// How often the registration is refreshed; the CLI treats a gateway whose heartbeat is older
/// than [`mcplex_state::INSTANCE_STALE_AFTER_SECS`] as gone.
const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(3);

/// This machine's name (a pod's name on Kubernetes): with the port, what names a replica in the
/// audit log.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".to_owned())
}

/// The running follower; [`Follower::stop`] deregisters the gateway.
pub struct Follower {
    stop: CancellationToken,
    task: JoinHandle<()>,
    store: Arc<Store>,
    instance: String,
}

/// Registers the gateway listening on `address` and starts following `store`: `credentials`
/// are refreshed and `generation` set when the store moves; `reachable` says whether it answers.
pub fn start(
    store: Arc<Store>,
    credentials: Arc<dyn Credentials>,
    generation: watch::Sender<i64>,
    address: String,
    reachable: Arc<AtomicBool>,
) -> Result<Follower, StateError> {
    let instance = store.register_instance(&address)?;
    let stop = CancellationToken::new();
    let task = tokio::spawn(follow(
        store.clone(),
        credentials,
        generation,
        Registration {
            id: instance.clone(),
            address,
        },
        reachable,
        stop.clone(),
    ));
    Ok(Follower {
        stop,
        task,
        store,
        instance,
    })
}

impl Follower {
    /// This gateway's registration id in the store (unique per start).
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// Stops following and removes the gateway's registration.
    pub async fn stop(self) {
        self.stop.cancel();
        let _ = self.task.await;
        let (store, id) = (self.store, self.instance);
        let removed = tokio::task::spawn_blocking(move || store.deregister_instance(&id)).await;
        if let Ok(Err(e)) = removed {
            tracing::warn!("the gateway's registration could not be removed from its store: {e}");
        }
    }
}

struct Registration {
    id: String,
    address: String,
}

async fn follow(
    store: Arc<Store>,
    credentials: Arc<dyn Credentials>,
    generation: watch::Sender<i64>,
    registration: Registration,
    reachable: Arc<AtomicBool>,
    stop: CancellationToken,
) {
    // Where the store has a change signal (PostgreSQL's NOTIFY), a write is followed at once;
    // the poll stays as the safety net.
    let wake = Arc::new(tokio::sync::Notify::new());
    let _signal = {
        let wake = wake.clone();
        store.listen(move || wake.notify_one())
    };
    let mut follower = Following {
        store,
        credentials,
        generation,
        registration: Arc::new(registration),
        reachable,
        seen: None,
        store_lost: false,
        last_heartbeat: Instant::now(),
    };
    let mut tick = tokio::time::interval(POLL_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {}
            _ = wake.notified() => {}
        }
        if let Some(current) = follower.read_generation().await {
            follower.catch_up(current).await;
        }
        follower.beat().await;
    }
}

/// The follower's state between two reads of the store.
struct Following {
    store: Arc<Store>,
    credentials: Arc<dyn Credentials>,
    generation: watch::Sender<i64>,
    registration: Arc<Registration>,
    reachable: Arc<AtomicBool>,
    /// The generation whose writes are in force here.
    seen: Option<i64>,
    /// The last read failed (logged once, until the store answers again).
    store_lost: bool,
    last_heartbeat: Instant,
}

impl Following {
    /// The store's generation, or `None` when it cannot be read (logged once per outage, and
    /// `/readyz` turns 503). When the store answers again, everything is reloaded.
    async fn read_generation(&mut self) -> Option<i64> {
        let store = self.store.clone();
        let read = tokio::task::spawn_blocking(move || store.generation()).await;
        let current = match read {
            Ok(Ok(current)) => current,
            Ok(Err(e)) => {
                self.reachable.store(false, Ordering::Relaxed);
                if !self.store_lost {
                    tracing::error!(
                        "the store cannot be read ({e}): serving from the last state read; changes made elsewhere are not applied until it answers again"
                    );
                    self.store_lost = true;
                }
                return None;
            }
            Err(_) => return None,
        };
        self.reachable.store(true, Ordering::Relaxed);
        if self.store_lost {
            tracing::info!("the store answers again: reloading credentials and approvals");
            self.store_lost = false;
            self.seen = None;
        }
        Some(current)
    }

    /// When the store moved past what is in force: reloads the credentials, then hands the
    /// generation to the catalog task (which reloads the approvals). A failed reload is tried
    /// again at the next read.
    async fn catch_up(&mut self, current: i64) {
        if self.seen == Some(current) {
            return;
        }
        let credentials = self.credentials.clone();
        match tokio::task::spawn_blocking(move || credentials.reload_credentials()).await {
            Ok(Ok(())) => {
                self.seen = Some(current);
                self.generation.send_replace(current);
            }
            Ok(Err(e)) => tracing::error!("credentials could not be reloaded from the store: {e}"),
            Err(_) => {}
        }
    }

    /// Refreshes the registration every [`HEARTBEAT_INTERVAL`].
    async fn beat(&mut self) {
        if self.last_heartbeat.elapsed() < HEARTBEAT_INTERVAL {
            return;
        }
        self.last_heartbeat = Instant::now();
        let (store, registration) = (self.store.clone(), self.registration.clone());
        let beat = tokio::task::spawn_blocking(move || {
            store.heartbeat(&registration.id, &registration.address)
        })
        .await;
        if let Ok(Err(e)) = beat {
            tracing::warn!("the gateway's heartbeat could not be written to its store: {e}");
        }
    }
}
