//! Requests to one server over the right connection: the gateway's own (the supervisor's), or,
//! on a `per_user` server, the caller's own (`callers.rs`). The operator (no caller) always
//! goes over the gateway's.

use std::sync::{Arc, PoisonError};

use serde_json::Value;

use crate::rpc::{CallOptions, RpcConnection};
use crate::{RawResult, Secret, UpstreamError, Upstreams};

/// Whom a request is for: the operator (the gateway's own connection), or a caller, with the
/// OAuth access token it presented when it presented one.
#[derive(Debug, Clone, Copy, Default)]
pub struct OnBehalfOf<'a> {
    caller: Option<&'a str>,
    presented: Option<&'a Secret>,
}

impl<'a> OnBehalfOf<'a> {
    /// The operator: the gateway's own connection.
    pub fn operator() -> OnBehalfOf<'a> {
        OnBehalfOf::default()
    }

    /// `caller` (an agent token's name, `oauth:<subject>`; `None`: the operator), with the
    /// access token it presented.
    pub fn of(caller: Option<&'a str>, presented: Option<&'a Secret>) -> OnBehalfOf<'a> {
        OnBehalfOf { caller, presented }
    }
}

impl Upstreams {
    /// Sends `tools/call` with `params` (`name`, `arguments`) to `server` as the operator and
    /// returns the raw result.
    pub async fn call_tool(
        &self,
        server: &str,
        params: Value,
        options: CallOptions,
    ) -> Result<Value, UpstreamError> {
        self.request(
            server,
            "tools/call",
            params,
            options,
            OnBehalfOf::operator(),
        )
        .await
    }

    /// [`Upstreams::call_tool`] for `caller` (see [`Upstreams::request`]), the result as the
    /// server wrote it where its wire kept it.
    pub async fn call_tool_raw(
        &self,
        server: &str,
        params: Value,
        options: CallOptions,
        on_behalf: OnBehalfOf<'_>,
    ) -> Result<RawResult, UpstreamError> {
        let connection = self.connection(server, on_behalf).await?;
        connection
            .request_raw("tools/call", Some(params), options)
            .await
    }

    /// Sends any request to `server` (`prompts/get`, `resources/read`, `completion/complete`,
    /// ...) and returns the raw result. On a `per_user` server a `caller` (an agent token's
    /// name, an OAuth subject) is served only over its own login; the operator (`None`) over
    /// the gateway's.
    pub async fn request(
        &self,
        server: &str,
        method: &str,
        params: Value,
        options: CallOptions,
        on_behalf: OnBehalfOf<'_>,
    ) -> Result<Value, UpstreamError> {
        let connection = self.connection(server, on_behalf).await?;
        connection.request(method, Some(params), options).await
    }

    async fn connection(
        &self,
        server: &str,
        on_behalf: OnBehalfOf<'_>,
    ) -> Result<Arc<RpcConnection>, UpstreamError> {
        let slot = self.slot(server).ok_or_else(|| UpstreamError::NotRunning {
            server: server.to_owned(),
        })?;
        if let Some(caller) = on_behalf.caller
            && slot
                .config
                .oauth
                .as_ref()
                .is_some_and(|o| o.per_user.is_some())
        {
            return slot
                .caller_connection(self.logins.as_deref(), caller, on_behalf.presented)
                .await;
        }
        let connection = slot
            .connection
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        connection
            .filter(|c| !c.is_closed())
            .ok_or_else(|| UpstreamError::Unavailable {
                server: server.to_owned(),
                health: slot
                    .health
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_call_to_a_server_that_does_not_run_says_so() {
        let (events, _) = tokio::sync::mpsc::unbounded_channel();
        let config = mcplex_config::Config::with_servers(Vec::new());
        let upstreams =
            Upstreams::start(&config, None, None, events, crate::Isolation::unavailable());
        let called = upstreams
            .call_tool("gone", serde_json::json!({}), CallOptions::default())
            .await;
        match called {
            Err(error @ UpstreamError::NotRunning { .. }) => assert_eq!(
                error.to_string(),
                "server \"gone\" is not running: it was removed or disabled"
            ),
            other => panic!("{other:?}"),
        }
    }
}
