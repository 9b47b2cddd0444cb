//! `mcplex auth login|status|logout`: OAuth logins to upstream servers, kept (sealed) in the
//! store, where every gateway of the installation finds them. A login discovers the server's
//! authorization server, registers mcplex when no client is configured, sends a person to the
//! authorization URL with PKCE, `state` and `resource`, takes the code on a loopback port and
//! stores the tokens. No command prints a token.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use mcplex_config::{Config, OAuthGrant, Overrides, ServerConfig, Transport};
use mcplex_oauth::{LoginKey, LoginStore, LoginStoreError, StoredLogin, http_client, now_unix};
use serde::Serialize;

use super::callback::{CALLBACK_PATH, wait_for_code};
use crate::cli::ConfigArgs;
use crate::logins::StoreLogins;
use crate::output::{outln, rowln};

/// The URL server called `name` in `config`, and its URL. It needs no `"oauth"` block:
/// discovery finds out whether it wants a login and where.
fn oauth_server<'a>(config: &'a Config, name: &str) -> Result<(&'a ServerConfig, &'a str)> {
    let server = config
        .servers
        .iter()
        .find(|s| s.name == name)
        .with_context(|| format!("no server {name:?} in the config"))?;
    match &server.transport {
        Transport::Http { url, .. } | Transport::Sse { url, .. } => Ok((server, url)),
        _ => bail!("server {name:?} is not a URL server"),
    }
}

pub async fn login(
    args: &ConfigArgs,
    name: &str,
    no_browser: bool,
    timeout: &str,
) -> Result<ExitCode> {
    let timeout =
        mcplex_config::parse_duration(timeout).map_err(|e| anyhow::anyhow!("--timeout: {e}"))?;
    let config = crate::load::load(args, Overrides::default())?;
    let (server, url) = oauth_server(&config, name)?;
    let (store, _) = crate::load::open_store(&config)?;
    let logins = StoreLogins(Arc::new(store));
    let oauth = server.oauth.clone().unwrap_or_default();
    if oauth.grant == OAuthGrant::ClientCredentials {
        return client_credentials(&logins, server).await;
    }
    let http = http_client()?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("cannot listen on a loopback port for the login's answer")?;
    let redirect_uri = format!(
        "http://127.0.0.1:{}{CALLBACK_PATH}",
        listener.local_addr()?.port()
    );
    let challenge = mcplex_upstream::oauth_challenge(url).await;
    let target = mcplex_oauth::LoginTarget {
        server: name,
        server_url: url,
        challenge: challenge.as_deref(),
        redirect_uri: &redirect_uri,
        caller: None,
    };
    let begun = mcplex_oauth::begin(&http, &target, &oauth).await?;
    eprintln!(
        "To log in to {name}, open this URL (waiting up to {}):",
        humantime::format_duration(timeout)
    );
    outln!("{}", begun.url)?;
    if !no_browser {
        open_browser(begun.url.as_str());
    }
    let code = tokio::time::timeout(timeout, wait_for_code(&listener, &begun.pending.state))
        .await
        .map_err(|_| {
            anyhow::anyhow!("no login within {}", humantime::format_duration(timeout))
        })??;
    let login = mcplex_oauth::finish(&http, &begun.pending, &code).await?;
    store_login(logins, name.to_owned(), login).await?;
    eprintln!("Logged in to {name}; running gateways pick the login up.");
    Ok(ExitCode::SUCCESS)
}

/// A machine-to-machine server: a token is fetched now, as a check, and stored.
async fn client_credentials(logins: &StoreLogins, server: &ServerConfig) -> Result<ExitCode> {
    let shared = mcplex_oauth::Logins::new(Arc::new(StoreLogins(logins.0.clone())))?;
    let login = shared
        .for_server(server)
        .context("not an OAuth URL server")?;
    login.bearer().await?;
    eprintln!(
        "{} uses client credentials: no person logs in; a token was obtained and stored.",
        server.name
    );
    Ok(ExitCode::SUCCESS)
}

/// Opens `url` with `xdg-open` when the machine has one; the URL is printed either way. The
/// browser gets the user's environment without mcplex's own variables (the store's URL with its
/// password, the keys), as no server does.
fn open_browser(url: &str) {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("xdg-open").is_file()));
    if !found {
        return;
    }
    let mut command = std::process::Command::new("xdg-open");
    for (name, _) in std::env::vars_os() {
        if mcplex_config::gateways_own(&name.to_string_lossy()) {
            command.env_remove(name);
        }
    }
    let _ = command
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}

async fn store_login(logins: StoreLogins, name: String, login: StoredLogin) -> Result<()> {
    tokio::task::spawn_blocking(move || logins.save(&LoginKey::server(&name), &login))
        .await?
        .map_err(anyhow::Error::msg)
}

/// One row of `mcplex auth status`.
#[derive(Serialize)]
struct LoginStatus {
    server: String,
    /// Whose own login to a `per_user` server (none: the gateway's).
    #[serde(skip_serializing_if = "Option::is_none")]
    caller: Option<String>,
    grant: &'static str,
    /// `logged_in`, `expired` (refreshable or not), `none` or `unreadable`.
    status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    issuer: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expires_at: Option<i64>,
    refreshable: bool,
}

