//! Requests to one server over the right connection: the gateway's own (the supervisor's), or,
//! on a `per_user` server, the caller's own (`callers.rs`). The operator (no caller) always
//! goes over the gateway's.

use std::sync::{Arc, PoisonError};

use serde_json::Value;

use crate::rpc::{CallOptions, RpcConnection};
use crate::{RawResult, UpstreamError, Upstreams};

impl Upstreams {
    /// Sends `tools/call` with `params` (`name`, `arguments`) to `server` as the operator and
    /// returns the raw result.
    pub async fn call_tool(
        &self,
        server: &str,
        params: Value,
        options: CallOptions,
    ) -> Result<Value, UpstreamError> {
        self.request(server, "tools/call", params, options, None)
            .await
    }

    /// [`Upstreams::call_tool`] for `caller` (see [`Upstreams::request`]), the result as the
    /// server wrote it where its wire kept it.
    pub async fn call_tool_raw(
        &self,
        server: &str,
        params: Value,
        options: CallOptions,
        caller: Option<&str>,
    ) -> Result<RawResult, UpstreamError> {
        let connection = self.connection(server, caller).await?;
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
        caller: Option<&str>,
    ) -> Result<Value, UpstreamError> {
        let connection = self.connection(server, caller).await?;
        connection.request(method, Some(params), options).await
    }

    async fn connection(
        &self,
        server: &str,
        caller: Option<&str>,
    ) -> Result<Arc<RpcConnection>, UpstreamError> {
        let slot = self
            .slot(server)
            .ok_or_else(|| UpstreamError::Unavailable {
                server: server.to_owned(),
                state: "not configured or disabled".to_owned(),
            })?;
        if let Some(caller) = caller
            && slot.config.oauth.as_ref().is_some_and(|o| o.per_user)
        {
            return slot.caller_connection(self.logins.as_deref(), caller).await;
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
                state: slot
                    .state
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone(),
            })
    }
}
