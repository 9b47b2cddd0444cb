//! The guard of the routes under `/api` (the surface's guard runs it after the edge checks:
//! `Host`, `Origin`, the body limit). Which credentials each route takes is decided here:
//!
//! - `POST /api/v1/identity` takes none: it is how a CLI checks who answers before it sends one.
//! - Without an `Authorization` header, a live dashboard session cookie with its CSRF token
//!   stands for the admin, or for a viewer's reads (`api_session.rs`).
//! - The routes an agent uses (the provider projection, `POST /api/v1/call`, `DELETE
//!   /api/v1/connections/{name}`) take what an MCP route takes (the surface's
//!   [`Guard::authenticate`]: the API key, an agent token, an OAuth access token, nothing where
//!   authentication is not required), and their handlers answer within the [`Caller`]'s scope.
//! - Every other path under `/api`, known or not, takes only the admin API key; a malformed
//!   `Authorization` header is 401 there without the OAuth challenge (it is no MCP route).
//!
//! [`Caller`]: mcplex_surface::Caller

use std::sync::Arc;

use axum::extract::Request;
use mcplex_api::paths;
use mcplex_surface::{
    Admission, Authenticator, Credential, Family, Guard, RouteGuard, credential,
    malformed_authorization, unauthorized,
};

use crate::auth::Access;
use crate::operator_audit::Actions;

/// The `/api` family of routes and its guard; what it refuses a signed-in viewer goes to
/// `actions` (`None`: the audit log is off).
pub fn family(access: Arc<Access>, actions: Option<Actions>) -> Family {
    Family::new("/api", ApiGuard { access, actions })
}

struct ApiGuard {
    access: Arc<Access>,
    actions: Option<Actions>,
}

impl RouteGuard for ApiGuard {
    fn admit<'a>(&'a self, guard: &'a Guard, request: &'a mut Request) -> Admission<'a> {
        Box::pin(self.check(guard, request))
    }
}

impl ApiGuard {
    /// The rules above for one request under `/api`.
    async fn check(
        &self,
        guard: &Guard,
        request: &mut Request,
    ) -> Result<(), axum::response::Response> {
        let path = request.uri().path().to_owned();
        if path == paths::IDENTITY {
            return Ok(());
        }
        // A dashboard session stands for a credential only where none is sent.
        if credential(request.headers()) == Credential::Absent
            && let Some(admitted) =
                crate::api_session::admit(&self.access, request, &path, self.actions.as_ref())
        {
            return admitted;
        }
        if agent_route(&path) {
            let caller = guard.authenticate(request.headers()).await?;
            request.extensions_mut().insert(caller);
            return Ok(());
        }
        match credential(request.headers()) {
            Credential::Bearer(key) if self.access.is_admin(key) => Ok(()),
            Credential::Malformed => Err(malformed_authorization()),
            _ => Err(unauthorized(
                "the management API needs the admin API key (Authorization: Bearer, from the api_key file in the data directory)",
            )),
        }
    }
}

/// The `/api/v1` routes that take an agent token like an MCP route (their handlers read the
/// caller and answer within its scope): the provider projection, `POST /api/v1/call` and
/// `DELETE /api/v1/connections/{name}` (a caller forgets its own login to a `per_user` server).
fn agent_route(path: &str) -> bool {
    path.starts_with("/api/v1/projection/")
        || path == paths::CALL
        || path.starts_with("/api/v1/connections/")
}
