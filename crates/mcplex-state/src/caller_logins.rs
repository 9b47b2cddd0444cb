//! Each caller's own OAuth login to a `per_user` upstream (an agent token, an OAuth subject,
//! the operator), sealed like the gateway's logins (`logins.rs`): under the token key, with the
//! server's and the caller's names as associated data, so that a row moved to another server or
//! another caller does not open. Writes move the control plane's generation, so every replica
//! picks up a connection, a refresh or a revocation.

use crate::logins::{open, seal};
use crate::sql::{Mode, Param};
use crate::tokens::now_unix;
use crate::{StateError, Store};

/// A caller's stored login, as listed (nothing secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallerLoginRow {
    pub server: String,
    pub caller: String,
    /// Unix seconds of the last write (the login or a refresh).
    pub updated_at: i64,
}

/// What a row is sealed for: the server and the caller (neither name holds a NUL).
fn bound_to(server: &str, caller: &str) -> String {
    format!("{server}\0{caller}")
}

impl Store {
    /// `caller`'s opened login to `server`, if one is stored.
    pub fn caller_login(&self, server: &str, caller: &str) -> Result<Option<Vec<u8>>, StateError> {
        let row = self.db.transaction(Mode::Read, |tx| {
            tx.query_first(
                "SELECT sealed FROM caller_logins WHERE server = ?1 AND caller = ?2",
                &[Param::Text(server), Param::Text(caller)],
            )
        })?;
        let Some(row) = row else { return Ok(None) };
        let sealed = row.bytes(0)?;
        open(&self.token_key()?, &bound_to(server, caller), &sealed).map(Some)
    }

    /// Stores `caller`'s `login` to `server` (replacing any), sealed, with a generation bump.
    pub fn put_caller_login(
        &self,
        server: &str,
        caller: &str,
        login: &[u8],
    ) -> Result<(), StateError> {
        let sealed = seal(&self.token_key()?, &bound_to(server, caller), login)?;
        let now = now_unix();
        self.db.transaction(Mode::Write, |tx| {
            tx.execute(
                "INSERT INTO caller_logins (server, caller, sealed, updated_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (server, caller) DO UPDATE SET sealed = ?3, updated_at = ?4",
                &[
                    Param::Text(server),
                    Param::Text(caller),
                    Param::Bytes(&sealed),
                    Param::Int(now),
                ],
            )?;
            crate::control::bump_generation(tx)
        })
    }

    /// Replaces `caller`'s login to `server` only if one is stored (a refresh), sealed, with a
    /// generation bump; false when it is gone (disconnected or revoked meanwhile).
    pub fn update_caller_login(
        &self,
        server: &str,
        caller: &str,
        login: &[u8],
    ) -> Result<bool, StateError> {
        let sealed = seal(&self.token_key()?, &bound_to(server, caller), login)?;
        let now = now_unix();
        self.db.transaction(Mode::Write, |tx| {
            let updated = tx.execute(
                "UPDATE caller_logins SET sealed = ?3, updated_at = ?4 WHERE server = ?1 AND caller = ?2",
                &[
                    Param::Text(server),
                    Param::Text(caller),
                    Param::Bytes(&sealed),
                    Param::Int(now),
                ],
            )?;
            if updated > 0 {
                crate::control::bump_generation(tx)?;
            }
            Ok(updated > 0)
        })
    }

    /// Forgets `caller`'s login to `server` (a disconnect, a revocation); false when there
    /// was none.
    pub fn delete_caller_login(&self, server: &str, caller: &str) -> Result<bool, StateError> {
        self.db.transaction(Mode::Write, |tx| {
            let deleted = tx.execute(
                "DELETE FROM caller_logins WHERE server = ?1 AND caller = ?2",
                &[Param::Text(server), Param::Text(caller)],
            )?;
            if deleted > 0 {
                crate::control::bump_generation(tx)?;
            }
            Ok(deleted > 0)
        })
    }

    /// Every caller's stored login, by server then caller.
    pub fn caller_logins(&self) -> Result<Vec<CallerLoginRow>, StateError> {
        self.caller_login_rows(None)
    }

    /// The callers' stored logins to `server`, by caller.
    pub fn caller_logins_to(&self, server: &str) -> Result<Vec<CallerLoginRow>, StateError> {
        self.caller_login_rows(Some(server))
    }

    fn caller_login_rows(&self, server: Option<&str>) -> Result<Vec<CallerLoginRow>, StateError> {
        let rows = self.db.transaction(Mode::Read, |tx| match server {
            Some(server) => tx.query(
                "SELECT server, caller, updated_at FROM caller_logins WHERE server = ?1 \
                 ORDER BY caller",
                &[Param::Text(server)],
            ),
            None => tx.query(
                "SELECT server, caller, updated_at FROM caller_logins ORDER BY server, caller",
                &[],
            ),
        })?;
        rows.iter()
            .map(|row| {
                Ok(CallerLoginRow {
                    server: row.text(0)?,
                    caller: row.text(1)?,
                    updated_at: row.int(2)?,
                })
            })
            .collect()
    }
}
