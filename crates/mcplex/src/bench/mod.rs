//! `mcplex bench …`: measurements that print a table and write JSON. Comparisons run side by
//! side in one process and one run, so the ratio is meaningful on a noisy 2-core machine.

pub mod cache;
pub mod overhead;
pub mod retrieval;
mod stats;

use std::path::Path;

use anyhow::{Context, Result};

/// Writes a benchmark's JSON report, creating its directory.
pub fn write_report(out: &Path, report: &serde_json::Value) -> Result<()> {
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(out, serde_json::to_vec_pretty(report)?)
        .with_context(|| format!("cannot write {}", out.display()))?;
    println!("written: {}", out.display());
    Ok(())
}
