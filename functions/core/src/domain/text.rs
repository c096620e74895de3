//! A line of text the service keeps and displays show: an address, a
//! position, a section, an element's code and name, the name of a call type,
//! a consumer, a display or a person. At most [`MAX_TEXT_CHARS`] characters
//! and no control characters (Unicode Cc: `\u0000`–`\u001f`, DEL, C1) nor
//! invisible format characters (Unicode Cf: the right-to-left override
//! U+202E, the zero-width space U+200B, the soft hyphen…): it is one line on
//! a display, and `"A\u0000"` or `"A\u200b"` must not be a second element,
//! section or person that looks like `"A"`, nor `"\u202eA B"` a name shown
//! backwards (DECISIONS §20, issue 46).
//!
//! The API refuses such request fields with a 422 (`request::validation`);
//! the admin command refuses such input with [`admin_text`], which also trims
//! it and refuses it blank, so that an admin stores nothing a request could
//! not name.

use icu_properties::CodePointMapData;
use icu_properties::props::GeneralCategory;

/// The most characters a text field (position, section, code, address…) may have.
pub const MAX_TEXT_CHARS: usize = 255;

/// Whether `text` has a control character (Unicode Cc) or an invisible
/// format character (Unicode Cf), which no kept text may have.
pub fn has_control_characters(text: &str) -> bool {
    let categories = CodePointMapData::<GeneralCategory>::new();
    text.chars()
        .any(|c| c.is_control() || categories.get(c) == GeneralCategory::Format)
}

/// Text an admin enters (a name, a code, a section, an address), trimmed; or,
/// when it is blank, longer than [`MAX_TEXT_CHARS`] characters or has a
/// control character, the message saying so, which names `field` as the admin
/// knows it (`--name`, or a CSV column such as `code`).
pub fn admin_text(field: &str, text: &str) -> Result<String, String> {
    let text = text.trim();
    if text.is_empty() {
        Err(format!("{field} is empty"))
    } else if text.chars().count() > MAX_TEXT_CHARS {
        Err(format!(
            "{field} is longer than {MAX_TEXT_CHARS} characters"
        ))
    } else if has_control_characters(text) {
        // The API refuses such text (422), so no request could name it.
        Err(format!("{field} contains a control character"))
    } else {
        Ok(text.to_string())
    }
}

/// [`admin_text`] for a field that may be left empty (a call type's internal
/// name or sound): blank text is `""`, anything else is checked.
pub fn optional_admin_text(field: &str, text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        Ok(String::new())
    } else {
        admin_text(field, text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_text_is_trimmed_and_refused_blank_long_or_with_control_characters() {
        assert_eq!(admin_text("--name", "  Flur 1 ").unwrap(), "Flur 1");
        assert_eq!(admin_text("--name", " \t").unwrap_err(), "--name is empty");
        let long = "x".repeat(MAX_TEXT_CHARS + 1);
        assert_eq!(
            admin_text("code", &long).unwrap_err(),
            "code is longer than 255 characters"
        );
        assert!(admin_text("code", &format!(" {} ", "x".repeat(MAX_TEXT_CHARS))).is_ok());
        for control in [
            "A\u{0}1",
            "A\u{7}",
            "A\u{1b}[2J",
            "A\u{7f}",
            "A\u{85}B",
            "A\nB",
        ] {
            assert_eq!(
                admin_text("--section", control).unwrap_err(),
                "--section contains a control character",
                "{control:?}"
            );
        }
        assert_eq!(
            admin_text("name", "Zimmer 101, Bett 1 – Süd").unwrap(),
            "Zimmer 101, Bett 1 – Süd"
        );
        for hidden in [
            "A\u{200b}",
            "\u{202e}Anna",
            "B\u{ad}C",
            "\u{feff}A",
            "A\u{2066}B",
        ] {
            assert_eq!(
                admin_text("--name", hidden).unwrap_err(),
                "--name contains a control character",
                "{hidden:?}"
            );
        }
        // Letters, umlauts, marks and emoji without joiners stay.
        assert!(!has_control_characters("Zoë Ünal-Çelik 👩 Bereich 2A"));
    }

    #[test]
    fn optional_admin_text_may_be_blank_but_not_broken() {
        assert_eq!(optional_admin_text("--internal-name", " ").unwrap(), "");
        assert_eq!(
            optional_admin_text("--internal-name", " WC ").unwrap(),
            "WC"
        );
        assert_eq!(
            optional_admin_text("--notification-sound", "a\u{1}.mp3").unwrap_err(),
            "--notification-sound contains a control character"
        );
    }
}
