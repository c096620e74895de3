//! The script helpers the pages use (`el`, `textColorOn`, `durationText`), kept once in
//! `page_helpers.js` and filled in where a page's script has the placeholder
//! when the page is rendered, like the pages' other placeholders. The pages'
//! policies allow their inline script as such (`script-src 'unsafe-inline'`,
//! no hash or nonce), so the filled-in script needs no change of policy.

/// Where a page's `<script>` takes the helpers.
const PLACEHOLDER: &str = "{{page_helpers}}";

/// The helpers' source.
const SCRIPT: &str = include_str!("page_helpers.js");

/// `template` with the helpers in place of the placeholder.
pub(crate) fn with_helpers(template: &str) -> String {
    template.replace(PLACEHOLDER, SCRIPT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_page_has_the_placeholder_once_and_the_helpers_only_there() {
        for template in [
            include_str!("display_page.html"),
            include_str!("sandbox_page.html"),
            include_str!("staff_page.html"),
        ] {
            assert_eq!(template.matches(PLACEHOLDER).count(), 1);
            let page = with_helpers(template);
            assert_eq!(page.matches("function el(").count(), 1);
            assert_eq!(page.matches("function textColorOn(").count(), 1);
        }
        assert!(!SCRIPT.contains("{{"), "the helpers hold no placeholder");
    }
}
