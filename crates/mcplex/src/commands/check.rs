//! `mcplex config check`: validate without starting anything.

use std::process::ExitCode;

use anyhow::Result;
use mcplex_config::Overrides;

use crate::cli::ConfigArgs;

pub fn run(args: &ConfigArgs) -> Result<ExitCode> {
    // The warnings are printed below, once: not logged as well.
    let config = crate::load::read(args, Overrides::default())?.config;
    let enabled = config.servers.iter().filter(|s| s.enabled).count();
    println!(
        "ok: {} server(s), {enabled} enabled, {} warning(s)",
        config.servers.len(),
        config.warnings.len()
    );
    for warning in &config.warnings {
        println!("warning: {warning}");
    }
    Ok(ExitCode::SUCCESS)
}
