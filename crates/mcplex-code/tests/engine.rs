//! The engine with real worker processes (this crate's `mcplex-code-worker`) against an
//! in-memory host: tool calls, the limits the gateway enforces, and the defects a process
//! boundary fixes (a runaway native call, leftovers of a run, one caller's flood).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mcplex_code::{Engine, EngineOptions, Limits, Outcome, Run, RunError, ToolHost, WorkerCommand};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// `add {a, b}` → structured `{sum}`; `text` → text content; `json_text` → JSON in text;
/// `bad` → an isError result with a schema; `nope` → a gateway error; `sleep {ms}` → waits,
/// counting cancellations.
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
                    json!({"content": [{"type": "text", "text": "{}"}], "structuredContent": {"error": "invalid arguments", "error_type": "invalid_arguments", "input_schema": {"required": ["a"]}}, "isError": true}),
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

fn engine(concurrent_runs: usize, per_caller: usize) -> Engine {
    Engine::new(EngineOptions {
        worker: WorkerCommand {
            program: env!("CARGO_BIN_EXE_mcplex-code-worker").into(),
            args: Vec::new(),
            env: Vec::new(),
        },
        concurrent_runs,
        per_caller,
        warm: 2,
    })
}

fn limits() -> Limits {
    Limits {
        timeout: Duration::from_secs(20),
        memory_bytes: 64 * 1024 * 1024,
        max_tool_calls: 20,
        parallelism: 4,
    }
}

fn script(code: &str, limits: Limits) -> Run {
    Run {
        caller: "local".into(),
        code: code.to_owned(),
        input: json!({"n": 2}),
        limits,
    }
}

async fn run_on(engine: &Engine, run: Run) -> Result<Outcome, RunError> {
    engine
        .run(run, Arc::new(Host::default()), CancellationToken::new())
        .await
}

async fn run(code: &str) -> Result<Value, RunError> {
    run_on(&engine(4, 4), script(code, limits()))
        .await
        .map(|o| o.value)
}

