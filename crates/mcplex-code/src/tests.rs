//! The sandbox in this thread against an in-memory bridge (the script API, errors and the
//! in-engine limits), and the fair slots. `tests/engine.rs` runs scripts in worker processes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::protocol::{CallOutcomesText, RunRequest, ToolCall, WorkerOutcome, raw};
use crate::sandbox::{Bridge, Sandbox};
use crate::slots::Slots;

/// `add {a, b}` → `{sum}`; `bad` → an invalid-arguments body with the tool's schema; anything
/// else → not found.
struct Tools;

impl Bridge for Tools {
    fn call_batch(&self, calls: Vec<ToolCall>) -> CallOutcomesText {
        calls
            .into_iter()
            .map(|call| {
                let args: Value = call
                    .args
                    .as_ref()
                    .and_then(|args| serde_json::from_str(args.get()).ok())
                    .unwrap_or(Value::Null);
                (call.name, args)
            })
            .map(|(name, args)| match name.as_str() {
                "add" => {
                    let sum = args["a"].as_f64().unwrap_or(0.0)
                        + args["b"].as_f64().unwrap_or(0.0);
                    Ok(json!({"sum": sum}))
                }
                "bad" => Err(
                    json!({"error": "invalid arguments for bad: a is required", "error_type": "invalid_params", "input_schema": {"type": "object", "required": ["a"]}, "hint": "call it with a"}),
                ),
                other => Err(
                    json!({"error": format!("unknown tool: {other}"), "error_type": "not_found", "tool": other}),
                ),
            })
            .map(|outcome: Result<Value, Value>| {
                outcome
                    .as_ref()
                    .map(raw)
                    .map_err(raw)
            })
            .collect()
    }
}

fn request(code: &str) -> RunRequest {
    RunRequest {
        code: code.to_owned(),
        input: json!({"n": 2}),
        timeout_ms: 10_000,
        memory_bytes: 64 * 1024 * 1024,
    }
}

fn run_request(request: &RunRequest) -> WorkerOutcome {
    Sandbox::new(Arc::new(Tools)).expect("sandbox").run(request)
}

fn run(code: &str) -> WorkerOutcome {
    run_request(&request(code))
}

fn limit_of(outcome: &WorkerOutcome) -> &str {
    match outcome {
        WorkerOutcome::Limit { limit, .. } => limit,
        _ => "",
    }
}

#[test]
fn scripts_call_tools_and_return_json() {
    assert_eq!(
        run(
            "const a = call_tool('add', {a: input.n, b: 3});\nconst b = await call_tool('add', {a: a.sum, b: 10});\nreturn {total: b.sum, both: call_tools([{name: 'add', args: {a: 1, b: 1}}, {name: 'add', args: {a: 2, b: 2}}])};"
        ),
        WorkerOutcome::Value(json!({"total": 15, "both": [{"sum": 2}, {"sum": 4}]}))
    );
    assert_eq!(run("return;"), WorkerOutcome::Value(Value::Null));
    assert_eq!(
        run("return [1, 'two', null];"),
        WorkerOutcome::Value(json!([1, "two", null]))
    );
}

#[test]
fn failed_calls_throw_errors_carrying_the_gateway_body() {
    let outcome = run(
        "try { call_tool('nope', {}); } catch (e) { return {message: e.message, body: e.body}; }",
    );
    let WorkerOutcome::Value(value) = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(value["message"], "unknown tool: nope");
    assert_eq!(value["body"]["error_type"], "not_found");
    assert_eq!(
        run(
            "try { call_tools([{name: 'add', args: {}}, {name: 'nope'}]); } catch (e) { return e.results.length; }"
        ),
        WorkerOutcome::Value(json!(2))
    );
}

#[test]
fn script_errors_report_the_message_line_and_the_tool_error_body() {
    assert_eq!(
        run("const a = 1;\nconst b = 2;\nthrow new TypeError('boom at three');"),
        WorkerOutcome::Script {
            message: "TypeError: boom at three".into(),
            line: Some(3),
            body: None
        }
    );
    // An uncaught tool error keeps the self-healing body: the schema and the hint.
    let outcome = run("const x = 1;\ncall_tool('bad', {});");
    let WorkerOutcome::Script {
        message,
        line,
        body: Some(body),
    } = &outcome
    else {
        panic!("{outcome:?}")
    };
    assert!(message.contains("a is required"), "{outcome:?}");
    assert_eq!(*line, Some(2));
    assert_eq!(body["input_schema"]["required"], json!(["a"]));
    assert_eq!(body["hint"], "call it with a");
    let outcome = run("call_tools([{name: 'add'}, {name: 'bad'}]);");
    assert!(
        matches!(&outcome, WorkerOutcome::Script { body: Some(body), .. } if body["error_type"] == "invalid_params"),
        "{outcome:?}"
    );
    let outcome = run("let x = ;");
    assert!(
        matches!(&outcome, WorkerOutcome::Script { message, .. } if message.starts_with("SyntaxError")),
        "{outcome:?}"
    );
    let outcome = run("throw 'just a string';");
    assert!(
        matches!(&outcome, WorkerOutcome::Script { message, .. } if message.contains("just a string")),
        "{outcome:?}"
    );
}

