//! `mcplex servers …`, `mcplex tools approve|block`, `mcplex token …`: managing approvals and
//! agent tokens. With a gateway running on the config's listen address, every command goes
//! through its management API (so the running gateway applies it at once); with none, the
//! command works on the state database directly, and the next start reads it.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use mcplex_catalog::Snapshot;
use mcplex_config::{Config, Overrides};
use mcplex_state::Store;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::start::{Core, settle, settle_limit};
use crate::api::{CreateToken, token_json, token_spec};
use crate::cli::ConfigArgs;
use crate::trust::{Trust, TrustAction, TrustRequest};

/// Where a management command is carried out.
enum Target {
    /// A gateway answers on the config's listen address.
    Running(Api),
    /// No gateway: the state database, directly.
    Offline,
}

struct Api {
    base: String,
    key: String,
    http: reqwest::Client,
}

impl Api {
    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value> {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.key);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.context("the gateway did not answer")?;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        if status.is_success() {
            Ok(body)
        } else {
            let why = body["error"].as_str().unwrap_or("no reason given");
            bail!("{why} (HTTP {})", status.as_u16())
        }
    }
}

/// Loads the config and finds out whether a gateway is running for it.
async fn target(args: &ConfigArgs) -> Result<(Config, Target)> {
    let config = crate::load::load(args, Overrides::default())?;
    let dir = crate::load::data_dir(&config);
    let key = mcplex_state::api_key(&dir)?;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .connect_timeout(Duration::from_secs(2))
        .no_proxy()
        .build()?;
    let base = format!("http://{}", connect_address(&config.listen));
    let probe = http
        .get(format!("{base}/api/v1/servers"))
        .bearer_auth(&key)
        .send()
        .await;
    let target = match probe {
        Ok(response) if response.status().is_success() => Target::Running(Api { base, key, http }),
        Ok(response) => bail!(
            "a server on {base} refused the API key from {} (HTTP {}): is it a gateway with another data directory?",
            dir.display(),
            response.status().as_u16()
        ),
        Err(e) if e.is_connect() => Target::Offline,
        Err(e) => return Err(anyhow!(e).context(format!("cannot reach {base}"))),
    };
    Ok((config, target))
}

/// Where to connect for a listen address: a wildcard bind is reached on loopback.
fn connect_address(listen: &str) -> String {
    match listen.rsplit_once(':') {
        Some(("0.0.0.0", port)) => format!("127.0.0.1:{port}"),
        Some(("[::]", port)) => format!("[::1]:{port}"),
        _ => listen.to_owned(),
    }
}

/// The state database of `config`, with the founding servers recorded if this creates it.
fn open_offline(config: &Config) -> Result<(Arc<Store>, Trust)> {
    let dir = crate::load::data_dir(config);
    let (store, opened) =
        Store::open(&dir).with_context(|| format!("cannot open the state in {}", dir.display()))?;
    let store = Arc::new(store);
    let mut trust = Trust::load(store.clone(), opened.created, config)?;
    trust.register(config);
    Ok((store, trust))
}

fn offline_action(
    trust: &mut Trust,
    action: TrustAction,
    config: &Config,
    snapshot: &Snapshot,
) -> Result<String> {
    let (reply, mut outcome) = oneshot::channel();
    trust.handle(TrustRequest { action, reply }, config, snapshot);
    // `handle` replies before it returns.
    outcome
        .try_recv()
        .map_err(|_| anyhow!("no outcome"))?
        .map_err(|why| anyhow!(why))
}

/// `servers approve|quarantine NAME`, `tools block ID`.
pub async fn act(args: &ConfigArgs, action: TrustAction) -> Result<ExitCode> {
    let (config, target) = target(args).await?;
    let message = match target {
        Target::Running(api) => {
            let path = match &action {
                TrustAction::ApproveServer(name) => {
                    format!("/api/v1/servers/{}/approve", encode(name))
                }
                TrustAction::QuarantineServer(name) => {
                    format!("/api/v1/servers/{}/quarantine", encode(name))
                }
                TrustAction::ApproveTool(id) => format!("/api/v1/tools/{}/approve", encode(id)),
                TrustAction::BlockTool(id) => format!("/api/v1/tools/{}/block", encode(id)),
            };
            let answer = api.send(reqwest::Method::POST, &path, None).await?;
            answer["message"].as_str().unwrap_or("done").to_owned()
        }
        Target::Offline => {
            let (_store, mut trust) = open_offline(&config)?;
            let snapshot = match &action {
                // Pinning needs the tool's current definition: ask its server.
                TrustAction::ApproveTool(_) => {
                    let limit = settle_limit(&config);
                    let core = Core::start(config.clone(), None, Duration::ZERO, None);
                    settle(&core.gateway, limit).await;
                    let snapshot = core.gateway.snapshot();
                    core.shutdown().await;
                    snapshot
                }
                _ => Arc::new(Snapshot::empty()),
            };
            let message = offline_action(&mut trust, action, &config, &snapshot)?;
            format!("{message} (no gateway running; saved for its next start)")
        }
    };
    println!("{message}");
    Ok(ExitCode::SUCCESS)
}

