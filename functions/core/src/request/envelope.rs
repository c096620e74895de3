//! The request envelope (spec 2.1): a JSON object whose `data` is kept as the
//! raw text the client sent, because that text (compacted) is what was signed.
//!
//! Parsing is strict where leniency would let a body mean two things: a key
//! that appears twice in the envelope or anywhere inside `data` makes the body
//! malformed (one parser could take the first value and another the last).

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// Why a body is not a usable JSON object (400 `malformed_request`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed(pub String);

/// A parsed envelope: every top-level field as a value, and `data` also as raw text.
#[derive(Debug)]
pub struct Envelope {
    fields: Map<String, Value>,
    data_raw: Option<String>,
}

impl Envelope {
    /// Parses a body that is already known to be UTF-8.
    pub fn parse(body: &str) -> Result<Self, Malformed> {
        let raw: RawObject<'_> =
            serde_json::from_str(body).map_err(|error| describe(&error, Origin::START))?;
        let mut fields = Map::new();
        let mut data_raw = None;
        for (key, raw_value) in raw.0 {
            let value = parse_strict(raw_value.get())
                .map_err(|error| describe(&error, Origin::of(body, raw_value.get())))?;
            if key == "data" {
                data_raw = Some(raw_value.get().to_string());
            }
            fields.insert(key, value);
        }
        Ok(Envelope { fields, data_raw })
    }

    /// A top-level field, `None` when absent.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields.get(key)
    }

    /// The raw text of `data` as sent, when present.
    pub fn data_raw(&self) -> Option<&str> {
        self.data_raw.as_deref()
    }
}

/// Where a member's value starts in the body: its errors are reported by
/// serde_json relative to the value, the client needs them in the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Origin {
    /// 1-based line of the value's first byte.
    line: usize,
    /// Bytes before the value's first byte on that line.
    column: usize,
}

impl Origin {
    const START: Origin = Origin { line: 1, column: 0 };

    /// The origin of `value`, a slice borrowed from `body`.
    fn of(body: &str, value: &str) -> Origin {
        let offset = (value.as_ptr() as usize).wrapping_sub(body.as_ptr() as usize);
        let Some(before) = body.get(..offset) else {
            return Origin::START;
        };
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Origin {
            line: 1 + before.matches('\n').count(),
            column: offset - line_start,
        }
    }

    /// serde_json's (line, column) inside the value, as a position in the body.
    fn shift(self, line: usize, column: usize) -> (usize, usize) {
        if line <= 1 {
            (self.line, self.column + column)
        } else {
            (self.line + line - 1, column)
        }
    }
}

/// Prefix of the custom error for a key that appears twice (see [`RawObject`]).
const DUPLICATE_KEY: &str = "duplicate key ";

/// A German explanation of why serde_json refused the body, with the body's
/// line and column (DECISIONS §3: 400 `malformed_request`).
fn describe(error: &serde_json::Error, origin: Origin) -> Malformed {
    use serde_json::error::Category;
    // serde_json's text without its own " at line L column C".
    let full = error.to_string();
    let cause = full
        .rfind(" at line ")
        .map_or(full.as_str(), |at| &full[..at]);
    let (what, hint) = match error.classify() {
        Category::Eof => ("ist unvollständig".to_string(), OBJECT_EXPECTED),
        Category::Io => ("konnte nicht gelesen werden".to_string(), OBJECT_EXPECTED),
        Category::Syntax | Category::Data => classify(cause),
    };
    let (line, mut column) = origin.shift(error.line(), error.column());
    // serde_json reports a raw control character at the byte before it (a
    // 0-based column, where every other error has the 1-based one).
    if cause.starts_with("control character") {
        column += 1;
    }
    Malformed(format!(
        "Der Anfragekörper {what} (Zeile {line}, Spalte {column}). {hint}"
    ))
}

const OBJECT_EXPECTED: &str = "Erwartet wird ein JSON-Objekt.";

/// What is wrong, and a hint, for serde_json's message `cause`.
fn classify(cause: &str) -> (String, &'static str) {
    if let Some(key) = cause.strip_prefix(DUPLICATE_KEY) {
        return (
            format!("enthält den Schlüssel {key} doppelt"),
            "Jeder Schlüssel darf in einem Objekt nur einmal vorkommen.",
        );
    }
    match cause {
        "recursion limit exceeded" => (
            "ist zu tief verschachtelt".to_string(),
            "Erlaubt sind höchstens 128 Ebenen.",
        ),
        "number out of range" => (
            "enthält eine Zahl außerhalb des Wertebereichs".to_string(),
            "Zahlen müssen als 64-Bit-Gleitkommazahl darstellbar sein.",
        ),
        "lone leading surrogate in hex escape"
        | "unexpected end of hex escape"
        | "invalid unicode code point"
        | "invalid escape" => (
            "enthält eine ungültige Escape-Sequenz".to_string(),
            "Ein \\u-Escape muss ein Unicode-Zeichen ergeben (Surrogate nur als Paar).",
        ),
        "control character (\\u0000-\\u001F) found while parsing a string" => (
            "enthält ein Steuerzeichen in einer Zeichenkette".to_string(),
            "Steuerzeichen sind in JSON-Zeichenketten nur als \\u-Escape erlaubt.",
        ),
        "trailing characters" => (
            "enthält nach dem JSON-Objekt weitere Zeichen".to_string(),
            "Erwartet wird genau ein JSON-Objekt.",
        ),
        _ if cause.starts_with("invalid type: ") => {
            ("ist kein JSON-Objekt".to_string(), OBJECT_EXPECTED)
        }
        _ => ("ist kein gültiges JSON".to_string(), OBJECT_EXPECTED),
    }
}

