//! The embedded store: SQLite in one file (`data/nurse-call.sqlite3` by default).
//!
//! One connection writes for the process, owned by a thread of its own
//! (`worker`), so blocking SQLite calls never stall the async workers. Every
//! store call is one job and atomic: the writes queued at one moment share
//! one transaction (group commit, `synchronous=FULL`), each in a savepoint of
//! its own, and none is answered before that commit; reads run on a second,
//! read-only connection and thread, see committed writes only, and wait for
//! no commit. WAL mode and a busy timeout let the admin command work on the
//! same file while the server writes.
//!
//! This file maps the [`Store`] trait onto SQL; `address` has the element
//! and call reads and writes every request shares, `rows` turns rows into
//! domain values, `sandbox` and `mismatches` keep the test server's data,
//! `admin` the admin command's, `alarms` and `staff` alarm routing's,
//! `webhooks` the endpoints, outbox and delivery log of DECISIONS §16
//! (`outbox_write` how a write keeps its events, `attention` the elements'
//! attention marks),
//! `schema` creates and migrates the file, `worker` owns the connections,
//! `config_cache` keeps the call types and consumers in memory while the
//! file's generation of them stays.

mod address;
mod admin;
mod alarms;
mod attention;
mod config_cache;
mod devices;
mod links;
mod mismatches;
mod outbox_write;
mod push;
mod rows;
mod sandbox;
mod schema;
mod staff;
mod webhooks;
mod worker;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use nurse_call_core::{
    AddressSnapshot, Call, CallTypeItem, CallTypesRead, CloseOutcome, Consumer, Display, Element,
    ElementBatch, ElementPolicy, ElementWrite, ElementsOutcome, FirstAlarm, NewCall, OpenOutcome,
    Scope, Store, StoreError, clock, credentials::Stored, read_items, webhooks::outbox,
    wire_time::to_stored,
};

use address::{apply_change, open_call_with_event, read_element, read_snapshot};
use rows::{
    CALL_COLUMNS, CALL_TYPE_COLUMNS, CONSUMER_COLUMNS, DISPLAY_COLUMNS, ELEMENT_COLUMNS,
    call_from_row, call_type_from_row, consumer_from_row, display_from_row, element_from_row,
    to_precise,
};

/// The file name inside the data folder.
pub const FILE_NAME: &str = "nurse-call.sqlite3";

/// The embedded store (see above): every store trait of core on one SQLite
/// file; clones share its connections.
#[derive(Clone)]
pub struct SqliteStore {
    worker: Arc<worker::Worker>,
    config: Arc<config_cache::ConfigCache>,
    path: PathBuf,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish()
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the store file inside `data_dir`.
    pub fn open_dir(data_dir: &Path) -> Result<Self, StoreError> {
        std::fs::create_dir_all(data_dir).map_err(|e| {
            StoreError::Internal(format!(
                "cannot create data folder {}: {e}",
                data_dir.display()
            ))
        })?;
        Self::open(&data_dir.join(FILE_NAME))
    }

    /// Opens (creating if needed) the store file at `path` and migrates it.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let connection = Connection::open(path).map_err(internal)?;
        schema::prepare(&connection).map_err(internal)?;
        let reader = Connection::open(path).map_err(internal)?;
        schema::prepare_reader(&reader).map_err(internal)?;
        let probe = Connection::open(path).map_err(internal)?;
        schema::prepare_reader(&probe).map_err(internal)?;
        // The probe runs on the caller's (async) thread: it must not wait
        // long for a lock; on a timeout the reads go to the reader's thread.
        probe
            .busy_timeout(config_cache::PROBE_BUSY_TIMEOUT)
            .map_err(internal)?;
        let worker = worker::Worker::start(connection, reader).map_err(|e| {
            StoreError::Internal(format!("cannot start the store's connection thread: {e}"))
        })?;
        Ok(SqliteStore {
            worker: Arc::new(worker),
            config: Arc::new(config_cache::ConfigCache::new(probe)),
            path: path.to_path_buf(),
        })
    }

    /// The store file's path (logged when a process opens it).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `work` with the connection on the connection's thread, inside a
    /// transaction (see `worker`), answered after its commit: an `Err` undoes
    /// what `work` wrote, so work that must write nothing in some case
    /// decides that before writing.
    async fn with<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        self.worker
            .write(move |connection| work(connection).map_err(|e| worker::classify(&e)))
            .await
    }

    /// Runs `work`, which only reads, on the read-only connection's thread:
    /// it sees committed writes only and waits for no commit.
    async fn read<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        self.worker
            .read(move |connection| work(connection).map_err(|e| worker::classify(&e)))
            .await
    }
}

