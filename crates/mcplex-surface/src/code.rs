//! The code_execution surface (`/mcp/code`, and `/mcp` with `routing_mode: "code_execution"`):
//! `code_execution`, `retrieve_tools` and `describe_tool`. A script's tool calls go through
//! `Gateway::call` with the caller's scope, exactly like any other call.
#![allow(deprecated)] // logging (in `serve_offers!`): deprecated by 2026-07-28, still used

use mcplex_protocol::ErrorType;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

use mcplex_code::{Engine, Limits, MAX_MESSAGE_BYTES, Run, RunError, ToolHost};
use mcplex_config::CodeLimits;
use mcplex_dispatch::{CallContext, DispatchError, Gateway, ToolCall};
use rmcp::model::{
    CallToolRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::Caller;
use crate::caller::Reach;
use crate::calls::{CallAnswer, finish};
use crate::describe::{self, DESCRIBE_TOOL};
use crate::errors::to_wire;
use crate::listen::Clients;
use crate::relay::PeerRelay;
use crate::retrieve::retrieve;
use crate::search_tools::{self, RETRIEVE_TOOLS};
use crate::{SurfaceOptions, results};
use mcplex_upstream::ClientRelay;

pub(crate) use mcplex_names::gateway_tools::CODE_EXECUTION;
// A script exchanges at most what a client may send in a request body by default.
const _: () = assert!(MAX_MESSAGE_BYTES == mcplex_config::DEFAULT_MAX_BODY_BYTES);

/// Calls of one `call_tools` batch that run at once.
const BATCH_PARALLELISM: usize = 8;

const INSTRUCTIONS: &str = "mcplex code surface: find tools with retrieve_tools, then call them from a short JavaScript program with code_execution, combining many calls in one round trip. describe_tool returns a tool's full definition.";

fn definition(limits: &CodeLimits) -> Value {
    json!({
        "name": CODE_EXECUTION,
        "description": format!("Runs JavaScript (the body of an async function) that calls tools and returns one JSON result. \
    Inside: call_tool(name, args) returns the tool's result (its structured content, else its text parsed as JSON, else the text) \
    and throws an Error whose .body is the gateway's error (for invalid arguments: what is wrong and the tool's full schema); \
    call_tools([{{name, args}}, ...]) runs calls in parallel and returns their results in order (on any failure it throws, with \
    .results holding every outcome); input is the call's input value. Tool names are as retrieve_tools returns them (or server:tool). \
    Return a JSON-serializable value. There is no filesystem, network, process or timer access. An uncaught error is returned with \
    its line and, for a failed tool call, the error's body. Limits: timeout_ms (default and at most {} ms; a larger value is lowered to it), {} MiB of memory, \
    {} tool calls per run, {} runs at once per caller, {} MiB of JSON for the result, for one call's arguments and for one tool result.",
            limits.timeout.as_millis(), limits.memory_bytes / (1024 * 1024), limits.max_tool_calls,
            limits.max_concurrent_per_caller, MAX_MESSAGE_BYTES / (1024 * 1024)),
        "inputSchema": {"type": "object", "properties": {
            "code": {"type": "string", "description": "The function body, e.g. const a = call_tool('server__tool', {x: 1}); return a;"},
            "input": {"description": "Any JSON value, available to the code as input."},
            "timeout_ms": {"type": "integer", "minimum": 1}
        }, "required": ["code"]}
    })
}

/// The code surface's server instance.
#[derive(Clone)]
pub struct CodeSurface {
    gateway: Arc<Gateway>,
    /// `None` when the process named no worker program (code_execution then says so).
    engine: Option<Arc<Engine>>,
    limits: CodeLimits,
    listing: Arc<Vec<Tool>>,
    instructions: Arc<str>,
    reach: Reach,
    /// Sessions and resource subscriptions (prompts and resources are served here too).
    clients: Clients,
}

impl CodeSurface {
    /// Must be called inside the Tokio runtime the gateway runs on (scripts' tool calls run there).
    pub fn new(gateway: Arc<Gateway>, options: &SurfaceOptions, reach: Reach) -> CodeSurface {
        let limits = options.code;
        let mut retrieve = search_tools::retrieve_tools_definition();
        retrieve["description"] = json!(
            "Find tools for a task. Returns ranked matches (id, name, score and how to call them); \
call one from code_execution with call_tool(name, args). An empty query lists every tool. Use describe_tool for a full definition."
        );
        let listing = [definition(&limits), retrieve, describe::definition()]
            .into_iter()
            .filter_map(|d| serde_json::from_value(d).ok())
            .collect();
        let instructions = options
            .instructions
            .clone()
            .unwrap_or_else(|| INSTRUCTIONS.to_owned())
            .into();
        CodeSurface {
            clients: Clients::start(&gateway, None),
            gateway,
            engine: options.code_sandbox.engine(&limits),
            limits,
            listing: Arc::new(listing),
            instructions,
            reach,
        }
    }

    async fn execute(
        &self,
        arguments: Option<&Map<String, Value>>,
        caller: Caller,
        cancel: CancellationToken,
        relay: Arc<dyn ClientRelay>,
    ) -> Value {
        let empty = Map::new();
        let arguments = arguments.unwrap_or(&empty);
        let Some(code) = arguments.get("code").and_then(Value::as_str) else {
            return refusal(
                "code_execution: code must be a string (the body of an async function)",
            );
        };
        // The operator's timeout is the default and the ceiling: a caller may ask for less,
        // and asking for more gets the ceiling.
        let timeout = match arguments.get("timeout_ms") {
            None | Some(Value::Null) => self.limits.timeout,
            Some(value) => match value.as_u64().map(Duration::from_millis) {
                Some(t) if !t.is_zero() => t.min(self.limits.timeout),
                _ => {
                    return refusal(&format!(
                        "code_execution: timeout_ms must be a whole number of at least 1 (at most {} is used), not {value}",
                        self.limits.timeout.as_millis()
                    ));
                }
            },
        };
        let limits = Limits {
            timeout,
            memory_bytes: self.limits.memory_bytes,
            max_tool_calls: self.limits.max_tool_calls,
            parallelism: BATCH_PARALLELISM,
        };
        let input = arguments.get("input").cloned().unwrap_or(Value::Null);
        let Some(engine) = &self.engine else {
            return results::error(
                json!({"error": "code execution is not available in this process", "error_type": ErrorType::Internal}),
            );
        };
        // Runs are bounded and shared per caller: a token, or the local user.
        let who = match &caller.token {
            Some(token) => format!("token:{token}"),
            None => "local".to_owned(),
        };
        let run = Run {
            caller: who,
            code: code.to_owned(),
            input,
            limits,
        };
        let span = mcplex_trace::code_run();
        let host = Arc::new(GatewayHost {
            gateway: self.gateway.clone(),
            caller,
            cancel: cancel.clone(),
            relay,
            span: span.clone(),
        });
        let ran = engine.run(run, host, cancel).instrument(span.clone()).await;
        if !span.is_disabled() {
            let outcome = match &ran {
                Ok(outcome) => {
                    span.record("mcplex.code.calls", outcome.tool_calls);
                    "ok"
                }
                Err(RunError::Limit { .. }) => "limit",
                Err(_) => "error",
            };
            mcplex_trace::ended(&span, outcome);
        }
        answer(ran)
    }
}

/// The tool result of a run.
fn answer(ran: Result<mcplex_code::Outcome, RunError>) -> Value {
    match ran {
        Ok(outcome) => {
            let text = Value::String(outcome.value.to_string());
            // Moved in, not copied (`json!` copies what it is given): the value is built once.
            let mut structured = Map::new();
            structured.insert("result".to_owned(), outcome.value);
            structured.insert("tool_calls".to_owned(), outcome.tool_calls.into());
            let mut content = Map::new();
            content.insert("type".to_owned(), "text".into());
            content.insert("text".to_owned(), text);
            let mut result = Map::new();
            result.insert("content".to_owned(), vec![Value::Object(content)].into());
            result.insert("structuredContent".to_owned(), Value::Object(structured));
            result.insert("isError".to_owned(), false.into());
            Value::Object(result)
        }
        Err(RunError::Limit { limit, message }) => results::error(
            json!({"error": message, "error_type": ErrorType::LimitExceeded, "limit": limit}),
        ),
        Err(RunError::Script {
            message,
            line,
            body,
        }) => {
            let mut error =
                json!({"error": message, "error_type": ErrorType::ScriptError, "line": line});
            // A failed tool call's own error (the self-healing answer: schema and hint).
            if let Some(body) = body {
                error["body"] = body;
            }
            results::error(error)
        }
        Err(RunError::Internal(message)) => {
            results::error(json!({"error": message, "error_type": ErrorType::Internal}))
        }
    }
}

fn refusal(message: &str) -> Value {
    results::error(
        json!({"error": message, "error_type": ErrorType::InvalidParams, "tool": CODE_EXECUTION}),
    )
}

/// A script's tool calls, on the one dispatch path with the caller's scope.
struct GatewayHost {
    gateway: Arc<Gateway>,
    caller: Caller,
    cancel: CancellationToken,
    /// The client of the `code_execution` call: sampling, elicitation and log messages of the
    /// script's tool calls go there.
    relay: Arc<dyn ClientRelay>,
    /// The run's span: the script's tool calls are its children.
    span: tracing::Span,
}

impl ToolHost for GatewayHost {
    fn call(
        &self,
        name: String,
        arguments: Value,
    ) -> Pin<Box<dyn Future<Output = Result<Value, Value>> + Send + 'static>> {
        let gateway = self.gateway.clone();
        let cx = CallContext {
            scope: self.caller.scope.clone(),
            token: self.caller.token.clone(),
            credential: self.caller.credential.clone(),
            cancel: self.cancel.child_token(),
            progress: None,
            relay: self.relay.clone(),
        };
        let span = self.span.clone();
        Box::pin(async move {
            let arguments = match arguments {
                Value::Object(arguments) => Some(arguments),
                Value::Null => None,
                other => {
                    return Err(
                        json!({"error": format!("arguments for {name} must be an object, not {other}"), "error_type": ErrorType::InvalidParams, "tool": name}),
                    );
                }
            };
            let called = gateway
                .call(ToolCall { name, arguments }, cx)
                .instrument(span)
                .await;
            match called {
                Ok(raw) => Ok(raw),
                // The same answer for a tool outside the scope as for one that does not exist.
                Err(DispatchError::UnknownTool { name }) => Err(
                    json!({"error": format!("unknown tool: {name}"), "error_type": ErrorType::NotFound, "tool": name}),
                ),
                Err(error) => match to_wire(error) {
                    // A result the gateway wrote (the self-healing validation error).
                    Ok(result) => Ok(result),
                    Err(wire) => Err(
                        json!({"error": wire.message, "error_type": ErrorType::CallFailed, "code": wire.code.0, "data": wire.data}),
                    ),
                },
            }
        })
    }
}

