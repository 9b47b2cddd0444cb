//! Who is calling: the [`Caller`] the HTTP guard attached to the request, narrowed by the route's
//! profile. Every listing, search, describe and call of a surface asks [`Reach::scope`] first.

use std::collections::BTreeSet;
use std::sync::Arc;

use mcplex_catalog::Scope;
use rmcp::model::Extensions;

/// An authenticated (or, on loopback, anonymous) caller, attached to each HTTP request by the
/// guard in `access.rs`.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The agent token's name, or `oauth:<sub>` for an OAuth access token; `None` for the
    /// local user or the admin API key.
    pub token: Option<Arc<str>>,
    pub scope: Scope,
    /// The OAuth access token the caller presented (a `per_user` server may exchange it for its
    /// own); `None` for every other caller.
    pub credential: Option<mcplex_upstream::Secret>,
}

impl Caller {
    /// Unrestricted: the local user.
    pub fn local() -> Caller {
        Caller {
            token: None,
            scope: Scope::full(),
            credential: None,
        }
    }
}

/// Where a surface instance is served, which decides the scope of requests that carry no
/// [`Caller`] and the profile that narrows every scope.
#[derive(Debug, Clone)]
pub struct Reach {
    /// On stdio the one client is the local user who spawned the gateway.
    stdio: bool,
    /// `/mcp/p/<name>`: only these servers.
    profile: Option<Arc<BTreeSet<String>>>,
}

impl Reach {
    pub fn stdio() -> Reach {
        Reach {
            stdio: true,
            profile: None,
        }
    }

    pub fn http(profile: Option<BTreeSet<String>>) -> Reach {
        Reach {
            stdio: false,
            profile: profile.map(Arc::new),
        }
    }

    /// The scope of the request whose extensions are `extensions`.
    pub(crate) fn scope(&self, extensions: &Extensions) -> Scope {
        self.caller(extensions).scope
    }

    /// The caller of the request whose extensions are `extensions`, its scope narrowed by the
    /// route's profile. An HTTP request always has a caller (the guard refuses the request
    /// otherwise); if one is ever missing, the request sees nothing rather than everything.
    pub(crate) fn caller(&self, extensions: &Extensions) -> Caller {
        let mut caller = match extensions.get::<http::request::Parts>() {
            Some(parts) => parts.extensions.get::<Caller>().cloned().unwrap_or(Caller {
                token: None,
                scope: Scope::nothing(),
                credential: None,
            }),
            None if self.stdio => Caller::local(),
            None => Caller {
                token: None,
                scope: Scope::nothing(),
                credential: None,
            },
        };
        if let Some(servers) = &self.profile {
            caller.scope = caller.scope.within(servers);
        }
        caller
    }
}
