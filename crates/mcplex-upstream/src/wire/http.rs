//! Streamable HTTP upstreams. Every message is a POST; the answer is a JSON body or an SSE stream
//! whose events are fed to `incoming`. Legacy sessions (`Mcp-Session-Id`) are kept and ended
//! with DELETE; a 404 on a session means it expired and the wire is closed (the supervisor then
//! reconnects). For 2026-07-28 requests the `Mcp-Method` / `Mcp-Name` headers mirror the body.
//! An OAuth server's requests carry its own login's bearer token (never anyone else's); a 401
//! renews the token once and sends the request again. A `per_user` token-exchange connection
//! carries the token exchanged for its caller, which a 401 cannot renew.
//! The URL is only ever shown redacted, and what the server answers is redacted before it is
//! kept in an error (a server may echo the credential it refused).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use mcplex_config::{Redactor, redact_url};
use mcplex_oauth::{Secret, ServerLogin};
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::answer_streams::AnswerStreams;
use super::bounded_events::events;
use super::event_stream::{Carries, EventStream};
use super::{
    BoxFuture, INCOMING_BUFFER, Incoming, SendError, Wire, WireSend, error_body, push_messages,
};
use crate::ConnectError;

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";

/// Builds the configured headers; a header that is not valid HTTP is an error naming it.
pub(crate) fn header_map(headers: &BTreeMap<String, String>) -> Result<HeaderMap, ConnectError> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| ConnectError::HeaderName(name.clone()))?;
        // The value is secret: never echo it.
        let value =
            HeaderValue::from_str(value).map_err(|_| ConnectError::HeaderValue(name.clone()))?;
        map.insert(header, value);
    }
    Ok(map)
}

pub(crate) fn client() -> Result<reqwest::Client, ConnectError> {
    reqwest::Client::builder()
        .redirect(mcplex_oauth::same_origin_redirects())
        .build()
        .map_err(|e| ConnectError::Client(e.to_string()))
}

struct HttpSender {
    server: Arc<str>,
    redactor: Arc<Redactor>,
    client: reqwest::Client,
    url: String,
    /// `url` as it may be shown: no user info, no query values.
    shown_url: String,
    headers: HeaderMap,
    session: Mutex<Option<HeaderValue>>,
    protocol_version: Mutex<Option<HeaderValue>>,
    incoming: mpsc::Sender<Incoming>,
    closed: CancellationToken,
    /// Whether the GET stream for server-initiated messages was tried already.
    listening: Mutex<bool>,
    /// The answer streams being read, stopped when their request is given up.
    answer_streams: AnswerStreams,
    /// Where the bearer token of every request comes from.
    bearer: Bearer,
    /// Set when the server answers 401 with a Bearer challenge to a request sent without a
    /// login (the supervisor then takes it up as an OAuth server).
    challenged: Arc<AtomicBool>,
}

/// Where a wire's bearer token comes from.
pub(crate) enum Bearer {
    /// No OAuth: nothing is sent.
    None,
    /// A login (the gateway's, or a caller's own): its current token, renewed once on a 401.
    Login(Arc<ServerLogin>),
    /// A token exchanged for a caller's own access token: sent as it is.
    Exchanged(Secret),
}

impl From<Option<Arc<ServerLogin>>> for Bearer {
    fn from(login: Option<Arc<ServerLogin>>) -> Bearer {
        login.map_or(Bearer::None, Bearer::Login)
    }
}

