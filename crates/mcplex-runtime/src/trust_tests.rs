//! Approvals as the live catalog applies them, against a real store in a temporary directory and
//! listings made by hand: founding servers approved and their first listing pinned, a new tool
//! pending, a changed one withheld until approved (through the store, as another process
//! would), a blocked one withheld, a server added later quarantined until approved.

use std::sync::Arc;

use mcplex_catalog::Snapshot;
use mcplex_names::ToolId;
use mcplex_state::{Location, Store};
use mcplex_trust::Verdict;
use tokio::sync::oneshot;

use crate::live_tests::{config, live, ready, served, tool};
use crate::trust::{Refusal, Trust, TrustAction, TrustRequest};

fn store() -> (tempfile::TempDir, Arc<Store>) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let location = Location::Directory(dir.path().to_path_buf());
    let (store, _) = Store::open_at(&location).expect("a new store");
    (dir, Arc::new(store))
}

fn withheld(snapshot: &Snapshot, id: &str) -> Option<Verdict> {
    let id = ToolId::parse(id)?;
    snapshot.withheld_tool(&id).map(|tool| tool.verdict)
}

/// Sends `action` the way the management API does and waits for the reply.
fn request(action: TrustAction) -> (TrustRequest, oneshot::Receiver<Result<String, Refusal>>) {
    let (reply, outcome) = oneshot::channel();
    (TrustRequest { action, reply }, outcome)
}

#[tokio::test]
async fn a_founding_server_is_served_and_a_new_or_changed_tool_waits_for_approval() {
    let (_dir, store) = store();
    let config = config(&["alpha"]);
    let trust = Trust::load(store.clone(), &config).expect("approvals");
    let (mut live, gateway) = live(config.clone(), Some(trust));

    // The founding config's server is approved; its first listing is pinned as it is.
    live.fold(ready("alpha", vec![tool("echo", "Echo")]));
    live.publish();
    assert_eq!(served(&gateway.snapshot()), ["alpha:echo"]);

    // A tool added later is pending; a definition that changed is withheld as changed.
    live.fold(ready(
        "alpha",
        vec![
            tool("echo", "Echo, but now it exfiltrates"),
            tool("new", "New"),
        ],
    ));
    live.publish();
    let snapshot = gateway.snapshot();
    assert!(served(&snapshot).is_empty(), "{:?}", served(&snapshot));
    assert_eq!(withheld(&snapshot, "alpha:echo"), Some(Verdict::Changed));
    assert_eq!(withheld(&snapshot, "alpha:new"), Some(Verdict::Pending));

    // Another process (the CLI without a running gateway) approves the definition it was shown;
    // the gateway follows the store.
    let pin = snapshot
        .withheld_tool(&ToolId::new("alpha", "echo"))
        .map(|tool| tool.pin.clone());
    let mut offline = Trust::load(store.clone(), &config).expect("approvals");
    let approve = TrustAction::ApproveTool {
        id: "alpha:echo".into(),
        hash: pin,
    };
    let message = offline.act(&approve, &config, &snapshot).expect("approved");
    assert!(message.contains("approved"), "{message}");
    assert!(live.reload_approvals(), "the store's approvals changed");
    assert!(!live.reload_approvals(), "and are now the ones in memory");
    live.publish();
    let snapshot = gateway.snapshot();
    assert_eq!(served(&snapshot), ["alpha:echo"]);
    assert_eq!(withheld(&snapshot, "alpha:new"), Some(Verdict::Pending));
}

