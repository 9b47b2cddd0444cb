//! What one caller may see and call: a set of servers × a set of permissions.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::{Permission, Permissions};

/// A caller's reach. Everything outside it is, to that caller, as if it did not exist.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Scope {
    /// `None`: every server.
    servers: Option<Arc<BTreeSet<String>>>,
    permissions: Permissions,
}

impl Scope {
    /// Everything: the local user on stdio, or an unauthenticated caller on loopback.
    pub fn full() -> Scope {
        Scope {
            servers: None,
            permissions: Permissions::ALL,
        }
    }

    /// Nothing at all: what a request that should have been authenticated but carries no
    /// identity gets.
    pub fn nothing() -> Scope {
        Scope {
            servers: Some(Arc::new(BTreeSet::new())),
            permissions: Permissions::default(),
        }
    }

    /// `servers` (`None`: all) × `permissions`.
    pub fn new(servers: Option<BTreeSet<String>>, permissions: Permissions) -> Scope {
        Scope {
            servers: servers.map(Arc::new),
            permissions,
        }
    }

    /// Whether a tool of `server` needing `permission` is inside the scope.
    pub fn admits(&self, server: &str, permission: Permission) -> bool {
        self.admits_server(server) && self.permissions.contains(permission)
    }

    /// Whether anything of `server` can be inside the scope.
    pub fn admits_server(&self, server: &str) -> bool {
        self.servers.as_ref().is_none_or(|s| s.contains(server))
    }

    /// The part of `self` that is also within `servers` (a profile's servers).
    pub fn within(&self, servers: &BTreeSet<String>) -> Scope {
        let servers = match &self.servers {
            None => servers.clone(),
            Some(own) => own.intersection(servers).cloned().collect(),
        };
        Scope {
            servers: Some(Arc::new(servers)),
            permissions: self.permissions,
        }
    }

    /// The servers it reaches; `None`: every server.
    pub fn servers(&self) -> Option<&BTreeSet<String>> {
        self.servers.as_deref()
    }

    /// The permissions it reaches.
    pub fn permissions(&self) -> Permissions {
        self.permissions
    }

    pub fn is_full(&self) -> bool {
        self.servers.is_none() && self.permissions == Permissions::ALL
    }
}