fn internal(error: rusqlite::Error) -> StoreError {
    StoreError::Internal(error.to_string())
}

#[async_trait]
impl Store for SqliteStore {
    async fn stored_consumer(&self, id: &str) -> Result<Option<Stored<Consumer>>, StoreError> {
        // Served from memory while the file's generation stays (config_cache).
        let generation = self.config.generation();
        if let Some(kept) = self.config.consumer(generation, id) {
            return Ok(Some(kept));
        }
        let key = id.to_string();
        let read = self
            .read(move |c| {
                c.prepare_cached(&format!(
                    "SELECT {CONSUMER_COLUMNS} FROM consumers WHERE id = ?1"
                ))?
                .query_row(params![key], consumer_from_row)
                .optional()
            })
            .await?;
        if let Some(consumer) = &read {
            self.config.keep_consumer(generation, id, consumer);
        }
        Ok(read)
    }

    async fn call_type_items(&self) -> Result<Vec<CallTypeItem>, StoreError> {
        self.read(|c| {
            let mut statement =
                c.prepare_cached(&format!("SELECT {CALL_TYPE_COLUMNS} FROM call_types"))?;
            statement
                .query_map([], call_type_from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .await
    }

    async fn call_types(&self) -> Result<CallTypesRead, StoreError> {
        // Read and judged once per generation, not on every request.
        let generation = self.config.generation();
        if let Some(kept) = self.config.call_types(generation) {
            return Ok(kept);
        }
        let read = read_items(self.call_type_items().await?);
        self.config.keep_call_types(generation, &read);
        Ok(read)
    }

    async fn snapshot(&self, scope: &Scope, address: &str) -> Result<AddressSnapshot, StoreError> {
        let (scope, address) = (scope.as_str().to_string(), address.to_string());
        self.read(move |c| read_snapshot(c, &scope, &address)).await
    }

    async fn open_call(
        &self,
        call: &NewCall,
        snapshot: &AddressSnapshot,
        element: &ElementWrite,
    ) -> Result<OpenOutcome, StoreError> {
        let pending = FirstAlarm::pending(call.opened_at);
        self.open_call_with_alarm(call, snapshot, element, &pending)
            .await
    }

    async fn open_call_with_alarm(
        &self,
        call: &NewCall,
        snapshot: &AddressSnapshot,
        element: &ElementWrite,
        first: &FirstAlarm,
    ) -> Result<OpenOutcome, StoreError> {
        let scope = element.scope.as_str().to_string();
        let scope_key = element.scope.clone();
        let first = first.clone();
        let (call, change, policy) = (call.clone(), element.change.clone(), element.policy);
        let already_open = snapshot.open_call_of(&call.event).cloned();
        let writes_element = element.writes_element;
        self.with(move |c| {
            if let Some(existing) = already_open {
                // Open at the snapshot: no call to write, only the element.
                if writes_element && apply_change(c, &scope, &change, policy)?.is_none() {
                    return Ok(OpenOutcome::UnknownElement);
                }
                return Ok(OpenOutcome::AlreadyOpen(existing));
            }
            // The batch's transaction holds the write lock (IMMEDIATE), so the
            // uniqueness check and the insert see the same state even with
            // other processes on the file.
            if apply_change(c, &scope, &change, policy)?.is_none() {
                return Ok(OpenOutcome::UnknownElement);
            }
            if let Some(existing) = open_call_with_event(c, &scope, &call.address, &call.event)? {
                return Ok(OpenOutcome::AlreadyOpen(existing));
            }
            // The alarm lands with the call: pending and due at once, or
            // its first step, with that step's audit (store/alarms.rs in core).
            let FirstAlarm { alarm, audit } = first;
            c.prepare_cached(
                "INSERT INTO calls (scope, address, event, position, section, attribute,
                    element_code, element_name, opened_at, closed_at, opened_by,
                    alarm, alarm_version, alarm_next_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, NULL, ?10, ?11, 0, ?12)",
            )?
            .execute(params![
                scope,
                call.address,
                call.event,
                call.position,
                call.section,
                call.attribute,
                call.element_code,
                call.element_name,
                to_stored(call.opened_at),
                call.opened_by,
                alarm.to_json(),
                alarm.next_at.map(to_precise)
            ])?;
            let opened = Call {
                alarm: Some(alarm),
                ..call.opened(c.last_insert_rowid())
            };
            alarms::append_audit(c, &scope_key, &opened, &audit)?;
            Ok(OpenOutcome::Opened(opened))
        })
        .await
    }

    async fn close_calls(
        &self,
        snapshot: &AddressSnapshot,
        closed_at: DateTime<Utc>,
        closed_by: Option<&str>,
        element: &ElementWrite,
    ) -> Result<CloseOutcome, StoreError> {
        let scope = element.scope.as_str().to_string();
        let (address, change, policy) = (
            element.address().to_string(),
            element.change.clone(),
            element.policy,
        );
        let ids: Vec<i64> = snapshot.closable(closed_at).map(|call| call.id).collect();
        let closed_by = closed_by.map(str::to_string);
        self.with(move |c| {
            if apply_change(c, &scope, &change, policy)?.is_none() {
                return Ok(CloseOutcome::UnknownElement);
            }
            let mut closed = Vec::with_capacity(ids.len());
            {
                // A call closed by another request since the snapshot is
                // skipped (`closed_at IS NULL`): this request did not close it.
                let mut statement = c.prepare_cached(&format!(
                    "UPDATE calls SET closed_at = ?1, closed_by = ?5
                     WHERE id = ?2 AND scope = ?3 AND address = ?4 AND closed_at IS NULL
                     RETURNING {CALL_COLUMNS}"
                ))?;
                for id in ids {
                    let call = statement
                        .query_row(
                            params![to_stored(closed_at), id, scope, address, closed_by],
                            call_from_row,
                        )
                        .optional()?;
                    closed.extend(call);
                }
            }
            // An alarm that rings for nobody ends with the close: no look
            // after it (core's app/alarm/start.rs).
            // Its `call.closed` goes out in the same transaction (DECISIONS §16).
            let scope_key = Scope::from_key(&scope);
            for call in &mut closed {
                alarms::end_quietly(c, &scope_key, call)?;
                outbox_write::keep(
                    c,
                    outbox::closed(&scope_key, call, clock::new_event_id).as_slice(),
                )?;
            }
            Ok(CloseOutcome::Closed(closed))
        })
        .await
    }

    async fn update_elements(&self, batch: &ElementBatch) -> Result<ElementsOutcome, StoreError> {
        let scope = batch.scope.as_str().to_string();
        let (changes, policy) = (batch.changes.clone(), batch.policy);
        self.with(move |c| {
            // All or nothing: every unknown address is found before anything
            // is written (the batch's transaction holds the write lock).
            if policy == ElementPolicy::MustExist {
                let mut unknown = Vec::new();
                for change in &changes {
                    if read_element(c, &scope, &change.address)?.is_none() {
                        unknown.push(change.address.clone());
                    }
                }
                if !unknown.is_empty() {
                    return Ok(ElementsOutcome::Unknown(unknown));
                }
            }
            let mut elements = Vec::with_capacity(changes.len());
            for change in &changes {
                let element = apply_change(c, &scope, change, policy)?
                    .ok_or(rusqlite::Error::QueryReturnedNoRows)?;
                elements.push(element);
            }
            Ok(ElementsOutcome::Updated(elements))
        })
        .await
    }

    async fn open_calls(&self, scope: &Scope) -> Result<Vec<Call>, StoreError> {
        let scope = scope.as_str().to_string();
        self.read(move |c| {
            let mut statement = c.prepare_cached(&format!(
                "SELECT {CALL_COLUMNS} FROM calls WHERE scope = ?1 AND closed_at IS NULL"
            ))?;
            statement
                .query_map(params![scope], call_from_row)?
                .collect()
        })
        .await
    }

    async fn elements(&self, scope: &Scope) -> Result<Vec<Element>, StoreError> {
        let scope = scope.as_str().to_string();
        self.read(move |c| {
            let mut statement = c.prepare_cached(&format!(
                "SELECT {ELEMENT_COLUMNS} FROM elements WHERE scope = ?1 ORDER BY address"
            ))?;
            statement
                .query_map(params![scope], element_from_row)?
                .collect()
        })
        .await
    }

    async fn stored_display(
        &self,
        token_hash: &str,
    ) -> Result<Option<Stored<Display>>, StoreError> {
        let token_hash = token_hash.to_string();
        self.read(move |c| {
            c.prepare_cached(&format!(
                "SELECT {DISPLAY_COLUMNS} FROM displays WHERE token_hash = ?1"
            ))?
            .query_row(params![token_hash], display_from_row)
            .optional()
        })
        .await
    }
}
