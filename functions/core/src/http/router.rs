//! Which endpoint a path is, and the one place where an [`ApiError`] becomes
//! its documented response: also the 404 of a path that is no endpoint (or
//! not this function's) and the 413 of a body too large to read. The Lambda
//! functions call [`serve_only`] with their own routes
//! ([`crate::http::routes`]); the local server calls [`serve`] for every
//! path and [`unreadable_body`] when it stopped reading a body.

use std::time::Instant;

use http::Method;

use crate::app::AppState;
use crate::http::error::ApiError;
use crate::http::io::{ApiRequest, ApiResponse, MAX_BODY_BYTES, error_response};
use crate::http::routes::{self, Route};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Display,
    Element,
    CallTypes,
    /// Sandbox only (DECISIONS §8).
    SandboxConsumers,
    /// Sandbox only.
    SandboxState,
    /// Sandbox: a visitor creates staff of their own scope (DECISIONS §14).
    SandboxStaff,
    /// The test page at `/`, sandbox only.
    TestPage,
    /// The display page at `/display`, both modes (DECISIONS §11).
    DisplayPage,
    /// Displays: the open calls (DECISIONS §11).
    DisplayCalls,
    /// Displays: the elements and those that need attention (DECISIONS §12).
    DisplayElements,
    /// The interface document, `docs/openapi.yaml` as JSON.
    OpenApi,
    /// Staff: who they are and their duty (DECISIONS §14).
    StaffMe,
    /// Staff: sign on (`PUT`) and off (`DELETE`).
    StaffDuty,
    /// Staff: the calls alerting them, then the others of their sections.
    StaffCalls,
    /// Staff: a response to a call, `/api/v1/staff/calls/{id}/responses`.
    StaffResponses,
    /// An alarm server's response to a call, signed (DECISIONS §16).
    AlarmResponse,
    /// Staff: the installation's VAPID public key (DECISIONS §15).
    StaffPushKey,
    /// Staff: register (`POST`) or remove (`DELETE`) a browser's push
    /// subscription.
    StaffPushSubscriptions,
    /// The staff page at `/staff`, both modes (DECISIONS §15).
    StaffPage,
    /// The staff page's web app manifest.
    StaffManifest,
    /// The staff page's service worker (Web Push, notification actions).
    StaffServiceWorker,
}

/// The one path with a parameter: `{id}` between these two.
const RESPONSES_PREFIX: &str = "/api/v1/staff/calls/";
const RESPONSES_SUFFIX: &str = "/responses";

impl Endpoint {
    pub const ALL: [Endpoint; 21] = [
        Endpoint::Display,
        Endpoint::Element,
        Endpoint::CallTypes,
        Endpoint::SandboxConsumers,
        Endpoint::SandboxState,
        Endpoint::SandboxStaff,
        Endpoint::TestPage,
        Endpoint::DisplayPage,
        Endpoint::DisplayCalls,
        Endpoint::DisplayElements,
        Endpoint::OpenApi,
        Endpoint::StaffMe,
        Endpoint::StaffDuty,
        Endpoint::StaffCalls,
        Endpoint::StaffResponses,
        Endpoint::AlarmResponse,
        Endpoint::StaffPushKey,
        Endpoint::StaffPushSubscriptions,
        Endpoint::StaffPage,
        Endpoint::StaffManifest,
        Endpoint::StaffServiceWorker,
    ];

    pub fn path(self) -> &'static str {
        match self {
            Endpoint::Display => "/api/v1/display",
            Endpoint::Element => "/api/v1/element",
            Endpoint::CallTypes => "/api/v1/display/call-types",
            Endpoint::SandboxConsumers => "/api/v1/sandbox/consumers",
            Endpoint::SandboxState => "/api/v1/sandbox/state",
            Endpoint::SandboxStaff => "/api/v1/sandbox/staff",
            Endpoint::TestPage => "/",
            Endpoint::DisplayPage => "/display",
            Endpoint::DisplayCalls => "/api/v1/display/calls",
            Endpoint::DisplayElements => "/api/v1/display/elements",
            Endpoint::OpenApi => "/api/v1/openapi.json",
            Endpoint::StaffMe => "/api/v1/staff/me",
            Endpoint::StaffDuty => "/api/v1/staff/duty",
            Endpoint::StaffCalls => "/api/v1/staff/calls",
            // The template, as the interface document and API Gateway name it.
            Endpoint::StaffResponses => "/api/v1/staff/calls/{id}/responses",
            Endpoint::AlarmResponse => "/api/v1/response",
            Endpoint::StaffPushKey => "/api/v1/staff/push-key",
            Endpoint::StaffPushSubscriptions => "/api/v1/staff/push-subscriptions",
            Endpoint::StaffPage => "/staff",
            Endpoint::StaffManifest => "/staff/manifest.webmanifest",
            Endpoint::StaffServiceWorker => "/staff/sw.js",
        }
    }

    /// The endpoint's first method (its only one but for
    /// [`Endpoint::StaffDuty`]'s `PUT` and `DELETE` and
    /// [`Endpoint::StaffPushSubscriptions`]' `POST` and `DELETE`,
    /// [`Endpoint::methods`]).
    pub fn method(self) -> Method {
        self.methods()[0].clone()
    }

    /// Every method the endpoint answers; any other is a 405.
    pub fn methods(self) -> &'static [Method] {
        match self {
            Endpoint::Display
            | Endpoint::Element
            | Endpoint::SandboxConsumers
            | Endpoint::SandboxStaff
            | Endpoint::StaffResponses
            | Endpoint::AlarmResponse => &[Method::POST],
            Endpoint::StaffDuty => &[Method::PUT, Method::DELETE],
            Endpoint::StaffPushSubscriptions => &[Method::POST, Method::DELETE],
            Endpoint::CallTypes
            | Endpoint::SandboxState
            | Endpoint::TestPage
            | Endpoint::DisplayPage
            | Endpoint::DisplayCalls
            | Endpoint::DisplayElements
            | Endpoint::OpenApi
            | Endpoint::StaffMe
            | Endpoint::StaffCalls
            | Endpoint::StaffPushKey
            | Endpoint::StaffPage
            | Endpoint::StaffManifest
            | Endpoint::StaffServiceWorker => &[Method::GET],
        }
    }

    fn allow_header(self) -> &'static str {
        match self.methods() {
            [Method::PUT, Method::DELETE] => "PUT, DELETE",
            [Method::POST, Method::DELETE] => "POST, DELETE",
            [Method::POST] => "POST",
            _ => "GET",
        }
    }

    pub fn sandbox_only(self) -> bool {
        matches!(
            self,
            Endpoint::SandboxConsumers
                | Endpoint::SandboxState
                | Endpoint::SandboxStaff
                | Endpoint::TestPage
        )
    }

    /// The endpoint at `path`, if any (exact match; no trailing slash).
    /// `/api/v1/staff/calls/<id>/responses` is [`Endpoint::StaffResponses`]
    /// for any one segment `<id>`: its handler answers 404 for an `id` that
    /// is no call.
    pub fn from_path(path: &str) -> Option<Endpoint> {
        let exact = Endpoint::ALL
            .into_iter()
            .find(|e| *e != Endpoint::StaffResponses && e.path() == path);
        exact.or_else(|| response_call_id(path).map(|_| Endpoint::StaffResponses))
    }
}

