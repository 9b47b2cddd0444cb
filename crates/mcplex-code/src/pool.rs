//! Warm workers: processes started ahead of the runs that will use them, so a run does not pay
//! process start and engine creation. A worker serves one run and is killed after it; its
//! replacement is started in the background once the run is over (so that the start does not
//! compete with the run for the CPU).

use std::io;
use std::sync::{Arc, Mutex, PoisonError};

use crate::process::{Worker, WorkerCommand};

pub(crate) struct Pool {
    command: WorkerCommand,
    /// How many idle workers to keep.
    warm: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    idle: Vec<Worker>,
    /// Workers being started for the pool.
    starting: usize,
}

impl Pool {
    /// Must be called inside a Tokio runtime; starts the warm workers in the background.
    pub(crate) fn new(command: WorkerCommand, warm: usize) -> Arc<Pool> {
        let pool = Arc::new(Pool {
            command,
            warm,
            state: Mutex::default(),
        });
        pool.refill();
        pool
    }

    /// An idle worker, or a new one when none is warm.
    pub(crate) fn take(&self) -> io::Result<Worker> {
        let warm = loop {
            let next = self
                .state
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .idle
                .pop();
            match next {
                Some(mut worker) => {
                    if worker.alive() {
                        break Some(worker);
                    }
                }
                None => break None,
            }
        };
        match warm {
            Some(worker) => Ok(worker),
            None => Worker::spawn(&self.command),
        }
    }

    /// Starts workers until the idle and starting ones make `warm`.
    pub(crate) fn refill(self: &Arc<Self>) {
        let missing = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            let missing = self.warm.saturating_sub(state.idle.len() + state.starting);
            state.starting += missing;
            missing
        };
        for _ in 0..missing {
            let pool = self.clone();
            tokio::spawn(async move {
                let worker = Worker::spawn(&pool.command);
                let mut state = pool.state.lock().unwrap_or_else(PoisonError::into_inner);
                state.starting -= 1;
                // A worker that cannot start is started again by the next run, which reports
                // the error.
                if let Ok(worker) = worker {
                    state.idle.push(worker);
                }
            });
        }
    }
}
