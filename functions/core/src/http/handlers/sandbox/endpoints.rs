//! The sandbox's endpoints: `POST /api/v1/sandbox/consumers` (a new pair),
//! `GET /api/v1/sandbox/state` (the visitor's calls, elements, hash
//! mismatches and staff) and `GET /` (the test page).

use http::{HeaderValue, header};

use super::identity::{is_https, new_sandbox_consumer, set_cookie};
use super::test_page::{PAGE_POLICY, base_url, render_page};
use crate::app::AppState;
use crate::clock;
use crate::domain::model::{HashMismatch, Scope};
use crate::domain::wire_time;
use crate::http::auth::{consumer_from_cookie, sandbox_visitor};
use crate::http::error::ApiError;
use crate::http::io::{ApiRequest, ApiResponse, json_response};
use crate::wire::staff::StaffRecord;
use crate::wire::{CallRecord, ElementRecord, success};

/// How many calls and elements the page shows.
const PAGE_LIMIT: usize = 200;

/// `POST /api/v1/sandbox/consumers`: 201 with a new pair, and the page's cookie.
pub(crate) async fn create_consumer(
    state: &AppState,
    request: &ApiRequest,
) -> Result<ApiResponse, ApiError> {
    let consumer = new_sandbox_consumer();
    state.sandbox.create_consumer(&consumer).await?;
    tracing::info!(consumer = %consumer.id, "sandbox consumer created");
    #[derive(serde::Serialize)]
    struct Pair<'a> {
        consumer: &'a str,
        secret: &'a str,
    }
    let body = success(&Pair {
        consumer: &consumer.id,
        secret: &consumer.secrets[0],
    });
    let mut response = json_response(201, body);
    set_cookie(&mut response, &consumer, is_https(request.headers()));
    Ok(response)
}

/// `GET /api/v1/sandbox/state`: this consumer's calls (open first, newest
/// first, with type), elements, recent hash mismatches (newest first) and
/// staff (by name, with their duty).
pub(crate) async fn state(state: &AppState, request: &ApiRequest) -> Result<ApiResponse, ApiError> {
    let consumer = sandbox_visitor(state, request).await?;
    let scope = Scope::consumer(&consumer.id);
    let now = clock::now();
    let zone = state.settings.time_zone;
    let calls = state.sandbox.recent_calls(&scope, PAGE_LIMIT).await?;
    let elements = state.sandbox.recent_elements(&scope, PAGE_LIMIT).await?;
    let mismatches = state
        .sandbox
        .recent_hash_mismatches(&scope, HashMismatch::KEPT)
        .await?;
    let (staff, duties) = match &state.alarms {
        Some(store) => (
            store.staff_of(&scope).await?,
            store.duties(&scope, now).await?,
        ),
        None => (Vec::new(), Vec::new()),
    };
    let types = state.call_types().await?;
    let calls: Vec<CallRecord<'_>> = calls
        .iter()
        .map(|call| CallRecord::new(call, Some(&types), zone, now))
        .collect();
    let elements: Vec<ElementRecord<'_>> = elements
        .iter()
        .map(|e| ElementRecord::new(e, zone))
        .collect();
    let mismatches: Vec<MismatchRecord<'_>> = mismatches
        .iter()
        .map(|m| MismatchRecord::new(m, zone))
        .collect();
    #[derive(serde::Serialize)]
    struct SandboxState<'a> {
        calls: Vec<CallRecord<'a>>,
        elements: Vec<ElementRecord<'a>>,
        mismatches: Vec<MismatchRecord<'a>>,
        staff: Vec<StaffRecord<'a>>,
    }
    let mut response = json_response(
        200,
        success(&SandboxState {
            calls,
            elements,
            mismatches,
            staff: StaffRecord::list(&staff, &duties, state.settings.time_zone),
        }),
    );
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// A kept hash mismatch in the state: the `debug` object of its 400 answer
/// (spec 7.2) without the secret, and when it happened.
#[derive(Debug, serde::Serialize)]
struct MismatchRecord<'a> {
    at: String,
    string: &'a str,
    hash: MismatchHashes<'a>,
}

#[derive(Debug, serde::Serialize)]
struct MismatchHashes<'a> {
    expected: &'a str,
    provided: &'a str,
}

impl<'a> MismatchRecord<'a> {
    fn new(mismatch: &'a HashMismatch, zone: chrono_tz::Tz) -> Self {
        MismatchRecord {
            at: wire_time::format_local(mismatch.at, zone),
            string: &mismatch.string,
            hash: MismatchHashes {
                expected: &mismatch.expected,
                provided: &mismatch.provided,
            },
        }
    }
}

/// `GET /`: the test page. A first visit (or an expired cookie) creates a pair.
pub(crate) async fn page(state: &AppState, request: &ApiRequest) -> Result<ApiResponse, ApiError> {
    let https = is_https(request.headers());
    let (consumer, fresh) = match consumer_from_cookie(state, request.headers()).await? {
        Some(consumer) => (consumer, false),
        None => {
            let consumer = new_sandbox_consumer();
            state.sandbox.create_consumer(&consumer).await?;
            tracing::info!(consumer = %consumer.id, "sandbox consumer created for a page visit");
            (consumer, true)
        }
    };
    let types = state.call_types().await?;
    let base_url = base_url(request.headers(), https);
    let html = render_page(&consumer, &base_url, &types);
    let mut response = http::Response::builder()
        .status(200)
        .header(header::CONTENT_TYPE, "text/html; charset=utf-8")
        .header(header::CACHE_CONTROL, "no-store")
        // Everything the page needs is in it: no other host, no framing.
        .header(header::CONTENT_SECURITY_POLICY, PAGE_POLICY)
        .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff")
        .header(header::REFERRER_POLICY, "no-referrer")
        .body(html)
        .expect("valid response");
    if fresh {
        set_cookie(&mut response, &consumer, https);
    }
    Ok(response)
}