#[tokio::test]
async fn an_approval_of_a_definition_that_changed_since_it_was_shown_is_refused() {
    let (_dir, store) = store();
    let config = config(&["alpha"]);
    let trust = Trust::load(store.clone(), &config).expect("approvals");
    let (mut live, gateway) = live(config.clone(), Some(trust));
    live.fold(ready("alpha", vec![tool("echo", "Echo")]));
    live.publish();
    live.fold(ready("alpha", vec![tool("echo", "Echo v2")]));
    live.publish();
    let (request, outcome) = request(TrustAction::ApproveTool {
        id: "alpha:echo".into(),
        hash: Some("0123456789abcdef".into()),
    });
    live.carry_out(request);
    let refusal = outcome.await.expect("a reply").expect_err("refused");
    assert!(
        matches!(&refusal, Refusal::Invalid(why) if why.contains("changed since it was shown")),
        "{refusal}"
    );
    assert_eq!(
        withheld(&gateway.snapshot(), "alpha:echo"),
        Some(Verdict::Changed)
    );
}

#[tokio::test]
async fn a_blocked_tool_is_withheld_until_approved_again() {
    let (_dir, store) = store();
    let config = config(&["alpha"]);
    let trust = Trust::load(store.clone(), &config).expect("approvals");
    let (mut live, gateway) = live(config, Some(trust));
    live.fold(ready(
        "alpha",
        vec![tool("echo", "Echo"), tool("add", "Add")],
    ));
    live.publish();

    let (block, outcome) = request(TrustAction::BlockTool("alpha:echo".into()));
    live.carry_out(block);
    assert_eq!(
        outcome.await.expect("a reply").as_deref(),
        Ok("tool alpha:echo blocked")
    );
    live.publish();
    let snapshot = gateway.snapshot();
    assert_eq!(served(&snapshot), ["alpha:add"]);
    assert_eq!(withheld(&snapshot, "alpha:echo"), Some(Verdict::Blocked));
    // The block is in the store: a process that loads it sees it.
    let reloaded = store.load_approvals().expect("approvals");
    assert!(reloaded.tool("alpha", "echo").is_some_and(|r| r.blocked));

    let (approve, outcome) = request(TrustAction::ApproveTool {
        id: "alpha:echo".into(),
        hash: None,
    });
    live.carry_out(approve);
    outcome.await.expect("a reply").expect("approved");
    live.publish();
    assert_eq!(served(&gateway.snapshot()), ["alpha:add", "alpha:echo"]);
}

#[tokio::test]
async fn a_server_added_to_the_config_later_is_quarantined_until_approved() {
    let (_dir, store) = store();
    let config_at_start = config(&["alpha"]);
    let trust = Trust::load(store.clone(), &config_at_start).expect("approvals");
    let (mut live, gateway) = live(config_at_start, Some(trust));
    live.publish();

    live.apply_config(config(&["alpha", "beta"]));
    live.fold(ready("beta", vec![tool("x", "X")]));
    live.publish();
    let snapshot = gateway.snapshot();
    assert!(served(&snapshot).is_empty());
    assert!(
        snapshot
            .servers()
            .get("beta")
            .is_some_and(|s| s.quarantined)
    );
    assert!(withheld(&snapshot, "beta:x").is_some());

    let (approve, outcome) = request(TrustAction::ApproveServer("beta".into()));
    live.carry_out(approve);
    assert_eq!(
        outcome.await.expect("a reply").as_deref(),
        Ok("server beta approved")
    );
    // Approving a server approves what it offers at its next build.
    live.publish();
    assert_eq!(served(&gateway.snapshot()), ["beta:x"]);

    let (unknown, outcome) = request(TrustAction::QuarantineServer("gamma".into()));
    live.carry_out(unknown);
    assert!(matches!(
        outcome.await.expect("a reply"),
        Err(Refusal::Invalid(_))
    ));
}

#[tokio::test]
async fn without_approvals_every_tool_is_served_and_requests_are_refused() {
    let (mut live, gateway) = live(config(&["alpha"]), None);
    live.fold(ready("alpha", vec![tool("echo", "Echo")]));
    live.publish();
    assert_eq!(served(&gateway.snapshot()), ["alpha:echo"]);
    let (block, outcome) = request(TrustAction::BlockTool("alpha:echo".into()));
    live.carry_out(block);
    assert!(matches!(
        outcome.await.expect("a reply"),
        Err(Refusal::Invalid(_))
    ));
    assert!(!live.reload_approvals());
}
