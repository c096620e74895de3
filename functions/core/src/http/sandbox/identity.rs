//! Who a sandbox request is from (DECISIONS §8): a visitor's consumer, made
//! on the first visit, and the proof of holding its secret that the cookie,
//! the state query and the live socket carry.

use chrono::Duration;
use http::{HeaderMap, HeaderValue, header};

use crate::app::AppState;
use crate::clock;
use crate::domain::model::Consumer;
use crate::http::error::ApiError;
use crate::http::io::{ApiRequest, ApiResponse, query_param};
use crate::request::validation::{FieldErrors, is_uuid, message};
use crate::signing::secrets::new_consumer_secret;
use crate::signing::signature::sign_sha256;

/// The cookie that keeps the visitor's consumer id and proof.
pub const COOKIE_NAME: &str = "nc_sandbox";

/// Makes a fresh sandbox consumer (UUID v4, a secret as a production
/// consumer's: [`new_consumer_secret`]).
pub fn new_consumer() -> Consumer {
    let secret = new_consumer_secret().expect("the OS random source is available");
    let now = clock::now();
    Consumer {
        id: uuid::Uuid::new_v4().to_string(),
        name: "sandbox visitor".to_string(),
        secrets: vec![secret],
        allow_sha1: false,
        created_at: now,
        expires_at: Some(now + Duration::days(Consumer::SANDBOX_LIFETIME_DAYS)),
        require_signed_time: false,
    }
}

/// The proof of holding a consumer's secret, used by the cookie and the state query.
pub fn proof(consumer: &Consumer) -> String {
    sign_sha256(
        consumer.secrets.last().map_or("", String::as_str),
        &consumer.id,
    )
}

/// The visitor a sandbox request is from: `?consumer=…&hash=…` when given,
/// else the page's cookie; neither is a 422 `consumer` and `hash`, a wrong
/// proof a 400 `invalid_hash`.
pub(crate) async fn visitor(state: &AppState, request: &ApiRequest) -> Result<Consumer, ApiError> {
    match query_param(request, "consumer") {
        Some(_) => consumer_from_query(state, request).await,
        None => match consumer_from_cookie(state, request.headers()).await? {
            Some(consumer) => Ok(consumer),
            None => {
                let mut errors = FieldErrors::new();
                errors.add("consumer", message::required("consumer"));
                errors.add("hash", message::required("hash"));
                Err(errors.into())
            }
        },
    }
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
        Some(consumer)
            if crate::signing::signature::verify(Some(&consumer), &consumer.id, &hash) =>
        {
            Ok(consumer)
        }
        _ => Err(ApiError::InvalidHash(None)),
    }
}

pub(crate) async fn consumer_from_cookie(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<Option<Consumer>, ApiError> {
    let Some(value) = cookie(headers, COOKIE_NAME) else {
        return Ok(None);
    };
    let Some((id, hash)) = value.split_once('.') else {
        return Ok(None);
    };
    consumer_by_proof(state, id, hash).await
}

/// The sandbox consumer `id` if `proof` is its [`proof`] (the cookie's pair,
/// and the live socket's `consumer` and `hash` where the cookie does not
/// reach, DECISIONS §8); `None` for anything else, expired consumers too.
pub async fn consumer_by_proof(
    state: &AppState,
    id: &str,
    proof: &str,
) -> Result<Option<Consumer>, ApiError> {
    if !is_uuid(id) {
        return Ok(None);
    }
    Ok(known_consumer(state, id)
        .await?
        .filter(|consumer| crate::signing::signature::verify(Some(consumer), &consumer.id, proof)))
}

async fn known_consumer(state: &AppState, id: &str) -> Result<Option<Consumer>, ApiError> {
    let now = clock::now();
    Ok(state
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

pub(super) fn set_cookie(response: &mut ApiResponse, consumer: &Consumer, https: bool) {
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
pub(super) fn is_https(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|proto| proto.eq_ignore_ascii_case("https"))
}
