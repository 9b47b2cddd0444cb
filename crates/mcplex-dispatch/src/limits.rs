//! Limits per caller: how many tool calls an agent token or an OAuth subject may start a minute
//! and have in flight, overall and for `write` and `destructive` tools ([`CallLimits`]: the
//! config's default, a token's own over it). The operator (the API key, the local user) is
//! never limited.
//!
//! Counted here, in memory, for this replica; twice a second the control plane's exchange
//! (`mcplex-runtime`'s `usage.rs`) writes this replica's counts to the store and hands back what
//! the other replicas counted, which every later decision adds in. A caller spread over
//! replicas is held to one limit, give or take what it could do within that second.
//!
//! A caller with no limit is not counted at all: no lock, no map entry.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use arc_swap::ArcSwap;
use mcplex_catalog::Permission;
use mcplex_config::{CallLimits, Rate};

use crate::limits_window::{Moment, Windows};

/// What a limit applies to: every call, or the calls to tools of one permission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LimitClass {
    All,
    Write,
    Destructive,
}

impl LimitClass {
    pub const ALL: [LimitClass; 3] = [LimitClass::All, LimitClass::Write, LimitClass::Destructive];

    pub fn as_str(self) -> &'static str {
        match self {
            LimitClass::All => "all",
            LimitClass::Write => "write",
            LimitClass::Destructive => "destructive",
        }
    }

    pub fn parse(text: &str) -> Option<LimitClass> {
        LimitClass::ALL.into_iter().find(|c| c.as_str() == text)
    }

    fn index(self) -> usize {
        self as usize
    }

    fn rate(self, limits: &CallLimits) -> Rate {
        match self {
            LimitClass::All => limits.all,
            LimitClass::Write => limits.write,
            LimitClass::Destructive => limits.destructive,
        }
    }

    /// The classes a call to a tool needing `permission` counts in.
    fn of(permission: Permission) -> &'static [LimitClass] {
        match permission {
            Permission::Read => &[LimitClass::All],
            Permission::Write => &[LimitClass::All, LimitClass::Write],
            Permission::Destructive => &[LimitClass::All, LimitClass::Destructive],
        }
    }
}

/// Which limit refused a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitKind {
    CallsPerMinute,
    ConcurrentCalls,
}

impl LimitKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LimitKind::CallsPerMinute => "calls_per_minute",
            LimitKind::ConcurrentCalls => "concurrent_calls",
        }
    }
}

/// A call refused by a limit: which one, and when to try again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limited {
    pub caller: Arc<str>,
    pub kind: LimitKind,
    pub class: LimitClass,
    /// The limit's value.
    pub allowed: u32,
    /// When one more call would fit, if the caller makes none meanwhile.
    pub retry_after: Duration,
}

impl std::error::Error for Limited {}

impl std::fmt::Display for Limited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let calls = match self.class {
            LimitClass::All => "calls".to_owned(),
            class => format!("calls to {} tools", class.as_str()),
        };
        let limit = match self.kind {
            LimitKind::CallsPerMinute => format!("{} {calls} per minute", self.allowed),
            LimitKind::ConcurrentCalls => format!("{} {calls} at once", self.allowed),
        };
        write!(
            f,
            "rate limited: {} may make {limit}; retry in {} s",
            self.caller,
            self.retry_after.as_secs().max(1)
        )
    }
}

/// One class's counts of one caller.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ClassUsage {
    pub(crate) windows: Windows,
    pub in_flight: u64,
}

/// One caller's counts on this replica.
#[derive(Debug, Clone, Default)]
struct Usage {
    classes: [ClassUsage; 3],
    /// Calls refused, counted like calls (so a caller is forgotten once it is quiet).
    refused: Windows,
}

/// A row of the exchange between replicas: one caller's counts in one class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageRow {
    pub caller: String,
    pub class: LimitClass,
    pub window: i64,
    pub current: u64,
    pub previous: u64,
    pub in_flight: u64,
}

