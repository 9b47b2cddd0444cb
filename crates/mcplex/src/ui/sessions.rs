//! The dashboard's logins. A session is a signed value (the `mcplex_ui` cookie, never the API
//! key): `<end>.<nonce>.<mac>`, the mac a keyed hash under the store's installation secret of the
//! end, the nonce and the API key's own keyed hash. Every gateway on the same store holds that
//! secret, so a session opened on one replica works on every other and survives a restart, with
//! nothing written at login; a new API key ends every session. The CSRF token is the
//! session's own keyed hash, so nothing needs to be stored for it either. A session ends eight
//! hours after login, or at logout: a logout is written to the store (the session's keyed hash
//! and its end, with a generation bump), and every gateway of the store re-reads the ended
//! sessions when the generation moves, so a logged-out value stops working on every replica
//! within the control plane's second (the browser drops the cookie at once either way). A
//! logout the store does not take ends the session here at once and is written at the next
//! reload (the follower reloads when the store answers again).
//! A login link is a random token that opens one session, once, within five minutes, on the
//! gateway that printed it. A session opened by a person's sign-in at the issuer carries who
//! they are ([`Person`]) inside its signed nonce (`<random>~<base64url JSON>`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcplex_state::Store;

use super::person::Person;
use mcplex_surface::same_secret;

/// How long a session lasts after login.
pub const SESSION_LIFETIME: Duration = Duration::from_secs(8 * 3600);
/// How long a login link may be used.
pub const LINK_LIFETIME: Duration = Duration::from_secs(300);
/// Login links waiting at once.
const MAX_LINKS: usize = 16;

/// What the signature covers besides the session's own fields, so that a session's value can
/// never stand for anything else signed with the same secret.
const SESSION_PURPOSE: &str = "mcplex-ui-session";
const CSRF_PURPOSE: &str = "mcplex-ui-csrf";
const LOGOUT_PURPOSE: &str = "mcplex-ui-logout";
/// The longest session value: a cookie with its attributes stays under browsers' 4 KB.
const MAX_SESSION_BYTES: usize = 3500;

/// Between a session's random nonce and the base64url name of the person it is for (neither
/// alphabet has it).
const WHO_SEPARATOR: char = '~';

/// A session just opened: what goes into the cookie and to the page.
#[derive(Clone)]
pub struct Opened {
    pub id: String,
    pub csrf: String,
    /// Unix seconds.
    pub expires_at: i64,
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opened")
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Table {
    /// The keyed hashes of logged-out sessions → their end (unix seconds): this gateway's and
    /// every gateway's read from the store, each until its end. As many as the store holds: a
    /// logout needs a live session, which needs the API key.
    closed: HashMap<String, i64>,
    /// This gateway's logouts the store has not taken yet (saved at the next reload).
    unsaved: HashMap<String, i64>,
    /// Login link token → when it stops working.
    links: Vec<(String, Instant)>,
}

/// Opens and checks the dashboard's sessions; keeps this gateway's login links and logouts.
pub struct Sessions {
    store: Arc<Store>,
    /// The API key's keyed hash (its verifier): a session is signed for the key it was opened
    /// with, so a new key ends every session.
    key_tag: arc_swap::ArcSwap<String>,
    table: Mutex<Table>,
}

impl Sessions {
    pub fn new(store: Arc<Store>, verifier: &str) -> Sessions {
        let key_tag = key_tag(&store, verifier);
        Sessions {
            store,
            key_tag: arc_swap::ArcSwap::from_pointee(key_tag),
            table: Mutex::default(),
        }
    }

