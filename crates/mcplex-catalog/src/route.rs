//! [`Route`]: the upstream a request was resolved to, as only the catalog can name it.

use std::sync::Arc;

/// An upstream server that a snapshot resolved a client's prompt name, URI or completion
/// reference to, within the caller's scope. Nothing outside this crate can make one: a surface
/// that wants to reach an upstream must first resolve what the client named through the
/// snapshot, and the dispatch boundary takes only a `Route`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Route {
    server: Arc<str>,
}

impl Route {
    pub(crate) fn to(server: &Arc<str>) -> Route {
        Route {
            server: server.clone(),
        }
    }

    /// The configured name of the server.
    pub fn server(&self) -> &Arc<str> {
        &self.server
    }
}

impl std::fmt::Display for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.server)
    }
}
