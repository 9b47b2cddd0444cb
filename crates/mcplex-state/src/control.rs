//! The control plane's bookkeeping in the store: the write generation that running gateways
//! follow, and the registry of running gateways that the CLI finds them by.
//!
//! Every write an operator's decision makes (approvals, pins, tokens) bumps `generation` in the
//! same transaction, so a reader that sees a new generation sees the write with it. A running
//! gateway polls the generation (one indexed row, microseconds) and reloads what it caches when
//! it moves; any process that writes the database (the CLI, another gateway) is followed the
//! same way.

use rusqlite::{OptionalExtension, Transaction, params};

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

/// Bumps the generation inside `tx`: the caller's write and the bump commit together.
pub(crate) fn bump_generation(tx: &Transaction<'_>) -> Result<(), StateError> {
    tx.execute(
        "UPDATE meta SET value = value + 1 WHERE key = 'generation'",
        [],
    )?;
    Ok(())
}

impl Store {
    /// The current write generation: it moves whenever approvals or tokens change, whoever
    /// wrote them.
    pub fn generation(&self) -> Result<i64, StateError> {
        let generation: Option<i64> = self
            .conn()
            .query_row(
                "SELECT value FROM meta WHERE key = 'generation'",
                [],
                |row| row.get(0),
            )
            .optional()?;
        Ok(generation.unwrap_or(0))
    }

    /// Registers a running gateway listening on `address`; returns its id.
    pub fn register_instance(&self, address: &str) -> Result<String, StateError> {
        let id = mcplex_trust::hex(&crate::secret::random_bytes(8)?);
        let now = now_unix();
        let conn = self.conn();
        // A gateway that died without deregistering and was never seen again is forgotten here.
        conn.execute(
            "DELETE FROM instances WHERE heartbeat_at < ?1",
            params![now - INSTANCE_STALE_AFTER_SECS * 4],
        )?;
        conn.execute(
            "INSERT INTO instances (id, address, pid, started_at, heartbeat_at)
             VALUES (?1, ?2, ?3, ?4, ?4)",
            params![id, address, std::process::id(), now],
        )?;
        Ok(id)
    }

    /// Records that the gateway `id` is alive; re-registers it if its row was removed.
    pub fn heartbeat(&self, id: &str, address: &str) -> Result<(), StateError> {
        let now = now_unix();
        let conn = self.conn();
        let updated = conn.execute(
            "UPDATE instances SET heartbeat_at = ?2 WHERE id = ?1",
            params![id, now],
        )?;
        if updated == 0 {
            conn.execute(
                "INSERT INTO instances (id, address, pid, started_at, heartbeat_at)
                 VALUES (?1, ?2, ?3, ?4, ?4)",
                params![id, address, std::process::id(), now],
            )?;
        }
        Ok(())
    }

    /// Removes the gateway `id` (at shutdown).
    pub fn deregister_instance(&self, id: &str) -> Result<(), StateError> {
        self.conn()
            .execute("DELETE FROM instances WHERE id = ?1", params![id])?;
        Ok(())
    }

    /// The gateways that sent a heartbeat recently, newest start first.
    pub fn live_instances(&self) -> Result<Vec<Instance>, StateError> {
        let conn = self.conn();
        let mut statement = conn.prepare(
            "SELECT id, address, pid, started_at, heartbeat_at FROM instances
             WHERE heartbeat_at >= ?1 ORDER BY started_at DESC, id",
        )?;
        let rows = statement.query_map(params![now_unix() - INSTANCE_STALE_AFTER_SECS], |row| {
            Ok(Instance {
                id: row.get(0)?,
                address: row.get(1)?,
                pid: row.get(2)?,
                started_at: row.get(3)?,
                heartbeat_at: row.get(4)?,
            })
        })?;
        let mut instances = Vec::new();
        for row in rows {
            instances.push(row?);
        }
        Ok(instances)
    }
}
