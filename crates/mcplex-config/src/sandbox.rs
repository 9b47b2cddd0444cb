//! `sandbox`: how a stdio server is isolated from the gateway and the machine. On by default
//! with no configuration; a top-level `"sandbox"` sets the defaults, a server's own `"sandbox"`
//! overrides them key by key (a list replaces the default's list), and `"sandbox": false` (on a
//! server or at the top) runs servers unconfined. What each setting means at run time is the
//! upstream crate's and the sandbox crate's business; this module only reads and validates.

use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::ConfigError;
use crate::Glob;
use crate::parse::{Cx, kind, warn_unknown};

/// The keys of a `sandbox` object.
const SANDBOX_KEYS: &[&str] = &[
    "read",
    "write",
    "network",
    "env",
    "required",
    "memory_mb",
    "processes",
    "open_files",
];

/// A stdio server's isolation, as configured (defaults applied).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// `false` (`"sandbox": false`): the server runs with the gateway's authority.
    pub enabled: bool,
    /// `read`: the only trees it may read (beside the system's own directories); `None`: every
    /// path but the gateway's secrets.
    pub read: Option<Vec<PathBuf>>,
    /// `write`: trees it may write beside its working directory, its temp directory and the
    /// package runners' caches.
    pub write: Vec<PathBuf>,
    /// `network`: `false` gives it no network at all.
    pub network: bool,
    /// `required`: refuse to start it when the kernel cannot isolate it as configured.
    pub required: bool,
    /// Resource limits (`0`: unlimited).
    pub limits: SandboxLimits,
}

/// Resource limits of a sandboxed server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandboxLimits {
    /// `memory_mb`: its data segment and private writable mappings, in MiB.
    pub memory_mb: u64,
    /// `processes`: processes and threads it may run at once.
    pub processes: u64,
    /// `open_files`: file descriptors per process.
    pub open_files: u64,
}

impl Default for SandboxLimits {
    fn default() -> SandboxLimits {
        SandboxLimits {
            memory_mb: 4096,
            processes: 1024,
            open_files: 4096,
        }
    }
}

impl Default for Sandbox {
    fn default() -> Sandbox {
        Sandbox {
            enabled: true,
            read: None,
            write: Vec::new(),
            network: true,
            required: false,
            limits: SandboxLimits::default(),
        }
    }
}

/// One `sandbox` value as written: `false`, `true`, or an object whose keys override `base`.
/// Returns the result and the `env` names the object adds to what the server inherits.
pub(crate) fn read_sandbox(
    cx: &Cx<'_>,
    value: Option<&Value>,
    key: &str,
    base: &Sandbox,
    warnings: &mut Vec<String>,
) -> Result<(Sandbox, Vec<Glob>), ConfigError> {
    let object = match value {
        None | Some(Value::Null) | Some(Value::Bool(true)) => {
            let mut sandbox = base.clone();
            // `true` turns a top-level `false` back on for this server.
            sandbox.enabled |= matches!(value, Some(Value::Bool(true)));
            return Ok((sandbox, Vec::new()));
        }
        Some(Value::Bool(false)) => {
            return Ok((
                Sandbox {
                    enabled: false,
                    ..base.clone()
                },
                Vec::new(),
            ));
        }
        Some(Value::Object(object)) => object,
        Some(other) => {
            return Err(cx.err(
                key,
                format!(
                    "must be false (no sandbox) or an object (read, write, network, env, required, memory_mb, processes, open_files), found {}",
                    kind(other)
                ),
            ));
        }
    };
    warn_unknown(object, SANDBOX_KEYS, &format!("{key}."), cx.file, warnings)?;
    let mut sandbox = Sandbox {
        enabled: true,
        ..base.clone()
    };
    if let Some(read) = field(object, "read") {
        sandbox.read = Some(paths(cx, read, &format!("{key}.read"))?);
    }
    if let Some(write) = field(object, "write") {
        sandbox.write = paths(cx, write, &format!("{key}.write"))?;
    }
    if let Some(network) = field(object, "network") {
        sandbox.network = cx.bool(network, &format!("{key}.network"))?;
    }
    if let Some(required) = field(object, "required") {
        sandbox.required = cx.bool(required, &format!("{key}.required"))?;
    }
    for (name, slot) in [
        ("memory_mb", &mut sandbox.limits.memory_mb),
        ("processes", &mut sandbox.limits.processes),
        ("open_files", &mut sandbox.limits.open_files),
    ] {
        if let Some(value) = field(object, name) {
            *slot = value.as_u64().ok_or_else(|| {
                cx.err(
                    format!("{key}.{name}"),
                    format!("must be a whole number (0: unlimited), found {value}"),
                )
            })?;
        }
    }
    if sandbox.limits.open_files != 0 && sandbox.limits.open_files < 16 {
        return Err(cx.err(
            format!("{key}.open_files"),
            "must be at least 16 (a process needs a few just to start), or 0 for unlimited",
        ));
    }
    let env = match field(object, "env") {
        Some(env) => cx.globs(env, &format!("{key}.env"))?,
        None => Vec::new(),
    };
    Ok((sandbox, env))
}

fn field<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    object.get(key).filter(|v| !v.is_null())
}

/// An array of absolute paths. Relative ones are refused: the gateway's working directory is no
/// place to anchor what a server may touch.
fn paths(cx: &Cx<'_>, value: &Value, key: &str) -> Result<Vec<PathBuf>, ConfigError> {
    let Value::Array(items) = value else {
        return Err(cx.err(
            key,
            format!("must be an array of absolute paths, found {}", kind(value)),
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let key = format!("{key}[{i}]");
            let text = cx.string(item, &key)?;
            let path = PathBuf::from(text);
            if path.is_absolute() {
                Ok(path)
            } else {
                Err(cx.err(
                    key,
                    format!("{text:?} is not an absolute path (write it from /)"),
                ))
            }
        })
        .collect()
}
