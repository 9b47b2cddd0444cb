//! The browser the dashboard tests drive: the distribution's headless Chromium through
//! Playwright for Python (`tests/py/dashboard.py`), one scenario per run; what it saw comes back
//! as JSON, and each page's screenshot goes to `target/ui-screenshots/` for review. Without a
//! Chromium (`/usr/bin/chromium`, or `MCPLEX_CHROMIUM`) the browser tests say so and pass
//! (in CI they fail: `scripts/test.sh` installs it).

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::harness::{Gateway, tools};

/// The browser, or `None` (with the reason printed) when this machine has none.
pub fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("MCPLEX_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    if path.exists() {
        return Some(path);
    }
    crate::harness::unavailable(
        "the dashboard's browser test",
        &format!(
            "no Chromium at {} (scripts/test.sh installs Debian's chromium; MCPLEX_CHROMIUM names another)",
            path.display()
        ),
    );
    None
}

/// Where the screenshots go: `ui-screenshots` in the target directory.
pub fn screenshots() -> PathBuf {
    tools()
        .mcplex
        .parent()
        .and_then(|debug| debug.parent())
        .map(|target| target.join("ui-screenshots"))
        .expect("target directory")
}

/// Runs one scenario of `tests/py/dashboard.py`; what it saw.
pub(crate) fn browse(gateway: &Gateway, browser: &PathBuf, scenario: &str, link: &str) -> Value {
    browse_with(gateway, browser, scenario, link, &[])
}

/// [`browse`] with `extra` arguments for the scenario.
pub(crate) fn browse_with(
    gateway: &Gateway,
    browser: &PathBuf,
    scenario: &str,
    link: &str,
    extra: &[&str],
) -> Value {
    let output = Command::new(&tools().python)
        .arg(tools().repo.join("tests/py/dashboard.py"))
        .args(["--base", &format!("http://{}", gateway.authority())])
        .args(["--key", &gateway.api_key()])
        .args(["--link", link])
        .arg("--shots")
        .arg(screenshots())
        .arg("--store")
        .arg(gateway.data_dir().join("state.db"))
        .arg("--chromium")
        .arg(browser)
        .args(extra)
        .arg(scenario)
        .output()
        .expect("run tests/py/dashboard.py");
    assert!(
        output.status.success(),
        "dashboard {scenario} failed:\n{}\n--- gateway log ---\n{}",
        String::from_utf8_lossy(&output.stderr),
        gateway.log()
    );
    serde_json::from_slice(&output.stdout).expect("the scenario's JSON")
}
