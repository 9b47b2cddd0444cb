//! How one server is isolated, in the operator's words: what is in force, what the kernel could
//! not give and what that leaves open.

use serde::{Deserialize, Serialize};

/// How much of the sandbox is in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Everything the policy asks for.
    Full,
    /// Less than asked: `missing` says what and what it leaves open.
    Partial,
    /// Not confined: `"sandbox": false`, or nothing the kernel offers could be used.
    Off,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Full => "full",
            Level::Partial => "partial",
            Level::Off => "off",
        }
    }
}

/// One server's isolation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    pub level: Level,
    /// The quarantine policy (no network, no writes beyond its temp directory) is in force.
    pub quarantine: bool,
    /// It can reach the network.
    pub network: bool,
    /// The mechanisms in force, e.g. `landlock (ABI 7)`.
    pub mechanisms: Vec<String>,
    /// What the policy asked for and the kernel did not give, each with what that leaves open.
    pub missing: Vec<String>,
}

impl Report {
    /// One line for `servers list` and logs: `full: landlock (ABI 7), namespaces …, no network`.
    pub fn summary(&self) -> String {
        let mut parts = self.mechanisms.clone();
        if self.quarantine {
            parts.push("quarantine policy".to_owned());
        }
        if !self.network {
            parts.push("no network".to_owned());
        }
        let mut line = format!("{}: {}", self.level.as_str(), parts.join(", "));
        if parts.is_empty() {
            line = self.level.as_str().to_owned();
        }
        for missing in &self.missing {
            line.push_str("; missing ");
            line.push_str(missing);
        }
        line
    }
}
