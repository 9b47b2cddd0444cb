//! The dashboard's ended sessions: a logout on any gateway of the store ends the session on
//! every other. A session itself is never stored (it is a signed value the browser holds; see
//! the dashboard's `sessions.rs`); a logout stores the session's keyed hash with the time the
//! session would have ended anyway, in one transaction with a generation bump, so every replica
//! re-reads the ended sessions within the control plane's second. Rows past their end are
//! deleted by the next logout: they can no longer open anything.

use crate::sql::{Mode, Param};
use crate::{StateError, Store};

impl Store {
    /// Records that the dashboard session whose keyed hash is `session` ended before its time,
    /// which was `ends_at`; forgets the records that are past their end at `now` (unix seconds).
    pub fn end_dashboard_session(
        &self,
        session: &str,
        ends_at: i64,
        now: i64,
    ) -> Result<(), StateError> {
        self.db.transaction(Mode::Write, |tx| {
            tx.execute(
                "DELETE FROM dashboard_logouts WHERE ends_at <= ?1",
                &[Param::Int(now)],
            )?;
            tx.execute(
                "INSERT INTO dashboard_logouts (session, ends_at) VALUES (?1, ?2)
                 ON CONFLICT (session) DO NOTHING",
                &[Param::Text(session), Param::Int(ends_at)],
            )?;
            crate::control::bump_generation(tx)
        })
    }

    /// The keyed hashes of the dashboard sessions that ended before their time and have not
    /// reached it at `now`, with that time (unix seconds).
    pub fn ended_dashboard_sessions(&self, now: i64) -> Result<Vec<(String, i64)>, StateError> {
        let rows = self.db.transaction(Mode::Read, |tx| {
            tx.query(
                "SELECT session, ends_at FROM dashboard_logouts WHERE ends_at > ?1",
                &[Param::Int(now)],
            )
        })?;
        rows.iter()
            .map(|row| Ok((row.text(0)?, row.int(1)?)))
            .collect()
    }
}
