//! The data directory: where it is, creating it privately, and the admin API key file.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::StateError;
use crate::secret::random_bytes;

pub const DATABASE_FILE: &str = "state.db";
pub const API_KEY_FILE: &str = "api_key";

/// `~/.mcplex`, or `./.mcplex` when there is no home directory.
pub fn default_data_dir() -> PathBuf {
    std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
        .join(".mcplex")
}

/// Creates `dir` (mode 0700) if it does not exist.
pub(crate) fn ensure_dir(dir: &Path) -> Result<(), StateError> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|source| StateError::Io {
            path: dir.to_owned(),
            source,
        })
}

/// The admin API key of the installation in `dir`, created (file mode 0600) if there is none.
pub fn api_key(dir: &Path) -> Result<String, StateError> {
    ensure_dir(dir)?;
    let path = dir.join(API_KEY_FILE);
    let io = |source| StateError::Io {
        path: path.clone(),
        source,
    };
    match fs::read_to_string(&path) {
        Ok(key) if !key.trim().is_empty() => return Ok(key.trim().to_owned()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(e)),
    }
    let key = format!("mcplex_admin_{}", mcplex_trust::hex(&random_bytes(32)?));
    // Written to a private temporary file and renamed: no reader sees a half-written key, and
    // the key is never readable by others, not even for a moment.
    let temporary = dir.join(format!(".{API_KEY_FILE}.{}", std::process::id()));
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)
        .map_err(io)?;
    file.write_all(format!("{key}\n").as_bytes()).map_err(io)?;
    file.sync_all().map_err(io)?;
    drop(file);
    // A hard link never replaces an existing file: when two processes start at once, the first
    // link wins and the other reads the winner's key.
    let linked = fs::hard_link(&temporary, &path);
    let _ = fs::remove_file(&temporary);
    match linked {
        Ok(()) => Ok(key),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => api_key(dir),
        Err(e) => Err(io(e)),
    }
}
