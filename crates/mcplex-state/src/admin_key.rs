//! The admin API key, as the store keeps it: never in the database. A data directory keeps the
//! key itself in its 0600 `api_key` file (the single-machine default, where the operator finds
//! it); a PostgreSQL store keeps only a verifier, the key's keyed hash, so that no database
//! reader or backup holds the operator's key. A PostgreSQL store's key is shown once, by the
//! process that creates it or by `mcplex apikey rotate`. Gateways work from the verifier alone:
//! they check presented keys against it, sign dashboard sessions with it and prove with it that
//! they hold the key.

use crate::sql::{Mode, Param};
use crate::store::Location;
use crate::{StateError, Store};

/// The store's admin key as a gateway needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminKey {
    /// The key's keyed hash.
    pub verifier: String,
    /// The key itself, when this call created it (a new PostgreSQL store): to be shown once.
    pub created: Option<String>,
}

const VERIFIER_ROW: &str = "api_key_verifier";
/// Where releases before this one kept a PostgreSQL store's key in clear.
const CLEAR_ROW: &str = "api_key";

fn fresh_key() -> Result<String, StateError> {
    Ok(format!(
        "mcplex_admin_{}",
        mcplex_trust::hex(&crate::secret::random_bytes(32)?)
    ))
}

impl Store {
    /// The admin key's verifier, the key created first if there is none. A PostgreSQL store
    /// that still holds a key in clear (an earlier release wrote it) keeps only its verifier
    /// from now on.
    pub fn admin_key(&self) -> Result<AdminKey, StateError> {
        if let Location::Directory(dir) = self.location() {
            let key = crate::dir::api_key(dir)?;
            return Ok(AdminKey {
                verifier: self.token_mac(&key),
                created: None,
            });
        }
        let select = "SELECT value FROM meta WHERE key = ?1";
        let text = |row: Option<crate::sql::Row>| -> Result<Option<String>, StateError> {
            Ok(row
                .map(|row| row.bytes(0))
                .transpose()?
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned()))
        };
        // The common case (a verifier, no key in clear) reads only: no write lock per reload.
        let (verifier, clear) = self.db.transaction(Mode::Read, |tx| {
            Ok((
                text(tx.query_first(select, &[Param::Text(VERIFIER_ROW)])?)?,
                text(tx.query_first(select, &[Param::Text(CLEAR_ROW)])?)?,
            ))
        })?;
        if let (Some(verifier), None) = (verifier, clear) {
            return Ok(AdminKey {
                verifier,
                created: None,
            });
        }
        let fresh = fresh_key()?;
        let fresh_verifier = self.token_mac(&fresh);
        self.db.transaction(Mode::Write, |tx| {
            let verifier = text(tx.query_first(select, &[Param::Text(VERIFIER_ROW)])?)?;
            let clear = text(tx.query_first(select, &[Param::Text(CLEAR_ROW)])?)?;
            // A key in clear never stays: an earlier release wrote it (its own store's key, or a
            // new one an old replica made up); the verifier, when there is one, is the key.
            tx.execute("DELETE FROM meta WHERE key = ?1", &[Param::Text(CLEAR_ROW)])?;
            if let Some(verifier) = verifier {
                return Ok(AdminKey {
                    verifier,
                    created: None,
                });
            }
            let (verifier, created) = match clear {
                Some(key) => (self.token_mac(&key), None),
                None => (fresh_verifier.clone(), Some(fresh.clone())),
            };
            tx.execute(
                "INSERT INTO meta (key, value) VALUES (?1, ?2)",
                &[Param::Text(VERIFIER_ROW), Param::Bytes(verifier.as_bytes())],
            )?;
            Ok(AdminKey { verifier, created })
        })
    }

    /// The admin key's verifier as the store holds it now, created by nobody (`None`: the store
    /// has none yet). What a running gateway re-reads: only a start may make a key, and show it.
    pub fn current_admin_verifier(&self) -> Result<Option<String>, StateError> {
        if let Location::Directory(dir) = self.location() {
            let key = crate::dir::api_key(dir)?;
            return Ok(Some(self.token_mac(&key)));
        }
        self.db.transaction(Mode::Read, |tx| {
            let row = tx.query_first(
                "SELECT value FROM meta WHERE key = ?1",
                &[Param::Text(VERIFIER_ROW)],
            )?;
            Ok(row
                .map(|row| row.bytes(0))
                .transpose()?
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned()))
        })
    }

    /// The admin key itself, where the store keeps it (a data directory's file); `None` for a
    /// PostgreSQL store, which keeps only its verifier.
    pub fn known_admin_key(&self) -> Result<Option<String>, StateError> {
        match self.location() {
            Location::Directory(dir) => crate::dir::api_key(dir).map(Some),
            Location::Postgres(_) => Ok(None),
        }
    }

    /// Whether `presented` is the admin key of `verifier`.
    pub fn is_admin_key(&self, presented: &str, verifier: &str) -> bool {
        crate::secret::same_text(&self.token_mac(presented), verifier)
    }

    /// Replaces the admin key with a new one, returned to be shown once. Every gateway of the
    /// store takes the new one within the control plane's second; the old one, and every
    /// dashboard session opened with it, stop working.
    pub fn rotate_admin_key(&self) -> Result<String, StateError> {
        let key = fresh_key()?;
        self.install_admin_key(&key)?;
        Ok(key)
    }

    /// Takes `key`, which the operator gives (`MCPLEX_API_KEY` when a gateway starts), as the
    /// store's admin key, kept as a key it made is (the data directory's file, a PostgreSQL
    /// store's verifier) and never shown. A store that holds another key has it replaced, as a
    /// rotation does: the key given is the one the operator declares.
    pub fn give_admin_key(&self, key: &str) -> Result<(AdminKey, GivenKey), StateError> {
        let verifier = self.token_mac(key);
        // The verifier of the key the store holds, and whether a key in clear (an earlier
        // release's) is to go whatever the key given is.
        let (held, clear) = match self.location() {
            Location::Directory(dir) => {
                let held = dir
                    .join(crate::API_KEY_FILE)
                    .exists()
                    .then(|| crate::dir::api_key(dir).map(|held| self.token_mac(&held)))
                    .transpose()?;
                (held, false)
            }
            Location::Postgres(_) => {
                let rows = self.admin_key_rows()?;
                (rows.verifier, rows.clear)
            }
        };
        let given = match held {
            Some(held) if crate::secret::same_text(&held, &verifier) => GivenKey::Same,
            Some(_) => GivenKey::Replaced,
            None if clear => GivenKey::Replaced,
            None => GivenKey::First,
        };
        if given != GivenKey::Same || clear {
            self.install_admin_key(key)?;
        }
        let key = AdminKey {
            verifier,
            created: None,
        };
        Ok((key, given))
    }

    /// What a PostgreSQL store's `meta` holds of the admin key.
    fn admin_key_rows(&self) -> Result<HeldRows, StateError> {
        self.db.transaction(Mode::Read, |tx| {
            let verifier = tx
                .query_first(
                    "SELECT value FROM meta WHERE key = ?1",
                    &[Param::Text(VERIFIER_ROW)],
                )?
                .map(|row| row.bytes(0))
                .transpose()?
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
            let clear = tx
                .query_first(
                    "SELECT 1 FROM meta WHERE key = ?1",
                    &[Param::Text(CLEAR_ROW)],
                )?
                .is_some();
            Ok(HeldRows { verifier, clear })
        })
    }

    /// Makes `key` the store's admin key: its file (a data directory) or its verifier (a
    /// PostgreSQL store, any key in clear dropped), and the control plane moved so that every
    /// gateway of the store takes it.
    fn install_admin_key(&self, key: &str) -> Result<(), StateError> {
        if let Location::Directory(dir) = self.location() {
            crate::dir::replace_api_key(dir, key)?;
        }
        let verifier = self.token_mac(key);
        let postgres = matches!(self.location(), Location::Postgres(_));
        self.db.transaction(Mode::Write, |tx| {
            if postgres {
                tx.execute(
                    "DELETE FROM meta WHERE key = ?1 OR key = ?2",
                    &[Param::Text(VERIFIER_ROW), Param::Text(CLEAR_ROW)],
                )?;
                tx.execute(
                    "INSERT INTO meta (key, value) VALUES (?1, ?2)",
                    &[Param::Text(VERIFIER_ROW), Param::Bytes(verifier.as_bytes())],
                )?;
            }
            crate::control::bump_generation(tx)
        })
    }
}

/// How a store took the admin key an operator gave ([`Store::give_admin_key`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GivenKey {
    /// The store had no key: the one given is its first.
    First,
    /// The store's key was already the one given.
    Same,
    /// The store held another key, which stopped working on every gateway of the store, and
    /// every dashboard session opened with it.
    Replaced,
}

/// A PostgreSQL store's admin key rows: the verifier, and whether a key in clear is there.
struct HeldRows {
    verifier: Option<String>,
    clear: bool,
}
