//! The sandbox each stdio server starts in. The gateway hands [`Upstreams::start`] an
//! [`Isolation`]: the helper executable that confines a process (the gateway's own binary), the
//! paths that are the gateway's secrets, and which servers the operator approved. A server that
//! is not approved (quarantined, or added while the gateway runs and not yet decided) starts
//! under the quarantine policy: no network, no writes beyond its temp directory; when its
//! approval changes it is restarted under its own policy ([`Upstreams::set_approved`]).
//!
//! [`Upstreams::start`]: crate::Upstreams::start
//! [`Upstreams::set_approved`]: crate::Upstreams::set_approved

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use mcplex_config::{Sandbox, Transport};
use mcplex_sandbox::{Level, Plan, Policy, Protected, Report, Support};
use tokio::sync::OnceCell;

use crate::{ConnectError, Upstreams};

/// How the gateway isolates the stdio servers it starts.
pub struct Isolation {
    /// The executable that runs `mcplex_sandbox::run_helper` (`None`: no sandbox possible).
    helper: Option<PathBuf>,
    protected: Protected,
    /// Probed at the first start of a sandboxed server.
    support: OnceCell<Support>,
    /// `None`: every server counts as approved (a gateway without approvals).
    approved: RwLock<Option<HashSet<String>>>,
    /// Where the servers' private temp directories are made (each a tmpfs of its own inside its
    /// namespaces; without them, the others' are hidden from each server).
    temp_base: PathBuf,
    /// Whether the missing mechanisms were said (once per gateway).
    warned: Mutex<bool>,
}

/// One server's isolation, as the operator sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerIsolation {
    pub report: Report,
    /// The last line of its stderr that looks like the sandbox refusing it something.
    pub denied: Option<String>,
}

impl Isolation {
    /// Sandboxes every stdio server with `helper` (an executable whose first argument
    /// [`mcplex_sandbox::HELPER_ARG`] runs the helper), hiding `protected` from them.
    pub fn sandboxing(helper: PathBuf, protected: Protected) -> Isolation {
        Isolation::new(Some(helper), protected)
    }

    /// No helper: servers run unconfined, and each says so (one-shot tools, benchmarks and
    /// tests of this crate).
    pub fn unavailable() -> Isolation {
        Isolation::new(None, Protected::default())
    }

    fn new(helper: Option<PathBuf>, protected: Protected) -> Isolation {
        let temp_base = temp_base();
        Isolation {
            helper,
            protected,
            support: OnceCell::new(),
            approved: RwLock::new(None),
            temp_base,
            warned: Mutex::new(false),
        }
    }

    /// Only `approved` servers run under their own policy; the others under the quarantine one.
    pub fn approving(self, approved: Option<HashSet<String>>) -> Isolation {
        *self
            .approved
            .write()
            .unwrap_or_else(PoisonError::into_inner) = approved;
        self
    }

    /// Takes `server` out of the approved servers until the next [`Isolation::set_approved`]:
    /// a server about to start whose approval the store just withdrew starts quarantined.
    pub(crate) fn withhold(&self, server: &str) {
        if let Some(approved) = self
            .approved
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
        {
            approved.remove(server);
        }
    }

    pub(crate) fn quarantined(&self, server: &str) -> bool {
        self.approved
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .is_some_and(|approved| !approved.contains(server))
    }

    /// Records the approved servers; returns the servers whose quarantine changed.
    pub(crate) fn set_approved(&self, approved: Option<HashSet<String>>) -> Vec<String> {
        let mut current = self
            .approved
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let changed = |name: &String| -> bool {
            let was = current.as_ref().is_some_and(|a| !a.contains(name));
            let now = approved.as_ref().is_some_and(|a| !a.contains(name));
            was != now
        };
        let mut names: Vec<String> = current
            .iter()
            .chain(approved.iter())
            .flatten()
            .filter(|name| changed(name))
            .cloned()
            .collect();
        names.sort();
        names.dedup();
        *current = approved;
        names
    }

    /// The kernel's mechanisms, probed once.
    async fn support(&self) -> &Support {
        self.support
            .get_or_init(|| async {
                let Some(helper) = self.helper.clone() else {
                    return Support::none("no sandbox helper in this process");
                };
                tokio::task::spawn_blocking(move || Support::probe(&helper))
                    .await
                    .unwrap_or_else(|_| Support::none("the probe did not finish"))
            })
            .await
    }

    /// How to start one server: the program and arguments to run, what to add to its
    /// environment, its private temp directory and its isolation.
    pub(crate) async fn prepare(&self, start: &Start<'_>) -> Result<Prepared, ConnectError> {
        let direct = |report: Report| Prepared {
            program: start.command.into(),
            args: start.args.iter().map(OsString::from).collect(),
            temp: None,
            report,
        };
        let support = self.support().await;
        // A quarantined server is confined even when its config opts it out.
        let confined = start.sandbox.enabled || self.quarantined(start.server);
        let Some(helper) = self.helper.as_ref().filter(|_| confined) else {
            let (_, report) = mcplex_sandbox::plan(
                &self.policy(start, Path::new("/")),
                &self.protected,
                support,
            )
            .map_err(ConnectError::Sandbox)?;
            return Ok(direct(report));
        };
        std::fs::create_dir_all(&self.temp_base)
            .and_then(|()| restrict_to_owner(&self.temp_base))
            .map_err(|e| ConnectError::TempBase {
                dir: self.temp_base.clone(),
                reason: e.to_string(),
            })?;
        let temp = tempfile::Builder::new()
            .prefix(&temp_prefix(start.server))
            .tempdir_in(&self.temp_base)
            .map_err(|e| ConnectError::TempDir(e.to_string()))?;
        let (plan, report) =
            mcplex_sandbox::plan(&self.policy(start, temp.path()), &self.protected, support)
                .map_err(ConnectError::Sandbox)?;
        self.warn_once(&report);
        let Some(plan) = plan else {
            return Ok(direct(report));
        };
        let mut args = vec![
            OsString::from(mcplex_sandbox::HELPER_ARG),
            plan_argument(&plan)?,
            OsString::from("--"),
            OsString::from(start.command),
        ];
        args.extend(start.args.iter().map(OsString::from));
        Ok(Prepared {
            program: helper.clone().into_os_string(),
            args,
            temp: Some(temp),
            report,
        })
    }