/// The `{id}` segment of a responses path (not yet checked to be a number).
pub fn response_call_id(path: &str) -> Option<&str> {
    path.strip_prefix(RESPONSES_PREFIX)?
        .strip_suffix(RESPONSES_SUFFIX)
        .filter(|id| !id.is_empty() && !id.contains('/'))
}

/// Serves any path: 404 for unknown paths (and sandbox paths in production).
pub async fn serve(state: &AppState, request: ApiRequest) -> ApiResponse {
    serve_only(state, &routes::ALL, request).await
}

/// Serves `request` when its path is one of `routes`' endpoints (a Lambda
/// function's own); any other path is the documented 404, as if it did not
/// exist.
pub async fn serve_only(state: &AppState, routes: &[Route], request: ApiRequest) -> ApiResponse {
    // DECISIONS §3 step 1, before the path: a body over the limit is 413
    // whatever it was sent to. The local server stops reading such a body
    // ([`unreadable_body`]); API Gateway hands a Lambda function up to 10 MB.
    if request.body().len() > MAX_BODY_BYTES {
        return refuse(&request, &ApiError::PayloadTooLarge);
    }
    let endpoint = Endpoint::from_path(request.uri().path());
    match routes.iter().find(|route| Some(route.endpoint) == endpoint) {
        Some(route) => serve_route(state, *route, request).await,
        None => refuse(&request, &ApiError::NotFound),
    }
}

/// The answer to a request whose body the server stopped reading: 413 when
/// it was over [`crate::http::io::MAX_BODY_BYTES`], else 400 (it ended
/// before its announced length). `request` carries no body.
pub fn unreadable_body(request: &ApiRequest, too_large: bool) -> ApiResponse {
    let error = if too_large {
        ApiError::PayloadTooLarge
    } else {
        ApiError::Malformed(UNREADABLE_BODY.to_string())
    };
    refuse(request, &error)
}

/// The 400 for a body that could not be read to its end.
const UNREADABLE_BODY: &str = "Der Anfragekörper konnte nicht vollständig gelesen werden.";

/// Answers `error` before any handler ran, logged like every answer.
fn refuse(request: &ApiRequest, error: &ApiError) -> ApiResponse {
    let response = error_response(error);
    log(request, &response, Instant::now());
    response
}

/// Serves one endpoint whatever the path: what [`serve_route`] does with
/// the endpoint's route (for tests and benchmarks).
pub async fn serve_endpoint(
    state: &AppState,
    endpoint: Endpoint,
    request: ApiRequest,
) -> ApiResponse {
    serve_route(state, Route::of(endpoint), request).await
}

/// Serves one route: 405 for another method, else its handler; every error
/// becomes its documented body.
pub async fn serve_route(state: &AppState, route: Route, request: ApiRequest) -> ApiResponse {
    let started = Instant::now();
    let endpoint = route.endpoint;
    let result = if endpoint.sandbox_only() && !state.is_sandbox() {
        Err(ApiError::NotFound)
    } else if !endpoint.methods().contains(request.method()) {
        Err(ApiError::MethodNotAllowed(endpoint.allow_header()))
    } else {
        (route.handler)(state, &request).await
    };
    let response = result.unwrap_or_else(|error| error_response(&error));
    log(&request, &response, started);
    response
}

fn log(request: &ApiRequest, response: &ApiResponse, started: Instant) {
    let status = response.status().as_u16();
    let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
    if status >= 500 {
        tracing::error!(method = %request.method(), path = request.uri().path(), status, elapsed_ms, "request");
    } else {
        tracing::info!(method = %request.method(), path = request.uri().path(), status, elapsed_ms, "request");
    }
}
