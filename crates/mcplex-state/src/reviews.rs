//! What an operator reviews before approving a tool: the definitions gateways observed, kept by
//! their pin hash, and for every tool the latest definition any gateway saw. Approval pins
//! exactly the hash the operator was shown: [`Store::approve_observed`] is a compare-and-set
//! against the latest observation, decided inside the store's transaction, so a tool that
//! changed again between review and approval is never approved blindly, whichever process
//! (CLI, API, another gateway) wrote last.

use crate::sql::{Mode, Param, Tx};
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
        self.db.transaction(Mode::Write, |tx| {
            for o in observations {
                tx.execute(
                    "INSERT INTO definitions (hash, definition) VALUES (?1, ?2)
                     ON CONFLICT (hash) DO NOTHING",
                    &[Param::Text(&o.hash), Param::Text(&o.definition)],
                )?;
                tx.execute(
                    "INSERT INTO observed (server, tool, hash, observed_at) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (server, tool) DO UPDATE SET hash = ?3, observed_at = ?4",
                    &[
                        Param::Text(&o.server),
                        Param::Text(&o.tool),
                        Param::Text(&o.hash),
                        Param::Int(now),
                    ],
                )?;
            }
            Ok(())
        })
    }

    /// The pinned and the latest observed definition of `server:tool`.
    pub fn review(&self, server: &str, tool: &str) -> Result<Review, StateError> {
        self.db.transaction(Mode::Read, |tx| {
            let record = tx.query_first(
                "SELECT pinned_hash, blocked FROM tools WHERE server = ?1 AND tool = ?2",
                &[Param::Text(server), Param::Text(tool)],
            )?;
            let (pinned_hash, blocked) = match record {
                Some(row) => (row.opt_text(0)?, row.flag(1)?),
                None => (None, false),
            };
            let pinned = match pinned_hash {
                Some(hash) => {
                    let text = definition(tx, &hash)?;
                    Some((hash, text))
                }
                None => None,
            };
            let observed = match latest_hash(tx, server, tool)? {
                Some(hash) => definition(tx, &hash)?.map(|text| (hash, text)),
                None => None,
            };
            Ok(Review {
                pinned,
                observed,
                blocked,
            })
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
        let now = now_unix();
        self.db.transaction(Mode::Write, |tx| {
            match latest_hash(tx, server, tool)? {
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
                &[
                    Param::Text(server),
                    Param::Text(tool),
                    Param::Text(hash),
                    Param::Int(now),
                ],
            )?;
            crate::control::bump_generation(tx)?;
            Ok(Ok(()))
        })
    }
}

/// The latest hash observed of `server:tool`.
fn latest_hash(tx: &mut dyn Tx, server: &str, tool: &str) -> Result<Option<String>, StateError> {
    tx.query_first(
        "SELECT hash FROM observed WHERE server = ?1 AND tool = ?2",
        &[Param::Text(server), Param::Text(tool)],
    )?
    .map(|row| row.text(0))
    .transpose()
}

/// The definition recorded under `hash`.
fn definition(tx: &mut dyn Tx, hash: &str) -> Result<Option<String>, StateError> {
    tx.query_first(
        "SELECT definition FROM definitions WHERE hash = ?1",
        &[Param::Text(hash)],
    )?
    .map(|row| row.text(0))
    .transpose()
}
