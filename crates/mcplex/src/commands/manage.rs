//! `mcplex servers …`, `mcplex tools approve|block`, `mcplex token …`: managing approvals and
//! agent tokens. The store is the truth and every running gateway follows it; the CLI never
//! guesses where a gateway is. Running gateways register their bound address in the store: the
//! CLI goes through the API of the first one that answers (so the reply says what that gateway
//! did), else writes the store itself, and every running gateway on that store applies the
//! write within a second either way. `MCPLEX_VIA=store` skips the API, `MCPLEX_VIA=api` refuses
//! to work without a running gateway.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use mcplex_api::{
    CreateToken, CreatedToken, Done, ErrorAnswer, Server, ServerAction, ServerState, ServerStatus,
    ServersAnswer, Token, TokensAnswer, ToolAction, paths,
};
use mcplex_catalog::Snapshot;
use mcplex_config::{Config, Overrides};
use mcplex_state::{Instance, Location, Store};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::start::{Core, settle, settle_limit};
use crate::api::{token_of, token_spec};
use crate::cli::ConfigArgs;
use crate::output::{outln, rowln};
use mcplex_dispatch::GatewaySetup;
use mcplex_runtime::{Trust, TrustAction};

/// Where a management command is carried out.
pub(super) enum Target {
    /// A gateway registered in the store answers on its address.
    Running(Api),
    /// The store, directly. Gateways registered in it (none answered, or the API was skipped)
    /// pick the write up from the store.
    Store { registered: Vec<Instance> },
}

impl Target {
    /// What to add to a message about a write made in the store.
    pub(super) fn store_note(registered: &[Instance]) -> String {
        match registered {
            [] => "no gateway running; saved for its next start".to_owned(),
            [one] => format!(
                "saved in the store; the running gateway at {} (pid {}) applies it within 1 s",
                one.address, one.pid
            ),
            many => format!(
                "saved in the store; the {} running gateways apply it within 1 s",
                many.len()
            ),
        }
    }
}

pub(super) struct Api {
    base: String,
    key: String,
    http: reqwest::Client,
}

impl Api {
    pub(super) async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T> {
        self.send(reqwest::Method::GET, path, None::<&()>).await
    }

    pub(super) async fn post<T: DeserializeOwned>(
        &self,
        path: &str,
        body: Option<&impl Serialize>,
    ) -> Result<T> {
        self.send(reqwest::Method::POST, path, body).await
    }

    pub(super) async fn put<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &impl Serialize,
    ) -> Result<T> {
        self.send(reqwest::Method::PUT, path, Some(body)).await
    }

    pub(super) async fn delete<T: DeserializeOwned>(&self, path: &str) -> Result<T> {
        self.send(reqwest::Method::DELETE, path, None::<&()>).await
    }

    /// One request; a success is read as `T`, a refusal as the gateway's [`ErrorAnswer`].
    async fn send<T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&impl Serialize>,
    ) -> Result<T> {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.key);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.context("the gateway did not answer")?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .context("the gateway's answer broke off")?;
        if status.is_success() {
            serde_json::from_slice(&body).with_context(|| {
                format!("the gateway's answer to {path} is not one this CLI reads")
            })
        } else {
            let why = serde_json::from_slice::<ErrorAnswer>(&body)
                .map(|answer| answer.error)
                .unwrap_or_else(|_| "no reason given".to_owned());
            bail!("{why} (HTTP {})", status.as_u16())
        }
    }
}

/// How the CLI may reach the control plane (`MCPLEX_VIA`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Via {
    /// A running gateway's API when one answers, else the store.
    Auto,
    Api,
    Store,
}

fn via() -> Result<Via> {
    match std::env::var("MCPLEX_VIA").ok().as_deref() {
        None | Some("" | "auto") => Ok(Via::Auto),
        Some("api") => Ok(Via::Api),
        Some("store") => Ok(Via::Store),
        Some(other) => bail!("MCPLEX_VIA is {other:?}; expected auto, api or store"),
    }
}

