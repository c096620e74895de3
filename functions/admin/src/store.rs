//! Which store the command works on: the embedded store's file (default), or
//! DynamoDB at an endpoint (moto, DynamoDB Local) or in AWS. The options and
//! variables are those of the local server and the CDK stack (DECISIONS §10).
//! Every command but `init` works only on a store that exists: a mistyped
//! `--data-dir` or prefix must not start a second, empty store that the
//! service never reads.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use serde::Serialize;

use nurse_call_core::{
    Backend, CallRetention, StoreError,
    sealing::{NoKey, Sealer},
};
use nurse_call_dynamodb::{Timeouts, sdk_config};
use nurse_call_kms::KmsSealer;
use nurse_call_wiring::{EMBEDDED_FILE, OpenError, StoreChoice, TableNames};

use crate::failure::Failure;

const STORE: &str = "Store (the embedded store's file unless DynamoDB is chosen)";

#[derive(Debug, Args)]
pub(crate) struct StoreArgs {
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

    /// The installation's KMS key (its ARN, id or alias; the stack's output
    /// `DataKeyArn`): webhook secrets are stored sealed with it
    /// (DECISIONS §17). DynamoDB only; needs kms:Encrypt on the key.
    #[arg(long, env = "SECRETS_KEY_ID", global = true, help_heading = STORE)]
    secrets_key: Option<String>,
}

/// An open, checked store and what it is, for messages.
pub(crate) struct Connection {
    pub store: Arc<dyn Backend>,
    pub description: String,
}

impl StoreArgs {
    /// Opens the chosen store if it exists and checks that it is reachable
    /// and ready. Creates nothing: a store that is not there is
    /// [`Failure::Missing`] (`init` makes one).
    pub(crate) async fn connect(&self) -> Result<Connection, Failure> {
        let choice = self.choice();
        let description = choice.describe();
        // The admin command never expires calls itself: the retention only
        // matters to the service's own closes.
        let store = match choice.open_existing(CallRetention::default()).await {
            Ok(store) => store,
            Err(OpenError::Missing(missing)) => return Err(self.missing(&missing)),
            Err(OpenError::Failed(error)) => {
                return Err(Failure::from(StoreError::Internal(error)).in_store(&description));
            }
        };
        match store.check().await {
            Ok(()) => Ok(Connection { store, description }),
            Err(error) => Err(Failure::from(error).in_store(&description)),
        }
    }

    /// `init`: makes the embedded store (its folder, the file, the default
    /// call types), or says that it is there already. DynamoDB tables are
    /// the stack's (or the local server's, on an endpoint): `init` only
    /// checks that they exist, as every other command does.
    pub(crate) async fn init(&self) -> Result<Initialised, Failure> {
        let choice = self.choice();
        let description = choice.describe();
        let (store, created) = match choice.open_existing(CallRetention::default()).await {
            Ok(store) => (store, false),
            Err(OpenError::Missing(missing)) => match &choice {
                StoreChoice::Embedded { .. } => {
                    let store = choice
                        .open_prepared(CallRetention::default())
                        .await
                        .map_err(|e| {
                            Failure::from(StoreError::Internal(e)).in_store(&description)
                        })?;
                    (store, true)
                }
                StoreChoice::DynamoDb { .. } => return Err(self.missing(&missing)),
            },
            Err(OpenError::Failed(error)) => {
                return Err(Failure::from(StoreError::Internal(error)).in_store(&description));
            }
        };
        store
            .check()
            .await
            .map_err(|e| Failure::from(e).in_store(&description))?;
        Ok(Initialised {
            store: match &choice {
                StoreChoice::Embedded { data_dir } => shown_path(&data_dir.join(EMBEDDED_FILE)),
                StoreChoice::DynamoDb { .. } => description,
            },
            created,
        })
    }

    /// The message for a store that is not there, with what to check.
    fn missing(&self, missing: &[String]) -> Failure {
        let message = match self.choice() {
            StoreChoice::Embedded { data_dir } => {
                let hint = if data_dir.is_file() {
                    " (--data-dir names the store's folder, not its file)"
                } else {
                    ""
                };
                format!(
                    "no store at {}; check --data-dir{hint}, or create one with \
                     `nurse-call-admin init`",
                    shown_path(&data_dir.join(EMBEDDED_FILE))
                )
            }
            StoreChoice::DynamoDb { endpoint, .. } => format!(
                "no store: DynamoDB {} has no table {}; check --table-prefix / TABLE_PREFIX \
                 (or CALL_TYPES_TABLE / CONSUMERS_TABLE / DATA_TABLE) and the endpoint or \
                 account. The admin command creates no DynamoDB tables: the installation's \
                 stack does (docs/deploy.md), or locally the local server started with \
                 --dynamodb-endpoint",
                endpoint
                    .as_deref()
                    .map_or_else(|| "in AWS".to_string(), |e| format!("at {e}")),
                missing.join(", ")
            ),
        };
        Failure::Missing(message)
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

    /// `--secrets-key` names a KMS key, which only an installation on
    /// DynamoDB has (a usage error otherwise, before anything is done).
    pub(crate) fn check_secrets_key(&self) -> Result<(), String> {
        match (self.secrets_key(), self.choice()) {
            (Some(_), StoreChoice::Embedded { .. }) => Err(
                "--secrets-key seals secrets with a KMS key, which only an installation on \
                 DynamoDB has: add --dynamodb (or --dynamodb-endpoint), or leave it out"
                    .into(),
            ),
            _ => Ok(()),
        }
    }

    /// What seals the secrets this command issues: the installation's KMS
    /// key with `--secrets-key`, else nothing (kept plain, as the local
    /// server keeps them). `KMS_ENDPOINT` points it at moto in tests.
    pub(crate) async fn sealer(&self) -> Arc<dyn Sealer> {
        let Some(key) = self.secrets_key() else {
            return Arc::new(NoKey);
        };
        let config = sdk_config(self.endpoint(), Timeouts::from_env()).await;
        Arc::new(KmsSealer::with_key(&config, key))
    }

    fn secrets_key(&self) -> Option<&str> {
        self.secrets_key
            .as_deref()
            .map(str::trim)
            .filter(|key| !key.is_empty())
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

/// What `init` found or made.
#[derive(Debug, Serialize)]
pub(crate) struct Initialised {
    /// The embedded store's file (absolute), or the DynamoDB tables.
    pub store: String,
    /// Whether `init` made it now (false: it was there already).
    pub created: bool,
}

/// A path as the messages show it: absolute, so that a store beside the
/// wrong working folder is seen at a glance.
fn shown_path(path: &Path) -> String {
    std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}
