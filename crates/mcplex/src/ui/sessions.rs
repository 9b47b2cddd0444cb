//! The dashboard's logins, kept in this gateway's memory: a session is a random id (the
//! `mcplex_ui` cookie's value, never the API key) with its own random CSRF token and an end
//! eight hours after login; a login link is a random token that opens one session, once,
//! within five minutes. Sessions are per process: a restart or another replica asks for the
//! key again. At most [`MAX_SESSIONS`] live at once (the oldest goes first), so logins cannot
//! grow memory without bound.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use mcplex_surface::same_secret;

/// How long a session lasts after login.
pub const SESSION_LIFETIME: Duration = Duration::from_secs(8 * 3600);
/// How long a login link may be used.
pub const LINK_LIFETIME: Duration = Duration::from_secs(300);
/// Sessions kept at once.
pub const MAX_SESSIONS: usize = 64;
/// Login links waiting at once.
const MAX_LINKS: usize = 16;

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

struct Session {
    csrf: String,
    opened: Instant,
    ends: Instant,
    expires_at: i64,
}

#[derive(Default)]
struct Table {
    sessions: HashMap<String, Session>,
    /// Login link token → when it stops working.
    links: Vec<(String, Instant)>,
}

/// Every live session and login link of this gateway.
#[derive(Default)]
pub struct Sessions {
    table: Mutex<Table>,
}

impl Sessions {
    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Opens a session (the caller has checked the API key).
    pub fn open(&self, now: Instant, now_unix: i64) -> Result<Opened, String> {
        let opened = Opened {
            id: random_token()?,
            csrf: random_token()?,
            expires_at: now_unix.saturating_add(SESSION_LIFETIME.as_secs() as i64),
        };
        let mut table = self.table();
        table.sessions.retain(|_, s| s.ends > now);
        while table.sessions.len() >= MAX_SESSIONS {
            let oldest = table
                .sessions
                .iter()
                .min_by_key(|(_, s)| s.opened)
                .map(|(id, _)| id.clone());
            match oldest {
                Some(id) => table.sessions.remove(&id),
                None => break,
            };
        }
        table.sessions.insert(
            opened.id.clone(),
            Session {
                csrf: opened.csrf.clone(),
                opened: now,
                ends: now + SESSION_LIFETIME,
                expires_at: opened.expires_at,
            },
        );
        Ok(opened)
    }

    /// The CSRF token and end (unix seconds) of the live session `id`.
    pub fn lookup(&self, id: &str, now: Instant) -> Option<(String, i64)> {
        let table = self.table();
        let session = table.sessions.get(id).filter(|s| s.ends > now)?;
        Some((session.csrf.clone(), session.expires_at))
    }

    /// Ends session `id` (logout).
    pub fn close(&self, id: &str) {
        self.table().sessions.remove(id);
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
        Some(self.open(now, now_unix))
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

    #[test]
    fn a_session_has_random_ids_and_tokens_and_ends() {
        let sessions = Sessions::default();
        let now = Instant::now();
        let a = sessions.open(now, 1000).expect("open");
        let b = sessions.open(now, 1000).expect("open");
        assert_ne!(a.id, b.id);
        assert_ne!(a.csrf, a.id);
        assert_eq!(a.id.len(), 64);
        assert_eq!(a.expires_at, 1000 + 8 * 3600);
        assert_eq!(
            sessions.lookup(&a.id, now),
            Some((a.csrf.clone(), a.expires_at))
        );
        assert_eq!(sessions.lookup("made-up", now), None);
        assert_eq!(sessions.lookup(&a.id, now + SESSION_LIFETIME), None);
        sessions.close(&a.id);
        assert_eq!(sessions.lookup(&a.id, now), None);
        assert!(sessions.lookup(&b.id, now).is_some());
        assert!(!format!("{a:?}").contains(&a.id) && !format!("{a:?}").contains(&a.csrf));
    }

    #[test]
    fn a_login_link_opens_one_session_once_and_only_while_fresh() {
        let sessions = Sessions::default();
        let now = Instant::now();
        let link = sessions.login_link(now).expect("link");
        assert!(sessions.redeem("made-up", now, 0).is_none());
        let opened = sessions
            .redeem(&link, now, 0)
            .expect("live")
            .expect("opened");
        assert!(sessions.lookup(&opened.id, now).is_some());
        assert!(sessions.redeem(&link, now, 0).is_none(), "used twice");
        let stale = sessions.login_link(now).expect("link");
        assert!(sessions.redeem(&stale, now + LINK_LIFETIME, 0).is_none());
    }

    #[test]
    fn the_oldest_session_goes_when_too_many_are_open() {
        let sessions = Sessions::default();
        let start = Instant::now();
        let first = sessions.open(start, 0).expect("open");
        for n in 1..=MAX_SESSIONS {
            sessions
                .open(start + Duration::from_millis(n as u64), 0)
                .expect("open");
        }
        let later = start + Duration::from_secs(1);
        assert_eq!(sessions.lookup(&first.id, later), None);
        assert_eq!(sessions.table().sessions.len(), MAX_SESSIONS);
    }
}