/// Loads the config and finds out whether a gateway is running on its store.
pub(super) async fn target(args: &ConfigArgs) -> Result<(Config, Target)> {
    let config = crate::load::load(args, Overrides::default())?;
    let via = via()?;
    let location = crate::load::store_location(&config);
    // Only an existing store can have running gateways. Opening a SQLite store creates it, and
    // the first open of an installation decides which servers are its founding ones.
    let (registered, key) = match &location {
        Location::Directory(dir) if !dir.join(mcplex_state::DATABASE_FILE).exists() => {
            (Vec::new(), None)
        }
        _ => {
            let (store, _) = crate::load::open_store(&config)?;
            // A PostgreSQL store keeps no key: the operator's, given in MCPLEX_API_KEY, or none
            // (then the CLI works on the store itself).
            let key = match store.known_admin_key()? {
                Some(key) => Some(key),
                // Working on the store itself needs no key: a bad one is not read.
                None if via == Via::Store => None,
                None => crate::given_api_key::presented()?,
            };
            let verifier = key.as_deref().map(|key| store.token_mac(key));
            (store.live_instances()?, key.zip(verifier))
        }
    };
    if via == Via::Api && key.is_none() && matches!(location, Location::Postgres(_)) {
        bail!(
            "MCPLEX_VIA=api: this store keeps no API key (a PostgreSQL store keeps only its hash): give it in {}",
            crate::given_api_key::API_KEY_ENV
        );
    }
    let Some((key, verifier)) = key.filter(|_| via != Via::Store) else {
        return Ok((config, Target::Store { registered }));
    };
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .connect_timeout(Duration::from_secs(2))
        .no_proxy()
        .build()?;
    for instance in &registered {
        let base = format!("http://{}", connect_address(&instance.address));
        // The key goes only to a process that proves it holds it: whoever took the port of a
        // gateway that died without deregistering would receive it otherwise.
        if let Err(why) = proven(&http, &base, instance, &verifier).await {
            tracing::warn!(
                "not sending the API key to {}: {why}; it may be another program on the port of a gateway that died",
                instance.address
            );
            continue;
        }
        let probe = http
            .get(format!("{base}{}", paths::SERVERS))
            .bearer_auth(&key)
            .timeout(Duration::from_secs(5))
            .send()
            .await;
        match probe {
            Ok(response) if response.status().is_success() => {
                eprintln!(
                    "mcplex: through the gateway at {} (pid {})",
                    instance.address, instance.pid
                );
                return Ok((config, Target::Running(Api { base, key, http })));
            }
            Ok(response) => tracing::warn!(
                "the gateway registered at {} refused the API key (HTTP {})",
                instance.address,
                response.status().as_u16()
            ),
            Err(e) => tracing::debug!("the gateway registered at {base} did not answer: {e}"),
        }
    }
    if via == Via::Api {
        bail!("no running gateway on the store {location} answered (MCPLEX_VIA=api)");
    }
    Ok((config, Target::Store { registered }))
}

/// Checks that the process at `base` is the gateway registered as `instance`: it answers a
/// fresh nonce with the proof only a holder of the key's `verifier` can make for that
/// registration.
async fn proven(
    http: &reqwest::Client,
    base: &str,
    instance: &Instance,
    verifier: &str,
) -> Result<()> {
    let nonce = mcplex_state::identity_nonce()?;
    let answer = http
        .post(format!("{base}{}", paths::IDENTITY))
        .json(&mcplex_api::IdentityRequest {
            nonce: nonce.clone(),
        })
        .timeout(Duration::from_secs(5))
        .send()
        .await?
        .error_for_status()?
        .json::<mcplex_api::IdentityAnswer>()
        .await?;
    let expected = mcplex_state::identity_proof(verifier, &instance.id, &instance.address, &nonce);
    if answer.proof != expected {
        bail!("its proof of the key is wrong");
    }
    Ok(())
}

/// Where to connect for a bound address: a wildcard bind is reached on loopback.
fn connect_address(listen: &str) -> String {
    match listen.rsplit_once(':') {
        Some(("0.0.0.0", port)) => format!("127.0.0.1:{port}"),
        Some(("[::]", port)) => format!("[::1]:{port}"),
        _ => listen.to_owned(),
    }
}

/// The state database of `config`, with the founding servers recorded if this creates it.
pub(crate) fn open_offline(config: &Config) -> Result<(Arc<Store>, Trust)> {
    let (store, _) = crate::load::open_store(config)?;
    let store = Arc::new(store);
    let mut trust = Trust::load(store.clone(), config)?;
    trust.register(config);
    Ok((store, trust))
}

pub(super) fn offline_action(
    trust: &mut Trust,
    action: TrustAction,
    config: &Config,
    snapshot: &Snapshot,
) -> Result<String> {
    trust
        .act(&action, config, snapshot)
        .map_err(|why| anyhow!(why.to_string()))
}

