//! The script helpers the pages share, each kept once and filled in where a
//! page's script has its placeholder when the page is rendered, like the
//! pages' other placeholders:
//! - `page_helpers.js` (`{{page_helpers}}`), in all three pages: `el`,
//!   `textColorOn`, `durationText`;
//! - `live_helpers.js` (`{{live_helpers}}`), in the two pages that show calls
//!   live, the display page and the staff page: the token from the URL
//!   fragment, the calls' order and times, the tones, and the live socket
//!   with its watchdog (`liveConnection`).
//!
//! Both hold declarations only and run nothing when loaded. The functions
//! are hoisted, so a page may call them above its placeholder (the class
//! `Unauthorized` is not, but a page needs it only once it reads); the
//! placeholder stays after the script's `"use strict"`, which must remain
//! its first statement. The pages' policies allow their inline script as such
//! (`script-src 'unsafe-inline'`, no hash or nonce), so the filled-in script
//! needs no change of policy.

/// Where a page's `<script>` takes the helpers of all pages.
const PLACEHOLDER: &str = "{{page_helpers}}";

/// The helpers' source.
const SCRIPT: &str = include_str!("assets/page_helpers.js");

/// Where the display page's and the staff page's scripts take theirs.
const LIVE_PLACEHOLDER: &str = "{{live_helpers}}";

/// The live pages' helpers' source.
const LIVE_SCRIPT: &str = include_str!("assets/live_helpers.js");

/// `template` with the helpers in place of the placeholders it has.
pub(crate) fn with_helpers(template: &str) -> String {
    template
        .replace(PLACEHOLDER, SCRIPT)
        .replace(LIVE_PLACEHOLDER, LIVE_SCRIPT)
}

/// `text` safe inside a page's HTML, its attributes too.
pub(crate) fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_page_has_the_placeholder_once_and_the_helpers_only_there() {
        for template in [
            include_str!("assets/display_page.html"),
            include_str!("assets/sandbox_page.html"),
            include_str!("assets/staff_page.html"),
        ] {
            assert_eq!(template.matches(PLACEHOLDER).count(), 1);
            let page = with_helpers(template);
            assert_eq!(page.matches("function el(").count(), 1);
            assert_eq!(page.matches("function textColorOn(").count(), 1);
        }
        assert!(!SCRIPT.contains("{{"), "the helpers hold no placeholder");
    }

    #[test]
    fn the_live_pages_have_the_live_helpers_once_and_the_test_page_not() {
        for template in [
            include_str!("assets/display_page.html"),
            include_str!("assets/staff_page.html"),
        ] {
            assert_eq!(template.matches(LIVE_PLACEHOLDER).count(), 1);
            let page = with_helpers(template);
            for function in [
                "function liveConnection(",
                "function tonePlayer(",
                "function takeFragment(",
                "function byUrgency(",
            ] {
                assert_eq!(page.matches(function).count(), 1, "{function}");
            }
        }
        let sandbox = with_helpers(include_str!("assets/sandbox_page.html"));
        assert!(!sandbox.contains(LIVE_PLACEHOLDER));
        assert!(!sandbox.contains("function liveConnection("));
        assert!(
            !LIVE_SCRIPT.contains("{{"),
            "the helpers hold no placeholder"
        );
    }
}
