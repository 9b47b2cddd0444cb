//! [`UpstreamRequest`]: a request other than a tool call, as the dispatch boundary takes it.

use serde_json::{Map, Value};

/// The methods a client's request may reach an upstream with, besides `tools/call`. A closed
/// set: a surface cannot send an upstream anything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UpstreamMethod {
    ToolsCall,
    PromptsGet,
    ResourcesRead,
    ResourcesSubscribe,
    ResourcesUnsubscribe,
    CompletionComplete,
    LoggingSetLevel,
}

impl UpstreamMethod {
    /// The JSON-RPC method name: the one table of them.
    pub fn as_str(self) -> &'static str {
        match self {
            UpstreamMethod::ToolsCall => "tools/call",
            UpstreamMethod::PromptsGet => "prompts/get",
            UpstreamMethod::ResourcesRead => "resources/read",
            UpstreamMethod::ResourcesSubscribe => "resources/subscribe",
            UpstreamMethod::ResourcesUnsubscribe => "resources/unsubscribe",
            UpstreamMethod::CompletionComplete => "completion/complete",
            UpstreamMethod::LoggingSetLevel => "logging/setLevel",
        }
    }
}

impl UpstreamMethod {
    /// Whether a caller's request of this method counts against its limits (as a read: it
    /// reads what a server offers). Ending a subscription and setting the level do not: the
    /// gateway itself sends them on a caller's behalf when its session ends.
    pub(crate) fn counted(self) -> bool {
        matches!(
            self,
            UpstreamMethod::PromptsGet
                | UpstreamMethod::ResourcesRead
                | UpstreamMethod::ResourcesSubscribe
                | UpstreamMethod::CompletionComplete
        )
    }
}

impl std::fmt::Display for UpstreamMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A request for one upstream, in the upstream's own terms (its prompt name, its URI), built by
/// a surface from what the snapshot resolved. Tool calls go through [`crate::Gateway::call`].
#[derive(Debug, Clone)]
pub struct UpstreamRequest {
    method: UpstreamMethod,
    params: Map<String, Value>,
    /// What the request is about, in the upstream's terms, for the audit log.
    subject: String,
}

impl UpstreamRequest {
    /// `prompts/get` of the upstream's prompt `name`.
    pub fn get_prompt(name: &str, arguments: Option<Map<String, Value>>) -> UpstreamRequest {
        let mut params = Map::with_capacity(2);
        params.insert("name".to_owned(), Value::from(name));
        if let Some(arguments) = arguments {
            params.insert("arguments".to_owned(), Value::Object(arguments));
        }
        UpstreamRequest::new(UpstreamMethod::PromptsGet, params, name)
    }

    /// `resources/read` of the upstream's `uri`.
    pub fn read_resource(uri: &str) -> UpstreamRequest {
        UpstreamRequest::about_uri(UpstreamMethod::ResourcesRead, uri)
    }

    /// `resources/subscribe` to the upstream's `uri`.
    pub fn subscribe(uri: &str) -> UpstreamRequest {
        UpstreamRequest::about_uri(UpstreamMethod::ResourcesSubscribe, uri)
    }

    /// `resources/unsubscribe` from the upstream's `uri`.
    pub fn unsubscribe(uri: &str) -> UpstreamRequest {
        UpstreamRequest::about_uri(UpstreamMethod::ResourcesUnsubscribe, uri)
    }

    /// `completion/complete` with `params` whose `ref` is already in the upstream's terms.
    pub fn complete(params: Map<String, Value>, subject: &str) -> UpstreamRequest {
        UpstreamRequest::new(UpstreamMethod::CompletionComplete, params, subject)
    }

    /// `logging/setLevel` with the client's `params`.
    pub fn set_level(params: Map<String, Value>) -> UpstreamRequest {
        let level = params
            .get("level")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        UpstreamRequest::new(UpstreamMethod::LoggingSetLevel, params, &level)
    }

    fn about_uri(method: UpstreamMethod, uri: &str) -> UpstreamRequest {
        let mut params = Map::with_capacity(1);
        params.insert("uri".to_owned(), Value::from(uri));
        UpstreamRequest::new(method, params, uri)
    }

    fn new(method: UpstreamMethod, params: Map<String, Value>, subject: &str) -> UpstreamRequest {
        UpstreamRequest {
            method,
            params,
            subject: subject.chars().take(200).collect(),
        }
    }

    pub(crate) fn into_parts(self) -> (UpstreamMethod, Map<String, Value>, String) {
        (self.method, self.params, self.subject)
    }
}
