//! The sandbox's visitor (DECISIONS §8): a consumer made on the first visit,
//! known by the proof of holding its secret that the cookie, the state
//! query and the live socket carry. The cookie holds the consumer id and
//! the proof (HMAC-SHA256 of the id keyed by the secret), never the secret.

use http::{HeaderMap, header};

use crate::app::AppState;
use crate::clock;
use crate::domain::model::Consumer;
use crate::http::error::ApiError;
use crate::http::io::{ApiRequest, query_param};
use crate::request::validation::{FieldErrors, is_uuid, message};
use crate::signing::signature::{self, sign_sha256};

/// The cookie that keeps the visitor's consumer id and proof.
pub(crate) const COOKIE_NAME: &str = "nc_sandbox";

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
pub(crate) async fn sandbox_visitor(
    state: &AppState,
    request: &ApiRequest,
) -> Result<Consumer, ApiError> {
    let visitor = visitor_of(state, request).await?;
    super::Authenticated::mark(request);
    Ok(visitor)
}

async fn visitor_of(state: &AppState, request: &ApiRequest) -> Result<Consumer, ApiError> {
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
        Some(consumer) if signature::verify(Some(&consumer), &consumer.id, &hash) => Ok(consumer),
        _ => Err(ApiError::InvalidHash(None)),
    }
}

/// The sandbox consumer of the test page's cookie, if it holds a valid
/// proof ([`consumer_by_proof`]).
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
pub(crate) async fn consumer_by_proof(
    state: &AppState,
    id: &str,
    proof: &str,
) -> Result<Option<Consumer>, ApiError> {
    if !is_uuid(id) {
        return Ok(None);
    }
    Ok(known_consumer(state, id)
        .await?
        .filter(|consumer| signature::verify(Some(consumer), &consumer.id, proof)))
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
