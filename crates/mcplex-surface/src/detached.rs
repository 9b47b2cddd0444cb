//! [`Detached`]: a future awaited in place that, dropped before it finishes, goes on as a task
//! of its own. The route awaits every handler this way: a client that goes away must not cut a
//! handler off mid-way (a session-era call goes on; a stateless one is cancelled and ends by
//! itself, letting go of what it holds upstream), yet spawning a task for every request costs a
//! task, a move of the whole handler future and a wake-up through its join handle, for the rare
//! case that the client leaves.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

type Boxed<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// A future run in place, detached on drop. Polled after it finished it stays pending.
pub(crate) struct Detached<T: Send + 'static> {
    future: Option<Boxed<T>>,
}

impl<T: Send + 'static> Detached<T> {
    pub(crate) fn new(future: impl Future<Output = T> + Send + 'static) -> Detached<T> {
        Detached {
            future: Some(Box::pin(future)),
        }
    }
}

impl<T: Send + 'static> Future for Detached<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let Some(future) = self.future.as_mut() else {
            return Poll::Pending;
        };
        match future.as_mut().poll(cx) {
            Poll::Ready(output) => {
                self.future = None;
                Poll::Ready(output)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T: Send + 'static> Drop for Detached<T> {
    fn drop(&mut self) {
        let Some(future) = self.future.take() else {
            return;
        };
        // Outside a runtime (the process is ending) there is nothing left to run it on.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = future.await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    #[tokio::test]
    async fn a_finished_future_gives_its_output() {
        assert_eq!(Detached::new(async { 7 }).await, 7);
    }

    #[tokio::test]
    async fn dropped_before_it_finishes_it_runs_to_the_end_on_its_own() {
        let finished = Arc::new(AtomicBool::new(false));
        let (started_tx, started_rx) = tokio::sync::oneshot::channel();
        let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
        let flag = finished.clone();
        let mut call = Detached::new(async move {
            let _ = started_tx.send(());
            let _ = go_rx.await;
            flag.store(true, Ordering::SeqCst);
        });
        tokio::select! {
            () = &mut call => panic!("finished before it was let go"),
            _ = started_rx => {}
        }
        drop(call);
        let _ = go_tx.send(());
        for _ in 0..100 {
            if finished.load(Ordering::SeqCst) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the dropped future never finished");
    }
}