/// `servers approve|quarantine NAME`, `tools block ID`, and `tools approve ID` of a tool no
/// gateway has observed yet.
pub async fn act(args: &ConfigArgs, action: TrustAction) -> Result<ExitCode> {
    let (config, target) = target(args).await?;
    let message = match target {
        Target::Running(api) => {
            let path = match &action {
                TrustAction::ApproveServer(name) => {
                    paths::server_action(name, ServerAction::Approve)
                }
                TrustAction::QuarantineServer(name) => {
                    paths::server_action(name, ServerAction::Quarantine)
                }
                TrustAction::ApproveTool { id, hash } => {
                    paths::tool_action(id, ToolAction::Approve, hash.as_deref())
                }
                TrustAction::BlockTool(id) => paths::tool_action(id, ToolAction::Block, None),
            };
            let done: Done = api.post(&path, None::<&()>).await?;
            done.message
        }
        Target::Store { registered } => {
            let (_store, mut trust) = open_offline(&config)?;
            let snapshot = match &action {
                // Pinning needs the tool's current definition: ask its server.
                TrustAction::ApproveTool { .. } => {
                    let snapshot = observe(&config).await;
                    // What this process saw is recorded like any gateway's observation.
                    trust.record(&snapshot);
                    snapshot
                }
                _ => Arc::new(Snapshot::empty()),
            };
            let message = offline_action(&mut trust, action, &config, &snapshot)?;
            format!("{message} ({})", Target::store_note(&registered))
        }
    };
    outln!("{message}")?;
    Ok(ExitCode::SUCCESS)
}

/// Connects to the configured servers as a gateway would and returns what they offer (every
/// tool, none withheld: approvals are applied by the caller).
pub(super) async fn observe(config: &Config) -> Arc<Snapshot> {
    let limit = settle_limit(config);
    let core = Core::start(
        config.clone(),
        GatewaySetup::new(crate::isolation::for_command(config)),
        None,
        None,
    );
    settle(&core.gateway, limit).await;
    let snapshot = core.gateway.snapshot();
    core.shutdown().await;
    snapshot
}

