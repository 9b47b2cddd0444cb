//! [`ServerHealth`]: where one upstream server stands. The supervisor records it, the catalog
//! decides from it what to serve, and the management API shows it, all as this one type; on
//! the wire it is one string (`"ready"`, `"unhealthy: <reason>"`, ...), spelled here.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Where one upstream server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerHealth {
    /// `enabled: false` in the config.
    Disabled,
    /// Starting, initializing or listing for the first time.
    Connecting,
    /// Connected and answering; its listings are current.
    Ready,
    /// Lost or failed; the gateway is retrying. The reason is for people, not for matching.
    Unhealthy { reason: String },
    /// An OAuth server with no usable login: nothing is tried and none of its tools is served
    /// until someone logs in. The reason names the command to run.
    NeedsLogin { reason: String },
}

const UNHEALTHY_PREFIX: &str = "unhealthy: ";
const NEEDS_LOGIN_PREFIX: &str = "needs_login: ";

impl ServerHealth {
    /// The health a wire text names; `None` for text that names none.
    pub fn parse(text: &str) -> Option<ServerHealth> {
        Some(match text {
            "disabled" => ServerHealth::Disabled,
            "connecting" => ServerHealth::Connecting,
            "ready" => ServerHealth::Ready,
            other => match other.strip_prefix(NEEDS_LOGIN_PREFIX) {
                Some(reason) => ServerHealth::NeedsLogin {
                    reason: reason.to_owned(),
                },
                None => ServerHealth::Unhealthy {
                    reason: other.strip_prefix(UNHEALTHY_PREFIX)?.to_owned(),
                },
            },
        })
    }

    /// The same health with its reason (if it has one) passed through `rewrite`, such as a
    /// redactor.
    pub fn map_reason(self, rewrite: impl FnOnce(&str) -> String) -> ServerHealth {
        match self {
            ServerHealth::Unhealthy { reason } => ServerHealth::Unhealthy {
                reason: rewrite(&reason),
            },
            ServerHealth::NeedsLogin { reason } => ServerHealth::NeedsLogin {
                reason: rewrite(&reason),
            },
            other => other,
        }
    }
}

impl fmt::Display for ServerHealth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerHealth::Disabled => f.write_str("disabled"),
            ServerHealth::Connecting => f.write_str("connecting"),
            ServerHealth::Ready => f.write_str("ready"),
            ServerHealth::Unhealthy { reason } => write!(f, "{UNHEALTHY_PREFIX}{reason}"),
            ServerHealth::NeedsLogin { reason } => write!(f, "{NEEDS_LOGIN_PREFIX}{reason}"),
        }
    }
}

impl Serialize for ServerHealth {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ServerHealth {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        ServerHealth::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown server health {text:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_health_reads_back_from_its_wire_text() {
        let all = [
            ServerHealth::Disabled,
            ServerHealth::Connecting,
            ServerHealth::Ready,
            ServerHealth::Unhealthy {
                reason: "exit status 1: needs_login: x".into(),
            },
            ServerHealth::NeedsLogin {
                reason: "run `mcplex auth login a`".into(),
            },
        ];
        for health in all {
            let text = serde_json::to_value(&health).expect("serializes");
            assert_eq!(text, health.to_string());
            let back: ServerHealth = serde_json::from_value(text).expect("parses");
            assert_eq!(back, health);
        }
        assert_eq!(ServerHealth::parse("fine"), None);
        assert!(serde_json::from_value::<ServerHealth>("fine".into()).is_err());
    }
}