crate::offers::routed_surface!(CodeSurface);

impl ServerHandler for CodeSurface {
    fn get_info(&self) -> InitializeResult {
        // The tool listing never changes; prompts and resources do.
        crate::server_info(crate::full_capabilities(false), &self.instructions)
    }

    crate::offers::serve_offers!();

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.listing.as_ref().clone(),
        ))
    }
}

impl CodeSurface {
    /// `tools/call`, in the span of its request.
    async fn answer_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallAnswer, ErrorData> {
        let arguments = request.arguments.as_ref();
        let caller = self.reach.caller(&context.extensions);
        let scope = caller.scope.clone();
        match request.name.as_ref() {
            CODE_EXECUTION => {
                self.gateway.startup_settled().await;
                let relay = PeerRelay::for_request(&context);
                let body = self
                    .execute(arguments, caller, context.ct.clone(), relay.clone())
                    .await;
                // The run's log messages reach the client before its result.
                relay.flush().await;
                finish(body, &context)
            }
            RETRIEVE_TOOLS => retrieve(&self.gateway, arguments, &scope, &context).await,
            DESCRIBE_TOOL => finish(
                describe::result(&self.gateway.snapshot(), arguments, &scope),
                &context,
            ),
            other => Err(ErrorData::invalid_params(
                format!(
                    "unknown tool: {other} (this surface offers code_execution, retrieve_tools and describe_tool)"
                ),
                Some(json!({"tool": other})),
            )),
        }
    }
}