    /// The API key changed (`verifier` is the new one's): sessions of the old one end.
    pub fn rekey(&self, verifier: &str) {
        self.key_tag.store(Arc::new(key_tag(&self.store, verifier)));
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn signature(&self, expires_at: i64, nonce: &str) -> String {
        self.store.token_mac(&format!(
            "{SESSION_PURPOSE}\n{}\n{expires_at}.{nonce}",
            self.key_tag.load()
        ))
    }

    fn csrf(&self, id: &str) -> String {
        self.store.token_mac(&format!("{CSRF_PURPOSE}\n{id}"))
    }

    /// What a logout records of session `id`: its keyed hash (the value itself opens the
    /// dashboard; it never leaves the process).
    fn logout_tag(&self, id: &str) -> String {
        self.store.token_mac(&format!("{LOGOUT_PURPOSE}\n{id}"))
    }

    /// Opens a session (the caller has checked the API key).
    pub fn open(&self, now_unix: i64) -> Result<Opened, String> {
        self.open_for(now_unix, None)
    }

    /// Opens a session for `person`, signed in at the issuer (the caller has checked the ID
    /// token, and what they are). Who they are is part of what is signed.
    pub fn open_as(&self, now_unix: i64, person: &Person) -> Result<Opened, String> {
        self.open_for(now_unix, Some(person))
    }

    fn open_for(&self, now_unix: i64, person: Option<&Person>) -> Result<Opened, String> {
        let mut nonce = random_token()?;
        if let Some(person) = person {
            let json = serde_json::to_vec(person).map_err(|e| e.to_string())?;
            nonce = format!("{nonce}{WHO_SEPARATOR}{}", URL_SAFE_NO_PAD.encode(json));
        }
        let expires_at = now_unix.saturating_add(SESSION_LIFETIME.as_secs() as i64);
        let id = format!(
            "{expires_at}.{nonce}.{}",
            self.signature(expires_at, &nonce)
        );
        // A browser drops a cookie past 4 KB without a word: the person would be sent back to
        // the login again and again.
        if id.len() > MAX_SESSION_BYTES {
            return Err(format!(
                "who you are and what you may read do not fit in a session ({} bytes, at most {MAX_SESSION_BYTES}): the rule that grants your reach names too many servers; an operator can give it a profile instead",
                id.len()
            ));
        }
        Ok(Opened {
            csrf: self.csrf(&id),
            id,
            expires_at,
        })
    }

    /// The CSRF token and end (unix seconds) of the live session `id`: signed for this store
    /// and API key, not ended, not logged out here.
    pub fn lookup(&self, id: &str, now_unix: i64) -> Option<(String, i64)> {
        let expires_at = self.signed_end(id, now_unix)?;
        let tag = self.logout_tag(id);
        if self.table().closed.contains_key(&tag) {
            return None;
        }
        Some((self.csrf(id), expires_at))
    }

    /// Who opened the live session `id`: the person signed in at the issuer, `None` for the
    /// API key (or a session that is not live).
    pub fn person(&self, id: &str, now_unix: i64) -> Option<Person> {
        self.signed_end(id, now_unix)?;
        let nonce = id.split('.').nth(1)?;
        let (_, person) = nonce.split_once(WHO_SEPARATOR)?;
        let bytes = URL_SAFE_NO_PAD.decode(person).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// The end of session value `id` when it is signed for this store and API key and has not
    /// ended yet, logged out or not.
    fn signed_end(&self, id: &str, now_unix: i64) -> Option<i64> {
        let mut parts = id.splitn(3, '.');
        let (expires_at, nonce, mac) = (parts.next()?, parts.next()?, parts.next()?);
        let expires_at: i64 = expires_at.parse().ok()?;
        (expires_at > now_unix && same_secret(mac, &self.signature(expires_at, nonce)))
            .then_some(expires_at)
    }

    /// Ends session `id` (logout): at once on this gateway, and on every gateway of the store
    /// once the store has it. Blocking (a store write). An error says the store did not take
    /// it: the session is ended here, other gateways may still accept it, and the write is
    /// tried again at the next reload (when the store answers again); a second logout with the
    /// same value tries at once.
    pub fn close(&self, id: &str, now_unix: i64) -> Result<(), String> {
        let Some(expires_at) = self.signed_end(id, now_unix) else {
            return Ok(());
        };
        let tag = self.logout_tag(id);
        {
            let mut table = self.table();
            table.closed.insert(tag.clone(), expires_at);
            table.unsaved.insert(tag.clone(), expires_at);
        }
        self.store
            .end_dashboard_session(&tag, expires_at, now_unix)
            .map_err(|e| format!("the logout could not be saved in the store: {e}"))?;
        self.table().unsaved.remove(&tag);
        Ok(())
    }

    /// Tries again to save the logouts the store did not take, then reads the sessions every
    /// gateway of the store has ended (when its generation moves, or the store answers again).
    /// Blocking. A save that fails again is logged and kept for the next reload: it must not
    /// hold up the reload (the follower hands on the generation only after it).
    pub fn reload_logouts(&self, now_unix: i64) -> Result<(), mcplex_state::StateError> {
        let unsaved: Vec<(String, i64)> = {
            let mut table = self.table();
            table.unsaved.retain(|_, end| *end > now_unix);
            table.unsaved.iter().map(|(t, e)| (t.clone(), *e)).collect()
        };
        for (tag, ends) in unsaved {
            match self.store.end_dashboard_session(&tag, ends, now_unix) {
                Ok(()) => {
                    self.table().unsaved.remove(&tag);
                }
                Err(e) => {
                    tracing::warn!("a dashboard logout still cannot be saved in the store: {e}");
                    break;
                }
            }
        }
        let ended = self.store.ended_dashboard_sessions(now_unix)?;
        // Added to, not replaced: a logout made here while the store was read stays in force.
        let mut table = self.table();
        table.closed.retain(|_, end| *end > now_unix);
        table.closed.extend(ended);
        Ok(())
    }

    /// A new login link's token, valid once within [`LINK_LIFETIME`].
    pub fn login_link(&self, now: Instant) -> Result<String, String> {
        let token = random_token()?;
        let mut table = self.table();
        table.links.retain(|(_, ends)| *ends > now);
        if table.links.len() >= MAX_LINKS {
            table.links.remove(0);
        }
        table.links.push((token.clone(), now + LINK_LIFETIME));
        Ok(token)
    }

    /// Uses the login link `token`: a new session when it is live and unused; never twice.
    pub fn redeem(
        &self,
        token: &str,
        now: Instant,
        now_unix: i64,
    ) -> Option<Result<Opened, String>> {
        {
            let mut table = self.table();
            let found = table
                .links
                .iter()
                .position(|(live, ends)| *ends > now && same_secret(live, token))?;
            table.links.remove(found);
        }
        Some(self.open(now_unix))
    }
}

/// What sessions are signed for: the API key's verifier, and with `MCPLEX_TOKEN_KEY` set that
/// key too. Both the installation secret and the verifier are in the database, so on a
/// PostgreSQL store only a key kept outside it stops a database reader from making a session.
fn key_tag(store: &Store, verifier: &str) -> String {
    match std::env::var(mcplex_state::TOKEN_KEY_ENV) {
        Ok(outside) if !outside.trim().is_empty() => {
            store.token_mac(&format!("{}\0{verifier}", outside.trim()))
        }
        _ => verifier.to_owned(),
    }
}

/// 32 random bytes from the operating system, as hex.
fn random_token() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("no random numbers: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(dir: &std::path::Path) -> Arc<Store> {
        let (store, _) = Store::open_at(&mcplex_state::Location::Directory(dir.to_owned()))
            .expect("open the store");
        Arc::new(store)
    }

    #[test]
    fn a_session_is_signed_ends_and_can_be_logged_out() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sessions = Sessions::new(store(dir.path()), "key");
        let a = sessions.open(1000).expect("open");
        let b = sessions.open(1000).expect("open");
        assert_ne!(a.id, b.id);
        assert_ne!(a.csrf, b.csrf);
        assert_eq!(a.expires_at, 1000 + 8 * 3600);
        assert_eq!(
            sessions.lookup(&a.id, 1001),
            Some((a.csrf.clone(), a.expires_at))
        );
        assert_eq!(sessions.lookup(&a.id, a.expires_at), None, "ended");
        // Any change to the value, its end included, breaks the signature.
        let later = a.id.replacen(&a.expires_at.to_string(), "99999999999", 1);
        for forged in ["made-up", "1.2.3", "", &later, &a.id[..a.id.len() - 1]] {
            assert_eq!(sessions.lookup(forged, 1001), None, "{forged}");
        }
        sessions.close(&a.id, 1001).expect("saved");
        assert_eq!(sessions.lookup(&a.id, 1001), None);
        assert!(sessions.lookup(&b.id, 1001).is_some());
        assert!(!format!("{a:?}").contains(&a.id) && !format!("{a:?}").contains(&a.csrf));
    }

