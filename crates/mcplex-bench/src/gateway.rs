//! A gateway under test: `mcplex serve` in a process of its own, on a config file and data
//! directory the bench writes into a temporary directory, killed on drop. Its log goes to a file
//! there; when it does not become ready, the error ends with that log's last lines.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value};

pub struct GatewayProcess {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    dir: tempfile::TempDir,
}

impl Drop for GatewayProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const LOG_FILE: &str = "gateway.log";

impl GatewayProcess {
    /// Starts `exe serve` with `settings` as its config; `listen` (a free loopback port, where
    /// anonymous callers are the local user) and `data_dir` are set here.
    pub fn start(exe: &Path, mut settings: Map<String, Value>) -> Result<GatewayProcess> {
        let dir = tempfile::tempdir().context("cannot create the gateway's directory")?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        settings.insert("listen".into(), format!("127.0.0.1:{port}").into());
        settings.insert(
            "data_dir".into(),
            dir.path()
                .join("data")
                .to_string_lossy()
                .into_owned()
                .into(),
        );
        let config = dir.path().join("config.json");
        std::fs::write(&config, Value::Object(settings).to_string())?;
        let log = std::fs::File::create(dir.path().join(LOG_FILE))?;
        let child = Command::new(exe)
            .args(["serve", "--config"])
            .arg(&config)
            .env("MCPLEX_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .with_context(|| format!("cannot start the gateway {}", exe.display()))?;
        Ok(GatewayProcess {
            child,
            base: format!("http://127.0.0.1:{port}"),
            dir,
        })
    }

    /// Waits until `/readyz?all` answers 200 (every upstream ready), for at most `limit`.
    pub async fn wait_ready(&mut self, limit: Duration) -> Result<()> {
        let http = reqwest::Client::builder().no_proxy().build()?;
        let deadline = Instant::now() + limit;
        loop {
            if let Ok(response) = http.get(format!("{}/readyz?all", self.base)).send().await
                && response.status().is_success()
            {
                return Ok(());
            }
            if let Some(status) = self.child.try_wait()? {
                bail!("the gateway exited ({status}):\n{}", self.log_tail());
            }
            if Instant::now() > deadline {
                bail!(
                    "the gateway was not ready within {limit:?}:\n{}",
                    self.log_tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.path().join(LOG_FILE)).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    fn proc_status(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }

    pub fn rss_kib(&self) -> u64 {
        self.proc_status("VmRSS:")
    }

    pub fn threads(&self) -> u64 {
        self.proc_status("Threads:")
    }

    pub fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id()))
            .map(|d| d.count())
            .unwrap_or(0)
    }
}
