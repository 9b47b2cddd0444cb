//! The way from a connection's reader to its supervisor for the notifications that concern no
//! call. The reader never waits on it: `list_changed` notifications only set a flag (one pending
//! re-list is as good as a thousand), and the others queue up to [`QUEUED`] messages and
//! [`QUEUED_BYTES`] bytes, past which they are dropped, counted, and reported at most once per
//! [`REPORT_EVERY`]. A server that floods notifications costs a bounded amount of memory, and
//! the answers to calls behind them are routed as fast as ever.

use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::{Notify, mpsc};

use super::lock;

/// How many notifications may wait for the supervisor.
pub(crate) const QUEUED: usize = 256;
/// How many bytes of JSON the waiting notifications may hold together.
pub(crate) const QUEUED_BYTES: usize = 8 * 1024 * 1024;
/// The least time between two reports of dropped notifications.
const REPORT_EVERY: Duration = Duration::from_secs(10);

/// Which listings a server said changed, as bits.
const TOOLS: u8 = 1;
const PROMPTS: u8 = 2;
const RESOURCES: u8 = 4;

/// Which listings changed since the supervisor last looked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ListChanges {
    pub tools: bool,
    pub prompts: bool,
    pub resources: bool,
}

impl ListChanges {
    fn of(bits: u8) -> ListChanges {
        ListChanges {
            tools: bits & TOOLS != 0,
            prompts: bits & PROMPTS != 0,
            resources: bits & RESOURCES != 0,
        }
    }
}

/// The bit of a `list_changed` notification's `method`; `None` for any other notification.
fn list_changed_bit(method: Option<&str>) -> Option<u8> {
    match method? {
        "notifications/tools/list_changed" => Some(TOOLS),
        "notifications/prompts/list_changed" => Some(PROMPTS),
        "notifications/resources/list_changed" => Some(RESOURCES),
        _ => None,
    }
}

struct Shared {
    /// `list_changed` notifications not yet seen by the supervisor.
    changed: AtomicU8,
    /// Wakes the supervisor for `changed`.
    wake: Notify,
    /// The JSON bytes of the notifications waiting in the queue.
    queued_bytes: AtomicUsize,
    /// Dropped since the last report.
    dropped: AtomicU64,
    /// When drops were last reported.
    reported: Mutex<Option<Instant>>,
}

/// The reader's end: [`NotificationSender::send`] never waits.
#[derive(Clone)]
pub(crate) struct NotificationSender {
    server: Arc<str>,
    shared: Arc<Shared>,
    queue: mpsc::Sender<(usize, Value)>,
}

/// The supervisor's end.
pub(crate) struct NotificationReceiver {
    shared: Arc<Shared>,
    queue: mpsc::Receiver<(usize, Value)>,
}

/// What the supervisor receives.
#[derive(Debug)]
pub(crate) enum Received {
    /// At least one `list_changed` arrived for each listing named.
    Changed(ListChanges),
    /// Any other notification, whole.
    Notice(Value),
}

/// A new way for `server`'s notifications.
pub(crate) fn channel(server: &str) -> (NotificationSender, NotificationReceiver) {
    let shared = Arc::new(Shared {
        changed: AtomicU8::new(0),
        wake: Notify::new(),
        queued_bytes: AtomicUsize::new(0),
        dropped: AtomicU64::new(0),
        reported: Mutex::new(None),
    });
    let (sender, receiver) = mpsc::channel(QUEUED);
    (
        NotificationSender {
            server: server.into(),
            shared: shared.clone(),
            queue: sender,
        },
        NotificationReceiver {
            shared,
            queue: receiver,
        },
    )
}

impl NotificationSender {
    /// Hands `notification` on, or drops it when the supervisor is that far behind. Returns
    /// whether it was kept.
    pub(crate) fn send(&self, notification: Value) -> bool {
        let method = notification.get("method").and_then(Value::as_str);
        if let Some(bit) = list_changed_bit(method) {
            self.shared.changed.fetch_or(bit, Ordering::AcqRel);
            self.shared.wake.notify_one();
            return true;
        }
        if self.queue.is_closed() {
            return false;
        }
        let bytes = mcplex_protocol::json_len(&notification, QUEUED_BYTES);
        let queued = self.shared.queued_bytes.fetch_add(bytes, Ordering::AcqRel);
        if queued.saturating_add(bytes) > QUEUED_BYTES {
            self.shared.queued_bytes.fetch_sub(bytes, Ordering::AcqRel);
            self.dropped();
            return false;
        }
        match self.queue.try_send((bytes, notification)) {
            Ok(()) => true,
            Err(_) => {
                self.shared.queued_bytes.fetch_sub(bytes, Ordering::AcqRel);
                if !self.queue.is_closed() {
                    self.dropped();
                }
                false
            }
        }
    }

