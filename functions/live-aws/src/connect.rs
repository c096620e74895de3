//! The WebSocket API's `$connect` and `$disconnect` routes.
//!
//! `$connect` authenticates like the local live socket (DECISIONS §11): the
//! display token in the query (`?token=…`), or in sandbox mode the
//! visitor's proof (`?consumer=…&hash=…`, DECISIONS §8). A refusal is 401
//! with the documented body, and API Gateway refuses the upgrade; an
//! accepted connection is recorded with its reader's scope and sections,
//! then answered 200. `$disconnect` forgets the connection.
//!
//! The query string holds the token: nothing here logs the request, its
//! query or its headers, only the route, the connection id, the display id
//! and the status.

use std::sync::Arc;

use aws_lambda_events::apigw::{ApiGatewayProxyResponse, ApiGatewayWebsocketProxyRequest};
use aws_lambda_events::encodings::Body;
use http::HeaderValue;
use http::header::CONTENT_TYPE;
use serde_json::Value;

use nurse_call_core::{ApiError, AppState, SandboxProof, clock, error_response, live_reader};
use nurse_call_dynamodb::DynamoStore;

use crate::connections::{Connection, Connections, LIFETIME};

/// API Gateway's route of a new WebSocket connection: authenticated, then
/// recorded.
pub const CONNECT: &str = "$connect";
/// API Gateway's route of a closed connection: forgotten.
pub const DISCONNECT: &str = "$disconnect";

/// Everything the two routes need, built once per cold start.
pub struct ConnectHandler {
    state: AppState,
    connections: Connections,
    pages: Arc<DynamoStore>,
}

impl ConnectHandler {
    /// `state` authenticates (display tokens, sandbox proofs); `connections`
    /// records who is connected; `pages` (the state's store) which staff
    /// pages are open: a channel to their person (§18).
    pub fn new(state: AppState, connections: Connections, pages: Arc<DynamoStore>) -> Self {
        ConnectHandler {
            state,
            connections,
            pages,
        }
    }

    /// One API Gateway WebSocket event in, the answer out (always one:
    /// Lambda would turn an error into a bare 500).
    pub async fn handle(&self, event: Value) -> ApiGatewayProxyResponse {
        // Read here rather than by the runtime: a serde error may quote a
        // value of the event, and its query holds the token.
        let request: ApiGatewayWebsocketProxyRequest = match serde_json::from_value(event) {
            Ok(request) => request,
            Err(error) => {
                tracing::error!(category = ?error.classify(), "not an API Gateway WebSocket event");
                return answer(400, None);
            }
        };
        let context = &request.request_context;
        let route = context.route_key.as_deref().unwrap_or_default();
        let Some(connection_id) = context.connection_id.as_deref() else {
            tracing::error!(route, "WebSocket event without a connection id");
            return answer(400, None);
        };
        let response = match route {
            CONNECT => self.connect(&request, connection_id).await,
            DISCONNECT => self.disconnect(connection_id).await,
            _ => {
                // Only the two routes lead here (`ping` is API Gateway's own).
                tracing::error!(route, "route not handled by this function");
                answer(400, None)
            }
        };
        tracing::info!(
            route,
            connection_id,
            status = response.status_code,
            "live connection"
        );
        response
    }

    async fn connect(
        &self,
        request: &ApiGatewayWebsocketProxyRequest,
        connection_id: &str,
    ) -> ApiGatewayProxyResponse {
        let query = &request.query_string_parameters;
        let token = query.first("token").filter(|token| !token.is_empty());
        let proof = match (query.first("consumer"), query.first("hash")) {
            (Some(consumer), Some(hash)) => Some(SandboxProof { consumer, hash }),
            _ => None,
        };
        let reader = match live_reader(&self.state, token, proof, &request.headers).await {
            Ok(reader) => reader,
            Err(error) => return refusal(&error),
        };
        let connection = Connection {
            id: connection_id.to_string(),
            scope: reader.scope,
            sections: reader.sections,
            display_id: reader.display_id,
            staff_id: reader.staff_id.clone(),
        };
        let now = clock::now();
        let recorded = match &reader.staff_id {
            // A staff page: its person's channel while it is connected (§18),
            // until API Gateway's connection limit at the latest.
            Some(staff_id) => {
                let until = now + LIFETIME;
                futures_util::future::try_join(
                    self.connections.put(&connection, now),
                    self.pages
                        .page_opened(&connection.scope, staff_id, connection_id, until),
                )
                .await
                .map(|_| ())
            }
            None => self.connections.put(&connection, now).await,
        };
        match recorded {
            Ok(()) => {
                tracing::info!(
                    connection_id,
                    display_id = ?connection.display_id,
                    scope = connection.scope.as_str(),
                    "live display connected"
                );
                answer(200, None)
            }
            Err(error) => {
                tracing::error!(connection_id, %error, "connection not recorded");
                refusal(&ApiError::from(error))
            }
        }
    }

    /// Always 200: API Gateway has closed the connection already, and an
    /// item left behind expires by TTL or goes with the first post to it.
    async fn disconnect(&self, connection_id: &str) -> ApiGatewayProxyResponse {
        match self.connections.scopes_of(connection_id).await {
            Ok(scopes) => {
                for scope in scopes {
                    if let Err(error) = self.connections.delete(&scope, connection_id).await {
                        tracing::warn!(connection_id, %error, "connection not forgotten");
                    }
                    // A display's has none: deleting nothing is no error.
                    if let Err(error) = self.pages.page_closed(&scope, connection_id).await {
                        tracing::warn!(connection_id, %error, "staff page not forgotten");
                    }
                }
            }
            Err(error) => tracing::warn!(connection_id, %error, "connection not looked up"),
        }
        answer(200, None)
    }
}

/// The documented error body with its status (401 for any credential
/// problem, 503 when the store is unavailable).
fn refusal(error: &ApiError) -> ApiGatewayProxyResponse {
    let response = error_response(error);
    answer(response.status().as_u16(), Some(response.into_body()))
}

fn answer(status: u16, body: Option<String>) -> ApiGatewayProxyResponse {
    let mut response = ApiGatewayProxyResponse::default();
    response.status_code = i64::from(status);
    if let Some(body) = body {
        response
            .headers
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        response.body = Some(Body::Text(body));
    }
    response
}
