//! `mcplex tools show ID` and `mcplex tools approve ID [--hash H]`: reviewing a tool's
//! definition and approving exactly what was reviewed. Both read the store, where every gateway
//! records the definitions it observes: `show` prints the pinned and the latest observed
//! definition with their hashes; `approve` pins the definition it prints (or the one `--hash`
//! names), and the store refuses it if the tool changed again in between.

use std::process::ExitCode;

use anyhow::{Result, anyhow, bail};
use mcplex_api::{Definition, Done, ReviewState, ToolAction, ToolReview, paths};
use mcplex_names::ToolId;
use mcplex_state::{ApproveRefusal, Review};
use serde_json::Value;

use super::manage::{Target, offline_action, open_offline, target};
use crate::cli::ConfigArgs;
use crate::output::{outln, rowln};
use mcplex_runtime::TrustAction;

/// `tools show ID [--json]`.
pub async fn show(args: &ConfigArgs, id: &str, as_json: bool) -> Result<ExitCode> {
    let parsed = parse(id)?;
    let config = crate::load::load(args, mcplex_config::Overrides::default())?;
    let (store, _) = crate::load::open_store(&config)?;
    let review = store.review(&parsed.server, &parsed.tool)?;
    if as_json {
        outln!("{}", serde_json::to_string_pretty(&review_of(id, &review))?)?;
        return Ok(ExitCode::SUCCESS);
    }
    rowln!("tool {id}: {}", state(&review))?;
    match &review.pinned {
        Some((hash, definition)) => {
            outln!("--- pinned {hash}")?;
            outln!("{}", pretty(definition.as_deref()))?;
        }
        None => outln!("--- pinned: nothing (never approved)")?,
    }
    match &review.observed {
        Some((hash, definition)) => {
            outln!("--- observed {hash}")?;
            outln!("{}", pretty(Some(definition)))?;
        }
        None => outln!("--- observed: nothing (no gateway has seen it)")?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `tools approve ID [--hash H]`.
pub async fn approve(args: &ConfigArgs, id: String, hash: Option<String>) -> Result<ExitCode> {
    let parsed = parse(&id)?;
    let (config, target) = target(args).await?;
    let (store, mut trust) = open_offline(&config)?;
    let review = store.review(&parsed.server, &parsed.tool)?;
    // What is approved is what the operator sees: the hash given, else the latest observed
    // definition, printed here.
    let expected = match hash {
        Some(hash) => Some(hash),
        None => review.observed.as_ref().map(|(hash, definition)| {
            eprintln!("approving {id} as observed, {hash}:");
            eprintln!("{}", pretty(Some(definition)));
            hash.clone()
        }),
    };
    let message = match (target, expected) {
        (Target::Running(api), expected) => {
            let path = paths::tool_action(&id, ToolAction::Approve, expected.as_deref());
            let done: Done = api.post(&path, None::<&()>).await?;
            done.message
        }
        (Target::Store { registered }, Some(hash)) => {
            match store.approve_observed(&parsed.server, &parsed.tool, &hash)? {
                Ok(()) => {}
                Err(ApproveRefusal::Changed { current }) => bail!(
                    "tool {id} changed since it was shown: it is now {current}, not {hash}; review it again (mcplex tools show {id})"
                ),
                Err(ApproveRefusal::NotObserved) => {
                    bail!("no definition of {id} was observed: is its server connected?")
                }
            }
            format!(
                "tool {id} approved (pinned {}) ({})",
                &hash[..hash.len().min(12)],
                Target::store_note(&registered)
            )
        }
        (Target::Store { registered }, None) => {
            // Nothing observed yet: connect to its server like a gateway would, and approve what
            // it offers now.
            drop(store);
            let snapshot = super::manage::observe(&config).await;
            trust.record(&snapshot);
            let message = offline_action(
                &mut trust,
                TrustAction::ApproveTool {
                    id: id.clone(),
                    hash: None,
                },
                &config,
                &snapshot,
            )?;
            format!("{message} ({})", Target::store_note(&registered))
        }
    };
    outln!("{message}")?;
    Ok(ExitCode::SUCCESS)
}

fn parse(id: &str) -> Result<ToolId> {
    ToolId::parse(id).ok_or_else(|| anyhow!("{id:?} is not a tool id (server:tool)"))
}

fn state(review: &Review) -> ReviewState {
    match (&review.pinned, &review.observed) {
        _ if review.blocked => ReviewState::Blocked,
        (None, _) => ReviewState::Pending,
        (Some((pinned, _)), Some((observed, _))) if pinned != observed => ReviewState::Changed,
        (Some(_), _) => ReviewState::Approved,
    }
}

fn pretty(definition: Option<&str>) -> String {
    let Some(definition) = definition else {
        return "(definition not recorded)".to_owned();
    };
    serde_json::from_str::<Value>(definition)
        .ok()
        .and_then(|value| serde_json::to_string_pretty(&value).ok())
        .unwrap_or_else(|| definition.to_owned())
}

pub(crate) fn review_of(id: &str, review: &Review) -> ToolReview {
    let definition = |hash: &str, text: Option<&str>| Definition {
        hash: hash.to_owned(),
        definition: text
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
            .unwrap_or(Value::Null),
    };
    ToolReview {
        id: id.to_owned(),
        state: state(review),
        blocked: review.blocked,
        pinned: review
            .pinned
            .as_ref()
            .map(|(hash, text)| definition(hash, text.as_deref())),
        observed: review
            .observed
            .as_ref()
            .map(|(hash, text)| definition(hash, Some(text))),
    }
}
