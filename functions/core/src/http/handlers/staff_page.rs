//! The staff page (DECISIONS §15): `GET /staff`, an installable web app for
//! the phones of the staff on duty, and what makes it installable: its web
//! app manifest (`/staff/manifest.webmanifest`), its service worker
//! (`/staff/sw.js`, scope `/staff`) and two icons (PNG, 192 and 512 px,
//! drawn offline by `scripts/staff-icons`). The icons travel inside the
//! manifest, the page and the worker as `data:` URLs: a response body here
//! is text ([`ApiResponse`]), and a URL of their own would add two routes
//! for 9 KB that every install reads once anyway.
//!
//! Like the display page ([`super::display_page`]) the page holds no
//! secret: the staff token arrives in the URL fragment (`/staff#token=…`,
//! the link of DECISIONS §14) and stays in the browser's storage; the page
//! hands it to its service worker through IndexedDB, so that a
//! notification's "Annehmen" and "Ablehnen" can answer while no page is
//! open. It reads `/api/v1/staff/me` and `/api/v1/staff/calls`, listens on
//! the displays' live socket with the staff token (DECISIONS §14: the
//! displays' messages of the scope plus `call.alert`, `call.cancelled` and
//! `call.declined`), and registers the browser's Web Push subscription
//! (`/api/v1/staff/push-key`, `/api/v1/staff/push-subscriptions`).
//!
//! All three are served in both modes and need no credentials: what the
//! page reads does.

use http::header;

use crate::app::AppState;
use crate::http::error::ApiError;
use crate::http::handlers::display_page::page_policy;
use crate::http::io::{ApiRequest, ApiResponse};
use crate::http::page_helpers::{escape_html, with_helpers};

/// The service worker's scope: the page's own path, which is not below the
/// script's folder (`/staff/`), hence `Service-Worker-Allowed`.
pub(crate) const SCOPE: &str = "/staff";

/// The icons, made by `scripts/staff-icons` (PNG, RGB).
const ICON_192: &[u8] = include_bytes!("../assets/staff_icon_192.png");
const ICON_512: &[u8] = include_bytes!("../assets/staff_icon_512.png");

/// `png` as a `data:` URL.
fn data_url(png: &[u8]) -> String {
    use base64::Engine as _;
    format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(png)
    )
}

/// The display page's policy, plus the app's own manifest and service
/// worker (`default-src 'none'` would refuse both).
fn staff_policy(live_url: Option<&str>) -> String {
    format!(
        "{}; manifest-src 'self'; worker-src 'self'",
        page_policy(live_url)
    )
}

/// The service worker's own policy: it only posts responses to its origin
/// and shows the app's icon.
const WORKER_POLICY: &str = "default-src 'none'; connect-src 'self'; img-src 'self' data:";

/// The staff token in IndexedDB, for the service worker: the page writes
/// it, the worker reads it; filled into both, so that they agree on the
/// database.
const TOKEN_DB_PART: (&str, &str) = (
    "{{staff_token_db_js}}",
    include_str!("../assets/staff_token_db.js"),
);

/// The page's script, in the order its parts build on each other
/// (staff_state.js says what each holds); the helpers it shares with the
/// other pages are filled in by [`with_helpers`].
const SCRIPT_PARTS: [(&str, &str); 6] = [
    (
        "{{staff_state_js}}",
        include_str!("../assets/staff_state.js"),
    ),
    TOKEN_DB_PART,
    ("{{staff_view_js}}", include_str!("../assets/staff_view.js")),
    (
        "{{staff_alerting_js}}",
        include_str!("../assets/staff_alerting.js"),
    ),
    ("{{staff_test_js}}", include_str!("../assets/staff_test.js")),
    (
        "{{staff_connection_js}}",
        include_str!("../assets/staff_connection.js"),
    ),
];

fn render(live_url: Option<&str>) -> String {
    let page = SCRIPT_PARTS.iter().fold(
        include_str!("../assets/staff_page.html").to_string(),
        |page, (placeholder, script)| page.replace(placeholder, script),
    );
    with_helpers(&page)
        .replace("{{live_url}}", &escape_html(live_url.unwrap_or("")))
        .replace("{{icon_192}}", &data_url(ICON_192))
}

fn worker() -> String {
    let (placeholder, script) = TOKEN_DB_PART;
    include_str!("../assets/staff_sw.js")
        .replace(placeholder, script)
        .replace("{{icon_192}}", &data_url(ICON_192))
}

