//! Logins a person began in the dashboard and has not finished: what the OAuth crate's
//! `PendingLogin` serializes to, sealed like a login (under the token key, its `state` as
//! associated data), so that the authorization server's callback may reach any replica. Taken
//! once: a callback's `state` is good for one login, within the time the caller allows.

use crate::logins::{open, seal};
use crate::sql::{Mode, Param};
use crate::tokens::now_unix;
use crate::{StateError, Store};

/// The most logins that may wait at once.
pub const MAX_PENDING: i64 = 1000;

/// The associated data a pending login is sealed with: never a server's name.
fn sealed_as(state: &str) -> String {
    format!("pending login {state}")
}

impl Store {
    /// Keeps the pending login whose callback brings `state`, and forgets those begun more
    /// than `keep_secs` ago.
    pub fn put_pending_login(
        &self,
        state: &str,
        pending: &[u8],
        keep_secs: i64,
    ) -> Result<(), StateError> {
        let sealed = seal(&self.token_key()?, &sealed_as(state), pending)?;
        let now = now_unix();
        self.db.transaction(Mode::Write, |tx| {
            tx.execute(
                "DELETE FROM pending_logins WHERE begun_at < ?1",
                &[Param::Int(now - keep_secs)],
            )?;
            // Anyone may begin a sign-in: what waits is bounded, never the store's size.
            let waiting = tx
                .query_first("SELECT COUNT(*) FROM pending_logins", &[])?
                .map_or(Ok(0), |row| row.int(0))?;
            if waiting >= MAX_PENDING {
                return Err(StateError::Invalid(format!(
                    "{MAX_PENDING} logins are begun and not finished: try again in a few minutes"
                )));
            }
            tx.execute(
                "INSERT INTO pending_logins (state, sealed, begun_at) VALUES (?1, ?2, ?3)",
                &[Param::Text(state), Param::Bytes(&sealed), Param::Int(now)],
            )?;
            Ok(())
        })
    }

    /// The pending login `state` names, removed in the same transaction (a second callback
    /// with it finds nothing), if it was begun within `keep_secs`.
    pub fn take_pending_login(
        &self,
        state: &str,
        keep_secs: i64,
    ) -> Result<Option<Vec<u8>>, StateError> {
        let now = now_unix();
        let row = self.db.transaction(Mode::Write, |tx| {
            let row = tx.query_first(
                "SELECT sealed, begun_at FROM pending_logins WHERE state = ?1",
                &[Param::Text(state)],
            )?;
            if row.is_some() {
                tx.execute(
                    "DELETE FROM pending_logins WHERE state = ?1",
                    &[Param::Text(state)],
                )?;
            }
            Ok(row)
        })?;
        let Some(row) = row else { return Ok(None) };
        if row.int(1)? < now - keep_secs {
            return Ok(None);
        }
        open(&self.token_key()?, &sealed_as(state), &row.bytes(0)?).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::MAX_PENDING;
    use crate::Store;

    /// On SQLite (a PostgreSQL store seals under `MCPLEX_TOKEN_KEY`, which tests do not set
    /// process-wide; the SQL is the same text for both).
    #[test]
    fn a_pending_login_is_taken_once_and_what_waits_is_bounded() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let (store, _) = Store::open(dir.path()).expect("store");
            store.put_pending_login("s1", b"begun", 600).expect("keep");
            assert_eq!(
                store
                    .take_pending_login("s1", 600)
                    .expect("take")
                    .as_deref(),
                Some(&b"begun"[..])
            );
            assert_eq!(store.take_pending_login("s1", 600).expect("take"), None);
            for i in 0..MAX_PENDING {
                store
                    .put_pending_login(&format!("w{i}"), b"x", 600)
                    .expect("keep");
            }
            let refused = store
                .put_pending_login("one-more", b"x", 600)
                .expect_err("bounded");
            assert!(refused.to_string().contains("try again"), "{refused}");
            // Taking one makes room again.
            store.take_pending_login("w0", 600).expect("take");
            store
                .put_pending_login("one-more", b"x", 600)
                .expect("room");
        }
    }
}
