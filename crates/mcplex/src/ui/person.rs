//! Who a dashboard session was opened for when it was not the API key: a person signed in at
//! the issuer, either an operator (matched by `auth.dashboard.operators`) or a viewer, who reads
//! what `auth.rules` let their claims reach and changes nothing. Signed inside the session's
//! value, so every replica knows it without a store read.

use std::collections::BTreeSet;

use mcplex_trust::{Permissions, Scope};
use serde::{Deserialize, Serialize};

/// A signed-in person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Person {
    pub name: String,
    /// `None`: an operator. Otherwise a viewer, reaching this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub viewer: Option<Reach>,
}

/// A viewer's reach: servers (`None`: all) × permissions, as the rules granted it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reach {
    pub servers: Option<Vec<String>>,
    /// Comma-separated, e.g. `read,write`.
    pub permissions: String,
}

impl Person {
    pub fn operator(name: &str) -> Person {
        Person {
            name: name.to_owned(),
            viewer: None,
        }
    }

    pub fn viewer(name: &str, reach: &Scope) -> Person {
        Person {
            name: name.to_owned(),
            viewer: Some(Reach {
                servers: reach.servers().map(|s| s.iter().cloned().collect()),
                permissions: reach.permissions().to_string(),
            }),
        }
    }

    /// A viewer's scope; `None` for an operator. A reach that no longer reads reaches nothing.
    pub fn viewer_scope(&self) -> Option<Scope> {
        let reach = self.viewer.as_ref()?;
        let permissions = Permissions::parse(&reach.permissions).unwrap_or_default();
        let servers = reach
            .servers
            .as_ref()
            .map(|names| names.iter().cloned().collect::<BTreeSet<String>>());
        Some(Scope::new(servers, permissions))
    }
}

/// How a person is named: the first of their usual names, without control characters.
pub(crate) fn name_of(claims: &serde_json::Map<String, serde_json::Value>) -> String {
    ["preferred_username", "email", "name", "sub"]
        .iter()
        .find_map(|claim| claims.get(*claim).and_then(serde_json::Value::as_str))
        .unwrap_or("someone")
        .chars()
        .filter(|c| !c.is_control())
        .take(128)
        .collect()
}
