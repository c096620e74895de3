//! A stand-in for API Gateway's management API on loopback: it records every
//! `POST /{stage}/@connections/{id}` (`PostToConnection`) and answers 410
//! Gone, as API Gateway does, for the connections declared gone. (moto's
//! `apigatewaymanagementapi` appends every post to one buffer per
//! connection and never answers 410, so it can show neither the messages
//! one by one nor a gone connection.)

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::Value;

/// The WebSocket API's stage, as in the stack (`wss://…/live`).
pub(crate) const STAGE: &str = "live";

/// One post as received.
#[derive(Debug, Clone)]
pub(crate) struct Post {
    pub connection_id: String,
    pub message: Value,
    /// The body's size in bytes (API Gateway takes up to 128 KiB per post).
    pub bytes: usize,
    pub at: Instant,
    /// 200, or 410 for a gone connection.
    pub status: u16,
    /// The credential scope's service of the SigV4 signature (`execute-api`).
    pub signed_for: Option<String>,
}

#[derive(Default)]
struct Shared {
    posts: Mutex<Vec<Post>>,
    gone: Mutex<HashSet<String>>,
}

pub(crate) struct ManagementApi {
    address: SocketAddr,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl ManagementApi {
    pub(crate) async fn start() -> ManagementApi {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route(
                &format!("/{STAGE}/@connections/{{id}}"),
                post(post_to_connection),
            )
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port for the management API");
        let address = listener.local_addr().expect("its address");
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        ManagementApi {
            address,
            shared,
            server,
        }
    }

    /// `LIVE_MANAGEMENT_ENDPOINT`: `http://127.0.0.1:PORT/live`.
    pub(crate) fn endpoint(&self) -> String {
        format!("http://{}/{STAGE}", self.address)
    }

    /// From now on, posts to `connection_id` are answered 410 Gone.
    pub(crate) fn declare_gone(&self, connection_id: &str) {
        self.shared
            .gone
            .lock()
            .unwrap()
            .insert(connection_id.to_string());
    }

    pub(crate) fn posts(&self) -> Vec<Post> {
        self.shared.posts.lock().unwrap().clone()
    }

    /// The messages delivered (200) to `connection_id`, in arrival order.
    pub(crate) fn delivered_to(&self, connection_id: &str) -> Vec<Value> {
        self.posts()
            .into_iter()
            .filter(|post| post.connection_id == connection_id && post.status == 200)
            .map(|post| post.message)
            .collect()
    }
}

impl Drop for ManagementApi {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn post_to_connection(
    State(shared): State<Arc<Shared>>,
    Path(connection_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let at = Instant::now();
    let message = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(format!("not JSON: {}", String::from_utf8_lossy(&body))));
    // `Credential=AKID/20260105/eu-central-1/execute-api/aws4_request, …`
    let signed_for = headers
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split("Credential=").nth(1))
        .and_then(|scope| scope.split(['/', ',']).nth(3))
        .map(str::to_string);
    let gone = shared.gone.lock().unwrap().contains(&connection_id);
    let status = if gone { 410 } else { 200 };
    shared.posts.lock().unwrap().push(Post {
        connection_id,
        message,
        bytes: body.len(),
        at,
        status,
        signed_for,
    });
    if gone {
        (
            StatusCode::GONE,
            [
                ("x-amzn-errortype", "GoneException"),
                ("content-type", "application/json"),
            ],
            r#"{"message":"Gone"}"#,
        )
            .into_response()
    } else {
        (StatusCode::OK, [("content-type", "application/json")], "{}").into_response()
    }
}
