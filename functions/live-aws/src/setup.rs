//! What the two functions build once per cold start, from the stack's
//! environment (CONTRACT-13): the settings, one SDK configuration shared by
//! every client (credentials, retries, timeouts, HTTPS), the store behind
//! the state, the connections table and, for the broadcast, the poster.

use std::sync::Arc;

use aws_config::SdkConfig;

use nurse_call_core::{AppState, Mode, Settings, env_value};
use nurse_call_dynamodb::DynamoStore;
use nurse_call_dynamodb::tables::connections_table_from_env;
use nurse_call_wiring::lambda_state;
use nurse_call_wiring::warm_up::{WARM_UP_LIMIT, warm_store, warm_up};

use crate::broadcast::Broadcaster;
use crate::connect::ConnectHandler;
use crate::connections::Connections;
use crate::poster::Poster;

/// The management API's URL of the WebSocket API's stage.
pub const MANAGEMENT_ENDPOINT_VAR: &str = "LIVE_MANAGEMENT_ENDPOINT";

/// The state (store, settings, cached call types), the connections table and
/// the shared SDK configuration.
pub struct Setup {
    /// The store (DynamoDB), the settings and the cached call types.
    pub state: AppState,
    /// The connections table, on the store's client.
    pub connections: Connections,
    /// The same store as the state's, typed: `$connect` records a staff
    /// page as its person's channel (§18) beside the roster.
    pub store: Arc<DynamoStore>,
    /// The SDK configuration every client of the function shares (the poster's
    /// too).
    pub sdk_config: SdkConfig,
}

impl Setup {
    /// From `SERVICE_MODE` (production when unset, as the other functions),
    /// `SERVICE_TIME_ZONE`, the table variables and `CONNECTIONS_TABLE`;
    /// `DYNAMODB_ENDPOINT` points it at moto in tests.
    pub async fn from_env() -> Result<Setup, String> {
        let settings = Settings::from_env(Mode::Production)?;
        let (sdk_config, store) = DynamoStore::from_env().await;
        let store = Arc::new(store.with_call_retention(settings.call_retention));
        // One client (and connection pool) for the store and the connections.
        let connections = Connections::new(store.client().clone(), connections_table_from_env());
        tracing::info!(
            connections = connections.table(),
            mode = %settings.mode,
            "using the connections table"
        );
        Ok(Setup {
            state: lambda_state(store.clone(), settings),
            connections,
            store,
            sdk_config,
        })
    }

    /// The broadcast function's handler; needs `LIVE_MANAGEMENT_ENDPOINT`.
    /// Both its connections (DynamoDB, the management API) are opened
    /// during init, side by side ([`nurse_call_wiring::warm_up`]).
    pub async fn broadcaster(self) -> Result<Broadcaster, String> {
        let endpoint = env_value(MANAGEMENT_ENDPOINT_VAR)
            .ok_or_else(|| format!("{MANAGEMENT_ENDPOINT_VAR} is not set"))?;
        // `…/live/` and `…/live` are the same stage.
        let endpoint = endpoint.trim_end_matches('/');
        let poster = Poster::from_config(&self.sdk_config, endpoint);
        tracing::info!(
            management_endpoint = endpoint,
            "posting through the WebSocket API"
        );
        let warm_poster = poster.clone();
        futures_util::future::join(
            warm_store(&self.state),
            warm_up("management API", WARM_UP_LIMIT, async move {
                warm_poster.open_connection().await
            }),
        )
        .await;
        Ok(Broadcaster::new(self.state, self.connections, poster))
    }

    /// The connect function's handler, its DynamoDB connection opened
    /// during init.
    pub async fn connect_handler(self) -> ConnectHandler {
        warm_store(&self.state).await;
        ConnectHandler::new(self.state, self.connections, self.store)
    }
}
