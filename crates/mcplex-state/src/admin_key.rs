//! The admin API key, as the store keeps it: never in the database. A data directory keeps the
//! key itself in its 0600 `api_key` file (the single-machine default, where the operator finds
//! it); a PostgreSQL store keeps only a verifier, the key's keyed hash, so that no database
//! reader or backup holds the operator's key. A PostgreSQL store's key is shown once, by the
//! process that creates it or by `mcplex apikey rotate`; or the operator gives it (a gateway's
//! `--api-key-file`), and the store takes it in place of any other, showing nothing. Gateways
//! work from the verifier alone: they check presented keys against it, sign dashboard sessions
//! with it and prove with it that they hold the key.

use crate::sql::{Mode, Param, Tx};
use crate::store::Location;
use crate::{StateError, Store};

/// The store's admin key as a gateway needs it.
#[derive(Clone, PartialEq, Eq)]
pub struct AdminKey {
    /// The key's keyed hash.
    pub verifier: String,
    /// The key itself, when this call created it (a new PostgreSQL store): to be shown once,
    /// and never in this type's `Debug`.
    pub created: Option<String>,
}

impl std::fmt::Debug for AdminKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminKey")
            .field("verifier", &self.verifier)
            .field(
                "created",
                &self.created.as_ref().map(|_| mcplex_config::REDACTED),
            )
            .finish()
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

const VERIFIER_ROW: &str = "api_key_verifier";
/// Where releases before this one kept a PostgreSQL store's key in clear.
const CLEAR_ROW: &str = "api_key";

fn fresh_key() -> Result<String, StateError> {
    Ok(format!(
        "mcplex_admin_{}",
        mcplex_trust::hex(&crate::secret::random_bytes(32)?)
    ))
}

/// What a PostgreSQL store's `meta` holds of the admin key.
struct HeldRows {
    verifier: Option<String>,
    /// A key in clear, as an earlier release wrote it: never to stay.
    clear: Option<String>,
}

fn held_rows(tx: &mut dyn Tx) -> Result<HeldRows, StateError> {
    let mut text = |row: &str| -> Result<Option<String>, StateError> {
        Ok(tx
            .query_first("SELECT value FROM meta WHERE key = ?1", &[Param::Text(row)])?
            .map(|row| row.bytes(0))
            .transpose()?
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned()))
    };
    Ok(HeldRows {
        verifier: text(VERIFIER_ROW)?,
        clear: text(CLEAR_ROW)?,
    })
}

/// Makes `verifier` the key's, dropping any key in clear.
fn set_verifier(tx: &mut dyn Tx, verifier: &str) -> Result<(), StateError> {
    tx.execute(
        "DELETE FROM meta WHERE key = ?1 OR key = ?2",
        &[Param::Text(VERIFIER_ROW), Param::Text(CLEAR_ROW)],
    )?;
    tx.execute(
        "INSERT INTO meta (key, value) VALUES (?1, ?2)",
        &[Param::Text(VERIFIER_ROW), Param::Bytes(verifier.as_bytes())],
    )?;
    Ok(())
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
        // The common case (a verifier, no key in clear) reads only: no write lock per reload.
        if let HeldRows {
            verifier: Some(verifier),
            clear: None,
        } = self.db.transaction(Mode::Read, held_rows)?
        {
            return Ok(AdminKey {
                verifier,
                created: None,
            });
        }
        let fresh = fresh_key()?;
        let fresh_verifier = self.token_mac(&fresh);
        self.db.transaction(Mode::Write, |tx| {
            // A key in clear never stays: an earlier release wrote it (its own store's key, or a
            // new one an old replica made up); the verifier, when there is one, is the key.
            let (verifier, created) = match held_rows(tx)? {
                HeldRows {
                    verifier: Some(verifier),
                    ..
                } => (verifier, None),
                HeldRows {
                    clear: Some(key), ..
                } => (self.token_mac(&key), None),
                HeldRows { .. } => (fresh_verifier.clone(), Some(fresh.clone())),
            };
            set_verifier(tx, &verifier)?;
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
        self.db
            .transaction(Mode::Read, |tx| Ok(held_rows(tx)?.verifier))
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
        if let Location::Directory(dir) = self.location() {
            crate::dir::replace_api_key(dir, &key)?;
        }
        let verifier = self.token_mac(&key);
        let postgres = matches!(self.location(), Location::Postgres(_));
        self.db.transaction(Mode::Write, |tx| {
            if postgres {
                set_verifier(tx, &verifier)?;
            }
            crate::control::bump_generation(tx)
        })?;
        Ok(key)
    }

    /// Takes `key`, which the operator gives (a gateway's `--api-key-file`), as the store's
    /// admin key, kept as a key it made is (the data directory's file, a PostgreSQL store's
    /// verifier) and never shown. A store that holds another key has it replaced, as a rotation
    /// does: the key given is the one the operator declares. On PostgreSQL the key held is read
    /// and replaced in one transaction, so of two gateways started at once with different keys
    /// the second is told it replaced the first's.
    pub fn give_admin_key(&self, key: &str) -> Result<(AdminKey, GivenKey), StateError> {
        let verifier = self.token_mac(key);
        let judge = |held: Option<&str>| match held {
            Some(held) if crate::secret::same_text(held, &verifier) => GivenKey::Same,
            Some(_) => GivenKey::Replaced,
            None => GivenKey::First,
        };
        let taken = match self.location() {
            Location::Directory(dir) => {
                let held = crate::dir::read_api_key(dir)?.map(|held| self.token_mac(&held));
                let taken = judge(held.as_deref());
                if taken != GivenKey::Same {
                    crate::dir::replace_api_key(dir, key)?;
                    self.db
                        .transaction(Mode::Write, crate::control::bump_generation)?;
                }
                taken
            }
            Location::Postgres(_) => self.db.transaction(Mode::Write, |tx| {
                let held = held_rows(tx)?;
                let taken = match (&held.verifier, &held.clear) {
                    (None, Some(_)) => GivenKey::Replaced,
                    (verifier, _) => judge(verifier.as_deref()),
                };
                if taken != GivenKey::Same || held.clear.is_some() {
                    set_verifier(tx, &verifier)?;
                    crate::control::bump_generation(tx)?;
                }
                Ok(taken)
            })?,
        };
        let key = AdminKey {
            verifier,
            created: None,
        };
        Ok((key, taken))
    }
}