#[test]
fn an_endless_loop_is_interrupted_at_the_deadline_even_when_caught() {
    for code in [
        "while (true) {}",
        "try { while (true) {} } catch (e) {} return 1;",
    ] {
        let started = Instant::now();
        let outcome = run_request(&RunRequest {
            timeout_ms: 200,
            ..request(code)
        });
        assert_eq!(limit_of(&outcome), "timeout_ms", "{code}: {outcome:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}

#[test]
fn memory_is_limited() {
    let outcome = run_request(&RunRequest {
        memory_bytes: 8 * 1024 * 1024,
        ..request("const a = []; while (true) { a.push('x'.repeat(1 << 16)); }")
    });
    assert_eq!(
        limit_of(&outcome),
        "code_execution_memory_limit",
        "{outcome:?}"
    );
}

#[test]
fn there_is_no_io() {
    assert_eq!(
        run(
            "return [typeof setTimeout, typeof require, typeof fetch, typeof process, typeof __mcplex_call, typeof globalThis.std, typeof os];"
        ),
        WorkerOutcome::Value(json!(vec!["undefined"; 7]))
    );
}

#[tokio::test]
async fn slots_bound_each_caller_and_go_to_the_caller_with_the_fewest_runs() {
    let slots = Slots::new(3, 2);
    let a1 = slots.acquire("a").await;
    let a2 = slots.acquire("a").await;
    assert_eq!(slots.running("a"), (2, 2));
    // A third run of `a` waits behind its bound while `b` goes at once.
    let waiting_a = tokio::spawn({
        let slots = slots.clone();
        async move { slots.acquire("a").await }
    });
    tokio::task::yield_now().await;
    let b1 = slots.acquire("b").await;
    assert_eq!(slots.running("b"), (3, 1));
    // All three slots are taken: `b` (1 run) and `c` (none) wait too, after `a`'s third.
    let waiting_b = tokio::spawn({
        let slots = slots.clone();
        async move { slots.acquire("b").await }
    });
    let waiting_c = tokio::spawn({
        let slots = slots.clone();
        async move { slots.acquire("c").await }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    // A slot of `a` frees: `c` has the fewest runs, then `b`; `a`'s third waits the longest.
    drop(a1);
    let c1 = tokio::time::timeout(Duration::from_secs(5), waiting_c)
        .await
        .expect("c goes first")
        .expect("task");
    assert_eq!(slots.running("c"), (3, 1));
    assert!(!waiting_a.is_finished() && !waiting_b.is_finished());
    drop(c1);
    // `a` and `b` have one run each: the earlier request (`a`'s third) goes.
    let a3 = tokio::time::timeout(Duration::from_secs(5), waiting_a)
        .await
        .expect("then a")
        .expect("task");
    assert_eq!(slots.running("a"), (3, 2));
    assert!(!waiting_b.is_finished());
    drop(a2);
    let b2 = tokio::time::timeout(Duration::from_secs(5), waiting_b)
        .await
        .expect("then b")
        .expect("task");
    assert_eq!(slots.running("b"), (3, 2));
    drop((a3, b1, b2));
    assert_eq!(slots.running("a"), (0, 0));
}

#[tokio::test]
async fn a_waiter_that_gives_up_loses_its_place_not_a_slot() {
    let slots = Slots::new(1, 1);
    let held = slots.acquire("a").await;
    let gave_up = tokio::time::timeout(Duration::from_millis(20), slots.acquire("b")).await;
    assert!(gave_up.is_err());
    drop(held);
    assert_eq!(slots.running("b"), (0, 0));
    let again = tokio::time::timeout(Duration::from_secs(5), slots.acquire("b"))
        .await
        .expect("a free slot");
    assert_eq!(slots.running("b"), (1, 1));
    drop(again);
}
