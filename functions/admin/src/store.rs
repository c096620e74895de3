//! Which store the command works on: the embedded store's file (default), or
//! DynamoDB at an endpoint (moto, DynamoDB Local) or in AWS. The options and
//! variables are those of the local server and the CDK stack (DECISIONS §10).

use std::path::PathBuf;

use clap::Args;

use std::sync::Arc;

use nurse_call_core::config::CallRetention;
use nurse_call_core::store::{Backend, StoreError};
use nurse_call_wiring::{EMBEDDED_FILE, StoreChoice, TableNames};

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
    pub store: Arc<dyn Backend>,
    pub description: String,
}

impl StoreArgs {
    /// Opens the chosen store and checks that it is reachable and ready.
    pub async fn connect(&self) -> Result<Connection, Failure> {
        let choice = self.choice();
        let description = choice.describe();
        if let StoreChoice::Embedded { data_dir } = &choice {
            let file = data_dir.join(EMBEDDED_FILE);
            if !file.exists() {
                eprintln!("note: no store at {}; creating a new one", file.display());
            }
        }
        // The admin command never expires calls itself: the retention only
        // matters to the service's own closes.
        let store = choice
            .open(CallRetention::default())
            .await
            .map_err(|error| Failure::from(StoreError::Internal(error)).in_store(&description))?;
        match store.check().await {
            Ok(()) => Ok(Connection { store, description }),
            Err(error) => Err(Failure::from(error).in_store(&description)),
        }
    }

    /// `--dynamodb-endpoint` (or the variable), `--dynamodb`, else the file.
    fn choice(&self) -> StoreChoice {
        match self.endpoint() {
            Some(endpoint) => StoreChoice::DynamoDb {
                endpoint: Some(endpoint.to_string()),
                tables: self.tables(),
            },
            None if self.dynamodb => StoreChoice::DynamoDb {
                endpoint: None,
                tables: self.tables(),
            },
            None => StoreChoice::Embedded {
                data_dir: self.data_dir.clone(),
            },
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
}
