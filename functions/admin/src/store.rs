//! Which store the command works on: the embedded store's file (default), or
//! DynamoDB at an endpoint (moto, DynamoDB Local) or in AWS. The options and
//! variables are those of the local server and the CDK stack (DECISIONS §10).

use std::path::PathBuf;

use clap::Args;

use nurse_call_core::admin::AdminStore;
use nurse_call_dynamodb::{DynamoStore, TableNames};
use nurse_call_sqlite::{FILE_NAME, SqliteStore};

use crate::failure::Failure;

const STORE: &str = "Store (the embedded store's file unless DynamoDB is chosen)";

#[derive(Debug, Args)]
pub struct StoreArgs {
    /// Folder of the embedded store (its file is nurse-call.sqlite3). The
    /// local server may be running on it at the same time.
    #[arg(
        long,
        env = "DATA_DIR",
        default_value = "data",
        global = true,
        help_heading = STORE
    )]
    data_dir: PathBuf,

    /// Use DynamoDB at this URL (moto, DynamoDB Local) instead of the
    /// embedded store.
    #[arg(long, env = "DYNAMODB_ENDPOINT", global = true, help_heading = STORE)]
    dynamodb_endpoint: Option<String>,

    /// Use DynamoDB in AWS: credentials, AWS_PROFILE and AWS_REGION come
    /// from the usual AWS environment.
    #[arg(long, global = true, help_heading = STORE)]
    dynamodb: bool,

    /// Prefix of the DynamoDB table names (<prefix>call-types,
    /// <prefix>consumers, <prefix>data).
    #[arg(
        long,
        env = "TABLE_PREFIX",
        default_value = "nurse-call-",
        global = true,
        help_heading = STORE
    )]
    table_prefix: String,

    /// Name of the call types table (overrides the prefix).
    #[arg(long, env = "CALL_TYPES_TABLE", global = true, help_heading = STORE)]
    call_types_table: Option<String>,

    /// Name of the consumers table (overrides the prefix).
    #[arg(long, env = "CONSUMERS_TABLE", global = true, help_heading = STORE)]
    consumers_table: Option<String>,

    /// Name of the data table with the elements (overrides the prefix).
    #[arg(long, env = "DATA_TABLE", global = true, help_heading = STORE)]
    data_table: Option<String>,
}

/// An open, checked store and what it is, for messages.
pub struct Connection {
    pub store: Box<dyn AdminStore>,
    pub description: String,
}

impl StoreArgs {
    /// Opens the chosen store and checks that it is reachable and ready.
    pub async fn connect(&self) -> Result<Connection, Failure> {
        let connection = match self.endpoint() {
            Some(endpoint) => self.dynamodb(Some(endpoint)).await,
            None if self.dynamodb => self.dynamodb(None).await,
            None => self.sqlite()?,
        };
        match connection.store.check().await {
            Ok(()) => Ok(connection),
            Err(error) => Err(Failure::from(error).in_store(&connection.description)),
        }
    }

    fn endpoint(&self) -> Option<&str> {
        self.dynamodb_endpoint
            .as_deref()
            .map(str::trim)
            .filter(|e| !e.is_empty())
    }

    fn tables(&self) -> TableNames {
        let defaults = TableNames::with_prefix(&self.table_prefix);
        let pick = |explicit: &Option<String>, default: String| {
            explicit
                .as_deref()
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .map_or(default, str::to_string)
        };
        TableNames {
            call_types: pick(&self.call_types_table, defaults.call_types),
            consumers: pick(&self.consumers_table, defaults.consumers),
            data: pick(&self.data_table, defaults.data),
        }
    }

    async fn dynamodb(&self, endpoint: Option<&str>) -> Connection {
        let tables = self.tables();
        let description = format!(
            "DynamoDB {}, tables {}, {}, {}",
            endpoint.map_or_else(|| "in AWS".to_string(), |e| format!("at {e}")),
            tables.call_types,
            tables.consumers,
            tables.data
        );
        Connection {
            store: Box::new(DynamoStore::connect(endpoint, tables).await),
            description,
        }
    }

    fn sqlite(&self) -> Result<Connection, Failure> {
        let file = self.data_dir.join(FILE_NAME);
        let description = format!("embedded store {}", file.display());
        if !file.exists() {
            eprintln!("note: no store at {}; creating a new one", file.display());
        }
        match SqliteStore::open_dir(&self.data_dir) {
            Ok(store) => Ok(Connection {
                store: Box::new(store),
                description,
            }),
            Err(error) => Err(Failure::from(error).in_store(&description)),
        }
    }
}
