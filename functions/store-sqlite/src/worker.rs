//! The thread that owns the store's one connection, and its group commit.
//!
//! Every store call queues a job here and awaits the answer. The jobs of
//! concurrent requests run back to back on this one thread: no pool thread is
//! woken per call, and no lock around the connection is contended (under load
//! that hand-off, not SQLite, was where most of the time went; see
//! bench/load).
//!
//! Group commit: the file is written with `synchronous=FULL`, so every commit
//! waits for the disk (fsync). The thread takes every job queued at that
//! moment (the ones that arrived while the previous commit was running) and
//! runs them in one transaction, each inside a savepoint of its own: a job
//! that fails rolls back its own writes only, and the others still commit.
//! One commit, one fsync, then every job of the batch is answered. No answer
//! is sent before the commit that holds the job's writes; if that commit
//! fails, every job of the batch gets the failure.
//!
//! Reads go to a second connection, opened `query_only` (it cannot write),
//! on a thread of its own, so that they run while the writer waits for the
//! disk. The reads queued at one moment share one read transaction (one
//! consistent state). They see committed writes only: with `FULL`, SQLite
//! syncs a commit's WAL frames before it publishes the commit to other
//! connections (wal.c), and a write is answered only after its commit, so a
//! caller reads its own answered writes.
//!
//! Queued work always runs to its end, commit included, even when its caller
//! has stopped waiting.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;

use rusqlite::Connection;

use nurse_call_core::StoreError;

/// At most this many jobs share one commit, so that a flood of queued work
/// does not hold the write lock (and its answers) for long.
const MAX_BATCH: usize = 256;

/// A piece of work for the connection's thread, with its waiting caller.
trait Job: Send {
    /// Runs the work on `connection`, inside the batch's transaction; `false`
    /// when it failed (or panicked) and its writes must be rolled back.
    fn run(&mut self, connection: &Connection) -> bool;

    /// Answers the caller once the batch's fate is known: with the work's
    /// result when the batch committed, with `failure` when it did not.
    fn answer(self: Box<Self>, failure: Option<&rusqlite::Error>);
}

/// A job whose work produces a `T`.
struct Pending<T, F> {
    work: Option<F>,
    result: Option<Result<T, StoreError>>,
    caller: tokio::sync::oneshot::Sender<Result<T, StoreError>>,
}

impl<T, F> Job for Pending<T, F>
where
    T: Send,
    F: FnOnce(&Connection) -> Result<T, StoreError> + Send,
{
    fn run(&mut self, connection: &Connection) -> bool {
        let Some(work) = self.work.take() else {
            return false;
        };
        let result = work(connection);
        let ok = result.is_ok();
        self.result = Some(result);
        ok
    }

    fn answer(self: Box<Self>, failure: Option<&rusqlite::Error>) {
        let result = match (failure, self.result) {
            (Some(error), _) => Err(classify(error)),
            (None, Some(result)) => result,
            // It panicked: the caller gets an internal error.
            (None, None) => Err(StoreError::Internal("store task failed".into())),
        };
        let _ = self.caller.send(result);
    }
}

/// A busy or locked database (another process holds the write lock past the
/// busy timeout) is worth a retry; anything else is an internal failure.
pub(crate) fn classify(error: &rusqlite::Error) -> StoreError {
    match error.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            StoreError::Unavailable(error.to_string())
        }
        _ => StoreError::Internal(error.to_string()),
    }
}

/// The writer's and the reader's threads and their queues. Dropping the
/// worker (with the last clone of the store) closes the queues and waits
/// until the threads have done the queued work and closed the connections.
pub(crate) struct Worker {
    writes: Option<mpsc::Sender<Box<dyn Job>>>,
    reads: Option<mpsc::Sender<Box<dyn Job>>>,
    threads: Vec<JoinHandle<()>>,
    #[cfg_attr(not(test), allow(dead_code))]
    commits: Arc<AtomicU64>,
}

/// Blocks for the next job, then takes every job queued behind it.
fn next_batch(queue: &mpsc::Receiver<Box<dyn Job>>) -> Option<Vec<Box<dyn Job>>> {
    let mut batch = vec![queue.recv().ok()?];
    while batch.len() < MAX_BATCH {
        match queue.try_recv() {
            Ok(job) => batch.push(job),
            Err(_) => break,
        }
    }
    Some(batch)
}

