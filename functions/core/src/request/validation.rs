//! Field validation (spec 7.1, DECISIONS §3): all errors of a request at once,
//! keyed Laravel style (`address`, `data.event`, `data.0.battery`), with German
//! messages in Laravel's voice.

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use crate::domain::text::{MAX_TEXT_CHARS, has_control_characters};
use crate::domain::wire_time;

/// Field errors in the order they were found; serialises as the `errors` object.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FieldErrors(Vec<(String, Vec<String>)>);

impl FieldErrors {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, key: &str, message: String) {
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some((_, messages)) => messages.push(message),
            None => self.0.push((key.to_string(), vec![message])),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(k, _)| k.as_str())
    }

    pub fn extend(&mut self, other: FieldErrors) {
        for (key, messages) in other.0 {
            for message in messages {
                self.add(&key, message);
            }
        }
    }

    /// `Ok(value)` when nothing was found, else the errors.
    pub fn into_result<T>(self, value: T) -> Result<T, FieldErrors> {
        if self.is_empty() {
            Ok(value)
        } else {
            Err(self)
        }
    }
}

impl Serialize for FieldErrors {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, messages) in &self.0 {
            map.serialize_entry(key, messages)?;
        }
        map.end()
    }
}

/// The message texts. `key` is the field key as it appears in `errors`.
pub(crate) mod message {
    pub(crate) fn required(key: &str) -> String {
        format!("{key} muss ausgefüllt werden.")
    }
    pub(crate) fn event_required(key: &str) -> String {
        format!("{key} muss ausgefüllt werden, wenn data.closed nicht true ist.")
    }
    pub(crate) fn invalid_choice(key: &str) -> String {
        format!("Der gewählte Wert für {key} ist ungültig.")
    }
    pub(crate) fn ambiguous_choice(key: &str) -> String {
        format!("Der gewählte Wert für {key} ist nicht eindeutig.")
    }
    pub(crate) fn string(key: &str) -> String {
        format!("{key} muss eine Zeichenkette sein.")
    }
    pub(crate) fn max_chars(key: &str, max: usize) -> String {
        format!("{key} darf maximal {max} Zeichen haben.")
    }
    pub(crate) fn no_control_characters(key: &str) -> String {
        format!("{key} darf keine Steuerzeichen enthalten.")
    }
    pub(crate) fn uuid(key: &str) -> String {
        format!("{key} muss ein UUID sein.")
    }
    pub(crate) fn integer(key: &str) -> String {
        format!("{key} muss eine ganze Zahl sein.")
    }
    pub(crate) fn number(key: &str) -> String {
        format!("{key} muss eine Zahl sein.")
    }
    pub(crate) fn between(key: &str, min: u32, max: u32) -> String {
        format!("{key} muss zwischen {min} und {max} liegen.")
    }
    pub(crate) fn boolean(key: &str) -> String {
        format!("{key} muss wahr oder falsch sein.")
    }
    pub(crate) fn time_between(key: &str, earliest: &str, latest: &str) -> String {
        format!("{key} muss zwischen {earliest} und {latest} liegen.")
    }
    pub(crate) fn date_format(key: &str) -> String {
        format!("{key} muss dem Format Y-m-d H:i:s entsprechen.")
    }
    pub(crate) fn object(key: &str) -> String {
        format!("{key} muss ein Objekt sein.")
    }
    pub(crate) fn object_or_array(key: &str) -> String {
        format!("{key} muss ein Objekt oder ein Array sein.")
    }
    pub(crate) fn min_items(key: &str, min: usize) -> String {
        format!("{key} muss mindestens {min} Element haben.")
    }
    pub(crate) fn max_items(key: &str, max: usize) -> String {
        format!("{key} darf maximal {max} Elemente haben.")
    }
    pub(crate) fn prohibited_in_multi_form(key: &str) -> String {
        format!("{key} darf im Mehrfachformat nicht angegeben werden.")
    }
}

/// An optional integer (`null` = absent); `1.0` and `"1"` are not integers.
pub(crate) fn optional_integer(
    errors: &mut FieldErrors,
    key: &str,
    value: Option<&Value>,
) -> Option<i64> {
    match present(value) {
        None => None,
        Some(Value::Number(n)) if n.as_i64().is_some() => n.as_i64(),
        Some(_) => {
            errors.add(key, message::integer(key));
            None
        }
    }
}

/// `null` counts as absent, like a missing key, as does a blank string for
/// required fields (Laravel's `required`).
fn present(value: Option<&Value>) -> Option<&Value> {
    value.filter(|v| !v.is_null())
}