/// A caller's limits and use, as the operator sees them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallerUsage {
    pub caller: String,
    /// In force: the token's own over the default.
    pub limits: CallLimits,
    /// Calls in the last 60 seconds, on every replica.
    pub calls_last_minute: u64,
    /// Calls in flight now, on every replica.
    pub in_flight: u64,
    /// Calls this replica refused in the last 60 seconds.
    pub refused_last_minute: u64,
}

/// The limits in force and every limited caller's counts.
#[derive(Default)]
pub struct CallLimiter {
    defaults: ArcSwap<CallLimits>,
    /// Agent tokens' own limits, by token name.
    own: ArcSwap<HashMap<String, CallLimits>>,
    local: Mutex<HashMap<Arc<str>, Usage>>,
    /// What the other replicas counted, summed, as of the last exchange.
    remote: ArcSwap<HashMap<String, [ClassUsage; 3]>>,
}

/// An admitted call's place: its in-flight counts go when it is dropped.
#[must_use]
pub struct Admission {
    held: Option<(Arc<CallLimiter>, Arc<str>, &'static [LimitClass])>,
}

impl Drop for Admission {
    fn drop(&mut self) {
        if let Some((limiter, caller, classes)) = self.held.take() {
            limiter.release(&caller, classes);
        }
    }
}

impl CallLimiter {
    /// Every caller's default (the config's `limits`); applies from the next call.
    pub fn set_defaults(&self, defaults: CallLimits) {
        self.defaults.store(Arc::new(defaults));
    }

    /// The agent tokens' own limits, by name (replaced whole when the tokens are reloaded).
    pub fn set_own(&self, own: HashMap<String, CallLimits>) {
        self.own.store(Arc::new(own));
    }

    /// What limits `caller` now.
    pub fn limits_of(&self, caller: &str) -> CallLimits {
        let defaults = self.defaults.load();
        match self.own.load().get(caller) {
            Some(own) => own.over(&defaults),
            None => **defaults,
        }
    }

    /// Admits a call by `caller` (`None`: the operator) to a tool needing `permission`, or says
    /// which limit refuses it.
    pub fn admit(
        self: &Arc<Self>,
        caller: Option<&Arc<str>>,
        permission: Permission,
    ) -> Result<Admission, Limited> {
        self.admit_at(caller, permission, Moment::now())
    }

    /// [`CallLimiter::admit`] at `now` (tests pick the moment).
    pub(crate) fn admit_at(
        self: &Arc<Self>,
        caller: Option<&Arc<str>>,
        permission: Permission,
        now: Moment,
    ) -> Result<Admission, Limited> {
        let free = Admission { held: None };
        let Some(caller) = caller else {
            return Ok(free);
        };
        let limits = self.limits_of(caller);
        if limits.is_empty() {
            return Ok(free);
        }
        let classes = LimitClass::of(permission);
        let remote = self.remote.load();
        let mut local = self.local.lock().unwrap_or_else(PoisonError::into_inner);
        let usage = local.entry(caller.clone()).or_default();
        for &class in classes {
            let rate = class.rate(&limits);
            let mine = usage.classes[class.index()];
            let theirs = remote
                .get(caller.as_ref())
                .map(|classes| classes[class.index()])
                .unwrap_or_default();
            let refuse = |kind, allowed, retry_after| Limited {
                caller: caller.clone(),
                kind,
                class,
                allowed,
                retry_after,
            };
            if let Some(allowed) = rate.concurrent_calls
                && mine.in_flight.saturating_add(theirs.in_flight) >= u64::from(allowed)
            {
                usage.refused = usage.refused.at(now).plus_one();
                return Err(refuse(
                    LimitKind::ConcurrentCalls,
                    allowed,
                    Duration::from_secs(1),
                ));
            }
            if let Some(allowed) = rate.calls_per_minute
                && let Some(wait) = mine
                    .windows
                    .plus(theirs.windows, now)
                    .wait_for_room(allowed, now)
            {
                usage.refused = usage.refused.at(now).plus_one();
                return Err(refuse(LimitKind::CallsPerMinute, allowed, wait));
            }
        }
        for &class in classes {
            let counts = &mut usage.classes[class.index()];
            counts.windows = counts.windows.at(now);
            counts.windows.current += 1;
            counts.in_flight += 1;
        }
        Ok(Admission {
            held: Some((self.clone(), caller.clone(), classes)),
        })
    }

