//! The control plane's bookkeeping in the store: the write generation that running gateways
//! follow, and the registry of running gateways that the CLI finds them by.
//!
//! Every write an operator's decision makes (approvals, pins, tokens) bumps `generation` in the
//! same transaction, so a reader that sees a new generation sees the write with it. A running
//! gateway polls the generation (one indexed row, microseconds) and reloads what it caches when
//! it moves; any process that writes the database (the CLI, another gateway) is followed the
//! same way.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use postgres::fallible_iterator::FallibleIterator;

use crate::sql::{Db, Dialect, Mode, Param, Row, Tx};
use crate::tokens::now_unix;
use crate::{StateError, Store};

/// How long a registered gateway may go without a heartbeat before it counts as gone (a gateway
/// that was killed cannot deregister itself).
pub const INSTANCE_STALE_AFTER_SECS: i64 = 15;

/// A running gateway, as it registered itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// Unique per start.
    pub id: String,
    /// Where its HTTP listener answers (`host:port`, as bound).
    pub address: String,
    pub pid: u32,
    /// Unix seconds.
    pub started_at: i64,
    /// Unix seconds of its last heartbeat.
    pub heartbeat_at: i64,
}

/// The PostgreSQL channel a generation bump is announced on.
const CHANNEL: &str = "mcplex_generation";

/// Bumps the generation inside `tx`: the caller's write and the bump commit together. On
/// PostgreSQL, listeners are notified too (a notification is delivered at commit, never for a
/// transaction rolled back).
pub(crate) fn bump_generation(tx: &mut dyn Tx) -> Result<(), StateError> {
    tx.execute(
        "UPDATE counters SET value = value + 1 WHERE name = 'generation'",
        &[],
    )?;
    if tx.dialect() == Dialect::Postgres {
        tx.batch(&format!("NOTIFY {CHANNEL}"))?;
    }
    Ok(())
}

/// A running listener for the store's change signal; stops when dropped.
pub struct ChangeSignal {
    stop: Arc<AtomicBool>,
}

impl Drop for ChangeSignal {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Store {
    /// The current write generation: it moves whenever approvals or tokens change, whoever
    /// wrote them.
    pub fn generation(&self) -> Result<i64, StateError> {
        let row = self.db.transaction(Mode::Read, |tx| {
            tx.query_first("SELECT value FROM counters WHERE name = 'generation'", &[])
        })?;
        row.map_or(Ok(0), |row| row.int(0))
    }

    /// Calls `changed` soon after any process commits a write that moves the generation, where
    /// the store has a change signal of its own (PostgreSQL's `LISTEN`/`NOTIFY`); `None` where it
    /// has none (SQLite: poll [`Store::generation`]). A lost signal is reconnected; polling stays
    /// the safety net either way. The listener runs on a thread of its own.
    pub fn listen(&self, changed: impl Fn() + Send + 'static) -> Option<ChangeSignal> {
        let Db::Postgres(pg) = &self.db else {
            return None;
        };
        let target = pg.target().clone();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let spawned = std::thread::Builder::new()
            .name("mcplex-store-listen".into())
            .spawn(move || {
                while !stopped.load(Ordering::Relaxed) {
                    let listened = target.connect().and_then(|mut client| {
                        client.batch_execute(&format!("LISTEN {CHANNEL}"))?;
                        // Anything written while this was not listening is picked up now.
                        changed();
                        // A fresh one-second wait each round, so a stop is seen within a
                        // second; each notification is passed on as it arrives.
                        while !stopped.load(Ordering::Relaxed) && !client.is_closed() {
                            let mut notifications = client.notifications();
                            let mut round = notifications.timeout_iter(Duration::from_secs(1));
                            while let Some(notification) = round.next()? {
                                if notification.channel() == CHANNEL {
                                    changed();
                                }
                            }
                        }
                        Ok(())
                    });
                    if let Err(e) = listened {
                        tracing::debug!(
                            "the store's change signal was lost ({e}); polling meanwhile"
                        );
                        std::thread::sleep(Duration::from_secs(1));
                    }
                }
            });
        match spawned {
            Ok(_) => Some(ChangeSignal { stop }),
            Err(e) => {
                tracing::warn!("cannot listen for store changes ({e}); polling only");
                None
            }
        }
    }

    /// Registers a running gateway listening on `address`; returns its id.
    pub fn register_instance(&self, address: &str) -> Result<String, StateError> {
        let id = mcplex_trust::hex(&crate::secret::random_bytes(8)?);
        let now = now_unix();
        self.db.transaction(Mode::Write, |tx| {
            // A gateway that died without deregistering and was never seen again is forgotten.
            tx.execute(
                "DELETE FROM instances WHERE heartbeat_at < ?1",
                &[Param::Int(now - INSTANCE_STALE_AFTER_SECS * 4)],
            )?;
            insert_instance(tx, &id, address, now)
        })?;
        Ok(id)
    }

    /// Records that the gateway `id` is alive; re-registers it if its row was removed.
    pub fn heartbeat(&self, id: &str, address: &str) -> Result<(), StateError> {
        let now = now_unix();
        self.db.transaction(Mode::Write, |tx| {
            let updated = tx.execute(
                "UPDATE instances SET heartbeat_at = ?2 WHERE id = ?1",
                &[Param::Text(id), Param::Int(now)],
            )?;
            if updated == 0 {
                insert_instance(tx, id, address, now)?;
            }
            Ok(())
        })
    }

    /// Removes the gateway `id` (at shutdown).
    pub fn deregister_instance(&self, id: &str) -> Result<(), StateError> {
        self.db.transaction(Mode::Write, |tx| {
            tx.execute("DELETE FROM instances WHERE id = ?1", &[Param::Text(id)])?;
            // Its calls are over: the other gateways stop counting them at once.
            tx.execute(
                "DELETE FROM call_usage WHERE instance = ?1",
                &[Param::Text(id)],
            )?;
            Ok(())
        })
    }

    /// The gateways that sent a heartbeat recently, newest start first.
    pub fn live_instances(&self) -> Result<Vec<Instance>, StateError> {
        let since = now_unix() - INSTANCE_STALE_AFTER_SECS;
        let rows = self.db.transaction(Mode::Read, |tx| {
            tx.query(
                "SELECT id, address, pid, started_at, heartbeat_at FROM instances
                 WHERE heartbeat_at >= ?1 ORDER BY started_at DESC, id",
                &[Param::Int(since)],
            )
        })?;
        rows.iter().map(instance).collect()
    }
}

fn insert_instance(tx: &mut dyn Tx, id: &str, address: &str, now: i64) -> Result<(), StateError> {
    tx.execute(
        "INSERT INTO instances (id, address, pid, started_at, heartbeat_at)
         VALUES (?1, ?2, ?3, ?4, ?4)",
        &[
            Param::Text(id),
            Param::Text(address),
            Param::Int(i64::from(std::process::id())),
            Param::Int(now),
        ],
    )?;
    Ok(())
}

fn instance(row: &Row) -> Result<Instance, StateError> {
    Ok(Instance {
        id: row.text(0)?,
        address: row.text(1)?,
        pid: u32::try_from(row.int(2)?).unwrap_or_default(),
        started_at: row.int(3)?,
        heartbeat_at: row.int(4)?,
    })
}
