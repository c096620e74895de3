//! The thread that owns the store's one connection.
//!
//! Every store call queues its work here and awaits the answer. The work of
//! concurrent requests runs back to back on this one thread: no pool thread is
//! woken per call, and no lock around the connection is contended (under load
//! that hand-off, not SQLite, was where most of the time went; see
//! bench/load). Queued work always runs to its end, commit included, even
//! when its caller has stopped waiting; the answer is sent only after it.

use std::panic::AssertUnwindSafe;
use std::sync::mpsc;
use std::thread::JoinHandle;

use rusqlite::Connection;

use nurse_call_core::store::StoreError;

/// A piece of work for the connection's thread.
type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// The connection's thread and its queue. Dropping the worker (with the last
/// clone of the store) closes the queue and waits until the thread has done
/// the queued work and closed the connection.
pub(crate) struct Worker {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    pub(crate) fn start(mut connection: Connection) -> std::io::Result<Worker> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("sqlite-store".into())
            .spawn(move || {
                for job in queue {
                    // A job that panics answers nobody (its caller gets an
                    // internal error); the next job runs as usual.
                    let _ = std::panic::catch_unwind(AssertUnwindSafe(|| job(&mut connection)));
                }
            })?;
        Ok(Worker {
            jobs: Some(jobs),
            thread: Some(thread),
        })
    }

    /// Runs `work` with the connection on the thread and returns its result.
    pub(crate) async fn run<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |connection| {
            let _ = answer.send(work(connection));
        });
        self.jobs
            .as_ref()
            .and_then(|jobs| jobs.send(job).ok())
            .ok_or_else(|| {
                StoreError::Internal("the store's connection thread has stopped".into())
            })?;
        answered
            .await
            .map_err(|_| StoreError::Internal("store task failed".into()))?
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