pub fn status(args: &ConfigArgs, json: bool) -> Result<ExitCode> {
    let config = crate::load::load(args, Overrides::default())?;
    let (store, _) = crate::load::open_store(&config)?;
    let logins = StoreLogins(Arc::new(store));
    let now = now_unix();
    // Servers configured for OAuth, and those that asked for a login and got one.
    let detected = |server: &ServerConfig| {
        matches!(
            server.transport,
            Transport::Http { .. } | Transport::Sse { .. }
        ) && matches!(logins.load(&LoginKey::server(&server.name)), Ok(Some(_)))
    };
    let default_oauth = mcplex_config::OAuthConfig::default();
    let rows: Vec<LoginStatus> = config
        .servers
        .iter()
        .filter_map(|server| match &server.oauth {
            Some(oauth) => Some((server, oauth)),
            None if detected(server) => Some((server, &default_oauth)),
            None => None,
        })
        .map(|(server, oauth)| {
            let key = LoginKey::server(&server.name);
            let loaded = logins.load(&key);
            login_status(key, oauth.grant, loaded, now)
        })
        .collect();
    let rows = with_callers(rows, &logins, &config, now)?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&rows)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{:24} {:24} {:20} {:12} {:26} ISSUER",
        "SERVER",
        "CALLER",
        "GRANT",
        "STATUS",
        "EXPIRES (UTC)"
    )?;
    for row in &rows {
        let expires = row
            .expires_at
            .and_then(|at| u64::try_from(at).ok())
            .map(crate::timestamp::seconds)
            .unwrap_or_else(|| "-".into());
        rowln!(
            "{:24} {:24} {:20} {:12} {:26} {}",
            row.server,
            row.caller.as_deref().unwrap_or("-"),
            row.grant,
            row.status,
            expires,
            row.issuer
                .as_deref()
                .map(mcplex_config::redact_url)
                .unwrap_or_else(|| "-".into())
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `rows` (the gateway's logins), each followed by the callers' own logins to that server when
/// it is `per_user`: who is connected.
fn with_callers(
    rows: Vec<LoginStatus>,
    logins: &StoreLogins,
    config: &mcplex_config::Config,
    now: i64,
) -> Result<Vec<LoginStatus>> {
    let callers = logins.0.caller_logins()?;
    let per_user = |name: &str| {
        config
            .servers
            .iter()
            .any(|s| s.name == name && s.oauth.as_ref().is_some_and(|o| o.own_logins()))
    };
    let mut out = Vec::with_capacity(rows.len() + callers.len());
    for row in rows {
        let server = row.server.clone();
        out.push(row);
        if !per_user(&server) {
            continue;
        }
        for caller in callers.iter().filter(|c| c.server == server) {
            let key = LoginKey::caller(&server, &caller.caller);
            let loaded = logins.load(&key);
            out.push(login_status(
                key,
                OAuthGrant::AuthorizationCode,
                loaded,
                now,
            ));
        }
    }
    Ok(out)
}

/// The row of the login `key` (obtained with `grant`), as the store gave it at `now`.
fn login_status(
    key: LoginKey,
    grant: OAuthGrant,
    loaded: Result<Option<StoredLogin>, LoginStoreError>,
    now: i64,
) -> LoginStatus {
    let mut row = LoginStatus {
        server: key.server,
        caller: key.caller,
        grant: match grant {
            OAuthGrant::AuthorizationCode => "authorization_code",
            OAuthGrant::ClientCredentials => "client_credentials",
        },
        status: "none".into(),
        issuer: None,
        expires_at: None,
        refreshable: false,
    };
    match loaded {
        Ok(Some(login)) => {
            row.status = if login.expires_at.is_some_and(|at| at <= now) {
                "expired".into()
            } else {
                "logged_in".into()
            };
            row.refreshable =
                login.refresh_token.is_some() || grant == OAuthGrant::ClientCredentials;
            row.issuer = Some(login.issuer);
            row.expires_at = login.expires_at;
        }
        Ok(None) => {}
        Err(e) => row.status = format!("unreadable: {e}"),
    }
    row
}

pub fn logout(args: &ConfigArgs, name: &str, caller: Option<&str>) -> Result<ExitCode> {
    let config = crate::load::load(args, Overrides::default())?;
    let (store, _) = crate::load::open_store(&config)?;
    if let Some(caller) = caller {
        if store.delete_caller_login(name, caller)? {
            eprintln!(
                "Revoked {caller}'s login to {name}; its next call asks it to connect again."
            );
        } else {
            eprintln!("{caller} had no login to {name}.");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if store.delete_oauth_login(name)? {
        eprintln!("Logged out of {name}; running gateways stop using the login.");
    } else {
        eprintln!("{name} had no login.");
    }
    Ok(ExitCode::SUCCESS)
}
