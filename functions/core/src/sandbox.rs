//! The test server (spec 5.3, DECISIONS §8): visitors get a consumer and secret,
//! kept in a cookie, and watch their own calls and elements live.
//!
//! The cookie holds the consumer id and a proof, HMAC-SHA256 of the id keyed by
//! the secret: the same proof `GET /api/v1/sandbox/state?consumer=…&hash=…`
//! takes. The secret itself never travels in a cookie.

use chrono::Duration;
use http::{HeaderMap, HeaderValue, header};

use crate::error::ApiError;
use crate::http_io::{ApiRequest, ApiResponse, json_response, query_param};
use crate::model::{Consumer, Scope};
use crate::signature::{sign_sha256, signing_string};
use crate::state::AppState;
use crate::validation::{FieldErrors, is_uuid, message};
use crate::wire::{CallRecord, ElementRecord, success};
use crate::wire_time;

pub const COOKIE_NAME: &str = "nc_sandbox";
/// How many calls and elements the page shows.
const PAGE_LIMIT: usize = 200;

/// Makes a fresh sandbox consumer (UUID v4, 32 random bytes as hex).
pub fn new_consumer() -> Consumer {
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).expect("the OS random source is available");
    let now = wire_time::now();
    Consumer {
        id: uuid::Uuid::new_v4().to_string(),
        name: "sandbox visitor".to_string(),
        secrets: vec![hex::encode(secret)],
        allow_sha1: false,
        created_at: now,
        expires_at: Some(now + Duration::days(Consumer::SANDBOX_LIFETIME_DAYS)),
    }
}

/// The proof of holding a consumer's secret, used by the cookie and the state query.
pub fn proof(consumer: &Consumer) -> String {
    sign_sha256(
        consumer.secrets.last().map_or("", String::as_str),
        &consumer.id,
    )
}

