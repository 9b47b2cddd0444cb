//! The data directory: where it is, creating it privately, keeping the database files private
//! (0600: they hold the token secret and the audit log), and the admin API key file.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::StateError;
use crate::secret::random_bytes;

pub const DATABASE_FILE: &str = "state.db";
pub const API_KEY_FILE: &str = "api_key";
/// The key OAuth logins are sealed with, beside (never inside) the database.
pub const TOKEN_KEY_FILE: &str = "token_key";

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

/// Makes `path` a file only its owner may read or write: created with mode 0600 when missing
/// (before anything else can create it with the umask's mode), tightened to 0600 when it exists
/// with a wider mode (a database created by an older version).
pub(crate) fn private_file(path: &Path) -> Result<(), StateError> {
    let io = |source| StateError::Io {
        path: path.to_owned(),
        source,
    };
    fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .map_err(io)?;
    tighten(path)
}

/// Takes group and other permissions off `path` if it exists.
pub(crate) fn tighten(path: &Path) -> Result<(), StateError> {
    let mode = match fs::metadata(path) {
        Ok(metadata) => metadata.permissions().mode(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(StateError::Io {
                path: path.to_owned(),
                source,
            });
        }
    };
    if mode & 0o077 == 0 {
        return Ok(());
    }
    fs::set_permissions(path, fs::Permissions::from_mode(mode & 0o700)).map_err(|source| {
        StateError::Io {
            path: path.to_owned(),
            source,
        }
    })
}

/// Whether others than the owner may read or enter `dir` (its mode has group or other bits).
pub(crate) fn exposed(dir: &Path) -> bool {
    fs::metadata(dir).is_ok_and(|m| m.permissions().mode() & 0o077 != 0)
}

/// Logs a warning when the data directory is readable by others: the files in it are private,
/// but their names, sizes and any file a user adds are not.
pub(crate) fn warn_if_exposed(dir: &Path) {
    if exposed(dir) {
        tracing::warn!(
            "the data directory {} is accessible by other users; run: chmod 700 {}",
            dir.display(),
            dir.display()
        );
    }
}

/// The admin API key of the installation in `dir`, created (file mode 0600) if there is none.
pub fn api_key(dir: &Path) -> Result<String, StateError> {
    let fresh = format!("mcplex_admin_{}", mcplex_trust::hex(&random_bytes(32)?));
    created_once(dir, API_KEY_FILE, &fresh)
}

/// The key that seals OAuth logins in a data directory's database: the `token_key` file (0600),
/// a file of its own, created if there is none.
pub(crate) fn token_key(dir: &Path) -> Result<String, StateError> {
    created_once(dir, TOKEN_KEY_FILE, &mcplex_trust::hex(&random_bytes(32)?))
}

/// The admin API key of `dir`, without making one: `None` when it has no `api_key` file or a
/// blank one.
pub(crate) fn read_api_key(dir: &Path) -> Result<Option<String>, StateError> {
    let path = dir.join(API_KEY_FILE);
    match fs::read_to_string(&path) {
        Ok(key) => Ok(Some(key.trim().to_owned()).filter(|key| !key.is_empty())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(StateError::Io { path, source }),
    }
}

/// Replaces the admin API key of `dir` with `key` (renamed into place: no reader sees a
/// half-written key).
pub(crate) fn replace_api_key(dir: &Path, key: &str) -> Result<(), StateError> {
    ensure_dir(dir)?;
    let path = dir.join(API_KEY_FILE);
    let temporary = private_temporary(dir, API_KEY_FILE, key)?;
    fs::rename(&temporary, &path).map_err(|source| StateError::Io { path, source })
}

/// `content` in a new 0600 file beside `name` in `dir`, synced: its path, to be moved in place.
fn private_temporary(
    dir: &Path,
    name: &str,
    content: &str,
) -> Result<std::path::PathBuf, StateError> {
    let temporary = dir.join(format!(".{name}.{}", std::process::id()));
    let io = |source| StateError::Io {
        path: temporary.clone(),
        source,
    };
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)
        .map_err(io)?;
    file.write_all(format!("{content}\n").as_bytes())
        .map_err(io)?;
    file.sync_all().map_err(io)?;
    Ok(temporary)
}

/// The content of the private file `name` in `dir`; when it has none, `fresh` is written.
fn created_once(dir: &Path, name: &str, fresh: &str) -> Result<String, StateError> {
    ensure_dir(dir)?;
    let path = dir.join(name);
    let io = |source| StateError::Io {
        path: path.clone(),
        source,
    };
    match fs::read_to_string(&path) {
        Ok(key) if !key.trim().is_empty() => return Ok(key.trim().to_owned()),
        // Someone's doing (a key is always linked in whole, never written in place): said,
        // not guessed at.
        Ok(_) => {
            return Err(io(std::io::Error::other(
                "the file is blank: remove it, and a new one is made at the next start",
            )));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(e)),
    }
    // Written to a private temporary file and linked: no reader sees a half-written key, and
    // the key is never readable by others, not even for a moment.
    let temporary = private_temporary(dir, name, fresh)?;
    // A hard link never replaces an existing file: when two processes start at once, the first
    // link wins and the other reads the winner's key.
    let linked = fs::hard_link(&temporary, &path);
    let _ = fs::remove_file(&temporary);
    match linked {
        Ok(()) => Ok(fresh.to_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => created_once(dir, name, fresh),
        Err(e) => Err(io(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path)
            .map(|m| m.permissions().mode() & 0o777)
            .unwrap_or_default()
    }

    #[test]
    fn the_database_and_its_wal_files_are_private_even_when_an_old_version_made_them_0644() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("data");
        let (store, _) = crate::Store::open(&data).expect("open");
        drop(store);
        for file in ["state.db", "state.db-wal", "state.db-shm"] {
            let path = data.join(file);
            if path.exists() {
                assert_eq!(mode(&path), 0o600, "{file}");
                fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("chmod");
            }
        }
        let (_store, _) = crate::Store::open(&data).expect("reopen");
        for file in ["state.db", "state.db-wal", "state.db-shm"] {
            let path = data.join(file);
            if path.exists() {
                assert_eq!(mode(&path), 0o600, "{file} after reopen");
            }
        }
        assert_eq!(mode(&data), 0o700);
        assert!(!exposed(&data));
        fs::set_permissions(&data, fs::Permissions::from_mode(0o755)).expect("chmod");
        assert!(exposed(&data));
    }
}
