//! What this kernel lets the gateway use, found out once: the Landlock ABI (a system call that
//! answers with its version) and whether namespaces can be made (by running the helper in its
//! probe mode, which makes them the way a real start does and reports why not).

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

/// The kernel's isolation mechanisms as probed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Support {
    /// The Landlock ABI version (0: none: not built, not enabled at boot, or refused).
    pub landlock_abi: i32,
    /// `Ok`: user, mount, PID, IPC and network namespaces can be made and `/proc` mounted in
    /// them; `Err`: why not (what failed and the kernel's answer).
    pub namespaces: Result<(), NamespacesError>,
}

impl Support {
    /// Probes this kernel with `helper` (the executable that runs [`crate::run_helper`]). Blocks
    /// for the helper's few milliseconds.
    pub fn probe(helper: &Path) -> Support {
        Support {
            landlock_abi: crate::sys::landlock_abi(),
            namespaces: probe_namespaces(helper),
        }
    }

    /// Nothing at all: what a gateway that cannot run the helper has.
    pub fn none(why: &str) -> Support {
        Support {
            landlock_abi: 0,
            namespaces: Err(NamespacesError::NotProbed(why.to_owned())),
        }
    }
}

/// Why namespaces cannot be made here; shown in a server's sandbox report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum NamespacesError {
    /// The helper could not be started at all.
    Helper { helper: PathBuf, reason: String },
    /// The helper failed without saying why (e.g. killed by a signal).
    ProbeEnded { status: String },
    /// What the helper said failed, with the kernel's answer (`unshare: Operation not permitted`).
    Refused(String),
    /// Nothing was probed, and why (no helper in this process, ...).
    NotProbed(String),
}

impl fmt::Display for NamespacesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NamespacesError::Helper { helper, reason } => write!(
                f,
                "cannot run the sandbox helper {}: {reason}",
                helper.display()
            ),
            NamespacesError::ProbeEnded { status } => write!(f, "the probe ended with {status}"),
            NamespacesError::Refused(said) | NamespacesError::NotProbed(said) => f.write_str(said),
        }
    }
}

impl std::error::Error for NamespacesError {}

fn probe_namespaces(helper: &Path) -> Result<(), NamespacesError> {
    let output = Command::new(helper)
        .args([crate::HELPER_ARG, crate::helper::PROBE_ARG])
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| NamespacesError::Helper {
            helper: helper.to_owned(),
            reason: e.to_string(),
        })?;
    if output.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&output.stderr);
    let said = said
        .lines()
        .last()
        .unwrap_or("")
        .trim()
        .trim_start_matches(crate::helper::SAYS);
    Err(if said.is_empty() {
        NamespacesError::ProbeEnded {
            status: output.status.to_string(),
        }
    } else {
        NamespacesError::Refused(said.to_owned())
    })
}