    /// Counts a dropped notification, and reports the drops unless it did a moment ago.
    fn dropped(&self) {
        self.shared.dropped.fetch_add(1, Ordering::AcqRel);
        let mut reported = lock(&self.shared.reported);
        if reported.is_some_and(|at| at.elapsed() < REPORT_EVERY) {
            return;
        }
        *reported = Some(Instant::now());
        let dropped = self.shared.dropped.swap(0, Ordering::AcqRel);
        tracing::warn!(
            server = %self.server,
            dropped,
            "the server sends notifications faster than the gateway handles them; dropped {dropped} (list changes are never lost)"
        );
    }
}

impl NotificationReceiver {
    /// The next change or notification; `None` once the connection's reader has ended and
    /// everything it sent was received. Changes come before queued notifications.
    pub(crate) async fn recv(&mut self) -> Option<Received> {
        loop {
            if let Some(changes) = self.take_changes() {
                return Some(Received::Changed(changes));
            }
            tokio::select! {
                biased;
                () = self.shared.wake.notified() => {}
                queued = self.queue.recv() => match queued {
                    Some((bytes, notification)) => {
                        self.shared.queued_bytes.fetch_sub(bytes, Ordering::AcqRel);
                        return Some(Received::Notice(notification));
                    }
                    None => return self.take_changes().map(Received::Changed),
                },
            }
        }
    }

    /// The listings that changed since the last look, if any.
    pub(crate) fn take_changes(&self) -> Option<ListChanges> {
        let bits = self.shared.changed.swap(0, Ordering::AcqRel);
        (bits != 0).then(|| ListChanges::of(bits))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn notice(n: usize) -> Value {
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": format!("x://{n}"), "pad": "p".repeat(4096)}})
    }

    #[tokio::test]
    async fn a_flood_is_bounded_and_list_changes_are_kept() {
        let (sender, mut receiver) = channel("flood");
        let kept = (0..10_000).filter(|&n| sender.send(notice(n))).count();
        assert!(kept <= QUEUED, "{kept} kept");
        for _ in 0..1000 {
            assert!(sender.send(json!({"method": "notifications/tools/list_changed"})));
        }
        sender.send(json!({"method": "notifications/prompts/list_changed"}));
        let first = receiver.recv().await;
        let expected = ListChanges {
            tools: true,
            prompts: true,
            resources: false,
        };
        assert!(
            matches!(first, Some(Received::Changed(c)) if c == expected),
            "{first:?}"
        );
        let mut notices = 0;
        while let Ok(Some(Received::Notice(_))) =
            tokio::time::timeout(Duration::from_millis(50), receiver.recv()).await
        {
            notices += 1;
        }
        assert_eq!(notices, kept);
        assert!(sender.send(notice(0)), "room again once received");
    }

    #[tokio::test]
    async fn the_bytes_waiting_are_bounded() {
        let (sender, _receiver) = channel("big");
        let big =
            json!({"method": "notifications/message", "params": {"data": "x".repeat(1024 * 1024)}});
        let kept = (0..16).filter(|_| sender.send(big.clone())).count();
        assert!(kept * 1024 * 1024 <= QUEUED_BYTES, "{kept} kept");
        assert!(kept >= 4, "{kept} kept");
    }

    #[tokio::test]
    async fn the_end_comes_after_what_was_sent() {
        let (sender, mut receiver) = channel("end");
        sender.send(notice(1));
        sender.send(json!({"method": "notifications/tools/list_changed"}));
        drop(sender);
        assert!(matches!(receiver.recv().await, Some(Received::Changed(_))));
        assert!(matches!(receiver.recv().await, Some(Received::Notice(_))));
        assert!(receiver.recv().await.is_none());
    }
}
