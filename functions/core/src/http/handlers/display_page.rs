//! The display page (DECISIONS §11): `GET /display`, a full-screen view of the
//! open calls for corridor and station screens. One HTML file with its style
//! and script inline (filled in: the helpers it shares with the test page
//! and the staff page, [`crate::http::page_helpers`], durations among them;
//! those it shares with the staff page alone, the live socket with its
//! watchdog, the tones and the token from the fragment; and its layout
//! script `display_layout.js`: tiles sharing the screen, the clock); it reads `/api/v1/display/calls` and
//! `/api/v1/display/elements`, and listens on the live socket.
//!
//! The page holds no secret: its token arrives in the URL fragment (never sent
//! to a server) and stays in the browser's storage; in sandbox mode the test
//! page's cookie stands in for it. The only thing the server fills in is where
//! the live socket is (`DISPLAY_LIVE_URL`, else the same origin).

use http::header;

use crate::app::AppState;
use crate::config::live_url_origin;
use crate::http::error::ApiError;
use crate::http::io::{ApiRequest, ApiResponse};
use crate::http::page_helpers::{escape_html, with_helpers};

/// The test page's policy, plus the live socket's origin when it is elsewhere
/// (the WebSocket API of an AWS stack). Web Audio needs no media source.
pub(crate) fn page_policy(live_url: Option<&str>) -> String {
    let live = live_url
        .map(|url| format!(" {}", live_url_origin(url)))
        .unwrap_or_default();
    format!(
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
         connect-src 'self'{live}; img-src 'self' data:; form-action 'self'; \
         base-uri 'none'; frame-ancestors 'none'"
    )
}

/// The page's layout, durations and clock, kept apart from the page's
/// connection logic (`display_layout.js`), filled in like the shared helpers.
const LAYOUT_SCRIPT: &str = include_str!("../assets/display_layout.js");

/// The page with its settings: the live socket's URL (empty: this host's)
/// and `RECEIPT_SECONDS` (after which an alert without receipt is "nicht
/// erreicht" on the tiles, §18).
fn render(live_url: Option<&str>, receipt_seconds: i64) -> String {
    with_helpers(include_str!("../assets/display_page.html"))
        .replace("{{display_layout}}", LAYOUT_SCRIPT)
        .replace("{{live_url}}", &escape_html(live_url.unwrap_or("")))
        .replace("{{receipt_seconds}}", &receipt_seconds.to_string())
}

/// `GET /display`, in both modes: the page itself needs no credentials; what
/// it reads does.
pub(crate) async fn page(state: &AppState, _request: &ApiRequest) -> Result<ApiResponse, ApiError> {
    let live_url = state.settings.live_url.as_deref();
    Ok(http::Response::builder()
        .status(200)
        .header(header::CONTENT_TYPE, "text/html; charset=utf-8")
        .header(header::CACHE_CONTROL, "no-store")
        .header(header::CONTENT_SECURITY_POLICY, page_policy(live_url))
        .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff")
        // The page's own requests carry no token in the URL, but the live
        // socket's does: no referrer, so it cannot leak through a link.
        .header(header::REFERRER_POLICY, "no-referrer")
        .body(render(live_url, state.settings.staff.receipt_seconds))
        .expect("valid response"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_live_socket_elsewhere_is_allowed_by_the_policy() {
        assert!(page_policy(None).contains("connect-src 'self';"));
        let policy = page_policy(Some(
            "wss://abc.execute-api.eu-central-1.amazonaws.com/live",
        ));
        assert!(
            policy.contains("connect-src 'self' wss://abc.execute-api.eu-central-1.amazonaws.com;"),
            "{policy}"
        );
    }

    #[test]
    fn the_live_url_is_handed_to_the_page_escaped() {
        let html = render(Some("wss://h/live?a=1&b=2"), 30);
        assert!(
            html.contains(r#"<meta name="live-url" content="wss://h/live?a=1&amp;b=2">"#),
            "the meta tag"
        );
        assert!(render(None, 30).contains(r#"<meta name="live-url" content="">"#));
        assert!(!render(None, 30).contains("{{"), "every placeholder filled");
    }

    #[test]
    fn the_page_has_the_shared_script_helpers_once() {
        let html = render(None, 30);
        assert_eq!(html.matches("function el(").count(), 1);
        assert_eq!(html.matches("function textColorOn(").count(), 1);
        assert_eq!(html.matches("function fit(").count(), 1);
        assert_eq!(html.matches("function durationText(").count(), 1);
        assert_eq!(html.matches("function liveConnection(").count(), 1);
    }
}
