//! Which store a process works on, opened in one place for every binary: the
//! Lambda functions (DynamoDB, settings from the stack's environment), the
//! local server (the embedded store, or DynamoDB at an endpoint) and the
//! admin command (either). Core stays free of AWS and SQLite types; this
//! crate is where they meet it.
//!
//! The process gets one [`Backend`] and hands each part the trait it needs:
//! the handlers the request path's [`Store`](nurse_call_core::Store) (and the
//! sandbox its [`SandboxStore`](nurse_call_core::SandboxStore)), the
//! admin command the [`AdminStore`](nurse_call_core::AdminStore).
//! A Lambda function opens its connections during init with [`warm_up`].

pub mod warm_up;

use std::sync::Arc;

#[cfg(feature = "embedded")]
use std::path::PathBuf;

use nurse_call_core::{
    AppState, Backend, CallRetention, DEFAULT_TTL, ServiceStore, Settings, default_call_types,
};

#[cfg(feature = "dynamodb")]
pub use nurse_call_dynamodb::TableNames;
/// The embedded store's file name in its folder.
#[cfg(feature = "embedded")]
pub use nurse_call_sqlite::FILE_NAME as EMBEDDED_FILE;

/// Where the data is.
#[derive(Debug, Clone)]
pub enum StoreChoice {
    /// The embedded store: SQLite in `data_dir/nurse-call.sqlite3`.
    #[cfg(feature = "embedded")]
    Embedded {
        /// The data folder holding the file (created if missing).
        data_dir: PathBuf,
    },
    /// DynamoDB: at `endpoint` (moto, DynamoDB Local), or in AWS when
    /// `None` (credentials and region from the usual AWS environment).
    #[cfg(feature = "dynamodb")]
    DynamoDb {
        /// moto's or DynamoDB Local's URL; `None`: AWS's own endpoint.
        endpoint: Option<String>,
        /// The names of the three tables.
        tables: TableNames,
    },
}

impl StoreChoice {
    /// A Lambda function's store: DynamoDB, the tables named by the stack's
    /// variables; `DYNAMODB_ENDPOINT` points it at moto in tests.
    #[cfg(feature = "dynamodb")]
    pub fn lambda_from_env() -> Self {
        StoreChoice::DynamoDb {
            endpoint: nurse_call_core::env_value("DYNAMODB_ENDPOINT"),
            tables: TableNames::from_env(),
        }
    }

    /// DynamoDB at `endpoint` when one is given (tables named by the
    /// environment, as in the stack), else the embedded store in `data_dir`:
    /// the local server's choice. A build without the `dynamodb` feature
    /// (`cargo run -p local-server`, for a quick first build) says how to
    /// get one when an endpoint is given.
    #[cfg(feature = "embedded")]
    pub fn local(data_dir: PathBuf, endpoint: Option<String>) -> Result<Self, String> {
        match nurse_call_core::non_blank(endpoint) {
            None => Ok(StoreChoice::Embedded { data_dir }),
            #[cfg(feature = "dynamodb")]
            Some(endpoint) => Ok(StoreChoice::DynamoDb {
                endpoint: Some(endpoint),
                tables: TableNames::from_env(),
            }),
            #[cfg(not(feature = "dynamodb"))]
            Some(endpoint) => Err(format!(
                "this build has no DynamoDB support, so it cannot use {endpoint}: \
                 build it with `cargo run -p local-server --features dynamodb`"
            )),
        }
    }

    /// What the store is, for logs and messages.
    pub fn describe(&self) -> String {
        match self {
            #[cfg(feature = "embedded")]
            StoreChoice::Embedded { data_dir } => {
                format!("embedded store {}", data_dir.join(EMBEDDED_FILE).display())
            }
            #[cfg(feature = "dynamodb")]
            StoreChoice::DynamoDb { endpoint, tables } => format!(
                "DynamoDB {}, tables {}, {}, {}",
                endpoint
                    .as_deref()
                    .map_or_else(|| "in AWS".to_string(), |e| format!("at {e}")),
                tables.call_types,
                tables.consumers,
                tables.data
            ),
        }
    }

    /// The store of the request path and alarm routing (the Lambda
    /// functions); closed calls expire after `retention`. Its trait object
    /// carries no admin operation, so none of them is linked into a
    /// function's zip.
    // Without DynamoDB nothing expires by itself: `retention` goes unused.
    #[cfg_attr(not(feature = "dynamodb"), allow(unused_variables))]
    pub async fn open_service(
        &self,
        retention: CallRetention,
    ) -> Result<Arc<dyn ServiceStore>, String> {
        Ok(match self {
            #[cfg(feature = "embedded")]
            StoreChoice::Embedded { data_dir } => Arc::new(open_embedded(data_dir)?),
            #[cfg(feature = "dynamodb")]
            StoreChoice::DynamoDb { endpoint, tables } => {
                Arc::new(connect_dynamodb(endpoint, tables, retention).await)
            }
        })
    }