/// The manifest: a standalone portrait app, started at `/staff` (the token
/// is in the storage by then, never in the manifest).
fn manifest() -> String {
    serde_json::json!({
        "name": "Rufe – Personal",
        "short_name": "Rufe",
        "description": "Die Rufe, die Sie alarmieren, annehmen oder ablehnen; Ihr Dienst.",
        "lang": "de",
        "dir": "ltr",
        "id": SCOPE,
        "start_url": SCOPE,
        "scope": SCOPE,
        "display": "standalone",
        "orientation": "portrait",
        "background_color": "#101418",
        "theme_color": "#101418",
        "icons": [
            // The bell keeps to the central circle: also `maskable`.
            { "src": data_url(ICON_192), "sizes": "192x192", "type": "image/png", "purpose": "any maskable" },
            { "src": data_url(ICON_512), "sizes": "512x512", "type": "image/png", "purpose": "any maskable" }
        ]
    })
    .to_string()
}

fn builder(content_type: &str) -> http::response::Builder {
    http::Response::builder()
        .status(200)
        .header(header::CONTENT_TYPE, content_type)
        .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff")
}

/// `GET /staff`.
pub(crate) async fn page(state: &AppState, _request: &ApiRequest) -> Result<ApiResponse, ApiError> {
    let live_url = state.settings.live_url.as_deref();
    Ok(builder("text/html; charset=utf-8")
        .header(header::CACHE_CONTROL, "no-store")
        .header(header::CONTENT_SECURITY_POLICY, staff_policy(live_url))
        // The live socket's URL carries the token: no referrer.
        .header(header::REFERRER_POLICY, "no-referrer")
        .body(render(live_url))
        .expect("valid response"))
}

/// `GET /staff/manifest.webmanifest`.
pub(crate) async fn manifest_file(
    _state: &AppState,
    _request: &ApiRequest,
) -> Result<ApiResponse, ApiError> {
    Ok(builder("application/manifest+json")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(manifest())
        .expect("valid response"))
}

/// `GET /staff/sw.js`: revalidated on every check (`no-cache`), so that a
/// new version reaches the phones with the next page load.
pub(crate) async fn service_worker(
    _state: &AppState,
    _request: &ApiRequest,
) -> Result<ApiResponse, ApiError> {
    Ok(builder("text/javascript; charset=utf-8")
        .header(header::CACHE_CONTROL, "no-cache")
        .header(header::CONTENT_SECURITY_POLICY, WORKER_POLICY)
        .header("service-worker-allowed", SCOPE)
        .body(worker())
        .expect("valid response"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_is_the_display_page_s_plus_manifest_and_worker() {
        assert_eq!(
            staff_policy(None),
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
             connect-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; \
             frame-ancestors 'none'; manifest-src 'self'; worker-src 'self'"
        );
        assert!(
            staff_policy(Some("wss://abc.example/live"))
                .contains("connect-src 'self' wss://abc.example;")
        );
    }

    #[test]
    fn the_page_is_filled_in_and_names_no_other_host() {
        let html = render(Some("wss://h/live?a=1&b=2"));
        assert!(html.contains(r#"<meta name="live-url" content="wss://h/live?a=1&amp;b=2">"#));
        let html = render(None);
        assert!(!html.contains("{{"), "every placeholder filled");
        assert_eq!(html.matches("function durationText(").count(), 1);
        assert!(!worker().contains("{{"));
        for text in [html.as_str(), &worker()] {
            assert_eq!(
                text.matches("function openDb(").count(),
                1,
                "the token's database once"
            );
        }
        for text in [html.as_str(), &worker(), &manifest()] {
            for external in ["http://", "https://", "src=\"//", "href=\"//"] {
                assert!(!text.contains(external), "names another host: {external}");
            }
        }
    }

    #[test]
    fn the_manifest_is_json_with_both_icons_inside_the_scope() {
        let manifest: serde_json::Value = serde_json::from_str(&manifest()).expect("JSON");
        assert_eq!(manifest["start_url"], SCOPE);
        assert_eq!(manifest["scope"], SCOPE);
        assert_eq!(manifest["display"], "standalone");
        let sizes: Vec<&str> = manifest["icons"]
            .as_array()
            .expect("icons")
            .iter()
            .map(|icon| icon["sizes"].as_str().expect("sizes"))
            .collect();
        assert!(sizes.contains(&"192x192") && sizes.contains(&"512x512"));
    }

    #[test]
    fn the_icons_are_pngs_of_their_size() {
        for (png, size) in [(ICON_192, 192u32), (ICON_512, 512)] {
            assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
            assert_eq!(&png[12..16], b"IHDR");
            let width = u32::from_be_bytes(png[16..20].try_into().expect("4 bytes"));
            let height = u32::from_be_bytes(png[20..24].try_into().expect("4 bytes"));
            assert_eq!((width, height), (size, size));
        }
    }
}
