//! The three request shapes, validated: a display request (open or close), an
//! element request (single or multi form). Parsing collects every field error
//! of the structure stage (DECISIONS §3 step 2) before anything else is checked.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde_json::{Map, Value};

use crate::request::envelope::Envelope;
use crate::request::signed::{data_object, signer};
use crate::request::validation::{self as v, FieldErrors, message};
use crate::signing::compact::compact_json;
use crate::signing::credentials::Credentials;

/// The most items a multi-form element request may carry.
pub(crate) const MAX_MULTI_ITEMS: usize = 100;

/// battery, position and reachable as sent (absent fields stay `None`).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct StatusFields {
    pub battery: Option<f64>,
    pub position: Option<String>,
    pub reachable: Option<bool>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum DisplayAction {
    Open {
        event: String,
        created_at: Option<DateTime<Utc>>,
    },
    /// `closed: true` wins over `event`.
    Close { closed_at: Option<DateTime<Utc>> },
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DisplayRequest {
    pub credentials: Credentials,
    pub target: String,
    pub action: DisplayAction,
    pub section: Option<String>,
    pub attribute: Option<String>,
    pub code: Option<String>,
    pub status: StatusFields,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ElementRequest {
    Single {
        credentials: Credentials,
        target: String,
        status: StatusFields,
    },
    /// Items in the order sent; the same target may appear more than once.
    Multi {
        credentials: Credentials,
        items: Vec<(String, StatusFields)>,
    },
}

impl ElementRequest {
    pub(crate) fn credentials(&self) -> &Credentials {
        match self {
            ElementRequest::Single { credentials, .. }
            | ElementRequest::Multi { credentials, .. } => credentials,
        }
    }
}

/// `<prefix>.<name>`, put together without `format!`: this runs for every
/// field of every multi-form item, where `format!` was a tenth of a 100-item
/// request at the release opt-level "z" (issue 7).
fn field_key(prefix: &str, name: &str) -> String {
    let mut key = String::with_capacity(prefix.len() + 1 + name.len());
    key.push_str(prefix);
    key.push('.');
    key.push_str(name);
    key
}

fn status_fields(
    errors: &mut FieldErrors,
    prefix: &str,
    data: &Map<String, Value>,
) -> StatusFields {
    let key = |name: &str| field_key(prefix, name);
    StatusFields {
        position: v::optional_text(errors, &key("position"), data.get("position")),
        reachable: v::optional_bool(errors, &key("reachable"), data.get("reachable")),
        battery: v::optional_battery(errors, &key("battery"), data.get("battery")),
    }
}

/// Parses a display request (spec 2.2). `zone` reads `created_at` and
/// `closed_at`, which must lie near `now`, the service's clock (DECISIONS §5).
pub(crate) fn parse_display(
    envelope: &Envelope,
    zone: Tz,
    now: DateTime<Utc>,
) -> Result<DisplayRequest, FieldErrors> {
    let mut errors = FieldErrors::new();
    let target = v::required_text(&mut errors, "address", envelope.get("target"));
    let signer = signer(&mut errors, envelope);
    let Some(data) = data_object(&mut errors, envelope) else {
        return Err(errors);
    };
    // Spec table order: event, closed, position, section, reachable, battery,
    // attribute, code, created_at, closed_at.
    let event = v::optional_text(&mut errors, "data.event", data.get("event"));
    let event_sent_badly = errors.keys().any(|k| k == "data.event");
    // `closed` is read first (the event rule depends on it) but its error is
    // reported after `data.event`'s, keeping the table order.
    let mut closed_errors = FieldErrors::new();
    let closed = v::optional_bool(&mut closed_errors, "data.closed", data.get("closed"));
    let closing = closed == Some(true);
    let event_blank = event.as_deref().is_none_or(|e| e.trim().is_empty());
    if !closing && event_blank && !event_sent_badly {
        errors.add("data.event", message::event_required("data.event"));
    }
    errors.extend(closed_errors);
    let position = v::optional_text(&mut errors, "data.position", data.get("position"));
    // Trimmed: `" A"` and `"A"` are one section (for duties, displays and
    // webhooks alike).
    let section = v::optional_text(&mut errors, "data.section", data.get("section"))
        .map(|section| section.trim().to_string());
    let reachable = v::optional_bool(&mut errors, "data.reachable", data.get("reachable"));
    let battery = v::optional_battery(&mut errors, "data.battery", data.get("battery"));
    let attribute = v::optional_text(&mut errors, "data.attribute", data.get("attribute"));
    let code = v::optional_text(&mut errors, "data.code", data.get("code"));
    let created_at = v::optional_time(
        &mut errors,
        "data.created_at",
        data.get("created_at"),
        zone,
        now,
    );
    let closed_at = v::optional_time(
        &mut errors,
        "data.closed_at",
        data.get("closed_at"),
        zone,
        now,
    );

    let (Some(target), Some(signer), true) = (target, signer, errors.is_empty()) else {
        return Err(errors);
    };
    let data_json = compact_json(envelope.data_raw().unwrap_or("{}"));
    let action = if closing {
        DisplayAction::Close { closed_at }
    } else {
        DisplayAction::Open {
            event: event.unwrap_or_default(),
            created_at,
        }
    };
    Ok(DisplayRequest {
        credentials: signer.credentials(&target, &data_json),
        target,
        action,
        section,
        attribute,
        code,
        status: StatusFields {
            battery,
            position,
            reachable,
        },
    })
}

/// Parses an element request (spec 2.4): `data` an object is the single form,
/// an array the multi form.
pub(crate) fn parse_element(envelope: &Envelope) -> Result<ElementRequest, FieldErrors> {
    let mut errors = FieldErrors::new();
    let multi = matches!(envelope.get("data"), Some(Value::Array(_)));
    let target = if multi {
        if envelope.get("target").is_some_and(|t| !t.is_null()) {
            errors.add("address", message::prohibited_in_multi_form("address"));
        }
        None
    } else {
        v::required_text(&mut errors, "address", envelope.get("target"))
    };
    let signer = signer(&mut errors, envelope);

    enum Parsed {
        Single(StatusFields),
        Multi(Vec<(String, StatusFields)>),
    }
    let parsed = match envelope.get("data").filter(|d| !d.is_null()) {
        None => {
            errors.add("data", message::required("data"));
            None
        }
        Some(Value::Object(data)) => Some(Parsed::Single(status_fields(&mut errors, "data", data))),
        Some(Value::Array(items)) if items.is_empty() => {
            errors.add("data", message::min_items("data", 1));
            None
        }
        Some(Value::Array(items)) if items.len() > MAX_MULTI_ITEMS => {
            errors.add("data", message::max_items("data", MAX_MULTI_ITEMS));
            None
        }
        Some(Value::Array(items)) => {
            let mut parsed = Vec::with_capacity(items.len());
            for (index, item) in items.iter().enumerate() {
                let prefix = format!("data.{index}");
                let Value::Object(item) = item else {
                    errors.add(&prefix, message::object(&prefix));
                    continue;
                };
                let target = v::required_text(
                    &mut errors,
                    &field_key(&prefix, "address"),
                    item.get("target"),
                );
                let status = status_fields(&mut errors, &prefix, item);
                if let Some(target) = target {
                    parsed.push((target, status));
                }
            }
            Some(Parsed::Multi(parsed))
        }
        Some(_) => {
            errors.add("data", message::object_or_array("data"));
            None
        }
    };

    let (Some(signer), Some(parsed), true) = (signer, parsed, errors.is_empty()) else {
        return Err(errors);
    };
    let data_json = compact_json(envelope.data_raw().unwrap_or("{}"));
    Ok(match parsed {
        Parsed::Single(status) => {
            let target = target.expect("single form without errors has a target");
            ElementRequest::Single {
                credentials: signer.credentials(&target, &data_json),
                target,
                status,
            }
        }
        Parsed::Multi(items) => ElementRequest::Multi {
            credentials: signer.credentials("", &data_json),
            items,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CONSUMER: &str = "6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f";

    fn berlin() -> Tz {
        "Europe/Berlin".parse().unwrap()
    }

    fn errors_of(body: Value, display: bool) -> Value {
        let envelope = Envelope::parse(&body.to_string()).unwrap();
        let errors = if display {
            parse_display(&envelope, berlin(), crate::clock::now()).unwrap_err()
        } else {
            parse_element(&envelope).unwrap_err()
        };
        serde_json::to_value(errors).unwrap()
    }

    #[test]
    fn display_reports_every_missing_field_at_once() {
        assert_eq!(
            errors_of(json!({"data": {}}), true),
            json!({
                "address": ["address muss ausgefüllt werden."],
                "consumer": ["consumer muss ausgefüllt werden."],
                "hash": ["hash muss ausgefüllt werden."],
                "data.event": ["data.event muss ausgefüllt werden, wenn data.closed nicht true ist."]
            })
        );
    }

    #[test]
    fn close_needs_no_event() {
        let body =
            json!({"target": "A1", "consumer": CONSUMER, "hash": "ab", "data": {"closed": true}});
        let envelope = Envelope::parse(&body.to_string()).unwrap();
        let request = parse_display(&envelope, berlin(), crate::clock::now()).unwrap();
        assert_eq!(request.action, DisplayAction::Close { closed_at: None });
        assert_eq!(
            request.credentials.signing_string,
            format!("A1.{CONSUMER}.{{\"closed\":true}}")
        );
    }

    #[test]
    fn display_type_errors_in_table_order() {
        let body = json!({"target": "A1", "consumer": "nope", "hash": 5, "data": {
            "closed_at": "yesterday", "battery": 101, "reachable": "yes", "event": 3,
            "position": "x".repeat(256), "created_at": "2026-13-01 00:00:00", "closed": "no"
        }});
        let envelope = Envelope::parse(&body.to_string()).unwrap();
        let found = parse_display(&envelope, berlin(), crate::clock::now()).unwrap_err();
        let keys: Vec<&str> = found.keys().collect();
        assert_eq!(
            keys,
            [
                "consumer",
                "hash",
                "data.event",
                "data.closed",
                "data.position",
                "data.reachable",
                "data.battery",
                "data.created_at",
                "data.closed_at"
            ]
        );
        let errors = serde_json::to_value(found).unwrap();
        assert_eq!(
            errors["data.event"],
            json!(["data.event muss eine Zeichenkette sein."])
        );
        assert_eq!(
            errors["data.position"],
            json!(["data.position darf maximal 255 Zeichen haben."])
        );
    }

    #[test]
    fn multi_form_rules() {
        let errors = errors_of(
            json!({"target": "A", "consumer": CONSUMER, "hash": "ab", "data": [{"battery": 5}, 7, {"target": "B", "reachable": 1}]}),
            false,
        );
        assert_eq!(
            errors,
            json!({
                "address": ["address darf im Mehrfachformat nicht angegeben werden."],
                "data.0.address": ["data.0.address muss ausgefüllt werden."],
                "data.1": ["data.1 muss ein Objekt sein."],
                "data.2.reachable": ["data.2.reachable muss wahr oder falsch sein."]
            })
        );
        let too_many: Vec<Value> = (0..101).map(|i| json!({"target": i.to_string()})).collect();
        assert_eq!(
            errors_of(
                json!({"consumer": CONSUMER, "hash": "ab", "data": too_many}),
                false
            ),
            json!({"data": ["data darf maximal 100 Elemente haben."]})
        );
        assert_eq!(
            errors_of(
                json!({"consumer": CONSUMER, "hash": "ab", "data": "x"}),
                false
            ),
            json!({"address": ["address muss ausgefüllt werden."], "data": ["data muss ein Objekt oder ein Array sein."]})
        );
    }

    #[test]
    fn multi_form_signs_with_an_empty_target() {
        let body = format!(
            r#"{{"consumer":"{CONSUMER}","hash":"ab","data":[ {{"target":"A","battery":80.0}} ]}}"#
        );
        let envelope = Envelope::parse(&body).unwrap();
        let request = parse_element(&envelope).unwrap();
        assert_eq!(
            request.credentials().signing_string,
            format!(".{CONSUMER}.[{{\"target\":\"A\",\"battery\":80.0}}]")
        );
    }
}
