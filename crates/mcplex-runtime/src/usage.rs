//! The replicas' exchange of call counts, for limits per caller: twice a second this gateway
//! writes its limited callers' counts to the store (only when they changed) and takes the other
//! live gateways' counts back into its [`CallLimiter`], so a caller spread over replicas is
//! held to one limit within the control plane's second. Nothing runs while no limit is in force.
//! A store that cannot be reached leaves each gateway counting alone (logged once per outage).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcplex_dispatch::{CallLimiter, LimitClass, UsageRow};
use mcplex_state::{Store, UsageCount};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How often counts are exchanged: a call is written by the next exchange of its gateway and
/// read by the next exchange of every other, so every gateway counts it within twice this, the
/// control plane's second.
pub const EXCHANGE_INTERVAL: Duration = Duration::from_millis(500);
/// How long one exchange may take before the other gateways' counts are forgotten.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(2);

/// Exchanges the counts of `limits` through `store` as gateway `instance` until `stop`.
pub fn share(
    store: Arc<Store>,
    instance: String,
    limits: Arc<CallLimiter>,
    stop: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(EXCHANGE_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let (mut written, mut lost) = (Vec::new(), false);
        // An exchange still running (a store that hangs) is not started again.
        let busy = Arc::new(AtomicBool::new(false));
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tick.tick() => {}
            }
            if (!limits.in_force() && written.is_empty()) || busy.load(Ordering::Acquire) {
                continue;
            }
            let rows: Vec<UsageCount> = limits.report().iter().map(count_of).collect();
            let mine = (rows != written).then(|| rows.clone());
            let (store, instance, done) = (store.clone(), instance.clone(), busy.clone());
            let oldest = minute_now() - 1;
            busy.store(true, Ordering::Release);
            let exchange = tokio::task::spawn_blocking(move || {
                let exchanged = store.exchange_usage(&instance, mine.as_deref(), oldest);
                done.store(false, Ordering::Release);
                exchanged
            });
            let failure = match tokio::time::timeout(EXCHANGE_TIMEOUT, exchange).await {
                Ok(Ok(Ok(others))) => {
                    written = rows;
                    limits.absorb(others.iter().filter_map(row_of).collect());
                    if std::mem::take(&mut lost) {
                        tracing::info!("call counts are shared with the other gateways again");
                    }
                    continue;
                }
                Ok(Ok(Err(e))) => e.to_string(),
                Ok(Err(e)) => e.to_string(),
                Err(_) => format!("no answer within {EXCHANGE_TIMEOUT:?}"),
            };
            // What the others counted is no longer known: it is forgotten rather than kept in
            // force (their calls in flight would otherwise hold a caller back for good).
            limits.absorb(Vec::new());
            if !std::mem::replace(&mut lost, true) {
                tracing::warn!(
                    "call counts cannot be shared through the store ({failure}): each gateway holds callers to their limits alone until it answers"
                );
            }
        }
    })
}

/// The current minute window's number (wall clock), as the limiter numbers them.
fn minute_now() -> i64 {
    mcplex_state::now_unix().div_euclid(60)
}

fn count_of(row: &UsageRow) -> UsageCount {
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    UsageCount {
        caller: row.caller.clone(),
        class: row.class.as_str().to_owned(),
        minute: row.window,
        current_calls: count(row.current),
        previous_calls: count(row.previous),
        in_flight: count(row.in_flight),
    }
}

/// Another gateway's row; one this release cannot read (a class it does not know) is skipped.
fn row_of(count: &UsageCount) -> Option<UsageRow> {
    let count_of = |n: i64| u64::try_from(n).unwrap_or(0);
    Some(UsageRow {
        caller: count.caller.clone(),
        class: LimitClass::parse(&count.class)?,
        window: count.minute,
        current: count_of(count.current_calls),
        previous: count_of(count.previous_calls),
        in_flight: count_of(count.in_flight),
    })
}
