//! The test server (spec 5.3, DECISIONS §8): visitors get a consumer and secret,
//! kept in a cookie, and watch their own calls and elements live; they may
//! create staff of their own scope to try alarm routing (`sandbox_staff.rs`,
//! DECISIONS §14).
//!
//! The cookie holds the consumer id and a proof, HMAC-SHA256 of the id keyed by
//! the secret: the same proof `GET /api/v1/sandbox/state?consumer=…&hash=…`
//! takes. The secret itself never travels in a cookie.

use chrono::Duration;
use http::{HeaderMap, HeaderValue, header};

use crate::app::AppState;
use crate::domain::model::{Consumer, HashMismatch, Scope};
use crate::domain::wire_time;
use crate::http::error::ApiError;
use crate::http::io::{ApiRequest, ApiResponse, json_response, query_param};
use crate::http::page_helpers::with_helpers;
use crate::http::sandbox_staff::{self, SandboxStaffRecord};
use crate::request::validation::{FieldErrors, is_uuid, message};
use crate::signing::signature::{sign_sha256, signing_string};
use crate::wire::{CallRecord, ElementRecord, success};

pub const COOKIE_NAME: &str = "nc_sandbox";
/// How many calls and elements the page shows.
const PAGE_LIMIT: usize = 200;
/// The page's inline style and script talk to this origin only.
const PAGE_POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; \
    style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; form-action 'self'; \
    base-uri 'none'; frame-ancestors 'none'";

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

