//! [`Gateway::request`]: every request to an upstream other than a tool call (prompts,
//! resources, subscriptions, completion, the logging level), through the same boundary: it
//! takes only a [`Route`] the snapshot resolved, and gets the request id, the metrics and the
//! audit record like a tool call.

use mcplex_catalog::Permission;
use mcplex_catalog::Route;
use mcplex_protocol::REQUEST_ID_META;
use mcplex_upstream::CallOptions;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use mcplex_protocol::json_len;

use crate::accounting::{Finished, Ledger, Outcome, Target};
use crate::{DispatchError, Gateway, UpstreamRequest};

/// Per-request facts that are not part of the request itself.
pub struct RequestContext {
    /// The agent token's name, for the audit log.
    pub token: Option<std::sync::Arc<str>>,
    /// The OAuth access token the caller presented, for a `per_user` server that exchanges it.
    pub credential: Option<mcplex_upstream::Secret>,
    /// Cancelled when the client cancels the request or goes away.
    pub cancel: CancellationToken,
    /// Reaches the client of a caller's request, so that it counts among the calls a server's
    /// unmarked message could be about (with its client's other calls: one client); `None` for
    /// the gateway's own requests.
    pub relay: Option<std::sync::Arc<dyn mcplex_upstream::ClientRelay>>,
}

impl Gateway {
    /// Sends `request` to the upstream of `route` with the server's call timeout, and returns
    /// its raw result.
    pub async fn request(
        &self,
        route: &Route,
        request: UpstreamRequest,
        cx: RequestContext,
    ) -> Result<Value, DispatchError> {
        let ledger = Ledger::open();
        let audit = self.audit.as_ref();
        let (method, mut params, subject) = request.into_parts();
        let request_bytes = if audit.is_some() {
            json_len(&params, usize::MAX)
        } else {
            0
        };
        // The request id reaches the upstream in `_meta`, next to whatever the client put there.
        let meta = params
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::with_capacity(1)));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(
                REQUEST_ID_META.to_owned(),
                Value::String(ledger.request_id.clone()),
            );
        }
        let server = route.server();
        let options = CallOptions {
            timeout: Some(self.upstreams.call_timeout(server)),
            cancel: Some(cx.cancel),
            relay: cx.relay,
            ..CallOptions::default()
        };
        let span = mcplex_trace::call(method.as_str(), None);
        // Within the caller's limits, as a read (held until the upstream answers).
        let admission = if method.counted() {
            self.admitted(cx.token.as_ref(), Permission::Read).map(Some)
        } else {
            Ok(None)
        };
        let outcome = match admission {
            Ok(_admission) => self
                .upstreams
                .request(
                    server,
                    method.as_str(),
                    Value::Object(params),
                    options,
                    mcplex_upstream::OnBehalfOf::of(cx.token.as_deref(), cx.credential.as_ref()),
                )
                .instrument(span.clone())
                .await
                .map_err(DispatchError::Upstream),
            Err(limited) => Err(DispatchError::Limited(limited)),
        };
        // The audit row keeps what the request was about (a resource's URI) as the log would.
        let subject = self.upstreams.redact(server, &subject);
        let finished = Finished {
            method,
            server: Some(server),
            tool: None,
            target: Target::About {
                server,
                subject: &subject,
            },
            token: cx.token.clone(),
            request_bytes,
            arguments: None,
        };
        ledger.close(finished, Outcome::of(&outcome), audit, &span);
        outcome
    }
}
