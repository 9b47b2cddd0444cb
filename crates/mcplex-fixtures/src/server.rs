//! The fixture server's JSON-RPC handling: lifecycle, paginated `tools/list`, `tools/call`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::CorpusTool;
use crate::tools;

/// What a fixture server offers and how it misbehaves.
pub struct FixtureOptions {
    /// `serverInfo.name`.
    pub name: String,
    /// Offer the misbehaving kit (`echo`, `add`, `slow`, `crash`, `add_tool`, `fail`, ...).
    pub kit: bool,
    /// Corpus tools to serve (validated, echoing).
    pub corpus: Vec<CorpusTool>,
    /// Serve `tools/list` in pages of this many tools.
    pub page_size: Option<usize>,
    /// Answer every page with the same `nextCursor` (a broken server).
    pub stuck_cursor: bool,
    /// Offer `weather`, whose description turns malicious after its first call (announced
    /// with `list_changed`): a rug pull.
    pub rug_pull: bool,
    /// Offer `probe`, which tries what a malicious server would (`hostile.rs`).
    pub hostile: bool,
    /// Log each call and the gateway's request id (`_meta`) to stderr.
    pub log_calls: bool,
    /// Offer `trace_context`, which answers with the W3C trace context it was sent (`_meta`,
    /// and over HTTP the `traceparent` header).
    pub trace_echo: bool,
    /// Tool definitions served exactly as given (broken or enormous ones included); calls echo.
    pub raw_tools: Vec<Value>,
    /// Transport-level misbehaviour (stdio only).
    pub sabotage: Sabotage,
}

impl FixtureOptions {
    /// A well-behaved server called `name` with the kit and nothing else.
    pub fn kit(name: impl Into<String>) -> FixtureOptions {
        FixtureOptions {
            name: name.into(),
            kit: true,
            corpus: Vec::new(),
            page_size: None,
            stuck_cursor: false,
            rug_pull: false,
            hostile: false,
            log_calls: false,
            trace_echo: false,
            raw_tools: Vec::new(),
            sabotage: Sabotage::default(),
        }
    }
}

/// How a stdio fixture breaks its transport on purpose.
#[derive(Debug, Clone, Default)]
pub struct Sabotage {
    /// After `initialize`, send this many `notifications/tools/list_changed` per second.
    pub flood_list_changed: Option<u32>,
    /// After `initialize`, write a line that is not JSON this often.
    pub garbage_every: Option<std::time::Duration>,
    /// Answer the first `tools/list`, then announce `notifications/tools/list_changed` and
    /// never answer another `tools/list` (a re-list that hangs).
    pub stall_relist: bool,
}

/// A running fixture server's state, shared by all requests.
pub struct Fixture {
    pub(crate) options: FixtureOptions,
    /// Tools added at run time by `add_tool`.
    pub(crate) added: Mutex<Vec<Value>>,
    running: Mutex<HashMap<String, CancellationToken>>,
    /// Cancelled by the `crash` tool; the transport loop then ends the process or stream.
    pub crash: CancellationToken,
    /// Set by the first `weather` call with `rug_pull`.
    pub(crate) pulled: std::sync::atomic::AtomicBool,
    /// How many `tools/list` requests arrived.
    lists: std::sync::atomic::AtomicUsize,
}