    fn release(&self, caller: &Arc<str>, classes: &[LimitClass]) {
        let mut local = self.local.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(usage) = local.get_mut(caller) {
            for class in classes {
                let counts = &mut usage.classes[class.index()];
                counts.in_flight = counts.in_flight.saturating_sub(1);
            }
        }
    }

    /// This replica's counts for the exchange, and forgets callers with nothing left to count.
    pub fn report(&self) -> Vec<UsageRow> {
        self.report_at(Moment::now())
    }

    pub(crate) fn report_at(&self, now: Moment) -> Vec<UsageRow> {
        let mut local = self.local.lock().unwrap_or_else(PoisonError::into_inner);
        local.retain(|_, usage| {
            usage.refused.in_last_minute(now) > 0
                || usage.classes.iter().any(|c| {
                    let windows = c.windows.at(now);
                    c.in_flight > 0 || windows.current > 0 || windows.previous > 0
                })
        });
        let mut rows = Vec::new();
        for (caller, usage) in local.iter() {
            for class in LimitClass::ALL {
                let counts = usage.classes[class.index()];
                let windows = counts.windows.at(now);
                if counts.in_flight > 0 || windows.current > 0 || windows.previous > 0 {
                    rows.push(UsageRow {
                        caller: caller.to_string(),
                        class,
                        window: windows.window,
                        current: windows.current,
                        previous: windows.previous,
                        in_flight: counts.in_flight,
                    });
                }
            }
        }
        rows
    }

    /// What the other replicas counted (their rows summed), in force from the next call.
    pub fn absorb(&self, others: Vec<UsageRow>) {
        self.absorb_at(others, Moment::now());
    }

    pub(crate) fn absorb_at(&self, others: Vec<UsageRow>, now: Moment) {
        let mut remote: HashMap<String, [ClassUsage; 3]> = HashMap::new();
        for row in others {
            let counts = &mut remote.entry(row.caller).or_default()[row.class.index()];
            let windows = Windows {
                window: row.window,
                current: row.current,
                previous: row.previous,
            };
            counts.windows = counts.windows.plus(windows, now);
            counts.in_flight = counts.in_flight.saturating_add(row.in_flight);
        }
        self.remote.store(Arc::new(remote));
    }

    /// Whether anything could be limited (the exchange has nothing to do otherwise).
    pub fn in_force(&self) -> bool {
        !self.defaults.load().is_empty() || self.own.load().values().any(|l| !l.is_empty())
    }

    /// Every caller with a limit that made or was refused a call recently, on any replica.
    pub fn usage(&self) -> Vec<CallerUsage> {
        self.usage_at(Moment::now())
    }

    pub(crate) fn usage_at(&self, now: Moment) -> Vec<CallerUsage> {
        let mut callers: HashMap<String, CallerUsage> = HashMap::new();
        let mut add = |caller: &str, counts: ClassUsage, refused: u64| {
            let entry = callers
                .entry(caller.to_owned())
                .or_insert_with(|| CallerUsage {
                    caller: caller.to_owned(),
                    limits: self.limits_of(caller),
                    calls_last_minute: 0,
                    in_flight: 0,
                    refused_last_minute: 0,
                });
            // Saturating: the other replicas' counts are whatever the store holds.
            entry.calls_last_minute = entry
                .calls_last_minute
                .saturating_add(counts.windows.in_last_minute(now));
            entry.in_flight = entry.in_flight.saturating_add(counts.in_flight);
            entry.refused_last_minute = entry.refused_last_minute.saturating_add(refused);
        };
        for (caller, usage) in self
            .local
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            add(
                caller,
                usage.classes[LimitClass::All.index()],
                usage.refused.in_last_minute(now),
            );
        }
        for (caller, classes) in self.remote.load().iter() {
            add(caller, classes[LimitClass::All.index()], 0);
        }
        let mut usage: Vec<CallerUsage> = callers.into_values().collect();
        usage.sort_by(|a, b| a.caller.cmp(&b.caller));
        usage
    }
}
