//! The code_execution engine of a gateway: one for every code surface it serves (`/mcp/code`,
//! `/mcp` in code mode, each profile), so that the run slots and the per-caller bound hold across
//! all of them; and the worker program scripts run in, which the binary names at start
//! ([`set_code_worker`]: its own executable and hidden subcommand).

use std::sync::{Arc, OnceLock};

use mcplex_code::{Engine, EngineOptions, WorkerCommand};
use mcplex_config::CodeLimits;

/// Scripts that run at once across all code surfaces and callers; more wait for a free slot.
const CONCURRENT_RUNS: usize = 16;
/// Worker processes kept started and idle.
const WARM_WORKERS: usize = 4;

static WORKER: OnceLock<WorkerCommand> = OnceLock::new();

/// Names the program code_execution runs scripts in. The binary calls this once, before it
/// serves; the first call wins.
pub fn set_code_worker(command: WorkerCommand) {
    let _ = WORKER.set(command);
}

/// The shared engine, created by the first code surface built from these options (clones of
/// [`crate::SurfaceOptions`] share it).
#[derive(Clone, Default)]
pub struct CodeSandbox {
    engine: Arc<OnceLock<Option<Arc<Engine>>>>,
}

impl std::fmt::Debug for CodeSandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeSandbox")
            .field("started", &self.engine.get().is_some())
            .finish()
    }
}

impl CodeSandbox {
    /// The engine; `None` when no worker program was named (code_execution then answers that
    /// it is unavailable). Must be called inside the gateway's Tokio runtime.
    pub(crate) fn engine(&self, limits: &CodeLimits) -> Option<Arc<Engine>> {
        self.engine
            .get_or_init(|| {
                let worker = WORKER.get()?.clone();
                Some(Arc::new(Engine::new(EngineOptions {
                    worker,
                    concurrent_runs: CONCURRENT_RUNS,
                    per_caller: limits.max_concurrent_per_caller,
                    warm: WARM_WORKERS,
                })))
            })
            .clone()
    }
}