    #[test]
    fn a_session_holds_on_every_gateway_of_the_store_and_only_for_its_key() {
        let dir = tempfile::tempdir().expect("tempdir");
        let opened = Sessions::new(store(dir.path()), "key")
            .open(1000)
            .expect("open");
        // Another process on the same store (a replica, or this one restarted).
        let replica = Sessions::new(store(dir.path()), "key");
        assert_eq!(
            replica.lookup(&opened.id, 1001),
            Some((opened.csrf.clone(), opened.expires_at))
        );
        let rekeyed = Sessions::new(store(dir.path()), "a new key");
        assert_eq!(rekeyed.lookup(&opened.id, 1001), None);
        let other_dir = tempfile::tempdir().expect("tempdir");
        let other_store = Sessions::new(store(other_dir.path()), "key");
        assert_eq!(other_store.lookup(&opened.id, 1001), None);
    }

    #[test]
    fn a_logout_on_one_gateway_ends_the_session_on_every_other_once_it_reads_the_store() {
        let dir = tempfile::tempdir().expect("tempdir");
        let here = Sessions::new(store(dir.path()), "key");
        let replica = Sessions::new(store(dir.path()), "key");
        let (a, b) = (
            here.open(1000).expect("open"),
            here.open(1000).expect("open"),
        );
        let generation = replica.store.generation().expect("generation");
        here.close(&a.id, 1001).expect("saved");
        assert!(
            replica.store.generation().expect("generation") > generation,
            "a logout moves the generation the replicas follow"
        );
        assert!(replica.lookup(&a.id, 1001).is_some(), "not read yet");
        replica.reload_logouts(1001).expect("reload");
        assert_eq!(replica.lookup(&a.id, 1001), None);
        assert!(replica.lookup(&b.id, 1001).is_some(), "only that session");
        // A gateway started later reads it too; the store keeps the session's hash, never it.
        let later = Sessions::new(store(dir.path()), "key");
        later.reload_logouts(1002).expect("reload");
        assert_eq!(later.lookup(&a.id, 1002), None);
        let kept = later.store.ended_dashboard_sessions(1002).expect("read");
        assert_eq!(kept.len(), 1);
        assert!(
            kept.iter()
                .all(|(tag, _)| !tag.contains(&a.id) && *tag != a.csrf)
        );
        // Past the session's own end the record is gone at the next logout.
        let c = later.open(a.expires_at).expect("open");
        later.close(&c.id, a.expires_at).expect("saved");
        let rows = later.store.ended_dashboard_sessions(0).expect("read");
        assert_eq!(rows.len(), 1, "only c's record is left: {rows:?}");
    }

