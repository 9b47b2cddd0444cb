//! The bounds every PostgreSQL session of the store runs under, so that a stuck server, a lost
//! network or a replica that froze holding the write lock becomes an error within a bounded
//! time instead of a gateway waiting for ever on its one connection.
//!
//! Owns: the session settings sent when connecting (`statement_timeout`, `lock_timeout`,
//! `idle_in_transaction_session_timeout`) and the socket's (TCP keepalives, `TCP_USER_TIMEOUT`).
//! A setting the URL gives itself wins: `keepalives_idle=…` and the like are left as given, and
//! the URL's `options=-c …` come after these, so PostgreSQL applies them last. Migrations lift
//! the two statement bounds for their own transaction (`sql.rs`, `Mode::Schema`).

use std::time::Duration;

/// How long one statement may run: the store's statements are small, so one taking longer is
/// a server in trouble.
pub(crate) const STATEMENT_TIMEOUT: &str = "30s";
/// How long a statement may wait for a lock, the write lock every writer takes included: longer
/// means another session holds it and is stuck.
pub(crate) const LOCK_TIMEOUT: &str = "20s";
/// How long a session may sit idle inside a transaction before the server ends it, releasing
/// its locks: a replica frozen mid-transaction does not stop every other's writes.
pub(crate) const IDLE_IN_TRANSACTION: &str = "60s";

/// A silent server (no reply, no reset) is noticed after this much quiet, then
/// [`KEEPALIVE_RETRIES`] probes [`KEEPALIVE_INTERVAL`] apart: about a minute in all.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
const KEEPALIVE_RETRIES: u32 = 3;
/// How long sent data may stay unacknowledged before the connection is given up.
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(30);

/// Puts the bounds on `config`, which was read from a URL whose query names `given` (the
/// parameters its user set; those keep the user's values).
pub(crate) fn bound(config: &mut postgres::Config, given: &[&str]) {
    let ours = format!(
        "-c statement_timeout={STATEMENT_TIMEOUT} -c lock_timeout={LOCK_TIMEOUT} \
         -c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION}"
    );
    let options = match config.get_options() {
        Some(theirs) if !theirs.trim().is_empty() => format!("{ours} {theirs}"),
        _ => ours,
    };
    config.options(&options);
    let unset = |key: &str| !given.contains(&key);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_urls_own_options_come_after_ours_and_its_socket_settings_stay() {
        let mut config: postgres::Config =
            "postgres://u@h/db?options=-c%20lock_timeout%3D1s&keepalives_idle=7"
                .parse()
                .expect("a URL");
        bound(&mut config, &["options", "keepalives_idle"]);
        let options = config.get_options().expect("options");
        assert!(
            options.starts_with("-c statement_timeout=30s "),
            "{options}"
        );
        assert!(options.ends_with(" -c lock_timeout=1s"), "{options}");
        assert_eq!(config.get_keepalives_idle(), Duration::from_secs(7));
        assert_eq!(config.get_keepalives_interval(), Some(KEEPALIVE_INTERVAL));
        assert_eq!(config.get_tcp_user_timeout(), Some(&TCP_USER_TIMEOUT));
    }
}
