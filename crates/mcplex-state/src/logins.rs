//! OAuth logins of upstream servers (registration and tokens), sealed at rest: each row is
//! ChaCha20-Poly1305 (ring's AEAD) under the token key, with the server's name as associated
//! data so that a row moved to another server does not open. The key is never in the
//! database: `MCPLEX_TOKEN_KEY` (64 hex digits) when set, which a PostgreSQL store needs (every
//! replica must be given the same), else the data directory's `token_key` file (0600).
//! What is sealed is the caller's (the OAuth crate's serialized login); writes move the
//! control plane's generation, so every replica picks up a login, a logout or a refresh.

use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};

use crate::secret::random_bytes;
use crate::sql::{Mode, Param};
use crate::store::Location;
use crate::tokens::now_unix;
use crate::{StateError, Store};

/// The environment variable that holds the token key (64 hex digits).
pub const TOKEN_KEY_ENV: &str = "MCPLEX_TOKEN_KEY";

/// A stored login, as listed (nothing secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginRow {
    pub server: String,
    /// Unix seconds of the last write (a login or a refresh).
    pub updated_at: i64,
}

impl Store {
    /// The opened login of `server`, if one is stored. A row that does not open (another key,
    /// tampering) is an error, never a login.
    pub fn oauth_login(&self, server: &str) -> Result<Option<Vec<u8>>, StateError> {
        let row = self.db.transaction(Mode::Read, |tx| {
            tx.query_first(
                "SELECT sealed FROM oauth_logins WHERE server = ?1",
                &[Param::Text(server)],
            )
        })?;
        let Some(row) = row else { return Ok(None) };
        let sealed = row.bytes(0)?;
        open(&self.token_key()?, server, &sealed).map(Some)
    }

    /// Stores `login` for `server` (replacing any), sealed, in one transaction with a
    /// generation bump.
    pub fn put_oauth_login(&self, server: &str, login: &[u8]) -> Result<(), StateError> {
        let sealed = seal(&self.token_key()?, server, login)?;
        let now = now_unix();
        self.db.transaction(Mode::Write, |tx| {
            tx.execute(
                "INSERT INTO oauth_logins (server, sealed, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (server) DO UPDATE SET sealed = ?2, updated_at = ?3",
                &[Param::Text(server), Param::Bytes(&sealed), Param::Int(now)],
            )?;
            crate::control::bump_generation(tx)
        })
    }

    /// Replaces the login of `server` only if one is stored (a refresh), sealed, with a
    /// generation bump; false when it is gone (logged out meanwhile).
    pub fn update_oauth_login(&self, server: &str, login: &[u8]) -> Result<bool, StateError> {
        let sealed = seal(&self.token_key()?, server, login)?;
        let now = now_unix();
        self.db.transaction(Mode::Write, |tx| {
            let updated = tx.execute(
                "UPDATE oauth_logins SET sealed = ?2, updated_at = ?3 WHERE server = ?1",
                &[Param::Text(server), Param::Bytes(&sealed), Param::Int(now)],
            )?;
            if updated > 0 {
                crate::control::bump_generation(tx)?;
            }
            Ok(updated > 0)
        })
    }

    /// Forgets the login of `server`; false when there was none.
    pub fn delete_oauth_login(&self, server: &str) -> Result<bool, StateError> {
        self.db.transaction(Mode::Write, |tx| {
            let deleted = tx.execute(
                "DELETE FROM oauth_logins WHERE server = ?1",
                &[Param::Text(server)],
            )?;
            if deleted > 0 {
                crate::control::bump_generation(tx)?;
            }
            Ok(deleted > 0)
        })
    }

    /// Every stored login, by server.
    pub fn oauth_logins(&self) -> Result<Vec<LoginRow>, StateError> {
        let rows = self.db.transaction(Mode::Read, |tx| {
            tx.query(
                "SELECT server, updated_at FROM oauth_logins ORDER BY server",
                &[],
            )
        })?;
        rows.iter()
            .map(|row| {
                Ok(LoginRow {
                    server: row.text(0)?,
                    updated_at: row.int(1)?,
                })
            })
            .collect()
    }

    /// The token key: the environment's, else the data directory's file.
    pub(crate) fn token_key(&self) -> Result<[u8; 32], StateError> {
        if let Ok(text) = std::env::var(TOKEN_KEY_ENV) {
            return parse_key(&text).ok_or_else(|| {
                StateError::Invalid(format!("{TOKEN_KEY_ENV} must be 64 hex digits"))
            });
        }
        match self.location() {
            Location::Directory(dir) => parse_key(&crate::dir::token_key(dir)?).ok_or_else(|| {
                StateError::Invalid(format!(
                    "{} is not 64 hex digits",
                    dir.join(crate::dir::TOKEN_KEY_FILE).display()
                ))
            }),
            Location::Postgres(_) => Err(StateError::Invalid(format!(
                "OAuth logins and servers added from the dashboard in a PostgreSQL store need {TOKEN_KEY_ENV} (64 hex digits, the same on every replica); the key is never kept in the database"
            ))),
        }
    }
}

fn parse_key(text: &str) -> Option<[u8; 32]> {
    let text = text.trim();
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    let mut key = [0u8; 32];
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(key)
}

fn aead(key: &[u8; 32]) -> Result<LessSafeKey, StateError> {
    UnboundKey::new(&CHACHA20_POLY1305, key)
        .map(LessSafeKey::new)
        .map_err(|_| StateError::Invalid("unusable token key".into()))
}

/// `nonce ‖ ciphertext ‖ tag`, with a fresh random nonce.
pub(crate) fn seal(key: &[u8; 32], server: &str, plain: &[u8]) -> Result<Vec<u8>, StateError> {
    let nonce_bytes = random_bytes(NONCE_LEN)?;
    let nonce = Nonce::try_assume_unique_for_key(&nonce_bytes)
        .map_err(|_| StateError::Invalid("bad nonce length".into()))?;
    let mut sealed = plain.to_vec();
    aead(key)?
        .seal_in_place_append_tag(nonce, Aad::from(server.as_bytes()), &mut sealed)
        .map_err(|_| StateError::Invalid("cannot seal the login".into()))?;
    let mut out = nonce_bytes;
    out.extend_from_slice(&sealed);
    Ok(out)
}

pub(crate) fn open(key: &[u8; 32], server: &str, sealed: &[u8]) -> Result<Vec<u8>, StateError> {
    let refused = || {
        StateError::Invalid(format!(
            "the stored login of {server:?} does not open with this token key (was {TOKEN_KEY_ENV} or the token_key file changed?); log in again"
        ))
    };
    if sealed.len() < NONCE_LEN {
        return Err(refused());
    }
    let (nonce, body) = sealed.split_at(NONCE_LEN);
    let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| refused())?;
    let mut body = body.to_vec();
    let plain = aead(key)?
        .open_in_place(nonce, Aad::from(server.as_bytes()), &mut body)
        .map_err(|_| refused())?;
    Ok(plain.to_vec())
}
