//! Landlock only allows, and an allowance on a directory covers everything beneath it. To let a
//! server read a tree except a few paths in it, the tree is granted piece by piece: each
//! directory on the way to a hidden path is granted for listing only, and every other entry of
//! it in full. A hidden path is granted nothing, and neither is a file that appears later in one
//! of those directories (an editor's rename of the config file makes a new file, which stays
//! unreadable). Symlinks are granted as their targets, unless the target is hidden.

use std::path::{Path, PathBuf};

/// The paths to grant for a set of roots with some paths hidden.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Grants {
    /// Granted in full, everything beneath included.
    pub(crate) full: Vec<PathBuf>,
    /// Directories that lead to a hidden path: listed, not read beneath.
    pub(crate) listing: Vec<PathBuf>,
}

/// What to grant so that everything beneath `roots` is reachable but `hidden` (canonical paths).
/// Roots that do not exist are left out.
pub(crate) fn beneath_except(roots: &[PathBuf], hidden: &[PathBuf]) -> Grants {
    let mut grants = Grants::default();
    for root in roots {
        let Ok(root) = root.canonicalize() else {
            continue;
        };
        visit(&root, hidden, &mut grants);
    }
    grants.full.sort();
    grants.full.dedup();
    grants.listing.sort();
    grants.listing.dedup();
    grants
}

fn is_hidden(path: &Path, hidden: &[PathBuf]) -> bool {
    hidden.iter().any(|h| path.starts_with(h))
}

fn leads_to_hidden(path: &Path, hidden: &[PathBuf]) -> bool {
    hidden.iter().any(|h| h.starts_with(path) && h != path)
}

fn visit(path: &Path, hidden: &[PathBuf], grants: &mut Grants) {
    if is_hidden(path, hidden) {
        return;
    }
    if !leads_to_hidden(path, hidden) {
        grants.full.push(path.to_owned());
        return;
    }
    grants.listing.push(path.to_owned());
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    for entry in entries.flatten() {
        let entry_path = entry.path();
        let is_link = entry.file_type().is_ok_and(|t| t.is_symlink());
        if !is_link {
            visit(&entry_path, hidden, grants);
            continue;
        }
        // A link is granted as what it names, unless that is hidden or leads to hidden paths
        // (then the real path is granted piece by piece where it lives, if it is a root).
        if let Ok(target) = entry_path.canonicalize()
            && !is_hidden(&target, hidden)
            && !leads_to_hidden(&target, hidden)
        {
            grants.full.push(target);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_without_hidden_paths_is_one_grant() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        let grants = beneath_except(std::slice::from_ref(&root), &[]);
        assert_eq!(grants.full, [root]);
        assert!(grants.listing.is_empty());
    }

    #[test]
    fn a_hidden_path_is_left_out_and_its_siblings_granted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        for sub in ["data/secret", "data/other", "public"] {
            std::fs::create_dir_all(root.join(sub)).expect("mkdir");
        }
        std::fs::write(root.join("data/key"), "k").expect("write");
        std::os::unix::fs::symlink(root.join("data/secret"), root.join("link")).expect("link");
        std::os::unix::fs::symlink(root.join("public"), root.join("public-link")).expect("link");
        let hidden = [root.join("data/secret")];
        let grants = beneath_except(std::slice::from_ref(&root), &hidden);
        assert_eq!(grants.listing, [root.clone(), root.join("data")]);
        assert_eq!(
            grants.full,
            [
                root.join("data/key"),
                root.join("data/other"),
                root.join("public")
            ]
        );
    }

    #[test]
    fn a_root_inside_a_hidden_path_is_not_granted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        std::fs::create_dir_all(root.join("inner")).expect("mkdir");
        let grants = beneath_except(&[root.join("inner")], std::slice::from_ref(&root));
        assert_eq!(grants, Grants::default());
    }
}
