//! A new sandbox visitor (DECISIONS §8): the consumer made on the first
//! visit and the cookie that keeps it. Who a later request is from is
//! decided at the one door, [`crate::http::auth`].

use chrono::Duration;
use http::{HeaderMap, HeaderValue, header};

use crate::clock;
use crate::domain::model::Consumer;
use crate::http::auth::{COOKIE_NAME, proof};
use crate::http::io::ApiResponse;
use crate::signing::secrets::new_consumer_secret;

/// Makes a fresh sandbox consumer (UUID v4, a secret as a production
/// consumer's: [`new_consumer_secret`]).
pub fn new_sandbox_consumer() -> Consumer {
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
        heartbeat_seconds: None,
    }
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