    /// The whole store, admin operations included, if it exists (the admin
    /// command): the embedded store's file, or all three DynamoDB tables.
    /// Creates nothing, so a mistyped folder or prefix cannot start a second,
    /// empty store beside the one the service uses.
    #[cfg_attr(not(feature = "dynamodb"), allow(unused_variables))]
    pub async fn open_existing(
        &self,
        retention: CallRetention,
    ) -> Result<Arc<dyn Backend>, OpenError> {
        Ok(match self {
            #[cfg(feature = "embedded")]
            StoreChoice::Embedded { data_dir } => {
                let file = data_dir.join(EMBEDDED_FILE);
                if !file.is_file() {
                    return Err(OpenError::Missing(vec![file.display().to_string()]));
                }
                Arc::new(open_embedded(data_dir).map_err(OpenError::Failed)?)
            }
            #[cfg(feature = "dynamodb")]
            StoreChoice::DynamoDb { endpoint, tables } => {
                let store = connect_dynamodb(endpoint, tables, retention).await;
                let missing = store
                    .missing_tables()
                    .await
                    .map_err(|e| OpenError::Failed(e.to_string()))?;
                if !missing.is_empty() {
                    return Err(OpenError::Missing(missing));
                }
                Arc::new(store)
            }
        })
    }

    /// The whole store, made ready to serve (the local server): missing
    /// DynamoDB tables created, the default call types seeded where none of
    /// that name exists.
    #[cfg_attr(not(feature = "dynamodb"), allow(unused_variables))]
    pub async fn open_prepared(
        &self,
        retention: CallRetention,
    ) -> Result<Arc<dyn Backend>, String> {
        let store: Arc<dyn Backend> = match self {
            #[cfg(feature = "embedded")]
            StoreChoice::Embedded { data_dir } => Arc::new(open_embedded(data_dir)?),
            #[cfg(feature = "dynamodb")]
            StoreChoice::DynamoDb { endpoint, tables } => {
                let store = connect_dynamodb(endpoint, tables, retention).await;
                let created = store.create_missing_tables().await.map_err(|e| {
                    format!("cannot prepare the tables at {}: {e}", self.describe())
                })?;
                tracing::info!(?created, "tables prepared");
                Arc::new(store)
            }
        };
        store
            .seed_call_types(&default_call_types())
            .await
            .map_err(|e| e.to_string())?;
        Ok(store)
    }
}

/// Why [`StoreChoice::open_existing`] gave no store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenError {
    /// The store is not there: the embedded store's file, or the DynamoDB
    /// tables, named.
    Missing(Vec<String>),
    /// It is there but could not be opened or reached.
    Failed(String),
}

/// The embedded store has no expiry of its own: the local server's purge
/// applies the retention to it (`purge_closed_calls`).
#[cfg(feature = "embedded")]
fn open_embedded(data_dir: &std::path::Path) -> Result<nurse_call_sqlite::SqliteStore, String> {
    let store = nurse_call_sqlite::SqliteStore::open_dir(data_dir).map_err(|e| e.to_string())?;
    tracing::info!(file = %store.path().display(), "using the embedded store");
    Ok(store)
}

#[cfg(feature = "dynamodb")]
async fn connect_dynamodb(
    endpoint: &Option<String>,
    tables: &TableNames,
    retention: CallRetention,
) -> nurse_call_dynamodb::DynamoStore {
    let store = nurse_call_dynamodb::DynamoStore::connect(endpoint.as_deref(), tables.clone())
        .await
        .with_call_retention(retention);
    tracing::info!(endpoint = ?endpoint, tables = ?store.tables(), "using DynamoDB");
    store
}

/// A Lambda function's state: the store behind the request path and alarm
/// routing, call types and consumers cached for [`DEFAULT_TTL`] (admin
/// edits visible within 60 s, DECISIONS §7).
pub fn lambda_state(store: Arc<dyn ServiceStore>, settings: Settings) -> AppState {
    AppState::new(store.clone(), settings)
        .with_alarms(store.clone())
        .with_push(store.clone())
        .with_links(store.clone())
        .with_outbox(store.clone())
        // The `forward` function stores which endpoints fail (DECISIONS
        // §17); the displays' and staff pages' reads take it from there.
        .with_stored_forwarding(store)
        .with_cache(DEFAULT_TTL)
}

/// The local server's state: no TTL cache, so an admin's edit shows at once
/// (the embedded store keeps call types and consumers in memory itself,
/// checked against the file's generation of them on every read).
pub fn local_state(store: Arc<dyn Backend>, settings: Settings) -> AppState {
    AppState::new(store.clone(), settings)
        .with_alarms(store.clone())
        .with_push(store.clone())
        .with_links(store.clone())
        .with_outbox(store)
}
