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
        let raw: RawObject<'_> = serde_json::from_str(body).map_err(describe)?;
        let mut fields = Map::new();
        let mut data_raw = None;
        for (key, raw_value) in raw.0 {
            let value = parse_strict(raw_value.get()).map_err(describe)?;
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

fn describe(error: serde_json::Error) -> Malformed {
    let what = match error.classify() {
        serde_json::error::Category::Eof => "ist unvollständig".to_string(),
        serde_json::error::Category::Syntax => "ist kein gültiges JSON".to_string(),
        serde_json::error::Category::Data => format!("ist nicht verwendbar ({error})"),
        serde_json::error::Category::Io => "konnte nicht gelesen werden".to_string(),
    };
    Malformed(format!(
        "Der Anfragekörper {what} (Zeile {}, Spalte {}). Erwartet wird ein JSON-Objekt.",
        error.line(),
        error.column()
    ))
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
                        return Err(de::Error::custom(format_args!("duplicate key {key:?}")));
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
                return Err(de::Error::custom(format_args!("duplicate key {key:?}")));
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

    #[test]
    fn deep_nesting_is_malformed_not_a_crash() {
        let deep = format!("{{\"data\":{}{}}}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(Envelope::parse(&deep).is_err());
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
