//! Warm QuickJS runtimes. A runtime is reused across runs (creating one costs more than a
//! context); every run gets a fresh context, so nothing a script defines survives it.

use std::sync::{Mutex, PoisonError};

use rquickjs::Runtime;

/// At most this many idle runtimes are kept.
const KEEP: usize = 8;

#[derive(Default)]
pub(crate) struct Pool {
    idle: Mutex<Vec<Runtime>>,
}

impl Pool {
    pub(crate) fn take(&self) -> Result<Runtime, rquickjs::Error> {
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        match idle {
            Some(runtime) => Ok(runtime),
            None => Runtime::new(),
        }
    }

    /// Returns a runtime after a clean run; a runtime that hit its memory limit is dropped.
    pub(crate) fn give_back(&self, runtime: Runtime) {
        runtime.set_interrupt_handler(None);
        runtime.run_gc();
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < KEEP {
            idle.push(runtime);
        }
    }

    /// Creates runtimes up front so the first runs pay no start-up cost.
    pub(crate) fn warm(&self, count: usize) {
        for _ in 0..count.min(KEEP) {
            if let Ok(runtime) = Runtime::new() {
                self.give_back(runtime);
            }
        }
    }
}
