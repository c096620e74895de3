//! The HTTP shapes the handlers take and give, framework-neutral (`http`
//! crate types), plus the body checks of DECISIONS §3 step 1.

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, header};

use crate::http::error::{ApiError, RETRY_AFTER_SECONDS};

/// A request as every handler takes it, its body read whole (from a Lambda
/// event or the local server's request).
pub type ApiRequest = http::Request<Bytes>;
/// A response as every handler gives it: the body is text (JSON, a page,
/// a script).
pub type ApiResponse = http::Response<String>;

/// The largest body accepted (413 above).
pub const MAX_BODY_BYTES: usize = 256 * 1024;

/// Checks size, content type and encoding, in that order, and returns the body text.
pub(crate) fn json_body(request: &ApiRequest) -> Result<&str, ApiError> {
    let body = request.body();
    if body.len() > MAX_BODY_BYTES {
        return Err(ApiError::PayloadTooLarge);
    }
    if !is_json_content_type(request.headers()) {
        return Err(ApiError::UnsupportedMediaType);
    }
    std::str::from_utf8(body)
        .map_err(|_| ApiError::Malformed("Der Anfragekörper ist kein gültiges UTF-8.".to_string()))
}

/// `application/json`, any case, optionally with parameters (`; charset=utf-8`;
/// the body is read as UTF-8 whatever they say, RFC 8259 §8.1). Exactly one
/// `Content-Type` header: two of them leave open what the body is.
fn is_json_content_type(headers: &HeaderMap) -> bool {
    let mut values = headers.get_all(header::CONTENT_TYPE).iter();
    let (Some(value), None) = (values.next(), values.next()) else {
        return false;
    };
    value
        .to_str()
        .ok()
        .and_then(|value| value.split(';').next())
        .is_some_and(|media_type| media_type.trim().eq_ignore_ascii_case("application/json"))
}

/// The value of query parameter `name`, percent-decoded; the first one wins.
pub(crate) fn query_param(request: &ApiRequest, name: &str) -> Option<String> {
    let query = request.uri().query()?;
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
}

/// A JSON response with the given status.
pub(crate) fn json_response(status: u16, body: String) -> ApiResponse {
    http::Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(body)
        .expect("status and header are valid")
}

/// The response for an error, with `Allow` or `Retry-After` where they belong.
pub fn error_response(error: &ApiError) -> ApiResponse {
    let mut response = json_response(error.status(), error.body());
    let headers = response.headers_mut();
    match error {
        ApiError::MethodNotAllowed(allow) => {
            headers.insert(header::ALLOW, HeaderValue::from_static(allow));
        }
        ApiError::ServiceUnavailable => {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
        }
        ApiError::TooManyRequests(seconds) => {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(*seconds));
        }
        _ => {}
    }
    response
}
