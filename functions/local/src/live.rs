//! The live feed of displays on the local server (DECISIONS §11):
//! `GET /api/v1/display/live?token=…` upgraded to a WebSocket (in sandbox
//! mode also `?consumer=…&hash=…`, or the test page's cookie). Staff pages
//! connect the same way with a staff token (DECISIONS §14): they get the
//! displays' messages of their scope, the staff pages' (`call.declined`),
//! and their own `call.alert` and `call.cancelled`.
//!
//! Each connection subscribes to the in-process [`LiveHub`] *before* the
//! upgrade completes, so nothing written after the client connected is
//! missed while it reads its snapshot. It forwards the changes of its
//! reader's scope and sections, and answers `{"action":"ping"}` with
//! `{"type":"pong"}`. A client that falls `LiveHub::CAPACITY` changes behind
//! or does not take a message within [`SEND_TIMEOUT`] is dropped: it
//! reconnects and re-reads, and no writer ever waits for it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code};
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, Method};
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::RecvError;

use nurse_call_core::{
    ApiError, AppState, Reader, SandboxProof, error_response,
    live::{Delivery, LiveAudience, PONG, is_ping},
    live_reader, live_token_holds,
};

/// The live feed's path.
pub(crate) const PATH: &str = "/api/v1/display/live";

/// How long one message may wait for a client that does not read.
const SEND_TIMEOUT: Duration = Duration::from_secs(5);

/// How often a socket opened with a token checks that the token still
/// holds: `staff rotate`/`revoke` and `displays rotate`/`revoke` (another
/// process, the admin command) close it within 5 s (DECISIONS §20).
const CREDENTIAL_CHECK: Duration = Duration::from_secs(2);

/// Authenticates (401 before any upgrade), subscribes, upgrades.
pub(crate) async fn connect(
    State(state): State<AppState>,
    method: Method,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Response {
    if method != Method::GET {
        return answer(&ApiError::MethodNotAllowed("GET"), &method, 405);
    }
    let token = query
        .get("token")
        .map(String::as_str)
        .filter(|t| !t.is_empty());
    let proof = match (query.get("consumer"), query.get("hash")) {
        (Some(consumer), Some(hash)) => Some(SandboxProof { consumer, hash }),
        _ => None,
    };
    let reader = match live_reader(&state, token, proof, &headers).await {
        Ok(reader) => reader,
        Err(error) => return answer(&error, &method, error.status()),
    };
    let Ok(upgrade) = upgrade else {
        let error = ApiError::Malformed(
            "Dieser Pfad erwartet eine WebSocket-Verbindung (Upgrade: websocket).".into(),
        );
        return answer(&error, &method, 400);
    };
    let Some(hub) = state.live.clone() else {
        return answer(&ApiError::Internal, &method, 500);
    };
    let changes = hub.subscribe();
    // A staff page is its person's channel while it is open (§18).
    let page = reader.staff_id.as_deref().map(|id| hub.page_opened(id));
    tracing::info!(
        display_id = ?reader.display_id,
        staff_id = ?reader.staff_id,
        scope = reader.scope.as_str(),
        "live display connected"
    );
    let token = token.map(str::to_string);
    upgrade
        .on_upgrade(move |socket| async move {
            forward(socket, reader, changes, &state, token.as_deref()).await;
            drop(page);
        })
        .into_response()
}

/// The documented error body; logged like every other request (path only:
/// the query holds the token).
fn answer(error: &ApiError, method: &Method, status: u16) -> Response {
    tracing::info!(%method, path = PATH, status, "request");
    error_response(error).map(Body::from)
}

/// Forwards the reader's changes until either side stops, or the token it
/// opened with no longer holds.
async fn forward(
    mut socket: WebSocket,
    reader: Reader,
    mut changes: Receiver<Arc<Delivery>>,
    state: &AppState,
    token: Option<&str>,
) {
    let mut check = tokio::time::interval(CREDENTIAL_CHECK);
    check.tick().await;
    let reason = loop {
        tokio::select! {
            _ = check.tick(), if token.is_some() => {
                if !live_token_holds(state, token.unwrap_or_default()).await {
                    break close_with(socket, close_code::POLICY, "credential revoked").await;
                }
            }
            change = changes.recv() => match change {
                Ok(delivery) => {
                    if !is_for(&reader, &delivery) {
                        continue;
                    }
                    let send = socket.send(Message::Text(delivery.event.message.clone().into()));
                    match tokio::time::timeout(SEND_TIMEOUT, send).await {
                        Ok(Ok(())) => {}
                        Ok(Err(_)) => break "gone",
                        Err(_) => break close(socket, "too slow").await,
                    }
                }
                Err(RecvError::Lagged(missed)) => {
                    tracing::info!(missed, "live display fell behind");
                    break close(socket, "fell behind").await;
                }
                Err(RecvError::Closed) => break "server stopping",
            },
            frame = socket.recv() => match frame {
                Some(Ok(Message::Text(text))) if is_ping(text.as_str()) => {
                    if socket.send(Message::Text(PONG.into())).await.is_err() {
                        break "gone";
                    }
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break "closed by client",
                // Other frames (WebSocket pings are answered by axum) are ignored.
                Some(Ok(_)) => {}
            },
        }
    };
    tracing::info!(
        display_id = ?reader.display_id,
        staff_id = ?reader.staff_id,
        reason,
        "live display disconnected"
    );
}

/// Whether `delivery` is for this reader: its scope, and a section it shows
/// (displays' messages), or staff pages, or this staff member.
fn is_for(reader: &Reader, delivery: &Delivery) -> bool {
    let event = &delivery.event;
    event.scope == reader.scope
        && match &delivery.audience {
            LiveAudience::Everyone => reader.sees_section(event.section.as_deref()),
            LiveAudience::StaffPages => reader.staff_id.is_some(),
            LiveAudience::Person(staff_id) => reader.staff_id.as_ref() == Some(staff_id),
        }
}

/// Drops a client that cannot keep up; it reconnects and re-reads the snapshot.
async fn close(socket: WebSocket, reason: &'static str) -> &'static str {
    close_with(socket, close_code::AGAIN, reason).await
}

/// Closes the socket with `code` and `reason`.
async fn close_with(mut socket: WebSocket, code: u16, reason: &'static str) -> &'static str {
    let frame = CloseFrame {
        code,
        reason: reason.into(),
    };
    let _ = tokio::time::timeout(SEND_TIMEOUT, socket.send(Message::Close(Some(frame)))).await;
    reason
}
