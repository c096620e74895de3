//! Requests for the shared handlers, signed like a client signs them.

use bytes::Bytes;
use nurse_call_core::signature::{sign_sha256, signing_string};

pub(crate) const CONSUMER: &str = "0b7e6f64-3a51-4c8e-9d2f-5a1c2e3f4a5b";
pub(crate) const SECRET: &str = "a-secret-for-tests";

/// A signed POST of `data` (compact JSON) to `path`; `target` `None` is the multi form.
pub(crate) fn signed_post(path: &str, target: Option<&str>, data: &str) -> http::Request<Bytes> {
    let hash = sign_sha256(
        SECRET,
        &signing_string(target.unwrap_or(""), CONSUMER, data),
    );
    let target = target
        .map(|t| format!(r#""target":"{t}","#))
        .unwrap_or_default();
    let body = format!(r#"{{{target}"consumer":"{CONSUMER}","hash":"{hash}","data":{data}}}"#);
    http::Request::post(path)
        .header("content-type", "application/json")
        .body(Bytes::from(body))
        .expect("valid request")
}

pub(crate) fn json(response: &http::Response<String>) -> serde_json::Value {
    serde_json::from_str(response.body()).expect("JSON body")
}