/// `servers list`.
pub async fn servers(args: &ConfigArgs, as_json: bool) -> Result<ExitCode> {
    let (config, target) = target(args).await?;
    let servers: Vec<Server> = match target {
        Target::Running(api) => api.get::<ServersAnswer>(paths::SERVERS).await?.servers,
        Target::Store { registered } => {
            let status = if registered.is_empty() {
                ServerStatus::NotRunning
            } else {
                ServerStatus::NotReachable
            };
            let (_store, mut trust) = open_offline(&config)?;
            let approvals = trust.approvals_mut();
            config
                .servers
                .iter()
                .map(|s| Server {
                    name: s.name.clone(),
                    state: if approvals.server_approved(&s.name) {
                        ServerState::Approved
                    } else {
                        ServerState::Quarantined
                    },
                    status: status.clone(),
                    tools: None,
                    withheld: None,
                    isolation: None,
                    failures: None,
                    connected: None,
                })
                .collect()
        }
    };
    if as_json {
        outln!("{}", serde_json::to_string_pretty(&servers)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!("{:24} {:12} {:24} TOOLS", "NAME", "STATE", "STATUS")?;
    for server in &servers {
        let tools = match (server.tools, server.withheld) {
            (Some(tools), Some(withheld)) => format!("{tools} served, {withheld} withheld"),
            _ => String::new(),
        };
        rowln!(
            "{:24} {:12} {:24} {tools}",
            server.name,
            server.state.as_str(),
            server.status.to_string(),
        )?;
        if let Some(failures) = &server.failures {
            let loop_word = if server.crash_looping() {
                "crash loop: "
            } else {
                ""
            };
            rowln!(
                "{:24} {loop_word}{} failure(s) in 10 min, last: {}",
                "",
                failures.recent,
                failures.last.as_deref().unwrap_or("-")
            )?;
        }
        if let Some(isolation) = &server.isolation {
            rowln!("{:24} isolation {}", "", isolation.summary)?;
            if let Some(denied) = &isolation.denied {
                rowln!(
                    "{:24} refused? {denied} (grant paths with \"sandbox\": {{\"write\": [...]}}; docs/isolation.md)",
                    ""
                )?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `token create`: prints the token once.
pub async fn create_token(args: &ConfigArgs, request: CreateToken) -> Result<ExitCode> {
    let (config, target) = target(args).await?;
    let created: CreatedToken = match target {
        Target::Running(api) => api.post(paths::TOKENS, Some(&request)).await?,
        Target::Store { registered } => {
            let (store, _trust) = open_offline(&config)?;
            let spec = token_spec(&request, &config).map_err(|why| anyhow!(why))?;
            let created = store.create_token(spec)?;
            eprintln!("mcplex: {}", Target::store_note(&registered));
            CreatedToken {
                record: token_of(&created.record),
                token: created.token,
            }
        }
    };
    eprintln!(
        "token {} created ({}); it is shown once, store it now:",
        created.record.name, created.record.permissions
    );
    outln!("{}", created.token)?;
    Ok(ExitCode::SUCCESS)
}

/// `token list`.
pub async fn tokens(args: &ConfigArgs, as_json: bool) -> Result<ExitCode> {
    let (config, target) = target(args).await?;
    let tokens: Vec<Token> = match target {
        Target::Running(api) => api.get::<TokensAnswer>(paths::TOKENS).await?.tokens,
        Target::Store { .. } => {
            let (store, _trust) = open_offline(&config)?;
            store.tokens()?.iter().map(token_of).collect()
        }
    };
    if as_json {
        outln!("{}", serde_json::to_string_pretty(&tokens)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{:20} {:8} {:26} {:24} {:20} {:12} LIMITS",
        "NAME",
        "STATUS",
        "PERMISSIONS",
        "SERVERS",
        "EXPIRES",
        "PROFILE"
    )?;
    for token in &tokens {
        let servers = match &token.servers {
            Some(list) => list.join(","),
            None => "*".to_owned(),
        };
        let limits = match &token.limits {
            Some(limits) => limits.to_string(),
            None => "-".to_owned(),
        };
        rowln!(
            "{:20} {:8} {:26} {:24} {:20} {:12} {}",
            token.name,
            token.status.as_str(),
            token.permissions,
            servers,
            expiry(token.expires_at),
            token.profile.as_deref().unwrap_or("-"),
            limits,
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `token revoke NAME`.
pub async fn revoke_token(args: &ConfigArgs, name: &str) -> Result<ExitCode> {
    let (config, target) = target(args).await?;
    match target {
        Target::Running(api) => {
            let _: Done = api.delete(&paths::token(name)).await?;
            outln!("token {name} revoked")?;
        }
        Target::Store { registered } => {
            let (store, _trust) = open_offline(&config)?;
            if !store.revoke_token(name)? {
                bail!("no active token named {name:?}");
            }
            outln!("token {name} revoked ({})", Target::store_note(&registered))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `token limit NAME --limit KEY=N ...`.
pub async fn limit_token(
    args: &ConfigArgs,
    name: &str,
    limits: mcplex_config::CallLimits,
) -> Result<ExitCode> {
    let (config, target) = target(args).await?;
    match target {
        Target::Running(api) => {
            let body = mcplex_api::SetLimits {
                limits: limits.to_json(),
            };
            let done: Done = api.put(&paths::token_limits(name), &body).await?;
            outln!("{}", done.message)?;
        }
        Target::Store { registered } => {
            let (store, _trust) = open_offline(&config)?;
            if !store.set_token_limits(name, &limits)? {
                bail!("no token named {name:?}");
            }
            outln!(
                "token {name} limits set to {} ({})",
                limits.to_json(),
                Target::store_note(&registered)
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A token's expiry for `token list`: its UTC time to the second, or `never`.
fn expiry(expires_at: Option<i64>) -> String {
    let Some(at) = expires_at else {
        return "never".to_owned();
    };
    crate::timestamp::seconds(u64::try_from(at).unwrap_or(0))
}

/// `apikey rotate`: a new admin key, written to the store (its hash) or the data directory's
/// file, and printed once; running gateways take it when they see the store move.
pub fn rotate_api_key(args: &ConfigArgs) -> Result<ExitCode> {
    let config = crate::load::load(args, Overrides::default())?;
    let (store, _) = crate::load::open_store(&config)?;
    let key = store.rotate_admin_key()?;
    outln!("{key}")?;
    eprintln!(
        "mcplex: the new API key is above, shown once ({}); the old one and every dashboard session opened with it stop working on every gateway of the store (a gateway started with an API key file takes that file's key back when it starts: change the file instead)",
        match store.location() {
            mcplex_state::Location::Directory(dir) =>
                format!("also in {}", dir.join(mcplex_state::API_KEY_FILE).display()),
            mcplex_state::Location::Postgres(_) =>
                "the store keeps only its hash; give it to the CLI in MCPLEX_API_KEY".to_owned(),
        }
    );
    Ok(ExitCode::SUCCESS)
}