    #[test]
    fn a_logout_the_store_did_not_take_ends_the_session_here_and_is_saved_at_the_next_reload() {
        let dir = tempfile::tempdir().expect("tempdir");
        let here = Sessions::new(store(dir.path()), "key");
        let replica = Sessions::new(store(dir.path()), "key");
        let a = here.open(1000).expect("open");
        // The store refuses the write: its table is gone (another process's doing).
        let database = dir.path().join(mcplex_state::DATABASE_FILE);
        let sql = |statement: &str| {
            rusqlite::Connection::open(&database)
                .and_then(|c| c.execute_batch(statement))
                .expect("sqlite");
        };
        sql("DROP TABLE dashboard_logouts");
        let refused = here.close(&a.id, 1001).expect_err("not saved");
        assert!(refused.contains("could not be saved"), "{refused}");
        assert!(
            !refused.contains(&a.id),
            "the session value is never in an error"
        );
        assert_eq!(here.lookup(&a.id, 1001), None, "ended here at once");
        // A store that reads but still refuses the write: the reload goes on (the follower
        // hands on the generation after it) and keeps the logout for the next one.
        sql(
            "CREATE TABLE dashboard_logouts (session TEXT PRIMARY KEY, ends_at BIGINT NOT NULL CHECK (ends_at < 0))",
        );
        here.reload_logouts(1001)
            .expect("a save that fails again does not fail the reload");
        assert_eq!(here.lookup(&a.id, 1001), None, "still ended here");
        replica.reload_logouts(1001).expect("reload");
        assert!(replica.lookup(&a.id, 1001).is_some(), "not saved yet");
        sql(
            "DROP TABLE dashboard_logouts; CREATE TABLE dashboard_logouts (session TEXT PRIMARY KEY, ends_at BIGINT NOT NULL)",
        );
        here.reload_logouts(1002).expect("the reload saves it");
        assert_eq!(here.lookup(&a.id, 1002), None);
        replica.reload_logouts(1002).expect("reload");
        assert_eq!(replica.lookup(&a.id, 1002), None, "saved: ended everywhere");
    }

