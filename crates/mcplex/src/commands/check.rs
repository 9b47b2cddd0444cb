//! `mcplex config check`: validate without starting anything, more strictly than `serve` runs:
//! a config with no servers, an unknown key inside a server, a `command` that cannot be found or
//! a `search_model` directory that does not load is a failure here (exit 1), so that a mistake
//! is named before a client depends on it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use mcplex_config::{Config, Overrides, SearchModel, Transport};

use crate::cli::ConfigArgs;
use crate::output::outln;

pub fn run(args: &ConfigArgs) -> Result<ExitCode> {
    // The warnings are printed below, once: not logged as well.
    let loaded = crate::load::read(args, Overrides::default())?;
    let config = &loaded.config;
    let file = loaded.path.as_deref().map_or_else(
        || "(no config file)".to_owned(),
        |p| p.display().to_string(),
    );
    let failures = failures(config, &file);
    let enabled = config.servers.iter().filter(|s| s.enabled).count();
    outln!(
        "{}: {} server(s), {enabled} enabled, {} warning(s)",
        if failures.is_empty() { "ok" } else { "failed" },
        config.servers.len(),
        config.warnings.len()
    )?;
    for warning in &config.warnings {
        outln!("warning: {warning}")?;
    }
    for failure in &failures {
        outln!("error: {failure}")?;
    }
    Ok(if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// What `config check` refuses and `serve` tolerates: no servers, unknown keys inside a server
/// (already among the warnings), enabled stdio servers whose command cannot be found, and a
/// `search_model` directory that does not load (`serve` searches with BM25F alone then).
fn failures(config: &Config, file: &str) -> Vec<String> {
    let mut failures = Vec::new();
    if config.servers.is_empty() {
        failures.push(format!(
            "{file}: no servers: add them under \"mcpServers\" (or VS Code's \"servers\"), e.g. {{\"mcpServers\": {{\"time\": {{\"command\": \"uvx\", \"args\": [\"mcp-server-time\"]}}}}}}"
        ));
    }
    if !config.server_warnings.is_empty() {
        failures.push(format!(
            "{} unknown key(s) inside a server (see the warnings above): remove them or correct their spelling",
            config.server_warnings.len()
        ));
    }
    for server in config.servers.iter().filter(|s| s.enabled) {
        if let Transport::Stdio {
            command,
            env,
            working_dir,
            ..
        } = &server.transport
        {
            let path = env
                .get("PATH")
                .map(Into::into)
                .or_else(|| std::env::var_os("PATH"));
            if find_command(command, working_dir.as_deref(), path.as_deref()).is_none() {
                failures.push(format!(
                    "{file}: server {:?}: command {command:?} is not found on the PATH, nor is it an executable file (install it, or write its full path)",
                    server.name
                ));
            }
        }
    }
    if !matches!(config.search_model, SearchModel::Off)
        && let Err(why) = crate::semantic::check_instructions()
    {
        failures.push(format!("{why} (a gateway would search with BM25F alone)"));
    }
    if let SearchModel::Dir(dir) = &config.search_model
        && let Err(why) = crate::semantic::check_dir(dir)
    {
        failures.push(format!(
            "{file}: {why} (a gateway would search with BM25F alone)"
        ));
    }
    failures
}

/// Where `command` is: a path (with a `/`, relative to `working_dir`) to an executable file, or
/// the first executable file of that name in `path`'s directories.
fn find_command(
    command: &str,
    working_dir: Option<&Path>,
    path: Option<&std::ffi::OsStr>,
) -> Option<PathBuf> {
    if command.contains(std::path::MAIN_SEPARATOR) || command.contains('/') {
        let candidate = match working_dir {
            Some(dir) if Path::new(command).is_relative() => dir.join(command),
            _ => PathBuf::from(command),
        };
        return is_executable(&candidate).then_some(candidate);
    }
    std::env::split_paths(path?)
        .map(|dir| dir.join(command))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}
