//! What an operator reviews before approving a tool: the definitions gateways observed, kept by
//! their pin hash, and for every tool the latest definition any gateway saw. Approval pins
//! exactly the hash the operator was shown: [`Store::approve_observed`] is a compare-and-set
//! against the latest observation, decided inside the store's transaction, so a tool that
//! changed again between review and approval is never approved blindly, whichever process
//! (CLI, API, another gateway) wrote last.

use rusqlite::{OptionalExtension, params};

use crate::tokens::now_unix;
use crate::{StateError, Store};

/// One tool's definition as a gateway observed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    pub server: String,
    pub tool: String,
    /// The pin hash of the definition.
    pub hash: String,
    /// The tool object as the upstream sent it (JSON text).
    pub definition: String,
}

/// Everything the store knows of one tool, for review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Review {
    /// The approved hash and its definition (when some gateway recorded it).
    pub pinned: Option<(String, Option<String>)>,
    /// The latest hash any gateway observed, and its definition.
    pub observed: Option<(String, String)>,
    pub blocked: bool,
}

/// Why an approval by hash was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApproveRefusal {
    /// No gateway has observed the tool: there is nothing to approve.
    NotObserved,
    /// The tool changed since it was shown; it now hashes to `current`.
    Changed { current: String },
}

impl Store {
    /// Records what a gateway sees of its tools (only what changed since it last recorded):
    /// definitions by hash, and each tool's latest hash. Not a decision: running gateways are not
    /// woken by it.
    pub fn record_observations(&self, observations: &[Observation]) -> Result<(), StateError> {
        if observations.is_empty() {
            return Ok(());
        }
        let now = now_unix();
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        for o in observations {
            tx.execute(
                "INSERT INTO definitions (hash, definition) VALUES (?1, ?2)
                 ON CONFLICT (hash) DO NOTHING",
                params![o.hash, o.definition],
            )?;
            tx.execute(
                "INSERT INTO observed (server, tool, hash, observed_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (server, tool) DO UPDATE SET hash = ?3, observed_at = ?4",
                params![o.server, o.tool, o.hash, now],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// The pinned and the latest observed definition of `server:tool`.
    pub fn review(&self, server: &str, tool: &str) -> Result<Review, StateError> {
        let conn = self.conn();
        let record: Option<(Option<String>, bool)> = conn
            .query_row(
                "SELECT pinned_hash, blocked FROM tools WHERE server = ?1 AND tool = ?2",
                params![server, tool],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()?;
        let definition = |hash: &str| -> Result<Option<String>, StateError> {
            Ok(conn
                .query_row(
                    "SELECT definition FROM definitions WHERE hash = ?1",
                    params![hash],
                    |row| row.get(0),
                )
                .optional()?)
        };
        let (pinned_hash, blocked) = record.unwrap_or((None, false));
        let pinned = match pinned_hash {
            Some(hash) => {
                let text = definition(&hash)?;
                Some((hash, text))
            }
            None => None,
        };
        let observed_hash = latest_hash(&conn, server, tool)?;
        let observed = match observed_hash {
            Some(hash) => definition(&hash)?.map(|text| (hash, text)),
            None => None,
        };
        Ok(Review {
            pinned,
            observed,
            blocked,
        })
    }

    /// Pins `hash` for `server:tool` (and lifts a block) if and only if it is the latest
    /// definition observed: the compare and the set are one transaction.
    pub fn approve_observed(
        &self,
        server: &str,
        tool: &str,
        hash: &str,
    ) -> Result<Result<(), ApproveRefusal>, StateError> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        match latest_hash(&tx, server, tool)? {
            None => return Ok(Err(ApproveRefusal::NotObserved)),
            Some(current) if current != hash => {
                return Ok(Err(ApproveRefusal::Changed { current }));
            }
            Some(_) => {}
        }
        tx.execute(
            "INSERT INTO tools (server, tool, pinned_hash, blocked, updated_at)
             VALUES (?1, ?2, ?3, 0, ?4)
             ON CONFLICT (server, tool) DO UPDATE SET pinned_hash = ?3, blocked = 0, updated_at = ?4",
            params![server, tool, hash, now_unix()],
        )?;
        crate::control::bump_generation(&tx)?;
        tx.commit()?;
        Ok(Ok(()))
    }
}

/// The latest hash observed of `server:tool`.
fn latest_hash(
    conn: &rusqlite::Connection,
    server: &str,
    tool: &str,
) -> Result<Option<String>, StateError> {
    Ok(conn
        .query_row(
            "SELECT hash FROM observed WHERE server = ?1 AND tool = ?2",
            params![server, tool],
            |row| row.get(0),
        )
        .optional()?)
}
