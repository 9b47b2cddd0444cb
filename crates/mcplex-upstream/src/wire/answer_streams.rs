//! The answer streams a streamable HTTP wire is reading, by the id of the request each answers,
//! so that a request given up stops its stream's reading: otherwise a server that never answers
//! nor closes would hold a task and a connection for every request a caller gave up on.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// The answer streams being read (keyed by the request id's JSON text).
#[derive(Default)]
pub(crate) struct AnswerStreams {
    reading: Arc<Mutex<HashMap<String, CancellationToken>>>,
}

impl AnswerStreams {
    /// Starts the reading of request `id`'s answer stream, stopped when `closed` (the wire's)
    /// is cancelled or the request is [given up](Self::give_up).
    pub(crate) fn start(&self, id: &Value, closed: &CancellationToken) -> Reading {
        let key = id.to_string();
        let stop = closed.child_token();
        lock(&self.reading).insert(key.clone(), stop.clone());
        Reading {
            reading: self.reading.clone(),
            key,
            stop,
        }
    }

    /// Stops reading the answer stream of request `id`, if one is read.
    pub(crate) fn give_up(&self, id: &Value) {
        if let Some(stop) = lock(&self.reading).remove(&id.to_string()) {
            stop.cancel();
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        lock(&self.reading).len()
    }
}

/// One answer stream's reading; its entry goes when it is dropped.
pub(crate) struct Reading {
    reading: Arc<Mutex<HashMap<String, CancellationToken>>>,
    key: String,
    stop: CancellationToken,
}

impl Reading {
    /// Cancelled when the reading is to stop.
    pub(crate) fn stopped(&self) -> CancellationToken {
        self.stop.clone()
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        // The entry is this reading's: a wire never sends one id twice.
        lock(&self.reading).remove(&self.key);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
