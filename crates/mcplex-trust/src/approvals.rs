//! The approval state machine: which servers are approved, which tool definitions are pinned,
//! and the verdict for every tool an upstream offers.
//!
//! Every mutation returns the [`Change`]s it made, so the caller can persist exactly those in one
//! transaction and keep memory and disk equal.

use std::collections::BTreeMap;

/// A server's standing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerState {
    Approved,
    Quarantined,
}

impl ServerState {
    pub fn as_str(self) -> &'static str {
        match self {
            ServerState::Approved => "approved",
            ServerState::Quarantined => "quarantined",
        }
    }

    pub fn parse(text: &str) -> Option<ServerState> {
        match text {
            "approved" => Some(ServerState::Approved),
            "quarantined" => Some(ServerState::Quarantined),
            _ => None,
        }
    }
}

/// What is recorded about one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerRecord {
    pub state: ServerState,
    /// Set when the server is approved: the tools of its next listing that have no pin yet are
    /// pinned as they are (approving a server approves what it offers then). Cleared by that
    /// listing.
    pub pin_next_listing: bool,
}

/// What is recorded about one tool.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolRecord {
    /// The approved definition's [`crate::pin_hash`].
    pub pinned: Option<String>,
    /// Blocked by the operator: never served, whatever its hash.
    pub blocked: bool,
}

/// Whether a tool may be served, and if not, why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Approved,
    /// Never approved.
    Pending,
    /// Its definition differs from the pinned one.
    Changed,
    Blocked,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Approved => "approved",
            Verdict::Pending => "pending",
            Verdict::Changed => "changed",
            Verdict::Blocked => "blocked",
        }
    }
}

/// A record that a mutation wrote; persisted as an upsert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Server {
        name: String,
        record: ServerRecord,
    },
    Tool {
        server: String,
        tool: String,
        record: ToolRecord,
    },
}

/// Every approval, in memory. Servers and tools never recorded are unknown: a configured server
/// must be [`Approvals::register`]ed before its tools get verdicts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Approvals {
    servers: BTreeMap<String, ServerRecord>,
    tools: BTreeMap<(String, String), ToolRecord>,
}

impl Approvals {
    /// Rebuilds the state from persisted records.
    pub fn from_records(
        servers: impl IntoIterator<Item = (String, ServerRecord)>,
        tools: impl IntoIterator<Item = ((String, String), ToolRecord)>,
    ) -> Approvals {
        Approvals {
            servers: servers.into_iter().collect(),
            tools: tools.into_iter().collect(),
        }
    }

    pub fn server(&self, name: &str) -> Option<&ServerRecord> {
        self.servers.get(name)
    }

    pub fn servers(&self) -> impl Iterator<Item = (&String, &ServerRecord)> {
        self.servers.iter()
    }

    pub fn tool(&self, server: &str, tool: &str) -> Option<&ToolRecord> {
        self.tools.get(&(server.to_owned(), tool.to_owned()))
    }

    /// Whether the server is approved (an unknown server is not).
    pub fn server_approved(&self, name: &str) -> bool {
        self.servers
            .get(name)
            .is_some_and(|r| r.state == ServerState::Approved)
    }

    /// Records a configured server seen for the first time, in `initial` state. A server already
    /// recorded keeps its state: approvals outlive config edits and restarts.
    pub fn register(&mut self, name: &str, initial: ServerState) -> Vec<Change> {
        if self.servers.contains_key(name) {
            return Vec::new();
        }
        let record = ServerRecord {
            state: initial,
            pin_next_listing: initial == ServerState::Approved,
        };
        self.put_server(name, record)
    }

    /// Approves a server; its next listing's unpinned tools are pinned. Tools whose definition
    /// changed stay changed: only `approve_tool` accepts a new definition.
    pub fn approve_server(&mut self, name: &str) -> Vec<Change> {
        let record = ServerRecord {
            state: ServerState::Approved,
            pin_next_listing: true,
        };
        self.put_server(name, record)
    }

    /// Quarantines a server: none of its tools is served until it is approved again.
    pub fn quarantine_server(&mut self, name: &str) -> Vec<Change> {
        let record = ServerRecord {
            state: ServerState::Quarantined,
            pin_next_listing: false,
        };
        self.put_server(name, record)
    }

    /// A listing from an approved server: pins what approval covers. After a server approval,
    /// every unpinned tool; with `trust_auto`, every tool seen for the first time. A pinned tool
    /// is never re-pinned here, whatever its hash now is. Quarantined or unknown servers pin
    /// nothing.
    pub fn observe(
        &mut self,
        server: &str,
        tools: &[(String, String)],
        trust_auto: bool,
    ) -> Vec<Change> {
        let Some(record) = self.servers.get(server).cloned() else {
            return Vec::new();
        };
        if record.state != ServerState::Approved {
            return Vec::new();
        }
        let mut changes = Vec::new();
        for (tool, hash) in tools {
            let key = (server.to_owned(), tool.clone());
            let known = self.tools.get(&key);
            let first_sight = known.is_none();
            let unpinned = known.is_none_or(|r| r.pinned.is_none() && !r.blocked);
            if unpinned && (record.pin_next_listing || (trust_auto && first_sight)) {
                let record = ToolRecord {
                    pinned: Some(hash.clone()),
                    blocked: false,
                };
                changes.extend(self.put_tool(server, tool, record));
            }
        }
        if record.pin_next_listing {
            changes.extend(self.put_server(
                server,
                ServerRecord {
                    state: record.state,
                    pin_next_listing: false,
                },
            ));
        }
        changes
    }

    /// Approves a tool's current definition: pins `hash`, lifts a block.
    pub fn approve_tool(&mut self, server: &str, tool: &str, hash: &str) -> Vec<Change> {
        let record = ToolRecord {
            pinned: Some(hash.to_owned()),
            blocked: false,
        };
        self.put_tool(server, tool, record)
    }

    /// Blocks a tool, keeping its pin.
    pub fn block_tool(&mut self, server: &str, tool: &str) -> Vec<Change> {
        let mut record = self.tool(server, tool).cloned().unwrap_or_default();
        record.blocked = true;
        self.put_tool(server, tool, record)
    }

    /// The verdict for a tool of `server` whose definition hashes to `hash`. Does not look at the
    /// server's state: a quarantined server hides all of its tools whatever their verdicts.
    pub fn verdict(&self, server: &str, tool: &str, hash: &str) -> Verdict {
        match self.tools.get(&(server.to_owned(), tool.to_owned())) {
            Some(record) if record.blocked => Verdict::Blocked,
            Some(ToolRecord {
                pinned: Some(pinned),
                ..
            }) if pinned == hash => Verdict::Approved,
            Some(ToolRecord {
                pinned: Some(_), ..
            }) => Verdict::Changed,
            _ => Verdict::Pending,
        }
    }

    fn put_server(&mut self, name: &str, record: ServerRecord) -> Vec<Change> {
        if self.servers.get(name) == Some(&record) {
            return Vec::new();
        }
        self.servers.insert(name.to_owned(), record.clone());
        vec![Change::Server {
            name: name.to_owned(),
            record,
        }]
    }

    fn put_tool(&mut self, server: &str, tool: &str, record: ToolRecord) -> Vec<Change> {
        let key = (server.to_owned(), tool.to_owned());
        if self.tools.get(&key) == Some(&record) {
            return Vec::new();
        }
        self.tools.insert(key, record.clone());
        vec![Change::Tool {
            server: server.to_owned(),
            tool: tool.to_owned(),
            record,
        }]
    }
}