    fn policy<'a>(&self, start: &'a Start<'a>, temp_dir: &'a Path) -> Policy<'a> {
        Policy {
            sandbox: start.sandbox,
            quarantined: self.quarantined(start.server),
            command: start.command,
            args: start.args,
            working_dir: start.working_dir,
            home: start.home.map(Path::new),
            cache_home: start.cache_home.map(Path::new),
            temp_dir,
        }
    }

    /// Says once per gateway what the kernel lacks (each start logs its own summary).
    fn warn_once(&self, report: &Report) {
        if report.level == Level::Full {
            return;
        }
        let mut warned = self.warned.lock().unwrap_or_else(PoisonError::into_inner);
        if !*warned {
            *warned = true;
            tracing::warn!(
                "stdio servers are isolated less than configured on this machine: missing {}",
                report.missing.join("; ")
            );
        }
    }
}

impl Upstreams {
    /// Records which servers the operator approved (`None`: all); a sandboxed process whose
    /// quarantine changed is restarted under the policy that now applies to it (a server just
    /// approved gets its network and its writes, one just quarantined loses them at once).
    pub fn set_approved(&self, approved: Option<HashSet<String>>) {
        let changed = self.isolation.set_approved(approved);
        if changed.is_empty() || self.shutdown.is_cancelled() {
            return;
        }
        let mut servers = self.servers.write().unwrap_or_else(PoisonError::into_inner);
        if self.shutdown.is_cancelled() {
            return;
        }
        for name in changed {
            let Some(slot) = servers.get(&name).cloned() else {
                continue;
            };
            if !matches!(slot.config.transport, Transport::Stdio { .. }) {
                continue;
            }
            tracing::info!(server = %name, "restarting upstream: its approval changed, and with it its sandbox");
            self.stop_slot(&name, &slot);
            servers.remove(&name);
            self.start_slot_with(&mut servers, &slot.config, slot.history.clone());
        }
    }

    /// Makes `server`, not running yet, start under the quarantine policy whatever the
    /// approvals last said (a server added from the dashboard, quarantined in the store a moment
    /// before the approvals are read again).
    pub fn withhold_approval(&self, server: &str) {
        self.isolation.withhold(server);
    }

    /// How `server`'s process is isolated (`None`: not a process, or not started yet).
    pub fn isolation(&self, server: &str) -> Option<ServerIsolation> {
        let slot = self.slot(server)?;
        let report = slot
            .report
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()?;
        let denied = slot
            .denied
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        Some(ServerIsolation { report, denied })
    }
}

/// What one start needs to know.
pub(crate) struct Start<'a> {
    pub server: &'a str,
    pub sandbox: &'a Sandbox,
    pub command: &'a str,
    pub args: &'a [String],
    pub working_dir: Option<&'a Path>,
    /// `HOME` and `XDG_CACHE_HOME` as the server will see them.
    pub home: Option<&'a str>,
    pub cache_home: Option<&'a str>,
}

/// How one server is started.
pub(crate) struct Prepared {
    pub program: OsString,
    pub args: Vec<OsString>,
    /// Its private temp directory, removed when this is dropped (after the process ended).
    pub temp: Option<tempfile::TempDir>,
    pub report: Report,
}

fn plan_argument(plan: &Plan) -> Result<OsString, ConnectError> {
    serde_json::to_string(plan)
        .map(OsString::from)
        .map_err(|e| ConnectError::Plan(e.to_string()))
}

/// `$TMPDIR/mcplex-sandbox-<uid>`: one per user, so gateways of different users never share it.
fn temp_base() -> PathBuf {
    let uid = mcplex_sandbox::effective_uid();
    std::env::temp_dir().join(format!("mcplex-sandbox-{uid}"))
}

fn restrict_to_owner(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// The stderr lines that look like a refusal the sandbox may have caused.
pub(crate) fn looks_denied(line: &str) -> bool {
    const SIGNS: &[&str] = &[
        "EACCES",
        "EPERM",
        "EROFS",
        "Permission denied",
        "permission denied",
        "Operation not permitted",
        "Read-only file system",
    ];
    SIGNS.iter().any(|sign| line.contains(sign))
}

/// What the operator is told after such a line, in the server's stderr tail.
pub(crate) fn denial_hint(server: &str) -> String {
    format!(
        "mcplex: if the sandbox refused this, grant the path in the server's config: \"sandbox\": {{\"write\": [\"/the/path\"]}} (or \"read\" when reads are narrowed) for {server:?}; see docs/isolation.md"
    )
}

/// Shared between a server's slot and its stderr reader: the last line that looked denied.
pub(crate) type Denied = Arc<Mutex<Option<String>>>;

/// A temp directory's name prefix from a server's name: its letters, digits, `-` and `_` (a
/// name is the config's, which may hold `/` or `..`), at most 32 of them.
fn temp_prefix(server: &str) -> String {
    let mut prefix: String = server
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(32)
        .collect();
    prefix.push('.');
    prefix
}
