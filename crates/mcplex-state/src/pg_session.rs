//! The bounds every PostgreSQL connection of the store runs under, so that a lost network or a
//! replica that froze holding the write lock becomes an error, or a released lock, in about a
//! minute instead of a gateway waiting for ever on its one connection.
//!
//! Owns: the socket's settings (TCP keepalives, `TCP_USER_TIMEOUT`: a server that stops
//! answering is given up), each one the URL does not give itself; and the session's
//! `idle_in_transaction_session_timeout` (the server ends a session left idle inside a
//! transaction, releasing its locks), set after connecting only where the URL, the role, the
//! database and the server all leave it unbounded: a DBA's own value is never loosened, and no
//! startup `options` are sent, which connection poolers refuse.
//!
//! Statements and lock waits are left unbounded: a write may rightly run long (a prune of a
//! large audit log, a catalog's embeddings over a slow link), and another writer waiting for it
//! is correct; what must not wait for ever is a lock whose holder is gone, which this ends.

use std::time::Duration;

/// How long a session may sit idle inside a transaction before the server ends it: far longer
/// than any of the store's transactions pauses between two statements.
const IDLE_IN_TRANSACTION: &str = "60s";

/// A silent server (no reply, no reset) is probed after this much quiet, every
/// [`KEEPALIVE_INTERVAL`]; on Linux the connection is given up once [`TCP_USER_TIMEOUT`] has
/// passed without an answer, elsewhere after [`KEEPALIVE_RETRIES`] probes.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
const KEEPALIVE_RETRIES: u32 = 3;
/// How long sent data (or keepalive probes) may stay unanswered before the connection is given
/// up (Linux only).
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(30);

/// Puts the socket's bounds on `config`, which was read from a URL whose query names `given`
/// (the parameters its user set, percent-decoded; those keep the user's values).
pub(crate) fn bound_socket(config: &mut postgres::Config, given: &[String]) {
    let unset = |key: &str| !given.iter().any(|given| given == key);
    if unset("keepalives") {
        config.keepalives(true);
    }
    if unset("keepalives_idle") {
        config.keepalives_idle(KEEPALIVE_IDLE);
    }
    if unset("keepalives_interval") {
        config.keepalives_interval(KEEPALIVE_INTERVAL);
    }
    if unset("keepalives_retries") {
        config.keepalives_retries(KEEPALIVE_RETRIES);
    }
    if unset("tcp_user_timeout") {
        config.tcp_user_timeout(TCP_USER_TIMEOUT);
    }
}

/// Bounds the idle time inside a transaction of the session `client` opened, unless something
/// bounded it already (a value other than 0).
pub(crate) fn bound_session(client: &mut postgres::Client) -> Result<(), postgres::Error> {
    client.execute(
        "SELECT set_config('idle_in_transaction_session_timeout', $1, false) \
         WHERE current_setting('idle_in_transaction_session_timeout') = '0'",
        &[&IDLE_IN_TRANSACTION],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_urls_own_socket_settings_stay_and_the_rest_are_bounded() {
        // Through the URL's reading, as the store connects; a key may come percent-encoded.
        let target = crate::pg_tls::PgTarget::parse(
            "postgres://u@h/db?sslmode=disable&keepalives%5Fidle=7&keepalives_retries=5",
        )
        .expect("a URL");
        let config = &target.config;
        assert_eq!(config.get_keepalives_idle(), Duration::from_secs(7));
        assert_eq!(config.get_keepalives_retries(), Some(5));
        assert!(config.get_keepalives());
        assert_eq!(config.get_keepalives_interval(), Some(KEEPALIVE_INTERVAL));
        assert_eq!(config.get_tcp_user_timeout(), Some(&TCP_USER_TIMEOUT));
        assert_eq!(
            config.get_options(),
            None,
            "no startup options: poolers refuse them"
        );
    }
}
