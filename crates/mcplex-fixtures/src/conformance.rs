//! The conformance fixture: an MCP server, on rmcp, that offers exactly what the server scenarios
//! of the official conformance suite (`@modelcontextprotocol/conformance`) ask for: the `test_*`
//! tools (text, image, audio, embedded resource, mixed content, logging, progress, error,
//! sampling, elicitation), `json_schema_2020_12_tool`, the `test://` resources and template,
//! subscriptions, the `test_*` prompts, completion and logging. Served on stdio (behind mcplex)
//! or on streamable HTTP (tested directly, for comparison).
//!
//! Requests to the client (sampling, elicitation) are sent as raw JSON, so every schema variant a
//! scenario names reaches the client exactly as written here.
//!
//! With `extra_resources`, it also lists that many more resources, in pages of 100, to exercise
//! pagination through the gateway. A completion of the value `slow` is answered after
//! [`SLOW_COMPLETION`]: a caller's request that stays in flight beside others, on demand.

#![allow(deprecated)] // logging: deprecated by 2026-07-28 (SEP-2577), tested by the suite

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    CustomRequest, GetPromptRequestParams, GetPromptResponse, GetPromptResult, InitializeResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    LoggingLevel, LoggingMessageNotificationParam, PaginatedRequestParams,
    ProgressNotificationParam, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ServerCapabilities, ServerRequest, SetLevelRequestParams, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// A 1×1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A tiny WAV header with no samples.
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";

/// Resources per page of `resources/list` beyond the first.
const PAGE: usize = 100;

/// The fixture's state: subscriptions and the extra resources it lists.
#[derive(Clone, Default)]
pub struct ConformanceServer {
    subscribed: Arc<Mutex<BTreeSet<String>>>,
    extra_resources: usize,
}

impl ConformanceServer {
    /// A server that lists `extra_resources` more resources (`test://extra/<n>`) after its own.
    pub fn new(extra_resources: usize) -> ConformanceServer {
        ConformanceServer {
            subscribed: Arc::default(),
            extra_resources,
        }
    }
}

/// How long a completion of `slow` takes.
pub const SLOW_COMPLETION: Duration = Duration::from_millis(1500);

fn from<T: DeserializeOwned>(value: Value) -> Result<T, ErrorData> {
    serde_json::from_value(value).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

/// The string argument `name` (empty when absent or not a string).
fn string_argument(arguments: Option<&serde_json::Map<String, Value>>, name: &str) -> String {
    arguments
        .and_then(|a| a.get(name))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn text_result(text: impl Into<String>) -> Result<CallToolResponse, ErrorData> {
    from::<CallToolResult>(json!({"content": [{"type": "text", "text": text.into()}]}))
        .map(Into::into)
}

fn tools() -> Value {
    let none = json!({"type": "object", "properties": {}});
    let tool = |name: &str, description: &str, schema: &Value| json!({"name": name, "description": description, "inputSchema": schema});
    json!([
        tool("test_simple_text", "Returns simple text", &none),
        tool("test_image_content", "Returns an image", &none),
        tool("test_audio_content", "Returns audio", &none),
        tool("test_embedded_resource", "Returns an embedded resource", &none),
        tool("test_multiple_content_types", "Returns text, image and a resource", &none),
        tool("test_tool_with_logging", "Logs three messages while it runs", &none),
        tool("test_tool_with_progress", "Reports progress 0, 50, 100 of 100", &none),
        tool("test_error_handling", "Always fails", &none),
        tool("test_sampling", "Asks the client's model", &json!({"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]})),
        tool("test_elicitation", "Asks the user", &json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]})),
        tool("test_elicitation_sep1034_defaults", "Asks the user, with defaults", &none),
        tool("test_elicitation_sep1330_enums", "Asks the user, with every enum form", &none),
        {
            "name": "json_schema_2020_12_tool",
            "description": "Tool with JSON Schema 2020-12 features",
            "inputSchema": {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
                "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
                "additionalProperties": false
            }
        },
    ])
}

/// Sends `method` with raw `params` to the client and returns its raw answer.
async fn ask_client(
    context: &RequestContext<RoleServer>,
    method: &str,
    params: Value,
) -> Result<Value, String> {
    let request = ServerRequest::CustomRequest(CustomRequest::new(method, Some(params)));
    let answer = context
        .peer
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    serde_json::to_value(answer).map_err(|e| e.to_string())
}

fn elicitation_sep1034() -> Value {
    json!({
        "message": "Please review and update the form fields with defaults",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "default": true}
            }
        }
    })
}

fn elicitation_sep1330() -> Value {
    json!({
        "message": "Please pick from every kind of enum",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {"type": "string", "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"}
                ]},
                "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
                "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                "titledMulti": {"type": "array", "items": {"anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"}
                ]}}
            }
        }
    })
}