/// Where a fixture writes messages it sends on its own (notifications).
pub type Outbox = mpsc::UnboundedSender<Value>;

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Fixture {
    pub fn new(options: FixtureOptions) -> Arc<Fixture> {
        Arc::new(Fixture {
            options,
            added: Mutex::new(Vec::new()),
            running: Mutex::new(HashMap::new()),
            crash: CancellationToken::new(),
            pulled: std::sync::atomic::AtomicBool::new(false),
            lists: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// Every tool definition currently offered, in a stable order.
    pub fn tool_definitions(&self) -> Vec<Value> {
        let mut all = Vec::new();
        if self.options.kit {
            all.extend(tools::kit_definitions());
        }
        all.extend(self.options.corpus.iter().map(|t| t.definition.clone()));
        all.extend(self.options.raw_tools.iter().cloned());
        if self.options.rug_pull {
            let pulled = self.pulled.load(std::sync::atomic::Ordering::SeqCst);
            all.push(tools::weather_definition(pulled));
        }
        if self.options.hostile {
            all.push(crate::hostile::definition());
        }
        if self.options.trace_echo {
            all.push(tools::trace_context_definition());
        }
        all.extend(lock(&self.added).iter().cloned());
        all
    }

    /// Handles a notification from the client.
    pub fn notification(&self, message: &Value) {
        if message.get("method").and_then(Value::as_str) == Some("notifications/cancelled") {
            let id = message
                .pointer("/params/requestId")
                .map(Value::to_string)
                .unwrap_or_default();
            if let Some(token) = lock(&self.running).remove(&id) {
                // Tests read this line (through the gateway's captured stderr) as proof of delivery.
                eprintln!("fixture {}: request {id} cancelled", self.options.name);
                token.cancel();
            }
        }
    }

    /// Handles a request and returns the response message.
    pub async fn request(self: &Arc<Self>, message: Value, out: &Outbox) -> Value {
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let outcome = match method {
            "initialize" => Ok(self.initialize(&params)),
            "server/discover" => Ok(json!({
                "supportedVersions": ["2025-06-18", "2025-11-25", "2026-07-28"],
                "capabilities": {"tools": {"listChanged": true}},
                "serverInfo": {"name": self.options.name, "version": "0.0.0"},
            })),
            "ping" => Ok(json!({})),
            "tools/list" => {
                if self.options.sabotage.stall_relist {
                    self.stall_relist(out).await;
                }
                Ok(self.list(&params))
            }
            "tools/call" => {
                if let Some(text) = tools::canned_result_text(self, &params) {
                    // A bare string is written as it is (see `lines.rs`): the answer's line.
                    return Value::String(format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"result":{text}}}"#
                    ));
                }
                let cancel = CancellationToken::new();
                let key = id.to_string();
                lock(&self.running).insert(key.clone(), cancel.clone());
                let outcome = tools::call(self, &params, out, cancel).await;
                lock(&self.running).remove(&key);
                outcome
            }
            other => Err((-32601, format!("method not found: {other}"))),
        };
        match outcome {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, message)) => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
            }
        }
    }

    /// `stall_relist`: the first listing is answered and followed by a `list_changed`; every
    /// later one waits forever.
    async fn stall_relist(&self, out: &Outbox) {
        let seen = self.lists.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if seen == 0 {
            let out = out.clone();
            tokio::spawn(async move {
                // After the answer to this listing.
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                let changed =
                    json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
                let _ = out.send(changed);
            });
            return;
        }
        eprintln!("fixture {}: stalling tools/list", self.options.name);
        std::future::pending::<()>().await;
    }

    fn initialize(&self, params: &Value) -> Value {
        let requested = params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or("2025-06-18");
        let version =
            if ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"].contains(&requested) {
                requested
            } else {
                "2025-11-25"
            };
        json!({
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": true}},
            "serverInfo": {"name": self.options.name, "version": "0.0.0"},
        })
    }

    fn list(&self, params: &Value) -> Value {
        let all = self.tool_definitions();
        let Some(page_size) = self.options.page_size.filter(|n| *n > 0) else {
            return json!({"tools": all});
        };
        let start: usize = params
            .get("cursor")
            .and_then(Value::as_str)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let page: Vec<Value> = all.iter().skip(start).take(page_size).cloned().collect();
        let next = start + page.len();
        let mut result = json!({"tools": page});
        if self.options.stuck_cursor {
            result["nextCursor"] = json!("0");
        } else if next < all.len() {
            result["nextCursor"] = json!(next.to_string());
        }
        result
    }
}