impl Worker {
    /// Starts the threads: `writer` for every write, `reader` (a connection
    /// to the same file, `query_only`) for every read.
    pub(crate) fn start(writer: Connection, reader: Connection) -> std::io::Result<Worker> {
        let (writes, write_queue) = mpsc::channel::<Box<dyn Job>>();
        let (reads, read_queue) = mpsc::channel::<Box<dyn Job>>();
        let commits = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&commits);
        let writing = std::thread::Builder::new()
            .name("sqlite-store".into())
            .spawn(move || {
                while let Some(batch) = next_batch(&write_queue) {
                    run_batch(&writer, batch, &counted);
                }
            })?;
        let reading = std::thread::Builder::new()
            .name("sqlite-store-reads".into())
            .spawn(move || {
                while let Some(batch) = next_batch(&read_queue) {
                    run_reads(&reader, batch);
                }
            })?;
        Ok(Worker {
            writes: Some(writes),
            reads: Some(reads),
            threads: vec![writing, reading],
            commits,
        })
    }

    /// Runs `work` with the connection on the thread, inside a transaction
    /// it shares with the other queued writes, and returns its result once
    /// that transaction has committed. An `Err` rolls back the work's own
    /// writes; so work that must write nothing in some case returns before
    /// writing.
    pub(crate) async fn write<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        self.submit(true, work).await
    }

    /// Runs `work`, which only reads, on the reader's thread, in a read
    /// transaction with the other queued reads (one consistent state,
    /// committed writes only), and returns its result. A write fails
    /// (`query_only`).
    pub(crate) async fn read<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        self.submit(false, work).await
    }

    async fn submit<T, F>(&self, writes: bool, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (caller, answered) = tokio::sync::oneshot::channel();
        let job: Box<dyn Job> = Box::new(Pending {
            work: Some(work),
            result: None,
            caller,
        });
        let queue = if writes { &self.writes } else { &self.reads };
        queue
            .as_ref()
            .and_then(|jobs| jobs.send(job).ok())
            .ok_or_else(|| {
                StoreError::Internal("the store's connection thread has stopped".into())
            })?;
        answered
            .await
            .map_err(|_| StoreError::Internal("store task failed".into()))?
    }

    /// Transactions committed so far (tests: how jobs were grouped).
    #[cfg(test)]
    pub(crate) fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        drop(self.writes.take());
        drop(self.reads.take());
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// Runs the reads of a batch in one read transaction on the `query_only`
/// connection, and answers them: what they saw was committed before.
fn run_reads(connection: &Connection, mut reads: Vec<Box<dyn Job>>) {
    if let Err(error) = connection.execute_batch("BEGIN") {
        answer_all(reads, Some(&error));
        return;
    }
    for job in &mut reads {
        // A read that fails or panics answers its error; the others go on.
        let _ = std::panic::catch_unwind(AssertUnwindSafe(|| job.run(connection)));
    }
    // Nothing was written, so the end of the transaction waits for no disk.
    if !connection.is_autocommit() && connection.execute_batch("COMMIT").is_err() {
        let _ = connection.execute_batch("ROLLBACK");
    }
    answer_all(reads, None);
}

/// Runs `batch` in one transaction, each job in a savepoint, commits (counted
/// in `commits` before anyone is answered), and answers every job.
fn run_batch(connection: &Connection, mut batch: Vec<Box<dyn Job>>, commits: &AtomicU64) {
    // IMMEDIATE: take the write lock first, so that what a job reads and what
    // it writes belong to the same state even with another process on the
    // file (the admin command); waits up to the busy timeout for it.
    if let Err(error) = connection.execute_batch("BEGIN IMMEDIATE") {
        answer_all(batch, Some(&error));
        return;
    }
    let broken = batch
        .iter_mut()
        .find_map(|job| run_in_savepoint(connection, job.as_mut()).err());
    if let Some(error) = broken {
        // The transaction itself is broken (SQLite rolled it back after an
        // I/O error, or a savepoint could not be kept): nothing commits.
        if !connection.is_autocommit() {
            let _ = connection.execute_batch("ROLLBACK");
        }
        answer_all(batch, Some(&error));
        return;
    }
    match connection.execute_batch("COMMIT") {
        Ok(()) => {
            commits.fetch_add(1, Ordering::Relaxed);
            answer_all(batch, None);
        }
        Err(error) => {
            if !connection.is_autocommit() {
                let _ = connection.execute_batch("ROLLBACK");
            }
            answer_all(batch, Some(&error));
        }
    }
}

/// Runs one job inside `SAVEPOINT job`: released when the job succeeded,
/// rolled back to (its writes undone) when it failed or panicked. An `Err`
/// means the batch's transaction cannot go on.
fn run_in_savepoint(connection: &Connection, job: &mut dyn Job) -> rusqlite::Result<()> {
    connection.execute_batch("SAVEPOINT job")?;
    // A job that panics answers with an internal error; the others go on.
    let ok = std::panic::catch_unwind(AssertUnwindSafe(|| job.run(connection))).unwrap_or(false);
    if connection.is_autocommit() {
        // SQLite ended the whole transaction (e.g. a full disk or an I/O error).
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT),
            Some("the store's transaction was rolled back by SQLite".into()),
        ));
    }
    if ok {
        connection.execute_batch("RELEASE job")
    } else {
        connection.execute_batch("ROLLBACK TO job; RELEASE job")
    }
}

