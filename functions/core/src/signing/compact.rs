//! `data_json` of the signing string (DECISIONS §2): the raw text of `data` as
//! sent, with every whitespace character outside strings removed and nothing
//! else changed. Key order, escapes (`\/`, `\u00e4`) and number spelling
//! (`80.0`, `1e2`) stay byte for byte, so whatever serialiser the client signed
//! with verifies as long as the body carries that serialisation.

/// Removes JSON whitespace (space, tab, line feed, carriage return) outside
/// string literals. The input is assumed to be JSON text already checked by
/// the parser; on other input it still never panics.
///
/// Works on bytes, skips string literals in one go and copies the runs
/// between whitespace whole: every byte it looks for is ASCII, which never
/// occurs inside a multi-byte UTF-8 character, so each cut falls on a
/// character boundary.
pub fn compact_json(raw: &str) -> String {
    let bytes = raw.as_bytes();
    let mut out = String::with_capacity(raw.len());
    // Start of the run not yet copied.
    let mut run = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                // To the closing quote; an escaped character is skipped with
                // its backslash.
                i += 1;
                while i < bytes.len() {
                    match bytes[i] {
                        b'\\' => i += 2,
                        b'"' => break,
                        _ => i += 1,
                    }
                }
            }
            b' ' | b'\t' | b'\n' | b'\r' => {
                out.push_str(&raw[run..i]);
                run = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    out.push_str(&raw[run..]);
    out
}

#[cfg(test)]
mod tests {
    use super::compact_json;
    use proptest::prelude::*;

    #[test]
    fn removes_whitespace_outside_strings_only() {
        let raw = "{\n  \"event\" : \"Normal ruf\",\t\"n\": [1, 2 ]\r\n}";
        assert_eq!(compact_json(raw), r#"{"event":"Normal ruf","n":[1,2]}"#);
    }

    #[test]
    fn keeps_escapes_and_number_spelling() {
        let raw = r#"{ "p": "Zimmer 1\/2", "u": "\u00e4 \"q\" \\", "b": 80.0, "e": 1e2 }"#;
        assert_eq!(
            compact_json(raw),
            r#"{"p":"Zimmer 1\/2","u":"\u00e4 \"q\" \\","b":80.0,"e":1e2}"#
        );
    }

    #[test]
    fn keeps_raw_utf8() {
        assert_eq!(
            compact_json("{ \"e\": \"Störung\" }"),
            "{\"e\":\"Störung\"}"
        );
    }

    /// The rule spelled out one character at a time (the first implementation).
    fn by_characters(raw: &str) -> String {
        let mut out = String::new();
        let mut in_string = false;
        let mut escaped = false;
        for c in raw.chars() {
            if in_string {
                out.push(c);
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == '"' {
                    in_string = false;
                }
            } else {
                match c {
                    ' ' | '\t' | '\n' | '\r' => {}
                    '"' => {
                        in_string = true;
                        out.push(c);
                    }
                    _ => out.push(c),
                }
            }
        }
        out
    }

    fn json_value() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::Bool),
            any::<i64>().prop_map(|n| serde_json::json!(n)),
            (-1.0e12f64..1.0e12).prop_map(|n| serde_json::json!(n)),
            ".*".prop_map(serde_json::Value::String),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(serde_json::Value::Array),
                prop::collection::vec((".*", inner), 0..8)
                    .prop_map(|pairs| serde_json::Value::Object(pairs.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn compaction_of_pretty_json_equals_compact_serialisation(value in json_value()) {
            let pretty = serde_json::to_string_pretty(&value).unwrap();
            let compact = serde_json::to_string(&value).unwrap();
            prop_assert_eq!(compact_json(&pretty), compact);
        }

        #[test]
        fn never_panics(text in ".*") {
            let _ = compact_json(&text);
        }

        #[test]
        fn same_as_the_character_by_character_definition(text in r#"[ \t\r\n"\\{}:,a-zä€😀]{0,64}"#) {
            prop_assert_eq!(compact_json(&text), by_characters(&text));
        }
    }
}