impl ServerHandler for ConformanceServer {
    fn get_info(&self) -> InitializeResult {
        let capabilities: ServerCapabilities = serde_json::from_value(json!({
            "tools": {"listChanged": true},
            "prompts": {"listChanged": true},
            "resources": {"listChanged": true, "subscribe": true},
            "completions": {},
            "logging": {}
        }))
        .unwrap_or_default();
        InitializeResult::new(capabilities).with_server_info(rmcp::model::Implementation::new(
            "mcplex-conformance-fixture",
            env!("CARGO_PKG_VERSION"),
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        from(json!({"tools": tools()}))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let argument = |name: &str| string_argument(request.arguments.as_ref(), name);
        let content =
            |content: Value| from::<CallToolResult>(json!({"content": content})).map(Into::into);
        match request.name.as_ref() {
            "test_simple_text" => text_result("This is a simple text response for testing."),
            "test_image_content" => content(json!([{"type": "image", "data": PNG, "mimeType": "image/png"}])),
            "test_audio_content" => content(json!([{"type": "audio", "data": WAV, "mimeType": "audio/wav"}])),
            "test_embedded_resource" => content(json!([{"type": "resource", "resource": {"uri": "test://embedded-resource", "mimeType": "text/plain", "text": "This is an embedded resource content."}}])),
            "test_multiple_content_types" => content(json!([
                {"type": "text", "text": "Multiple content types test:"},
                {"type": "image", "data": PNG, "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "test://mixed-content-resource", "mimeType": "application/json", "text": "{\"test\":\"data\",\"value\":123}"}}
            ])),
            "test_tool_with_logging" => {
                for (i, message) in ["Tool execution started", "Tool processing data", "Tool execution completed"].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    let param = LoggingMessageNotificationParam::new(LoggingLevel::Info, json!(message));
                    let _ = context.peer.notify_logging_message(param).await;
                }
                text_result("Tool with logging executed successfully")
            }
            "test_tool_with_progress" => {
                let token = context.meta.get_progress_token();
                for (i, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    if let Some(token) = &token {
                        let param = ProgressNotificationParam::new(token.clone(), progress).with_total(100.0);
                        let _ = context.peer.notify_progress(param).await;
                    }
                }
                text_result("Tool with progress executed successfully")
            }
            "test_error_handling" => from::<CallToolResult>(json!({"isError": true, "content": [{"type": "text", "text": "This tool intentionally returns an error for testing"}]})).map(Into::into),
            "test_sampling" => {
                let params = json!({"messages": [{"role": "user", "content": {"type": "text", "text": argument("prompt")}}], "maxTokens": 100});
                match ask_client(&context, "sampling/createMessage", params).await {
                    Ok(answer) => {
                        let said = answer.pointer("/content/text").and_then(Value::as_str).unwrap_or_default();
                        text_result(format!("LLM response: {said}"))
                    }
                    Err(e) => from::<CallToolResult>(json!({"isError": true, "content": [{"type": "text", "text": format!("sampling failed: {e}")}]})).map(Into::into),
                }
            }
            "test_elicitation" | "test_elicitation_sep1034_defaults" | "test_elicitation_sep1330_enums" => {
                let params = match request.name.as_ref() {
                    "test_elicitation" => json!({
                        "message": argument("message"),
                        "requestedSchema": {
                            "type": "object",
                            "properties": {
                                "username": {"type": "string", "description": "User's response"},
                                "email": {"type": "string", "description": "User's email address"}
                            },
                            "required": ["username", "email"]
                        }
                    }),
                    "test_elicitation_sep1034_defaults" => elicitation_sep1034(),
                    _ => elicitation_sep1330(),
                };
                match ask_client(&context, "elicitation/create", params).await {
                    Ok(answer) => text_result(format!(
                        "Elicitation completed: action={}, content={}",
                        answer.get("action").and_then(Value::as_str).unwrap_or_default(),
                        answer.get("content").cloned().unwrap_or(Value::Null)
                    )),
                    Err(e) => from::<CallToolResult>(json!({"isError": true, "content": [{"type": "text", "text": format!("elicitation failed: {e}")}]})).map(Into::into),
                }
            }
            "json_schema_2020_12_tool" => text_result("ok"),
            other => Err(ErrorData::invalid_params(format!("unknown tool: {other}"), None)),
        }
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        // Page 0 holds the scenario resources; pages 1.. hold the extra ones, PAGE at a time.
        let page: usize = request
            .and_then(|r| r.cursor)
            .map_or(Ok(0), |c| c.parse())
            .map_err(|_| ErrorData::invalid_params("bad cursor", None))?;
        let mut resources = Vec::new();
        if page == 0 {
            resources = vec![
                json!({"uri": "test://static-text", "name": "static-text", "description": "A static text resource", "mimeType": "text/plain"}),
                json!({"uri": "test://static-binary", "name": "static-binary", "description": "A static binary resource", "mimeType": "image/png"}),
                json!({"uri": "test://watched-resource", "name": "watched-resource", "description": "A resource to subscribe to", "mimeType": "text/plain"}),
            ];
        } else {
            let start = (page - 1) * PAGE;
            for n in start..(start + PAGE).min(self.extra_resources) {
                resources.push(json!({"uri": format!("test://extra/{n}"), "name": format!("extra-{n}"), "description": "An extra resource"}));
            }
        }
        let mut result = json!({"resources": resources});
        if page * PAGE < self.extra_resources {
            result["nextCursor"] = json!((page + 1).to_string());
        }
        from(result)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        from(
            json!({"resourceTemplates": [{"uriTemplate": "test://template/{id}/data", "name": "template", "description": "A resource template", "mimeType": "application/json"}]}),
        )
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        let content = match uri {
            "test://static-text" => {
                json!({"uri": uri, "mimeType": "text/plain", "text": "This is the content of the static text resource."})
            }
            "test://static-binary" => json!({"uri": uri, "mimeType": "image/png", "blob": PNG}),
            "test://watched-resource" => {
                json!({"uri": uri, "mimeType": "text/plain", "text": "Watched resource content."})
            }
            _ => match uri
                .strip_prefix("test://template/")
                .and_then(|rest| rest.strip_suffix("/data"))
            {
                Some(id) => {
                    let text = json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
                    json!({"uri": uri, "mimeType": "application/json", "text": text.to_string()})
                }
                None if uri.starts_with("test://extra/") => {
                    json!({"uri": uri, "mimeType": "text/plain", "text": uri})
                }
                None => {
                    return Err(ErrorData::resource_not_found(
                        format!("no resource {uri}"),
                        None,
                    ));
                }
            },
        };
        from::<ReadResourceResult>(json!({"contents": [content]}))
            .map(ReadResourceResponse::Complete)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscribed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(request.uri.clone());
        eprintln!("conformance fixture: subscribed {}", request.uri);
        // Announce a change at once, so that the forwarding of updates can be tested.
        let peer = context.peer.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let _ = peer
                .notify_resource_updated(rmcp::model::ResourceUpdatedNotificationParam::new(
                    request.uri,
                ))
                .await;
        });
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscribed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&request.uri);
        eprintln!("conformance fixture: unsubscribed {}", request.uri);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        from(json!({"prompts": [
            {"name": "test_simple_prompt", "description": "A simple prompt"},
            {"name": "test_prompt_with_arguments", "description": "A prompt with arguments", "arguments": [
                {"name": "arg1", "description": "First test argument", "required": true},
                {"name": "arg2", "description": "Second test argument", "required": true}
            ]},
            {"name": "test_prompt_with_embedded_resource", "description": "A prompt with an embedded resource", "arguments": [
                {"name": "resourceUri", "description": "URI of the resource to embed", "required": true}
            ]},
            {"name": "test_prompt_with_image", "description": "A prompt with an image"}
        ]}))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let argument = |name: &str| string_argument(request.arguments.as_ref(), name);
        let messages = match request.name.as_str() {
            "test_simple_prompt" => {
                json!([{"role": "user", "content": {"type": "text", "text": "This is a simple prompt for testing."}}])
            }
            "test_prompt_with_arguments" => {
                json!([{"role": "user", "content": {"type": "text", "text": format!("Prompt with arguments: arg1='{}', arg2='{}'", argument("arg1"), argument("arg2"))}}])
            }
            "test_prompt_with_embedded_resource" => json!([
                {"role": "user", "content": {"type": "resource", "resource": {"uri": argument("resourceUri"), "mimeType": "text/plain", "text": "Embedded resource content for testing."}}},
                {"role": "user", "content": {"type": "text", "text": "Please process the embedded resource above."}}
            ]),
            "test_prompt_with_image" => json!([
                {"role": "user", "content": {"type": "image", "data": PNG, "mimeType": "image/png"}},
                {"role": "user", "content": {"type": "text", "text": "Please analyze the image above."}}
            ]),
            other => {
                return Err(ErrorData::invalid_params(
                    format!("unknown prompt: {other}"),
                    None,
                ));
            }
        };
        from::<GetPromptResult>(json!({"messages": messages})).map(GetPromptResponse::Complete)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let typed = serde_json::to_value(&request).unwrap_or(Value::Null);
        let prefix = typed
            .pointer("/argument/value")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if prefix == "slow" {
            tokio::time::sleep(SLOW_COMPLETION).await;
        }
        let values: Vec<&str> = ["paris", "park", "party"]
            .into_iter()
            .filter(|v| v.starts_with(prefix))
            .collect();
        from(json!({"completion": {"values": values, "total": values.len(), "hasMore": false}}))
    }

    async fn set_level(
        &self,
        _request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }
}