fn answer_all(batch: Vec<Box<dyn Job>>, failure: Option<&rusqlite::Error>) {
    for job in batch {
        job.answer(failure);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Waker};

    /// A store call's answer, still to come.
    type Answer<'a> = Pin<Box<dyn Future<Output = Result<(), StoreError>> + Send + 'a>>;

    fn worker(dir: &tempfile::TempDir) -> Worker {
        let path = dir.path().join("w.sqlite3");
        let connection = Connection::open(&path).unwrap();
        crate::schema::prepare(&connection).unwrap();
        connection
            .execute_batch("CREATE TABLE t (n INTEGER PRIMARY KEY)")
            .unwrap();
        let reader = Connection::open(&path).unwrap();
        crate::schema::prepare_reader(&reader).unwrap();
        Worker::start(connection, reader).unwrap()
    }

    fn insert(n: i64) -> impl FnOnce(&Connection) -> Result<(), StoreError> + Send + 'static {
        move |c| {
            c.execute("INSERT INTO t (n) VALUES (?1)", [n])
                .map_err(|e| classify(&e))?;
            Ok(())
        }
    }

    /// What another connection (another process) sees in the file.
    fn stored(dir: &tempfile::TempDir) -> Vec<i64> {
        let c = Connection::open(dir.path().join("w.sqlite3")).unwrap();
        let mut s = c.prepare("SELECT n FROM t ORDER BY n").unwrap();
        s.query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn queued_jobs_share_one_commit_and_a_failed_one_rolls_back_alone() {
        let dir = tempfile::tempdir().unwrap();
        let worker = Arc::new(worker(&dir));
        // Hold the thread in a first job until the next ones are queued.
        let (started, started_rx) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let blocker = {
            let worker = Arc::clone(&worker);
            tokio::spawn(async move {
                worker
                    .write(move |c| {
                        started.send(()).unwrap();
                        released.recv().unwrap();
                        insert(0)(c)
                    })
                    .await
            })
        };
        started_rx.recv().unwrap();
        let before = worker.commits();
        let mut jobs: Vec<Answer<'_>> = Vec::new();
        for n in 1..=10 {
            if n == 5 {
                // Writes, then fails: its write must go, the others stay.
                jobs.push(Box::pin(worker.write(move |c| {
                    insert(n)(c)?;
                    Err(StoreError::Internal("refused".into()))
                })));
            } else {
                jobs.push(Box::pin(worker.write(insert(n))));
            }
        }
        // A first poll queues each job (`run` sends before it waits).
        let mut context = Context::from_waker(Waker::noop());
        for job in &mut jobs {
            assert!(job.as_mut().poll(&mut context).is_pending());
        }
        release.send(()).unwrap();
        blocker.await.unwrap().unwrap();
        for (i, job) in jobs.into_iter().enumerate() {
            let result = job.await;
            assert_eq!(result.is_ok(), i + 1 != 5, "job {}: {result:?}", i + 1);
        }
        assert_eq!(stored(&dir), [0, 1, 2, 3, 4, 6, 7, 8, 9, 10]);
        assert_eq!(
            worker.commits() - before,
            2,
            "the first job, then the ten queued behind it in one commit"
        );
    }

    #[tokio::test]
    async fn a_read_cannot_write_and_reads_need_no_commit() {
        let dir = tempfile::tempdir().unwrap();
        let worker = worker(&dir);
        let result = worker.read(insert(1)).await;
        assert!(matches!(result, Err(StoreError::Internal(_))), "{result:?}");
        worker.write(insert(2)).await.unwrap();
        let read = worker
            .read(|c| {
                c.query_row("SELECT count(*) FROM t", [], |row| row.get::<_, i64>(0))
                    .map_err(|e| classify(&e))
            })
            .await;
        assert_eq!(read.unwrap(), 1);
        assert_eq!(stored(&dir), [2]);
        assert_eq!(worker.commits(), 1, "only the write committed");
        // Writing works again after the reads.
        worker.write(insert(3)).await.unwrap();
        assert_eq!(stored(&dir), [2, 3]);
    }

    #[tokio::test]
    async fn an_answer_comes_after_the_commit() {
        let dir = tempfile::tempdir().unwrap();
        let worker = worker(&dir);
        worker.write(insert(7)).await.unwrap();
        // Answered: another connection sees the write at once.
        assert_eq!(stored(&dir), [7]);
        assert_eq!(worker.commits(), 1);
    }

    #[tokio::test]
    async fn a_panicking_job_answers_an_error_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let worker = worker(&dir);
        let result = worker
            .write(move |c| -> Result<(), StoreError> {
                insert(1)(c)?;
                panic!("a bug in the job");
            })
            .await;
        assert!(matches!(result, Err(StoreError::Internal(_))), "{result:?}");
        worker.write(insert(2)).await.unwrap();
        assert_eq!(stored(&dir), [2]);
    }

    #[tokio::test]
    async fn a_busy_file_answers_unavailable() {
        let dir = tempfile::tempdir().unwrap();
        let worker = worker(&dir);
        // Another process holds the write lock past the busy timeout (5 s).
        let other = Connection::open(dir.path().join("w.sqlite3")).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        let result = worker.write(insert(1)).await;
        assert!(
            matches!(result, Err(StoreError::Unavailable(_))),
            "{result:?}"
        );
        other.execute_batch("ROLLBACK").unwrap();
        worker.write(insert(2)).await.unwrap();
        assert_eq!(stored(&dir), [2]);
    }
}