/// `POST /api/v1/sandbox/consumers`: 201 with a new pair, and the page's cookie.
pub async fn create_consumer(
    state: &AppState,
    request: &ApiRequest,
) -> Result<ApiResponse, ApiError> {
    let consumer = new_consumer();
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

/// `GET /api/v1/sandbox/state`: this consumer's calls (open first, newest
/// first, with type), elements, recent hash mismatches (newest first) and
/// staff (by name, with their duty).
pub async fn state(state: &AppState, request: &ApiRequest) -> Result<ApiResponse, ApiError> {
    let consumer = visitor(state, request).await?;
    let scope = Scope::consumer(&consumer.id);
    let now = wire_time::now();
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
        staff: Vec<SandboxStaffRecord<'a>>,
    }
    let mut response = json_response(
        200,
        success(&SandboxState {
            calls,
            elements,
            mismatches,
            staff: sandbox_staff::records(state, &staff, &duties),
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
pub async fn page(state: &AppState, request: &ApiRequest) -> Result<ApiResponse, ApiError> {
    let https = is_https(request.headers());
    let (consumer, fresh) = match consumer_from_cookie(state, request.headers()).await? {
        Some(consumer) => (consumer, false),
        None => {
            let consumer = new_consumer();
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
    let now = wire_time::now();
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

pub(crate) fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// One ready-to-run request of the page: what is signed, the hash, the curl
/// command, all for this consumer.
struct Example {
    /// `open`, `close`, `element`, `multi`: the suffix of the element ids.
    key: &'static str,
    title: &'static str,
    path: &'static str,
    /// `None` for the multi form (no top-level target).
    target: Option<&'static str>,
    data: &'static str,
}

const EXAMPLES: [Example; 4] = [
    Example {
        key: "open",
        title: "Ruf öffnen",
        path: "/api/v1/display?include=type",
        target: Some("Zimmer-101"),
        data: r#"{"event":"Normalruf","position":"Zimmer 101"}"#,
    },
    Example {
        key: "close",
        title: "Alle Rufe der Adresse schließen",
        path: "/api/v1/display",
        target: Some("Zimmer-101"),
        data: r#"{"closed":true}"#,
    },
    Example {
        key: "element",
        title: "Elementstatus setzen",
        path: "/api/v1/element",
        target: Some("Zimmer-101"),
        data: r#"{"battery":80,"reachable":true}"#,
    },
    Example {
        key: "multi",
        title: "Mehrere Elemente (Mehrfachform, ohne target)",
        path: "/api/v1/element",
        target: None,
        data: r#"[{"target":"Zimmer-101","battery":75},{"target":"Zimmer-102","reachable":false}]"#,
    },
];

impl Example {
    /// The signing string, the hash and the curl command.
    fn signed(&self, consumer: &Consumer, base_url: &str) -> (String, String, String) {
        let secret = consumer.secrets.last().map_or("", String::as_str);
        let string = signing_string(self.target.unwrap_or(""), &consumer.id, self.data);
        let hash = sign_sha256(secret, &string);
        let target = self
            .target
            .map(|t| format!(r#""target":"{t}","#))
            .unwrap_or_default();
        let body = format!(
            r#"{{{target}"consumer":"{}","hash":"{hash}","data":{}}}"#,
            consumer.id, self.data
        );
        let curl = format!(
            "curl -s -X POST '{base_url}{}' -H 'Content-Type: application/json' -d '{body}'",
            self.path
        );
        (string, hash, curl)
    }

    fn html(&self, consumer: &Consumer, base_url: &str) -> String {
        let (string, hash, curl) = self.signed(consumer, base_url);
        let key = self.key;
        format!(
            r#"<article class="example" aria-labelledby="title-{key}">
<h3 id="title-{key}">{title}</h3>
<p class="label">Signierter String</p>
<pre id="string-{key}">{string}</pre>
<p class="label"><code>hash</code> (HMAC-SHA256, hex)</p>
<pre id="hash-{key}">{hash}</pre>
<div class="pre-head"><p class="label">curl</p><button type="button" class="copy" data-copy="example-{key}" aria-label="curl-Befehl „{title}“ kopieren">Kopieren</button></div>
<pre id="example-{key}">{curl}</pre>
</article>"#,
            title = escape_html(self.title),
            string = escape_html(&string),
            hash = escape_html(&hash),
            curl = escape_html(&curl),
        )
    }
}

/// `#000` or `#fff`, whichever contrasts more with the background `#rrggbb`
/// (WCAG relative luminance); black for anything unreadable.
fn text_color_on(background: &str) -> &'static str {
    let channel = |i: usize| {
        background
            .get(i..i + 2)
            .and_then(|hex| u8::from_str_radix(hex, 16).ok())
            .map(|v| {
                let c = f64::from(v) / 255.0;
                if c <= 0.03928 {
                    c / 12.92
                } else {
                    ((c + 0.055) / 1.055).powf(2.4)
                }
            })
    };
    match (
        background.len() == 7 && background.starts_with('#'),
        channel(1),
        channel(3),
        channel(5),
    ) {
        (true, Some(r), Some(g), Some(b)) => {
            let luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b;
            // Contrast with black (L+0.05)/0.05 against white 1.05/(L+0.05).
            if (luminance + 0.05) * (luminance + 0.05) >= 0.05 * 1.05 {
                "#000"
            } else {
                "#fff"
            }
        }
        _ => "#000",
    }
}

/// A call type name as a badge in the type's colour (`#rrggbb` only; an
/// admin's odd value falls back to grey).
fn type_badge(call_type: &crate::domain::model::CallType) -> String {
    let valid = call_type.color.len() == 7
        && call_type.color.starts_with('#')
        && call_type.color[1..].chars().all(|c| c.is_ascii_hexdigit());
    let color = if valid {
        call_type.color.as_str()
    } else {
        "#808080"
    };
    format!(
        r#"<li><span class="badge" style="background:{color};color:{}">{}</span></li>"#,
        text_color_on(color),
        escape_html(&call_type.name)
    )
}

/// The link to the display view of the visitor's scope. In AWS the live
/// socket is another host (the WebSocket API), which the page's cookie does
/// not reach: the display page takes the proof from the fragment (never sent
/// to a server, so never in a log) and hands it to the socket.
fn display_link(consumer: &Consumer) -> String {
    format!(
        "/display#consumer={}&proof={}",
        consumer.id,
        proof(consumer)
    )
}

fn render_page(
    consumer: &Consumer,
    base_url: &str,
    types: &[crate::domain::model::CallType],
) -> String {
    let secret = consumer.secrets.last().map_or("", String::as_str);
    let examples: Vec<String> = EXAMPLES
        .iter()
        .map(|example| example.html(consumer, base_url))
        .collect();
    let (open_string, _, _) = EXAMPLES[0].signed(consumer, base_url);
    let openssl = format!("printf '%s' '{open_string}' | openssl dgst -sha256 -hmac '{secret}'");
    let type_names: Vec<String> = types.iter().map(type_badge).collect();
    with_helpers(include_str!("sandbox_page.html"))
        .replace("{{display_link}}", &escape_html(&display_link(consumer)))
        .replace("{{consumer}}", &escape_html(&consumer.id))
        .replace("{{secret}}", &escape_html(secret))
        .replace("{{base_url}}", &escape_html(base_url))
        .replace("{{call_types}}", &type_names.join(""))
        .replace("{{openssl}}", &escape_html(&openssl))
        .replace("{{examples}}", &examples.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn badge_text_contrasts_with_its_colour() {
        assert_eq!(text_color_on("#ffffff"), "#000");
        assert_eq!(text_color_on("#f1c40f"), "#000");
        assert_eq!(text_color_on("#000000"), "#fff");
        assert_eq!(text_color_on("#2c3e50"), "#fff");
        assert_eq!(text_color_on("nonsense"), "#000");
    }

    #[test]
    fn examples_are_signed_for_the_consumer() {
        let consumer = Consumer {
            id: "6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f".into(),
            name: "t".into(),
            secrets: vec!["my-secret".into()],
            allow_sha1: false,
            created_at: wire_time::now(),
            expires_at: None,
            require_signed_time: false,
        };
        let open = EXAMPLES[0].signed(&consumer, "http://x");
        assert_eq!(
            open.0,
            r#"Zimmer-101.6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f.{"event":"Normalruf","position":"Zimmer 101"}"#
        );
        assert_eq!(open.1, sign_sha256("my-secret", &open.0));
        assert!(open.2.contains(&open.1));
        let multi = EXAMPLES[3].signed(&consumer, "http://x");
        assert!(multi.0.starts_with(".6f1c7d2e-"), "{}", multi.0);
        assert!(!multi.2.contains(r#""target":"Zimmer-101","consumer""#));
    }

    #[test]
    fn the_page_has_the_shared_script_helpers_once_and_every_placeholder_filled() {
        let consumer = new_consumer();
        let html = render_page(
            &consumer,
            "http://x",
            &crate::domain::call_types::default_call_types(),
        );
        assert_eq!(html.matches("function el(").count(), 1);
        assert_eq!(html.matches("function textColorOn(").count(), 1);
        assert!(!html.contains("{{"), "every placeholder filled");
    }
}