/// `POST /api/v1/sandbox/consumers`: 201 with a new pair, and the page's cookie.
pub async fn create_consumer(
    state: &AppState,
    request: &ApiRequest,
) -> Result<ApiResponse, ApiError> {
    let consumer = new_consumer();
    state.store.create_consumer(&consumer).await?;
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
/// first, with type) and elements.
pub async fn state(state: &AppState, request: &ApiRequest) -> Result<ApiResponse, ApiError> {
    let consumer = match query_param(request, "consumer") {
        Some(_) => consumer_from_query(state, request).await?,
        None => match consumer_from_cookie(state, request.headers()).await? {
            Some(consumer) => consumer,
            None => {
                let mut errors = FieldErrors::new();
                errors.add("consumer", message::required("consumer"));
                errors.add("hash", message::required("hash"));
                return Err(errors.into());
            }
        },
    };
    let scope = Scope::consumer(&consumer.id);
    let now = wire_time::now();
    let zone = state.settings.time_zone;
    let calls = state.store.recent_calls(&scope, PAGE_LIMIT).await?;
    let elements = state.store.recent_elements(&scope, PAGE_LIMIT).await?;
    let types = state.call_types().await?;
    let calls: Vec<CallRecord<'_>> = calls
        .iter()
        .map(|call| CallRecord::new(call, Some(&types), zone, now))
        .collect();
    let elements: Vec<ElementRecord<'_>> = elements
        .iter()
        .map(|e| ElementRecord::new(e, zone))
        .collect();
    #[derive(serde::Serialize)]
    struct SandboxState<'a> {
        calls: Vec<CallRecord<'a>>,
        elements: Vec<ElementRecord<'a>>,
    }
    let mut response = json_response(200, success(&SandboxState { calls, elements }));
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// `GET /`: the test page. A first visit (or an expired cookie) creates a pair.
pub async fn page(state: &AppState, request: &ApiRequest) -> Result<ApiResponse, ApiError> {
    let https = is_https(request.headers());
    let (consumer, fresh) = match consumer_from_cookie(state, request.headers()).await? {
        Some(consumer) => (consumer, false),
        None => {
            let consumer = new_consumer();
            state.store.create_consumer(&consumer).await?;
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
        .body(html)
        .expect("valid response");
    if fresh {
        set_cookie(&mut response, &consumer, https);
    }
    Ok(response)
}

async fn consumer_from_query(state: &AppState, request: &ApiRequest) -> Result<Consumer, ApiError> {
    let id = query_param(request, "consumer").unwrap_or_default();
    let hash = query_param(request, "hash").unwrap_or_default();
    let mut errors = FieldErrors::new();
    if !is_uuid(&id) {
        errors.add("consumer", message::uuid("consumer"));
    }
    if hash.is_empty() {
        errors.add("hash", message::required("hash"));
    }
    errors.into_result(())?;
    match known_consumer(state, &id).await? {
        Some(consumer) if crate::signature::verify(Some(&consumer), &consumer.id, &hash) => {
            Ok(consumer)
        }
        _ => Err(ApiError::InvalidHash(None)),
    }
}

async fn consumer_from_cookie(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<Option<Consumer>, ApiError> {
    let Some(value) = cookie(headers, COOKIE_NAME) else {
        return Ok(None);
    };
    let Some((id, hash)) = value.split_once('.') else {
        return Ok(None);
    };
    if !is_uuid(id) {
        return Ok(None);
    }
    Ok(known_consumer(state, id)
        .await?
        .filter(|consumer| crate::signature::verify(Some(consumer), &consumer.id, hash)))
}

async fn known_consumer(state: &AppState, id: &str) -> Result<Option<Consumer>, ApiError> {
    let now = wire_time::now();
    Ok(state
        .store
        .consumer(&id.to_ascii_lowercase())
        .await?
        .filter(|consumer| !consumer.is_expired(now)))
}

fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

fn set_cookie(response: &mut ApiResponse, consumer: &Consumer, https: bool) {
    let max_age = Consumer::SANDBOX_LIFETIME_DAYS * 24 * 3600;
    let secure = if https { "; Secure" } else { "" };
    let value = format!(
        "{COOKIE_NAME}={}.{}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Lax{secure}",
        consumer.id,
        proof(consumer)
    );
    response.headers_mut().append(
        header::SET_COOKIE,
        HeaderValue::from_str(&value).expect("cookie is ASCII"),
    );
}

/// Behind API Gateway or a proxy, `X-Forwarded-Proto` tells the scheme.
fn is_https(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|proto| proto.eq_ignore_ascii_case("https"))
}

fn base_url(headers: &HeaderMap, https: bool) -> String {
    let host = headers
        .get("x-forwarded-host")
        .or_else(|| headers.get(header::HOST))
        .and_then(|v| v.to_str().ok())
        .unwrap_or("127.0.0.1:3000");
    format!("{}://{host}", if https { "https" } else { "http" })
}

fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// A ready-to-run curl command for `path` with `data`, signed with `consumer`'s secret.
fn signed_example(
    consumer: &Consumer,
    base_url: &str,
    path: &str,
    target: &str,
    data: &str,
) -> String {
    let secret = consumer.secrets.last().map_or("", String::as_str);
    let hash = sign_sha256(secret, &signing_string(target, &consumer.id, data));
    let body = format!(
        r#"{{"target":"{target}","consumer":"{}","hash":"{hash}","data":{data}}}"#,
        consumer.id
    );
    format!("curl -s -X POST '{base_url}{path}' -H 'Content-Type: application/json' -d '{body}'")
}

fn render_page(consumer: &Consumer, base_url: &str, types: &[crate::model::CallType]) -> String {
    let secret = consumer.secrets.last().map_or("", String::as_str);
    let open_data = r#"{"event":"Normalruf","position":"Zimmer 101"}"#;
    let close_data = r#"{"closed":true}"#;
    let element_data = r#"{"battery":80,"reachable":true}"#;
    let type_names: Vec<String> = types
        .iter()
        .map(|t| {
            format!(
                "<li><span class=\"swatch\" style=\"background:{}\"></span>{}</li>",
                escape_html(&t.color),
                escape_html(&t.name)
            )
        })
        .collect();
    include_str!("sandbox_page.html")
        .replace("{{consumer}}", &escape_html(&consumer.id))
        .replace("{{secret}}", &escape_html(secret))
        .replace("{{base_url}}", &escape_html(base_url))
        .replace("{{call_types}}", &type_names.join(""))
        .replace(
            "{{example_open}}",
            &escape_html(&signed_example(
                consumer,
                base_url,
                "/api/v1/display?include=type",
                "Zimmer-101",
                open_data,
            )),
        )
        .replace(
            "{{example_close}}",
            &escape_html(&signed_example(
                consumer,
                base_url,
                "/api/v1/display",
                "Zimmer-101",
                close_data,
            )),
        )
        .replace(
            "{{example_element}}",
            &escape_html(&signed_example(
                consumer,
                base_url,
                "/api/v1/element",
                "Zimmer-101",
                element_data,
            )),
        )
}
