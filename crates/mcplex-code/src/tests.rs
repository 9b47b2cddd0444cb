//! The engine against an in-memory host: the script API, errors and every limit. (The surface's
//! end-to-end tests run scripts against real upstreams through the gateway.)

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{Engine, Limits, RunError, ToolHost};

/// `add {a, b}` → structured `{sum}`; `text` → text content; `json_text` → JSON in text;
/// `bad` → an isError result; `nope` → a gateway error; `sleep {ms}` → waits, counting
/// cancellations.
#[derive(Default)]
struct Host {
    dropped: Arc<AtomicUsize>,
}

struct CountDrop(Arc<AtomicUsize>, bool);
impl Drop for CountDrop {
    fn drop(&mut self) {
        if !self.1 {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl ToolHost for Host {
    fn call(
        &self,
        name: String,
        args: Value,
    ) -> Pin<Box<dyn Future<Output = Result<Value, Value>> + Send>> {
        let dropped = self.dropped.clone();
        Box::pin(async move {
            match name.as_str() {
                "add" => {
                    let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
                    Ok(
                        json!({"content": [{"type": "text", "text": "x"}], "structuredContent": {"sum": sum}}),
                    )
                }
                "text" => Ok(json!({"content": [{"type": "text", "text": "plain words"}]})),
                "json_text" => Ok(json!({"content": [{"type": "text", "text": "[1,2,3]"}]})),
                "bad" => Ok(
                    json!({"content": [{"type": "text", "text": "{}"}], "structuredContent": {"error": "invalid arguments", "error_type": "invalid_arguments"}, "isError": true}),
                ),
                "sleep" => {
                    let mut guard = CountDrop(dropped, false);
                    tokio::time::sleep(Duration::from_millis(args["ms"].as_u64().unwrap_or(0)))
                        .await;
                    guard.1 = true;
                    Ok(json!({"content": [], "structuredContent": {"slept": args["ms"]}}))
                }
                other => Err(
                    json!({"error": format!("unknown tool: {other}"), "error_type": "not_found", "tool": other}),
                ),
            }
        })
    }
}

fn limits() -> Limits {
    Limits {
        timeout: Duration::from_secs(10),
        memory_bytes: 64 * 1024 * 1024,
        max_tool_calls: 20,
        parallelism: 4,
    }
}

async fn run_with(code: &str, input: Value, limits: Limits) -> Result<crate::Outcome, RunError> {
    let engine = Engine::new(4, 1);
    engine
        .run(
            code.to_owned(),
            input,
            limits,
            Arc::new(Host::default()),
            Default::default(),
        )
        .await
}

async fn run(code: &str) -> Result<Value, RunError> {
    run_with(code, json!({"n": 2}), limits())
        .await
        .map(|o| o.value)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_call_tools_combine_results_and_return_json() {
    let value = run("const a = call_tool('add', {a: input.n, b: 3});\nconst b = await call_tool('add', {a: a.sum, b: 10});\nreturn {total: b.sum, text: call_tool('text'), list: call_tool('json_text')};")
        .await
        .expect("runs");
    assert_eq!(
        value,
        json!({"total": 15, "text": "plain words", "list": [1, 2, 3]})
    );
    assert_eq!(run("return;").await, Ok(Value::Null));
    assert_eq!(
        run("return [1, 'two', null];").await,
        Ok(json!([1, "two", null]))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_tools_runs_a_batch_in_order() {
    let outcome = run_with(
        "return call_tools([{name: 'sleep', args: {ms: 60}}, {name: 'add', args: {a: 1, b: 1}}, {name: 'sleep', args: {ms: 10}}]);",
        Value::Null,
        limits(),
    )
    .await
    .expect("runs");
    assert_eq!(
        outcome.value,
        json!([{"slept": 60}, {"sum": 2}, {"slept": 10}])
    );
    assert_eq!(outcome.tool_calls, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_calls_throw_errors_carrying_the_gateway_body() {
    let value = run(
        "try { call_tool('nope', {}); } catch (e) { return {message: e.message, body: e.body}; }",
    )
    .await
    .expect("runs");
    assert_eq!(value["message"], "unknown tool: nope");
    assert_eq!(value["body"]["error_type"], "not_found");
    let value = run("try { call_tool('bad'); } catch (e) { return e.body.error_type; }").await;
    assert_eq!(value, Ok(json!("invalid_arguments")));
    let value = run("try { call_tools([{name: 'add', args: {}}, {name: 'nope'}]); } catch (e) { return e.results.length; }").await;
    assert_eq!(value, Ok(json!(2)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_errors_report_the_message_and_line() {
    let error = run("const a = 1;\nconst b = 2;\nthrow new TypeError('boom at three');").await;
    assert_eq!(
        error,
        Err(RunError::Script {
            message: "TypeError: boom at three".into(),
            line: Some(3)
        })
    );
    let error = run("call_tool('nope');").await;
    assert!(
        matches!(&error, Err(RunError::Script { message, line: Some(1) }) if message.contains("unknown tool: nope")),
        "{error:?}"
    );
    let error = run("let x = ;").await;
    assert!(
        matches!(&error, Err(RunError::Script { message, .. }) if message.starts_with("SyntaxError")),
        "{error:?}"
    );
    let error = run("throw 'just a string';").await;
    assert!(
        matches!(&error, Err(RunError::Script { message, .. }) if message.contains("just a string")),
        "{error:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_loop_is_interrupted_at_the_deadline() {
    let started = Instant::now();
    let error = run_with(
        "while (true) {}",
        Value::Null,
        Limits {
            timeout: Duration::from_millis(300),
            ..limits()
        },
    )
    .await;
    assert!(
        matches!(
            &error,
            Err(RunError::Limit {
                limit: "timeout_ms",
                ..
            })
        ),
        "{error:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    // Catching the interruption does not help.
    let error = run_with(
        "try { while (true) {} } catch (e) {} return 1;",
        Value::Null,
        Limits {
            timeout: Duration::from_millis(200),
            ..limits()
        },
    )
    .await;
    assert!(
        matches!(
            &error,
            Err(RunError::Limit {
                limit: "timeout_ms",
                ..
            })
        ),
        "{error:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deadline_cancels_tool_calls_in_flight() {
    let host = Host::default();
    let dropped = host.dropped.clone();
    let engine = Engine::new(2, 0);
    let started = Instant::now();
    let error = engine
        .run(
            "try { call_tool('sleep', {ms: 5000}); } catch (e) {} return 'caught';".into(),
            Value::Null,
            Limits {
                timeout: Duration::from_millis(200),
                ..limits()
            },
            Arc::new(host),
            Default::default(),
        )
        .await;
    assert!(
        matches!(
            &error,
            Err(RunError::Limit {
                limit: "timeout_ms",
                ..
            })
        ),
        "{error:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        1,
        "the call in flight was cancelled"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_and_tool_call_limits_are_named() {
    let error = run_with(
        "const a = []; while (true) { a.push('x'.repeat(1 << 16)); }",
        Value::Null,
        Limits {
            memory_bytes: 8 * 1024 * 1024,
            ..limits()
        },
    )
    .await;
    assert!(
        matches!(
            &error,
            Err(RunError::Limit {
                limit: "code_execution_memory_limit",
                ..
            })
        ),
        "{error:?}"
    );
    let error = run_with(
        "for (let i = 0; i < 5; i++) { try { call_tool('add', {a: i, b: 0}); } catch (e) {} } return 'done';",
        Value::Null,
        Limits { max_tool_calls: 3, ..limits() },
    )
    .await;
    assert!(
        matches!(&error, Err(RunError::Limit { limit: "code_execution_max_tool_calls", message }) if message.contains('3')),
        "{error:?}"
    );
    // The engine keeps serving after a limit.
    assert_eq!(run("return 40 + 2;").await, Ok(json!(42)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn there_is_no_io_and_nothing_survives_a_run() {
    let value = run("return [typeof setTimeout, typeof require, typeof fetch, typeof process, typeof __mcplex_call, typeof globalThis.std, typeof os];").await;
    assert_eq!(
        value,
        Ok(json!([
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined"
        ]))
    );
    let engine = Engine::new(1, 1);
    let host: Arc<dyn ToolHost> = Arc::new(Host::default());
    engine
        .run(
            "globalThis.leak = 'secret'; return 1;".into(),
            Value::Null,
            limits(),
            host.clone(),
            Default::default(),
        )
        .await
        .expect("first");
    let second = engine
        .run(
            "return typeof leak;".into(),
            Value::Null,
            limits(),
            host,
            Default::default(),
        )
        .await
        .expect("second");
    assert_eq!(second.value, json!("undefined"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_stops_a_busy_script() {
    let engine = Engine::new(1, 0);
    let cancel = tokio_util::sync::CancellationToken::new();
    let stop = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        stop.cancel();
    });
    let started = Instant::now();
    let error = engine
        .run(
            "while (true) {}".into(),
            Value::Null,
            limits(),
            Arc::new(Host::default()),
            cancel,
        )
        .await;
    assert!(
        matches!(
            &error,
            Err(RunError::Limit {
                limit: "cancelled",
                ..
            })
        ),
        "{error:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
}