/// `servers list`.
pub async fn servers(args: &ConfigArgs, as_json: bool) -> Result<ExitCode> {
    let (config, target) = target(args).await?;
    let servers: Vec<Value> = match target {
        Target::Running(api) => {
            let answer = api
                .send(reqwest::Method::GET, "/api/v1/servers", None)
                .await?;
            answer["servers"].as_array().cloned().unwrap_or_default()
        }
        Target::Offline => {
            let (_store, mut trust) = open_offline(&config)?;
            let approvals = trust.approvals_mut();
            config
                .servers
                .iter()
                .map(|s| {
                    let state = if approvals.server_approved(&s.name) {
                        "approved"
                    } else {
                        "quarantined"
                    };
                    json!({"name": s.name, "state": state, "status": "not running"})
                })
                .collect()
        }
    };
    if as_json {
        println!("{}", serde_json::to_string_pretty(&servers)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("{:24} {:12} {:24} TOOLS", "NAME", "STATE", "STATUS");
    for server in &servers {
        let tools = match (server.get("tools"), server.get("withheld")) {
            (Some(tools), Some(withheld)) => format!("{tools} served, {withheld} withheld"),
            _ => String::new(),
        };
        println!(
            "{:24} {:12} {:24} {tools}",
            server["name"].as_str().unwrap_or_default(),
            server["state"].as_str().unwrap_or_default(),
            server["status"].as_str().unwrap_or_default(),
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `token create`: prints the token once.
pub async fn create_token(args: &ConfigArgs, request: CreateToken) -> Result<ExitCode> {
    let (config, target) = target(args).await?;
    let created = match target {
        Target::Running(api) => {
            api.send(
                reqwest::Method::POST,
                "/api/v1/tokens",
                Some(serde_json::to_value(&request)?),
            )
            .await?
        }
        Target::Offline => {
            let (store, _trust) = open_offline(&config)?;
            let spec = token_spec(&request, &config).map_err(|why| anyhow!(why))?;
            let created = store.create_token(spec)?;
            let mut body = token_json(&created.record);
            body["token"] = Value::String(created.token);
            body
        }
    };
    eprintln!(
        "token {} created ({}); it is shown once, store it now:",
        created["name"].as_str().unwrap_or_default(),
        created["permissions"].as_str().unwrap_or_default()
    );
    println!("{}", created["token"].as_str().unwrap_or_default());
    Ok(ExitCode::SUCCESS)
}

/// `token list`.
pub async fn tokens(args: &ConfigArgs, as_json: bool) -> Result<ExitCode> {
    let (config, target) = target(args).await?;
    let tokens: Vec<Value> = match target {
        Target::Running(api) => {
            let answer = api
                .send(reqwest::Method::GET, "/api/v1/tokens", None)
                .await?;
            answer["tokens"].as_array().cloned().unwrap_or_default()
        }
        Target::Offline => {
            let (store, _trust) = open_offline(&config)?;
            store.tokens()?.iter().map(token_json).collect()
        }
    };
    if as_json {
        println!("{}", serde_json::to_string_pretty(&tokens)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:20} {:8} {:26} {:24} PROFILE",
        "NAME", "STATUS", "PERMISSIONS", "SERVERS"
    );
    for token in &tokens {
        let servers = match token["servers"].as_array() {
            Some(list) => list
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(","),
            None => "*".to_owned(),
        };
        println!(
            "{:20} {:8} {:26} {:24} {}",
            token["name"].as_str().unwrap_or_default(),
            token["status"].as_str().unwrap_or_default(),
            token["permissions"].as_str().unwrap_or_default(),
            servers,
            token["profile"].as_str().unwrap_or("-"),
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `token revoke NAME`.
pub async fn revoke_token(args: &ConfigArgs, name: &str) -> Result<ExitCode> {
    let (config, target) = target(args).await?;
    match target {
        Target::Running(api) => {
            api.send(
                reqwest::Method::DELETE,
                &format!("/api/v1/tokens/{}", encode(name)),
                None,
            )
            .await?;
        }
        Target::Offline => {
            let (store, _trust) = open_offline(&config)?;
            if !store.revoke_token(name)? {
                bail!("no active token named {name:?}");
            }
        }
    }
    println!("token {name} revoked");
    Ok(ExitCode::SUCCESS)
}

/// Percent-encodes a path segment (server names and tool ids may hold any character but `/`
/// is the one that would break the route; `:` is fine in a path).
fn encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b':' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}
