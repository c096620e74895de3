//! Sending a message to one WebSocket connection: API Gateway's management
//! API, `POST /@connections/{id}` (`PostToConnection`), at the stage's URL
//! (`LIVE_MANAGEMENT_ENDPOINT`, `https://{api}.execute-api.{region}.amazonaws.com/{stage}`).
//!
//! Retries are the SDK's standard mode, as for DynamoDB (3 attempts, the
//! same timeouts): the SDK classifies `LimitExceededException` (429, API
//! Gateway's throttling, or a client whose buffer is full) as throttling
//! and 5xx as transient, and retries them with backoff; `GoneException`
//! (410) and `ForbiddenException` are final. Tested in tests/broadcast.rs.

use aws_config::SdkConfig;
use aws_sdk_apigatewaymanagement::Client;
use aws_sdk_apigatewaymanagement::config::http::HttpResponse;
use aws_sdk_apigatewaymanagement::error::{DisplayErrorContext, SdkError};
use aws_sdk_apigatewaymanagement::operation::post_to_connection::PostToConnectionError;
use aws_sdk_apigatewaymanagement::primitives::Blob;

/// What became of one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// API Gateway took the message for the connection.
    Delivered,
    /// The connection no longer exists (410): its item is to be deleted.
    Gone,
    /// Anything else after the SDK's retries; the display heals with its
    /// next snapshot read (at most 60 s later, DECISIONS §11).
    Failed(String),
}

/// Posts to the connections of one WebSocket API stage.
#[derive(Debug, Clone)]
pub struct Poster {
    client: Client,
}

impl Poster {
    /// Posts through `client`, which must point at the stage's management URL
    /// (see [`Poster::from_config`]).
    pub fn new(client: Client) -> Self {
        Poster { client }
    }

    /// A poster on the process's shared SDK configuration (credentials,
    /// retries, timeouts, HTTPS client) at the stage URL `endpoint`.
    pub fn from_config(config: &SdkConfig, endpoint: &str) -> Self {
        let config = aws_sdk_apigatewaymanagement::config::Builder::from(config)
            .endpoint_url(endpoint)
            .build();
        Poster::new(Client::from_conf(config))
    }

    /// Sends `message` to connection `connection_id`, with the SDK's retries;
    /// never an error: the [`Delivery`] says what became of it.
    pub async fn post(&self, connection_id: &str, message: &str) -> Delivery {
        let sent = self
            .client
            .post_to_connection()
            .connection_id(connection_id)
            .data(Blob::new(message.as_bytes()))
            .send()
            .await;
        match sent {
            Ok(_) => Delivery::Delivered,
            Err(error) if is_gone(&error) => Delivery::Gone,
            Err(error) => Delivery::Failed(DisplayErrorContext(&error).to_string()),
        }
    }
}

impl Poster {
    /// Closes connection `connection_id` (`DELETE /@connections/{id}`): its
    /// credential was rotated or revoked (DECISIONS §20). [`Delivery::Gone`]
    /// when it was closed already.
    pub async fn close(&self, connection_id: &str) -> Delivery {
        let closed = self
            .client
            .delete_connection()
            .connection_id(connection_id)
            .send()
            .await;
        match closed {
            Ok(_) => Delivery::Delivered,
            Err(SdkError::ServiceError(service))
                if service.err().is_gone_exception() || service.raw().status().as_u16() == 410 =>
            {
                Delivery::Gone
            }
            Err(error) => Delivery::Failed(DisplayErrorContext(&error).to_string()),
        }
    }
}

/// The connection id of [`Poster::open_connection`]'s post: not of API
/// Gateway's form (12 bytes in base64), so no display ever has it.
pub const WARM_UP_CONNECTION: &str = "warm-up";

impl Poster {
    /// Opens (and pools) the client's connection with a post to a
    /// connection that does not exist: any answer of the API (410, 400, 403)
    /// means the connection is open; only a failure to reach it is an error.
    pub async fn open_connection(&self) -> Result<(), String> {
        let sent = self
            .client
            .post_to_connection()
            .connection_id(WARM_UP_CONNECTION)
            .data(Blob::new("{}"))
            .send()
            .await;
        match sent {
            Ok(_) | Err(SdkError::ServiceError(_)) => Ok(()),
            Err(error) => Err(DisplayErrorContext(&error).to_string()),
        }
    }
}

/// 410 Gone, by its code or, should a proxy drop the code, its status.
fn is_gone(error: &SdkError<PostToConnectionError, HttpResponse>) -> bool {
    match error {
        SdkError::ServiceError(service) => {
            service.err().is_gone_exception() || service.raw().status().as_u16() == 410
        }
        _ => false,
    }
}