fn is_limit(outcome: &Result<Outcome, RunError>, name: &str) -> bool {
    matches!(outcome, Err(RunError::Limit { limit, .. }) if *limit == name)
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
    let value = run("try { call_tool('bad'); } catch (e) { return e.body.error_type; }").await;
    assert_eq!(value, Ok(json!("invalid_arguments")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_tools_runs_a_batch_in_order() {
    let outcome = run_on(
        &engine(4, 4),
        script(
            "return call_tools([{name: 'sleep', args: {ms: 60}}, {name: 'add', args: {a: 1, b: 1}}, {name: 'sleep', args: {ms: 10}}]);",
            limits(),
        ),
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
async fn an_uncaught_tool_error_keeps_its_body_and_line() {
    let error = run("const x = 1;\ncall_tool('bad', {});").await;
    let Err(RunError::Script {
        line: Some(2),
        body: Some(body),
        ..
    }) = &error
    else {
        panic!("{error:?}")
    };
    assert_eq!(body["input_schema"]["required"], json!(["a"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_native_call_is_stopped_at_the_deadline() {
    // indexOf of a 4 KiB needle in a 4 MiB haystack is one native call of minutes: the
    // interrupt handler never runs inside it.
    let engine = engine(2, 2);
    let started = Instant::now();
    let outcome = run_on(
        &engine,
        script(
            "const s = 'a'.repeat(2**22); return s.indexOf('a'.repeat(2**12) + 'b');",
            Limits {
                timeout: Duration::from_millis(1000),
                ..limits()
            },
        ),
    )
    .await;
    assert!(is_limit(&outcome, "timeout_ms"), "{outcome:?}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    // The engine keeps serving.
    let fine = run_on(&engine, script("return 40 + 2;", limits())).await;
    assert_eq!(fine.map(|o| o.value), Ok(json!(42)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_of_a_run_outlives_it() {
    // One worker at a time, so a leftover would land in the next run if workers were reused.
    let engine = engine(1, 1);
    for leftover in [
        "(async () => { for (;;) { await null; } })(); return 'left';",
        // Its first await runs before the run's result is taken; the spin is left pending.
        "globalThis.leak = 'secret'; (async () => { await null; await null; for (;;) {} })(); return 'left';",
    ] {
        let left = run_on(&engine, script(leftover, limits())).await;
        assert_eq!(left.map(|o| o.value), Ok(json!("left")));
        let started = Instant::now();
        let victim = run_on(
            &engine,
            script(
                "return typeof leak;",
                Limits {
                    timeout: Duration::from_secs(10),
                    ..limits()
                },
            ),
        )
        .await;
        assert_eq!(victim.map(|o| o.value), Ok(json!("undefined")));
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deadline_cancels_tool_calls_in_flight() {
    let host = Host::default();
    let dropped = host.dropped.clone();
    let started = Instant::now();
    let outcome = engine(2, 2)
        .run(
            script(
                "try { call_tool('sleep', {ms: 5000}); } catch (e) {} return 'caught';",
                Limits {
                    timeout: Duration::from_millis(300),
                    ..limits()
                },
            ),
            Arc::new(host),
            CancellationToken::new(),
        )
        .await;
    assert!(is_limit(&outcome, "timeout_ms"), "{outcome:?}");
    assert!(started.elapsed() < Duration::from_secs(4));
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        1,
        "the call in flight was cancelled"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_and_tool_call_limits_are_named() {
    let engine = engine(2, 2);
    let outcome = run_on(
        &engine,
        script(
            "const a = []; while (true) { a.push('x'.repeat(1 << 16)); }",
            Limits {
                memory_bytes: 8 * 1024 * 1024,
                ..limits()
            },
        ),
    )
    .await;
    assert!(
        is_limit(&outcome, "code_execution_memory_limit"),
        "{outcome:?}"
    );
    let outcome = run_on(
        &engine,
        script(
            "for (let i = 0; i < 5; i++) { try { call_tool('add', {a: i, b: 0}); } catch (e) {} } return 'done';",
            Limits { max_tool_calls: 3, ..limits() },
        ),
    )
    .await;
    assert!(
        matches!(&outcome, Err(RunError::Limit { limit: "code_execution_max_tool_calls", message }) if message.contains('3')),
        "{outcome:?}"
    );
    let fine = run_on(&engine, script("return 40 + 2;", limits())).await;
    assert_eq!(fine.map(|o| o.value), Ok(json!(42)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_stops_a_busy_script() {
    let engine = engine(1, 1);
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        stop.cancel();
    });
    let started = Instant::now();
    let outcome = engine
        .run(
            script("while (true) {}", limits()),
            Arc::new(Host::default()),
            cancel,
        )
        .await;
    assert!(is_limit(&outcome, "cancelled"), "{outcome:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_callers_flood_does_not_delay_another_caller() {
    let engine = Arc::new(engine(4, 2));
    let cancel = CancellationToken::new();
    let flood: Vec<_> = (0..6)
        .map(|_| {
            let engine = engine.clone();
            let cancel = cancel.clone();
            tokio::spawn(async move {
                let mut run = script("call_tool('sleep', {ms: 20000});", limits());
                run.caller = "hog".into();
                engine.run(run, Arc::new(Host::default()), cancel).await
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    let mut other = script("return 1;", limits());
    other.caller = "other".into();
    let answer = run_on(&engine, other).await;
    assert_eq!(answer.map(|o| o.value), Ok(json!(1)));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    cancel.cancel();
    for run in flood {
        let outcome = run.await.expect("task");
        assert!(is_limit(&outcome, "cancelled"), "{outcome:?}");
    }
}

/// The engine's workers confine themselves before their run arrives: no capabilities,
/// `no_new_privs`, and two seccomp filters (what they refuse is `mcplex-sandbox`'s
/// `tests/compute.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_are_confined_before_their_run() {
    let engine = engine(1, 1);
    let done = run_on(&engine, script("return 1;", limits())).await;
    assert_eq!(done.map(|o| o.value), Ok(json!(1)));
    let program = std::path::Path::new(env!("CARGO_BIN_EXE_mcplex-code-worker"));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let statuses = warm_workers(program);
        let confined = |status: &String| {
            [
                "NoNewPrivs:\t1",
                "Seccomp:\t2",
                "Seccomp_filters:\t2",
                "CapEff:\t0000000000000000",
            ]
            .iter()
            .all(|line| status.lines().any(|l| l == *line))
        };
        if !statuses.is_empty() && statuses.iter().all(confined) {
            break;
        }
        assert!(Instant::now() < deadline, "{statuses:#?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(engine);
}

/// The `/proc/<pid>/status` of this process's children running `program` (the pool's warm
/// workers).
fn warm_workers(program: &std::path::Path) -> Vec<String> {
    let me = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter(|entry| {
            std::fs::read_link(entry.path().join("exe")).ok().as_deref() == Some(program)
        })
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("status")).ok())
        .filter(|status| status.lines().any(|l| l == format!("PPid:\t{me}")))
        .collect()
}
