//! The two eras of MCP and the revisions that belong to each.

/// The newest session-era revision: what mcplex offers in `initialize` to an upstream.
pub const LATEST_SESSION_VERSION: &str = "2025-11-25";
/// The stateless revision: every request carries its version and capabilities in `_meta`.
pub const STATELESS_VERSION: &str = "2026-07-28";

/// Which era a protocol revision belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtocolEra {
    /// 2024-11-05 ..= 2025-11-25: `initialize`, sessions, `Mcp-Session-Id`.
    Session,
    /// 2026-07-28 and later: no handshake, no session, everything per request.
    Stateless,
}

impl ProtocolEra {
    /// The era of `version` (a `YYYY-MM-DD` revision). Revisions sort as dates, so any revision
    /// from the stateless one on is stateless; anything else, malformed text included, is
    /// treated as the session era, which every client and server speaks.
    pub fn of(version: &str) -> ProtocolEra {
        if is_revision(version) && version >= STATELESS_VERSION {
            ProtocolEra::Stateless
        } else {
            ProtocolEra::Session
        }
    }

    pub fn is_stateless(self) -> bool {
        self == ProtocolEra::Stateless
    }
}

/// Whether `text` looks like a revision (`YYYY-MM-DD`, digits and dashes), so that comparing it
/// as text compares dates.
fn is_revision(text: &str) -> bool {
    text.len() == 10
        && text.bytes().enumerate().all(|(index, byte)| match index {
            4 | 7 => byte == b'-',
            _ => byte.is_ascii_digit(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revisions_sort_into_their_eras() {
        for version in [
            "2024-11-05",
            "2025-03-26",
            "2025-06-18",
            LATEST_SESSION_VERSION,
        ] {
            assert_eq!(ProtocolEra::of(version), ProtocolEra::Session, "{version}");
        }
        for version in [STATELESS_VERSION, "2026-12-01", "2027-01-31"] {
            assert_eq!(
                ProtocolEra::of(version),
                ProtocolEra::Stateless,
                "{version}"
            );
        }
    }

    #[test]
    fn text_that_is_not_a_revision_is_the_session_era() {
        // Compared as text, "9" and "2026-07-28x" would sort after the stateless revision.
        for text in ["", "9", "2026-07-28x", "latest", "2026-7-28", "2026/07/28"] {
            assert_eq!(ProtocolEra::of(text), ProtocolEra::Session, "{text:?}");
        }
    }
}