    #[test]
    fn a_signed_in_person_is_part_of_the_signed_session() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sessions = Sessions::new(store(dir.path()), "key");
        let alice = Person::operator("alice@example.com");
        let opened = sessions.open_as(1000, &alice).expect("open");
        let key = sessions.open(1000).expect("open");
        assert_eq!(sessions.person(&opened.id, 1001), Some(alice));
        assert_eq!(sessions.person(&key.id, 1001), None);
        // Someone else in the same value is not signed: the session is not live at all.
        let mallory = serde_json::to_vec(&Person::operator("mallory")).expect("json");
        let mut parts: Vec<&str> = opened.id.split('.').collect();
        let forged_nonce = format!(
            "{}~{}",
            parts[1].split('~').next().expect("nonce"),
            URL_SAFE_NO_PAD.encode(mallory)
        );
        parts[1] = &forged_nonce;
        let forged = parts.join(".");
        assert_eq!(sessions.lookup(&forged, 1001), None);
        assert_eq!(sessions.person(&forged, 1001), None);
    }

    #[test]
    fn a_session_too_large_for_a_cookie_is_refused_with_why() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sessions = Sessions::new(store(dir.path()), "key");
        let servers: std::collections::BTreeSet<String> =
            (0..200).map(|i| format!("server-number-{i}")).collect();
        let reach = mcplex_trust::Scope::new(Some(servers), mcplex_trust::Permissions::ALL);
        let refused = sessions
            .open_as(1000, &Person::viewer("mallory", &reach))
            .expect_err("too large");
        assert!(refused.contains("do not fit in a session"), "{refused}");
    }

    #[test]
    fn a_login_link_opens_one_session_once_and_only_while_fresh() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sessions = Sessions::new(store(dir.path()), "key");
        let now = Instant::now();
        let link = sessions.login_link(now).expect("link");
        assert!(sessions.redeem("made-up", now, 0).is_none());
        let opened = sessions
            .redeem(&link, now, 0)
            .expect("live")
            .expect("opened");
        assert!(sessions.lookup(&opened.id, 1).is_some());
        assert!(sessions.redeem(&link, now, 0).is_none(), "used twice");
        let stale = sessions.login_link(now).expect("link");
        assert!(sessions.redeem(&stale, now + LINK_LIFETIME, 0).is_none());
    }
}
