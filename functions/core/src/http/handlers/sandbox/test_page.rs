//! The test page (spec 5.3): the visitor's pair, ready-to-run signed
//! examples with their curl commands, the call types, the link to the
//! display page; rendered from `sandbox_page.html` with the shared helpers.

use http::{HeaderMap, header};

use crate::domain::model::Consumer;
use crate::http::auth::proof;
use crate::http::page_helpers::{escape_html, with_helpers};
use crate::signing::signature::{sign_sha256, signing_string};

/// The page's inline style and script talk to this origin only.
pub(super) const PAGE_POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; \
    style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; form-action 'self'; \
    base-uri 'none'; frame-ancestors 'none'";

pub(super) fn base_url(headers: &HeaderMap, https: bool) -> String {
    let host = headers
        .get("x-forwarded-host")
        .or_else(|| headers.get(header::HOST))
        .and_then(|v| v.to_str().ok())
        .unwrap_or("127.0.0.1:3000");
    format!("{}://{host}", if https { "https" } else { "http" })
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

pub(super) fn render_page(
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
    with_helpers(include_str!("../../assets/sandbox_page.html"))
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
    use crate::clock;
    use crate::http::handlers::sandbox::new_sandbox_consumer;

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
            created_at: clock::now(),
            expires_at: None,
            require_signed_time: false,
            heartbeat_seconds: None,
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
        let consumer = new_sandbox_consumer();
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