/// A required string of at most [`MAX_TEXT_CHARS`] characters, not blank.
pub(crate) fn required_text(
    errors: &mut FieldErrors,
    key: &str,
    value: Option<&Value>,
) -> Option<String> {
    match present(value) {
        None => {
            errors.add(key, message::required(key));
            None
        }
        Some(Value::String(s)) if s.trim().is_empty() => {
            errors.add(key, message::required(key));
            None
        }
        Some(_) => optional_text(errors, key, value),
    }
}

/// An optional string of at most [`MAX_TEXT_CHARS`] characters, without
/// control characters (Unicode Cc: `\u0000`–`\u001f`, DEL, C1): an address
/// or a position is one line of text on a display, and `"A\u0000"` must not
/// be a second element that looks like `"A"`.
pub(crate) fn optional_text(
    errors: &mut FieldErrors,
    key: &str,
    value: Option<&Value>,
) -> Option<String> {
    match present(value)? {
        Value::String(s) if s.chars().count() > MAX_TEXT_CHARS => {
            errors.add(key, message::max_chars(key, MAX_TEXT_CHARS));
            None
        }
        Value::String(s) if has_control_characters(s) => {
            errors.add(key, message::no_control_characters(key));
            None
        }
        Value::String(s) => Some(s.clone()),
        _ => {
            errors.add(key, message::string(key));
            None
        }
    }
}

/// An optional JSON boolean (no `"true"`, no `1`: the spec says boolean).
pub(crate) fn optional_bool(
    errors: &mut FieldErrors,
    key: &str,
    value: Option<&Value>,
) -> Option<bool> {
    match present(value)? {
        Value::Bool(b) => Some(*b),
        _ => {
            errors.add(key, message::boolean(key));
            None
        }
    }
}

/// An optional battery level: a JSON number from 0 to 100 inclusive.
pub(crate) fn optional_battery(
    errors: &mut FieldErrors,
    key: &str,
    value: Option<&Value>,
) -> Option<f64> {
    match present(value)? {
        Value::Number(n) => match n.as_f64() {
            // `+ 0.0` turns -0 into 0, so `-0` is stored and shown as 0.
            Some(level) if (0.0..=100.0).contains(&level) => Some(level + 0.0),
            _ => {
                errors.add(key, message::between(key, 0, 100));
                None
            }
        },
        _ => {
            errors.add(key, message::number(key));
            None
        }
    }
}

/// How far before the service's clock a sent time may lie (DECISIONS §5): a
/// central system may send the calls it buffered during an outage.
pub(crate) const TIME_MAX_PAST: Duration = Duration::days(7);

/// How far after the service's clock a sent time may lie (DECISIONS §5):
/// room for a client's clock running a little ahead, but a call dated in the
/// future would never be closed by a close without `closed_at`.
pub(crate) const TIME_MAX_FUTURE: Duration = Duration::minutes(5);

/// An optional wire time `YYYY-MM-DD HH:MM:SS` in the installation's zone,
/// within [`TIME_MAX_PAST`] before and [`TIME_MAX_FUTURE`] after `now`.
///
/// The range is checked here, in the structure stage (DECISIONS §3 step 2:
/// "ranges"), like battery's 0..100: it needs nothing but the field and the
/// clock, so a request dated 1970 is refused with its other field errors at
/// once and before the signature or the store are looked at. `now` is the
/// caller's: the domain has no clock.
pub(crate) fn optional_time(
    errors: &mut FieldErrors,
    key: &str,
    value: Option<&Value>,
    zone: Tz,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    let time = match present(value)? {
        Value::String(s) => wire_time::parse_local(s, zone),
        _ => None,
    };
    let Some(time) = time else {
        errors.add(key, message::date_format(key));
        return None;
    };
    let (earliest, latest) = (now - TIME_MAX_PAST, now + TIME_MAX_FUTURE);
    if (earliest..=latest).contains(&time) {
        Some(time)
    } else {
        let text = |t| wire_time::format_local(t, zone);
        errors.add(
            key,
            message::time_between(key, &text(earliest), &text(latest)),
        );
        None
    }
}

