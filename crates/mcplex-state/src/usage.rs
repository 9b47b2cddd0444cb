//! The replicas' counts of limited callers' tool calls, exchanged through the store every
//! second so that a caller spread over several gateways is held to one limit. Each gateway owns
//! its rows (`call_usage`, keyed by its registration id) and replaces them whole; it reads the
//! rows of every other gateway whose heartbeat is recent, so a gateway that died stops counting
//! once the registry forgets it. What the counts mean is the dispatch crate's business.

use crate::sql::{Mode, Param, Row};
use crate::tokens::now_unix;
use crate::{INSTANCE_STALE_AFTER_SECS, StateError, Store};

/// One caller's counts in one class of tools, as one gateway counted them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageCount {
    pub caller: String,
    /// `all`, `write` or `destructive`.
    pub class: String,
    /// The number of the minute window `current_calls` were made in (wall clock).
    pub minute: i64,
    pub current_calls: i64,
    /// Calls in the window before it.
    pub previous_calls: i64,
    pub in_flight: i64,
}

impl Store {
    /// Replaces the rows of gateway `instance` with `mine` (when given: `None` leaves them as
    /// they are), drops every row older than minute `oldest`, and returns the rows of the
    /// other live gateways from minute `oldest` on.
    pub fn exchange_usage(
        &self,
        instance: &str,
        mine: Option<&[UsageCount]>,
        oldest: i64,
    ) -> Result<Vec<UsageCount>, StateError> {
        if let Some(mine) = mine {
            self.db.transaction(Mode::Write, |tx| {
                tx.execute(
                    "DELETE FROM call_usage WHERE instance = ?1 OR minute < ?2",
                    &[Param::Text(instance), Param::Int(oldest)],
                )?;
                for count in mine {
                    tx.execute(
                        "INSERT INTO call_usage (instance, caller, class, minute, current_calls, previous_calls, in_flight)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                        &[
                            Param::Text(instance),
                            Param::Text(&count.caller),
                            Param::Text(&count.class),
                            Param::Int(count.minute),
                            Param::Int(count.current_calls),
                            Param::Int(count.previous_calls),
                            Param::Int(count.in_flight),
                        ],
                    )?;
                }
                Ok(())
            })?;
        }
        let live_since = now_unix() - INSTANCE_STALE_AFTER_SECS;
        let rows = self.db.transaction(Mode::Read, |tx| {
            tx.query(
                "SELECT u.caller, u.class, u.minute, u.current_calls, u.previous_calls, u.in_flight
                 FROM call_usage u JOIN instances i ON i.id = u.instance
                 WHERE u.instance <> ?1 AND u.minute >= ?2 AND i.heartbeat_at >= ?3",
                &[
                    Param::Text(instance),
                    Param::Int(oldest),
                    Param::Int(live_since),
                ],
            )
        })?;
        rows.iter().map(usage_count).collect()
    }
}

fn usage_count(row: &Row) -> Result<UsageCount, StateError> {
    Ok(UsageCount {
        caller: row.text(0)?,
        class: row.text(1)?,
        minute: row.int(2)?,
        current_calls: row.int(3)?,
        previous_calls: row.int(4)?,
        in_flight: row.int(5)?,
    })
}
