//! Servers added from the dashboard while the gateway runs, kept in the control plane so that
//! every replica runs them. A row is the server's `mcpServers` entry as JSON bytes, sealed
//! under the token key like an OAuth login (its env and header values are secrets), with
//! `added-server:` and its name as associated data so that a row moved to another name does not
//! open. Writes move the generation; every replica reads the set again when it moves.

use crate::logins::{open, seal};
use crate::sql::{Mode, Param};
use crate::tokens::now_unix;
use crate::{StateError, Store};

/// One added server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddedServerRow {
    pub name: String,
    /// The entry's JSON; `None` when the row does not open with this gateway's token key
    /// (another key, tampering): such a server is not run.
    pub entry: Option<Vec<u8>>,
    /// Who added it (an operator's name, `api-key`).
    pub added_by: Option<String>,
    /// Unix seconds.
    pub added_at: i64,
}

fn associated(name: &str) -> String {
    format!("added-server:{name}")
}

impl Store {
    /// Stores `entry` as the added server `name`, sealed, and records the name quarantined, with
    /// a generation bump; false (and nothing stored) when a server of that name was added
    /// already.
    pub fn add_server(
        &self,
        name: &str,
        entry: &[u8],
        added_by: Option<&str>,
    ) -> Result<bool, StateError> {
        let sealed = seal(&self.token_key()?, &associated(name), entry)?;
        let now = now_unix();
        self.db.transaction(Mode::Write, |tx| {
            let inserted = tx.execute(
                "INSERT INTO added_servers (name, sealed, added_by, added_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (name) DO NOTHING",
                &[
                    Param::Text(name),
                    Param::Bytes(&sealed),
                    Param::OptText(added_by),
                    Param::Int(now),
                ],
            )?;
            if inserted == 0 {
                return Ok(false);
            }
            // Quarantined whatever the name's record said: a name approved before (added,
            // approved and removed; or a server the file had) must not lend its approval.
            tx.execute(
                "INSERT INTO servers (name, state, pin_next_listing, updated_at)
                 VALUES (?1, 'quarantined', 0, ?2)
                 ON CONFLICT (name) DO UPDATE SET state = 'quarantined', pin_next_listing = 0, updated_at = ?2",
                &[Param::Text(name), Param::Int(now)],
            )?;
            crate::control::bump_generation(tx)?;
            Ok(true)
        })
    }

    /// Removes the added server `name`, with a generation bump; false when there was none.
    pub fn remove_added_server(&self, name: &str) -> Result<bool, StateError> {
        self.db.transaction(Mode::Write, |tx| {
            let deleted = tx.execute(
                "DELETE FROM added_servers WHERE name = ?1",
                &[Param::Text(name)],
            )?;
            if deleted > 0 {
                crate::control::bump_generation(tx)?;
            }
            Ok(deleted > 0)
        })
    }

    /// Every added server, by name, each entry opened. The token key is needed only when
    /// there are some: a PostgreSQL store without `MCPLEX_TOKEN_KEY` and without added servers
    /// reads an empty set; with some, their entries do not open (`None`).
    pub fn added_servers(&self) -> Result<Vec<AddedServerRow>, StateError> {
        let rows = self.db.transaction(Mode::Read, |tx| {
            tx.query(
                "SELECT name, sealed, added_by, added_at FROM added_servers ORDER BY name",
                &[],
            )
        })?;
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let key = self.token_key().ok();
        rows.iter()
            .map(|row| {
                let name = row.text(0)?;
                let sealed = row.bytes(1)?;
                let entry = key
                    .as_ref()
                    .and_then(|key| open(key, &associated(&name), &sealed).ok());
                Ok(AddedServerRow {
                    entry,
                    added_by: row.opt_text(2)?,
                    added_at: row.int(3)?,
                    name,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::Location;
    use crate::tests::places;

    /// Whether `text` is anywhere in a SQLite store's files (`None` for PostgreSQL).
    fn on_disk(location: &Location, text: &str) -> Option<bool> {
        let Location::Directory(dir) = location else {
            return None;
        };
        let found = std::fs::read_dir(dir)
            .expect("data dir")
            .flatten()
            .any(|file| {
                let bytes = std::fs::read(file.path()).unwrap_or_default();
                bytes.windows(text.len()).any(|w| w == text.as_bytes())
            });
        Some(found)
    }

    #[test]
    fn added_servers_are_sealed_listed_once_and_removed_with_a_generation_bump() {
        // On SQLite: a PostgreSQL store seals under `MCPLEX_TOKEN_KEY`, which tests do not set
        // (the same SQL runs on both; `logins_tests.rs` covers the sealing itself).
        for place in places("added").into_iter().take(1) {
            let (store, _) = place.open();
            let entry = br#"{"command":"x","env":{"K":"sk-added-secret-0099"}}"#;
            let before = store.generation().expect("generation");
            assert!(store.add_server("docs", entry, Some("alice")).expect("add"));
            assert!(store.generation().expect("generation") > before);
            assert!(
                !store.add_server("docs", b"{}", None).expect("again"),
                "once"
            );
            let rows = store.added_servers().expect("list");
            assert_eq!(rows.len(), 1);
            assert_eq!(rows[0].name, "docs");
            assert_eq!(
                rows[0].entry.as_deref(),
                Some(&entry[..]),
                "the first one kept"
            );
            assert_eq!(rows[0].added_by.as_deref(), Some("alice"));
            // At rest the secret is not readable.
            assert_ne!(on_disk(&place.location, "sk-added-secret-0099"), Some(true));
            assert!(store.remove_added_server("docs").expect("remove"));
            assert!(!store.remove_added_server("docs").expect("gone"));
            assert!(store.added_servers().expect("list").is_empty());
            // Approved once, removed, added again: quarantined again.
            let approved = mcplex_trust::ServerRecord {
                state: mcplex_trust::ServerState::Approved,
                pin_next_listing: false,
            };
            store
                .apply(&[mcplex_trust::Change::Server {
                    name: "docs".to_owned(),
                    record: approved,
                }])
                .expect("approve");
            assert!(
                store
                    .load_approvals()
                    .expect("load")
                    .server_approved("docs")
            );
            assert!(store.add_server("docs", entry, None).expect("again"));
            assert!(
                !store
                    .load_approvals()
                    .expect("load")
                    .server_approved("docs"),
                "quarantined"
            );
        }
    }
}