/// Opens a streamable HTTP wire. Nothing is sent until the first message.
pub(crate) fn open(
    server: Arc<str>,
    redactor: Arc<Redactor>,
    url: &str,
    headers: &BTreeMap<String, String>,
    bearer: Bearer,
    challenged: Arc<AtomicBool>,
) -> Result<Wire, ConnectError> {
    let (incoming_tx, incoming) = mpsc::channel(INCOMING_BUFFER);
    let closed = CancellationToken::new();
    let sender = Arc::new(HttpSender {
        server,
        redactor,
        client: client()?,
        url: url.to_owned(),
        shown_url: redact_url(url),
        headers: header_map(headers)?,
        session: Mutex::new(None),
        protocol_version: Mutex::new(None),
        incoming: incoming_tx,
        closed: closed.clone(),
        listening: Mutex::new(false),
        answer_streams: AnswerStreams::default(),
        bearer,
        challenged,
    });
    // The GET stream needs an owned handle to the sender, hence the Arc inside the trait object.
    Ok(Wire {
        sender: Arc::new(sender),
        incoming: super::channel_stream(incoming),
        closed,
        transport: mcplex_trace::Transport::Http,
    })
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl HttpSender {
    fn request(&self, method: reqwest::Method, bearer: Option<&Secret>) -> reqwest::RequestBuilder {
        let mut request = self
            .client
            .request(method, &self.url)
            .headers(self.headers.clone());
        if let Some(value) = bearer.and_then(bearer_header) {
            request = request.header(AUTHORIZATION, value);
        }
        if let Some(session) = lock(&self.session).clone() {
            request = request.header(SESSION_HEADER, session);
        }
        if let Some(version) = lock(&self.protocol_version).clone() {
            request = request.header(VERSION_HEADER, version);
        }
        request
    }

    /// The token to send: the login's current one (a login only a person can mend closes the
    /// wire: the supervisor then reports the server as needing a login), or the exchanged one,
    /// which cannot be renewed when refused.
    async fn bearer(&self, refused: Option<&Secret>) -> Result<Option<Secret>, SendError> {
        let login = match &self.bearer {
            Bearer::None => return Ok(None),
            Bearer::Exchanged(token) if refused.is_none() => return Ok(Some(token.clone())),
            Bearer::Exchanged(_) => {
                return Err(SendError::Answer(
                    "the server refused the token exchanged for the caller's (HTTP 401)".into(),
                ));
            }
            Bearer::Login(login) => login,
        };
        let token = match refused {
            None => login.bearer().await,
            Some(token) => login.refused(token).await,
        };
        token.map(Some).map_err(|e| {
            if e.needs_login() {
                self.closed.cancel();
            }
            SendError::Answer(self.redactor.redact(&e.to_string()))
        })
    }

    async fn post(&self, message: Value) -> Result<(), SendError> {
        let body = serde_json::to_vec(&message)?;
        let bearer = self.bearer(None).await?;
        let response = self.post_once(&message, &body, bearer.as_ref()).await?;
        let (response, sent) = match (&bearer, response.status()) {
            (Some(refused), reqwest::StatusCode::UNAUTHORIZED) => {
                tracing::info!(server = %self.server, "the server refused the OAuth token (HTTP 401); renewing it once");
                let renewed = self.bearer(Some(refused)).await?;
                let response = self.post_once(&message, &body, renewed.as_ref()).await?;
                (response, renewed)
            }
            _ => (response, bearer),
        };
        self.answer(&message, response, sent.as_ref()).await
    }

    /// What hides secrets in this wire's texts for a request that sent `sent`: the config's
    /// secrets, and the OAuth token the request carried (a server may echo it).
    fn redactor(&self, sent: Option<&Secret>) -> Arc<Redactor> {
        match sent.map(Secret::expose) {
            Some(token) if !token.is_empty() => {
                Arc::new((*self.redactor).clone().with([token.to_owned()]))
            }
            _ => self.redactor.clone(),
        }
    }

    async fn post_once(
        &self,
        message: &Value,
        body: &[u8],
        bearer: Option<&Secret>,
    ) -> Result<reqwest::Response, SendError> {
        let mut request = self
            .request(reqwest::Method::POST, bearer)
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json");
        if let Some(method) = message.get("method").and_then(Value::as_str) {
            if let Ok(value) = HeaderValue::from_str(method) {
                request = request.header("mcp-method", value);
            }
            let params = message.get("params");
            let name = params
                .and_then(|p| p.get("name").or_else(|| p.get("uri")))
                .and_then(Value::as_str);
            if let Some(value) = name.and_then(|n| HeaderValue::from_str(n).ok()) {
                request = request.header("mcp-name", value);
            }
        }
        super::with_trace_context(request)
            .body(body.to_vec())
            .send()
            .await
            .map_err(|e| SendError::Request {
                to: self.shown_url.clone(),
                source: e.without_url(),
            })
    }

    /// For a 401 with an OAuth challenge to a server configured without `"oauth"`: what to do.
    fn oauth_hint(&self, response: &reqwest::Response) -> String {
        let challenged = response.status() == reqwest::StatusCode::UNAUTHORIZED
            && matches!(self.bearer, Bearer::None)
            && response
                .headers()
                .get_all(reqwest::header::WWW_AUTHENTICATE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .any(|v| v.trim_start().to_ascii_lowercase().starts_with("bearer"));
        if challenged {
            // The supervisor takes the server up as an OAuth server.
            self.challenged.store(true, Ordering::Release);
            format!(
                "the server wants an OAuth login: run `mcplex auth login {}`; ",
                self.server
            )
        } else if let Some(refusal) = mcplex_oauth::redirect_refusal(response) {
            format!("{refusal}; ")
        } else {
            String::new()
        }
    }

    async fn answer(
        &self,
        message: &Value,
        response: reqwest::Response,
        sent: Option<&Secret>,
    ) -> Result<(), SendError> {
        // Requests and notifications the server sends on this request's answer stream belong to it.
        let related = message.get("method").and(message.get("id")).cloned();
        let had_session = lock(&self.session).is_some();
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND && had_session {
            self.closed.cancel();
            return Err(SendError::SessionEnded);
        }
        if !status.is_success() {
            let hint = self.oauth_hint(&response);
            let body = self
                .redactor(sent)
                .redact_start(&error_body(response).await, 300);
            return Err(SendError::Status {
                status: status.as_u16(),
                body: format!("{hint}{body}"),
            });
        }
        if let Some(session) = response.headers().get(SESSION_HEADER) {
            *lock(&self.session) = Some(session.clone());
        }
        if status == reqwest::StatusCode::ACCEPTED {
            return Ok(());
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase();
        if content_type.starts_with("text/event-stream") {
            let carries = match related {
                Some(id) => {
                    let reading = self.answer_streams.start(&id, &self.closed);
                    Carries::Answer { id, reading }
                }
                // An answer stream for a notification or an answer of ours carries only what
                // the server sends of its own accord.
                None => Carries::Notifications,
            };
            let stream = self.event_stream(carries, sent);
            tokio::spawn(stream.read(events(response, super::MAX_MESSAGE_BYTES)));
        } else {
            let body = super::message_body(response, super::MAX_MESSAGE_BYTES).await?;
            if body.is_empty() {
                return Ok(());
            }
            let value: Value = serde_json::from_slice(&body).map_err(|e| {
                let body = self
                    .redactor(sent)
                    .redact_start(&String::from_utf8_lossy(&body), 200);
                SendError::Answer(format!("answer is not JSON ({e}): {body}"))
            })?;
            push_messages(&self.incoming, value, related.as_ref()).await;
        }
        Ok(())
    }

    /// A reader of one of this wire's event streams, for a request that sent `sent`.
    fn event_stream(&self, carries: Carries, sent: Option<&Secret>) -> EventStream {
        EventStream {
            server: self.server.clone(),
            redactor: self.redactor(sent),
            incoming: self.incoming.clone(),
            closed: self.closed.clone(),
            carries,
        }
    }

    /// After the first successful exchange of a legacy session, opens the optional GET stream on
    /// which the server sends notifications such as `tools/list_changed`.
    fn listen_once(self: &Arc<Self>) {
        let mut listening = lock(&self.listening);
        if *listening || lock(&self.session).is_none() {
            return;
        }
        *listening = true;
        let this = self.clone();
        tokio::spawn(async move {
            let Ok(bearer) = this.bearer(None).await else {
                return;
            };
            let response = this
                .request(reqwest::Method::GET, bearer.as_ref())
                .header(ACCEPT, "text/event-stream")
                .send()
                .await;
            match response {
                Ok(response) if response.status().is_success() => {
                    let stream = this.event_stream(Carries::Notifications, bearer.as_ref());
                    stream
                        .read(events(response, super::MAX_MESSAGE_BYTES))
                        .await;
                }
                Ok(response) => {
                    tracing::debug!(server = %this.server, "no GET stream for notifications (HTTP {})", response.status())
                }
                Err(e) => {
                    let e = e.without_url();
                    tracing::debug!(server = %this.server, "no GET stream for notifications: {e}")
                }
            }
        });
    }
}

impl WireSend for Arc<HttpSender> {
    fn send(&self, message: Value) -> BoxFuture<'_, Result<(), SendError>> {
        Box::pin(async move {
            let method = message.get("method").and_then(Value::as_str);
            let is_initialized = method == Some("notifications/initialized");
            if method == Some("notifications/cancelled")
                && let Some(id) = message.pointer("/params/requestId")
            {
                self.answer_streams.give_up(id);
            }
            self.post(message).await?;
            if is_initialized {
                self.listen_once();
            }
            Ok(())
        })
    }

    fn set_protocol_version(&self, version: &str) {
        *lock(&self.protocol_version) = HeaderValue::from_str(version).ok();
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if lock(&self.session).is_some() {
                let bearer = self.bearer(None).await.ok().flatten();
                let _ = self
                    .request(reqwest::Method::DELETE, bearer.as_ref())
                    .send()
                    .await;
            }
            self.closed.cancel();
        })
    }
}

/// `Bearer <token>` as a header value, marked sensitive (kept out of reqwest's `Debug`).
pub(crate) fn bearer_header(token: &Secret) -> Option<HeaderValue> {
    let mut value = HeaderValue::from_str(&format!("Bearer {}", token.expose())).ok()?;
    value.set_sensitive(true);
    Some(value)
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