/// Whether `text` has the canonical UUID shape `8-4-4-4-12` hex digits.
pub fn is_uuid(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn errors_serialise_in_the_order_found() {
        let mut errors = FieldErrors::new();
        errors.add("address", message::required("address"));
        errors.add("data.event", message::event_required("data.event"));
        assert_eq!(
            serde_json::to_string(&errors).unwrap(),
            r#"{"address":["address muss ausgefüllt werden."],"data.event":["data.event muss ausgefüllt werden, wenn data.closed nicht true ist."]}"#
        );
    }

    #[test]
    fn battery_bounds() {
        let mut errors = FieldErrors::new();
        assert_eq!(
            optional_battery(&mut errors, "b", Some(&json!(0))),
            Some(0.0)
        );
        assert_eq!(
            optional_battery(&mut errors, "b", Some(&json!(100))),
            Some(100.0)
        );
        assert_eq!(
            optional_battery(&mut errors, "b", Some(&json!(80.5))),
            Some(80.5)
        );
        assert!(errors.is_empty());
        assert_eq!(
            optional_battery(&mut errors, "b", Some(&json!(100.01))),
            None
        );
        assert_eq!(optional_battery(&mut errors, "b", Some(&json!("80"))), None);
        assert_eq!(
            serde_json::to_value(&errors).unwrap(),
            json!({"b": ["b muss zwischen 0 und 100 liegen.", "b muss eine Zahl sein."]})
        );
    }

    #[test]
    fn text_has_no_control_characters() {
        let mut errors = FieldErrors::new();
        assert_eq!(
            optional_text(&mut errors, "p", Some(&json!("Bett 1 – Fenster ä"))),
            Some("Bett 1 – Fenster ä".to_string())
        );
        for text in ["a\u{0}b", "a\nb", "\t", "a\u{7f}", "a\u{85}"] {
            assert_eq!(optional_text(&mut errors, "p", Some(&json!(text))), None);
        }
        assert_eq!(
            serde_json::to_value(&errors).unwrap(),
            json!({"p": vec!["p darf keine Steuerzeichen enthalten."; 5]})
        );
    }

    #[test]
    fn times_lie_within_a_week_before_and_five_minutes_after_now() {
        let zone: Tz = "Europe/Berlin".parse().unwrap();
        let now = wire_time::parse_local("2026-11-26 12:00:00", zone).unwrap();
        let time = |errors: &mut FieldErrors, text: &str| {
            optional_time(errors, "data.created_at", Some(&json!(text)), zone, now)
        };
        let mut errors = FieldErrors::new();
        // Exactly 7 days before and exactly 5 minutes after are still inside.
        for inside in [
            "2026-11-19 12:00:00",
            "2026-11-26 12:00:00",
            "2026-11-26 12:05:00",
        ] {
            assert_eq!(
                time(&mut errors, inside),
                wire_time::parse_local(inside, zone),
                "{inside}"
            );
        }
        assert!(errors.is_empty());
        for outside in [
            "2026-11-19 11:59:59",
            "2026-11-26 12:05:01",
            "1970-01-01 00:00:00",
            "2099-01-01 00:00:00",
        ] {
            assert_eq!(time(&mut errors, outside), None, "{outside}");
        }
        let expected =
            "data.created_at muss zwischen 2026-11-19 12:00:00 und 2026-11-26 12:05:00 liegen.";
        assert_eq!(
            serde_json::to_value(&errors).unwrap(),
            json!({"data.created_at": vec![expected; 4]})
        );
    }

    #[test]
    fn the_range_is_shown_in_the_installation_zone() {
        // 7 days before a summer-time instant across the autumn clock change:
        // the bounds are instants, each shown as the local clock read then.
        let zone: Tz = "Europe/Berlin".parse().unwrap();
        let now = wire_time::parse_local("2026-10-27 12:00:00", zone).unwrap();
        let mut errors = FieldErrors::new();
        let sent = Some(json!("2026-10-20 12:00:00"));
        assert_eq!(
            optional_time(&mut errors, "k", sent.as_ref(), zone, now),
            None
        );
        assert_eq!(
            serde_json::to_value(&errors).unwrap(),
            json!({"k": ["k muss zwischen 2026-10-20 13:00:00 und 2026-10-27 12:05:00 liegen."]})
        );
    }

    #[test]
    fn a_time_that_is_no_wire_time_has_the_format_message() {
        let zone: Tz = "Europe/Berlin".parse().unwrap();
        let now = crate::clock::now();
        let mut errors = FieldErrors::new();
        for bad in [json!("gestern"), json!(1_764_000_000)] {
            assert_eq!(optional_time(&mut errors, "k", Some(&bad), zone, now), None);
        }
        assert_eq!(
            optional_time(&mut errors, "k", Some(&Value::Null), zone, now),
            None
        );
        assert_eq!(
            serde_json::to_value(&errors).unwrap(),
            json!({"k": vec!["k muss dem Format Y-m-d H:i:s entsprechen."; 2]})
        );
    }

    #[test]
    fn uuid_shape() {
        assert!(is_uuid("6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f"));
        assert!(is_uuid("6F1C7D2E-5A8B-4C3D-9E0F-1A2B3C4D5E6F"));
        assert!(!is_uuid("6f1c7d2e5a8b4c3d9e0f1a2b3c4d5e6f"));
        assert!(!is_uuid("{6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f}"));
        assert!(!is_uuid("6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6g"));
    }
}
