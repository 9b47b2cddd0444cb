//! Legacy HTTP+SSE upstreams (protocol 2024-11-05): a GET event stream whose first `endpoint`
//! event names the URL to POST messages to; every answer arrives on the event stream. URLs are
//! shown redacted (the announced endpoint carries a session id), answers redacted before they are
//! kept in an error.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use mcplex_config::{Redactor, redact_url};
use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::bounded_events::events;
use super::event_stream::{Carries, EventStream};
use super::http::{client, header_map};
use super::{BoxFuture, INCOMING_BUFFER, SendError, Wire, WireSend, error_body};
use crate::ConnectError;

/// How long the server may take to announce its POST endpoint.
const ENDPOINT_TIMEOUT: Duration = Duration::from_secs(10);

struct SseSender {
    client: reqwest::Client,
    redactor: Arc<Redactor>,
    endpoint: reqwest::Url,
    /// `endpoint` as it may be shown.
    shown_endpoint: String,
    headers: HeaderMap,
    closed: CancellationToken,
}

/// Connects the event stream and waits for the `endpoint` event.
pub(crate) async fn connect(
    server: Arc<str>,
    redactor: Arc<Redactor>,
    url: &str,
    headers: &BTreeMap<String, String>,
    bearer: Option<&mcplex_oauth::Secret>,
) -> Result<Wire, ConnectError> {
    let client = client()?;
    let mut headers = header_map(headers)?;
    // An OAuth server's token, for the life of this connection (a refused one ends it, and the
    // supervisor reconnects with a renewed one).
    if let Some(value) = bearer.and_then(super::http::bearer_header) {
        headers.insert(reqwest::header::AUTHORIZATION, value);
    }
    let shown = redact_url(url);
    let base = reqwest::Url::parse(url).map_err(|e| ConnectError::Url {
        shown: shown.clone(),
        reason: e.to_string(),
    })?;
    let response = client
        .get(base.clone())
        .headers(headers.clone())
        .header(ACCEPT, "text/event-stream")
        .send()
        .await
        .map_err(|e| ConnectError::Get {
            shown: shown.clone(),
            reason: e.without_url().to_string(),
        })?;
    if !response.status().is_success() {
        let status = response.status();
        let refusal = mcplex_oauth::redirect_refusal(&response).map(|why| why.to_string());
        let body = redactor.redact_start(&error_body(response).await, 300);
        return Err(ConnectError::Status {
            shown,
            status,
            refusal,
            body,
        });
    }
    let mut events = events(response, super::MAX_MESSAGE_BYTES);
    let endpoint = tokio::time::timeout(ENDPOINT_TIMEOUT, async {
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| ConnectError::StreamBroke(format!("{e:?}")))?;
            if event.event.as_deref() == Some("endpoint") {
                let data = event.data.unwrap_or_default();
                return endpoint_on(&base, &data, &redactor);
            }
        }
        Err(ConnectError::NoEndpoint)
    })
    .await
    .map_err(|_| ConnectError::EndpointTimeout(ENDPOINT_TIMEOUT.as_secs()))??;

    let (incoming_tx, incoming) = mpsc::channel(INCOMING_BUFFER);
    let closed = CancellationToken::new();
    let stream = EventStream {
        server,
        redactor: redactor.clone(),
        incoming: incoming_tx,
        closed: closed.clone(),
        carries: Carries::Session,
    };
    tokio::spawn(stream.read(events));
    let sender = Arc::new(SseSender {
        client,
        redactor,
        shown_endpoint: redact_url(endpoint.as_str()),
        endpoint,
        headers,
        closed: closed.clone(),
    });
    Ok(Wire {
        sender,
        incoming: super::channel_stream(incoming),
        closed,
        transport: mcplex_trace::Transport::Http,
    })
}

impl WireSend for SseSender {
    fn send(&self, message: Value) -> BoxFuture<'_, Result<(), SendError>> {
        Box::pin(async move {
            let body = serde_json::to_vec(&message)?;
            let request = self
                .client
                .post(self.endpoint.clone())
                .headers(self.headers.clone())
                .header(CONTENT_TYPE, "application/json");
            let response = super::with_trace_context(request)
                .body(body)
                .send()
                .await
                .map_err(|e| SendError::Request {
                    to: self.shown_endpoint.clone(),
                    source: e.without_url(),
                })?;
            if response.status().is_success() {
                Ok(())
            } else {
                let status = response.status();
                Err(SendError::Status {
                    status: status.as_u16(),
                    body: self.redactor.redact_start(&error_body(response).await, 300),
                })
            }
        })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move { self.closed.cancel() })
    }
}

/// The URL an `endpoint` event's `data` names, relative to the server's `base` URL. Every
/// message goes there with the server's headers and its bearer, so only the configured URL's
/// own origin (scheme, host and port) is taken, as a redirect would be followed.
fn endpoint_on(base: &Url, data: &str, redactor: &Redactor) -> Result<Url, ConnectError> {
    let refused = |reason: String| ConnectError::BadEndpoint {
        endpoint: redactor.redact_start(data, 200),
        reason,
    };
    let endpoint = base.join(data.trim()).map_err(|e| refused(e.to_string()))?;
    if endpoint.origin() != base.origin() {
        return Err(refused(
            "not on the origin of the server's URL (messages carry its credentials)".to_owned(),
        ));
    }
    Ok(endpoint)
}

#[cfg(test)]
mod endpoint_tests {
    use super::*;

    #[test]
    fn an_endpoint_is_taken_on_the_servers_own_origin_only() {
        let base = Url::parse("https://mcp.example.com/sse").expect("url");
        for same in [
            "/messages?session=1",
            "messages",
            "https://mcp.example.com/m",
        ] {
            assert!(
                endpoint_on(&base, same, &Redactor::default()).is_ok(),
                "{same}"
            );
        }
        for elsewhere in [
            "http://127.0.0.1:18951/internal/admin",
            "http://mcp.example.com/messages",
            "https://mcp.example.com:8443/messages",
            "https://evil.example.com/messages",
            "//evil.example.com/messages",
        ] {
            assert!(
                endpoint_on(&base, elsewhere, &Redactor::default()).is_err(),
                "{elsewhere}"
            );
        }
    }
}
