//! The call types and consumers kept in memory, and still coherent: an edit
//! is seen by the next request, whoever made it (this process, the admin
//! command, a hand edit with `sqlite3`).
//!
//! Every request reads both, and they change rarely. Read from the table
//! each time, they cost a hand-off to the reader's thread each, the rows
//! decoded field by field and the call types judged and parsed (escalation
//! policies included) on every request: under load a measurable share of the
//! server's CPU (docs/performance.md, issue 25's load budget). A TTL, as the
//! Lambda functions use, would make an admin's edit wait.
//!
//! So the file keeps a generation: one row, `config_generation.n`, which
//! triggers on `call_types` and `consumers` bump in the same transaction as
//! any insert, update or delete of them (schema version 7). Before serving
//! from memory, the cache reads that number on a connection of its own, on
//! the caller's thread: one indexed row in a read transaction, no thread
//! hand-off, a few microseconds. A different number empties the cache and
//! the items are read again. The number is read *before* the items, so an
//! edit landing in between is kept under the older number and read again
//! on the next request, never missed.
//!
//! When the probe fails (a locked file past the busy timeout, a broken
//! connection), the cache steps aside and the reads go to the table as
//! before: slower, never stale.

use std::collections::HashMap;
use std::sync::Mutex;

use rusqlite::Connection;

use nurse_call_core::{CallTypesRead, Consumer, credentials::Stored};

/// How long the probe waits for a lock (another process recovering the
/// WAL, say) before the cache steps aside for that read: it runs on the
/// caller's async thread, which must not stall for the reader's 5 s.
pub(crate) const PROBE_BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(50);

/// Beyond this many cached consumers the cache starts over (bounded memory:
/// every sandbox visitor is a consumer).
const MAX_CONSUMERS: usize = 10_000;

pub(crate) struct ConfigCache {
    /// A read-only connection for the generation's one row, locked only for
    /// that read.
    probe: Mutex<Connection>,
    kept: Mutex<Kept>,
}

/// What is kept, and under which generation.
#[derive(Default)]
struct Kept {
    generation: Option<i64>,
    call_types: Option<CallTypesRead>,
    /// Known consumers only: an unknown id is read again next time, so a
    /// consumer created elsewhere works at once.
    consumers: HashMap<String, Stored<Consumer>>,
}

impl ConfigCache {
    pub(crate) fn new(probe: Connection) -> Self {
        ConfigCache {
            probe: Mutex::new(probe),
            kept: Mutex::new(Kept::default()),
        }
    }

    /// The file's generation now, or `None` when it cannot be read (then
    /// nothing is served from memory).
    pub(crate) fn generation(&self) -> Option<i64> {
        let probe = self.probe.lock().unwrap_or_else(|e| e.into_inner());
        let read = probe
            .prepare_cached("SELECT n FROM config_generation WHERE id = 1")
            .and_then(|mut statement| statement.query_row([], |row| row.get::<_, i64>(0)));
        match read {
            Ok(n) => Some(n),
            Err(error) => {
                tracing::warn!(%error, "store: configuration generation not read; reading the tables");
                None
            }
        }
    }

    /// The call types kept under `generation`, if any.
    pub(crate) fn call_types(&self, generation: Option<i64>) -> Option<CallTypesRead> {
        let kept = self.current(generation?);
        kept.call_types.clone()
    }

    /// The consumer `id` kept under `generation`, if any.
    pub(crate) fn consumer(&self, generation: Option<i64>, id: &str) -> Option<Stored<Consumer>> {
        let kept = self.current(generation?);
        kept.consumers.get(id).cloned()
    }

    /// Keeps `types`, read after `generation` was.
    pub(crate) fn keep_call_types(&self, generation: Option<i64>, types: &CallTypesRead) {
        if let Some(generation) = generation {
            self.current(generation).call_types = Some(types.clone());
        }
    }

    /// Keeps the consumer `id`, read after `generation` was.
    pub(crate) fn keep_consumer(
        &self,
        generation: Option<i64>,
        id: &str,
        consumer: &Stored<Consumer>,
    ) {
        if let Some(generation) = generation {
            let mut kept = self.current(generation);
            if kept.consumers.len() >= MAX_CONSUMERS {
                kept.consumers.clear();
            }
            kept.consumers.insert(id.to_string(), consumer.clone());
        }
    }

    /// What is kept, emptied first when it was kept under another
    /// generation. An older reader finishing late (it read the number before
    /// a newer one did) empties it too: it is read again, never stale.
    fn current(&self, generation: i64) -> std::sync::MutexGuard<'_, Kept> {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if kept.generation != Some(generation) {
            *kept = Kept {
                generation: Some(generation),
                ..Kept::default()
            };
        }
        kept
    }
}