/// The top-level object, borrowed from the body, keys in order, no duplicates.
struct RawObject<'a>(Vec<(String, &'a RawValue)>);

impl<'de> serde::Deserialize<'de> for RawObject<'de> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor;
        impl<'de> Visitor<'de> for ObjectVisitor {
            type Value = RawObject<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries: Vec<(String, &'de RawValue)> = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    if entries.iter().any(|(k, _)| *k == key) {
                        return Err(duplicate_key(&key));
                    }
                    let value: &'de RawValue = map.next_value()?;
                    entries.push((key, value));
                }
                Ok(RawObject(entries))
            }
        }
        deserializer.deserialize_map(ObjectVisitor)
    }
}

/// The error for a key seen twice: the key as a JSON string, cut after 64
/// characters (a body may carry a key of 200 KiB).
fn duplicate_key<E: de::Error>(key: &str) -> E {
    const SHOWN: usize = 64;
    let shown: String = key.chars().take(SHOWN).collect();
    let quoted = serde_json::to_string(&shown).unwrap_or_default();
    let cut = if key.chars().count() > SHOWN {
        "…"
    } else {
        ""
    };
    E::custom(format_args!("{DUPLICATE_KEY}{quoted}{cut}"))
}

/// Parses JSON text into a [`Value`], rejecting duplicate keys at any depth.
/// Numbers that do not fit an f64 (`1e400`) and lone surrogate escapes fail too.
pub fn parse_strict(text: &str) -> Result<Value, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = StrictValue.deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

struct StrictValue;

impl<'de> DeserializeSeed<'de> for StrictValue {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictValue {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("number out of range"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(StrictValue)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(duplicate_key(&key));
            }
            let value = map.next_value_seed(StrictValue)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_data_as_sent() {
        let body = "{\"target\":\"A\",\"data\": { \"event\" : \"Notruf\" , \"p\":\"a\\/b\" } }";
        let envelope = Envelope::parse(body).unwrap();
        assert_eq!(
            envelope.data_raw(),
            Some("{ \"event\" : \"Notruf\" , \"p\":\"a\\/b\" }")
        );
        assert_eq!(envelope.get("target"), Some(&Value::from("A")));
    }

    #[test]
    fn rejects_what_is_not_one_unambiguous_object() {
        for bad in [
            "",
            "[]",
            "\"x\"",
            "{",
            "{\"a\":1,\"a\":2}",
            "{\"data\":{\"x\":1,\"x\":2}}",
            "{\"data\":{\"x\":[{\"y\":1,\"y\":1}]}}",
            "{\"data\":{\"battery\":1e400}}",
            "{\"target\":\"\\ud800\"}",
            "{} {}",
        ] {
            assert!(Envelope::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    fn message(body: &str) -> String {
        Envelope::parse(body).expect_err("malformed").0
    }

    #[test]
    fn messages_are_german_and_point_into_the_body() {
        assert_eq!(
            message(""),
            "Der Anfragekörper ist unvollständig (Zeile 1, Spalte 0). Erwartet wird ein JSON-Objekt."
        );
        assert_eq!(
            message("[]"),
            "Der Anfragekörper ist kein JSON-Objekt (Zeile 1, Spalte 0). Erwartet wird ein JSON-Objekt."
        );
        // Inside `data` (parsed on its own), the position is still the body's.
        assert_eq!(
            message("{\"a\":1,\n  \"data\": {\"e\":1,\"e\":2}}"),
            "Der Anfragekörper enthält den Schlüssel \"e\" doppelt (Zeile 2, Spalte 20). \
             Jeder Schlüssel darf in einem Objekt nur einmal vorkommen."
        );
        assert_eq!(
            message("{\"data\":{\"b\":1e400}}"),
            "Der Anfragekörper enthält eine Zahl außerhalb des Wertebereichs (Zeile 1, Spalte 18). \
             Zahlen müssen als 64-Bit-Gleitkommazahl darstellbar sein."
        );
        assert_eq!(
            message("{\"t\":\"\\ud800\"}"),
            "Der Anfragekörper enthält eine ungültige Escape-Sequenz (Zeile 1, Spalte 13). \
             Ein \\u-Escape muss ein Unicode-Zeichen ergeben (Surrogate nur als Paar)."
        );
        assert_eq!(
            message("{\"t\":\"a\u{0}\"}"),
            "Der Anfragekörper enthält ein Steuerzeichen in einer Zeichenkette (Zeile 1, Spalte 8). \
             Steuerzeichen sind in JSON-Zeichenketten nur als \\u-Escape erlaubt."
        );
        assert_eq!(
            message("{} {}"),
            "Der Anfragekörper enthält nach dem JSON-Objekt weitere Zeichen (Zeile 1, Spalte 4). \
             Erwartet wird genau ein JSON-Objekt."
        );
        let long_key = "k".repeat(100);
        assert!(
            message(&format!("{{\"{long_key}\":1,\"{long_key}\":2}}"))
                .contains(&format!("den Schlüssel \"{}\"… doppelt", "k".repeat(64)))
        );
    }

    #[test]
    fn deep_nesting_is_malformed_not_a_crash() {
        let deep = format!("{{\"data\":{}{}}}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(message(&deep).starts_with("Der Anfragekörper ist zu tief verschachtelt"));
    }

    proptest::proptest! {
        #[test]
        fn parsing_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            if let Ok(text) = std::str::from_utf8(&bytes) {
                let _ = Envelope::parse(text);
            }
            let _ = Envelope::parse(&String::from_utf8_lossy(&bytes));
        }

        #[test]
        fn parsing_json_like_text_never_panics(text in r#"[\{\}\[\]":,0-9a-z\\ .eE+-]{0,200}"#) {
            let _ = Envelope::parse(&text);
        }
    }
}
