//! An alarm server's answer to a call (DECISIONS §16): `POST
//! /api/v1/response`, the signed envelope of §2 with `target` = the call's
//! address and `data` `{"call": <id>, "response":
//! "accepted"|"declined"|"read"|"received", "staff": "<staff id or
//! device>"}` (`received`: the handset got the alert, §18).
//!
//! Only the structure is checked here (DECISIONS §3 step 2, every field
//! error at once); whether `staff` is somebody and `call` a call of that
//! address are the handler's state checks, after the signature.

use serde_json::Value;

use crate::domain::alarm::Response;
use crate::domain::model::MAX_CALL_ID;
use crate::request::envelope::Envelope;
use crate::request::signed::{data_object, signer};
use crate::request::validation::{self as v, FieldErrors, message};
use crate::signing::compact::compact_json;
use crate::signing::credentials::Credentials;

/// A structurally valid answer of an alarm server.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AlarmResponseRequest {
    pub credentials: Credentials,
    /// The address the call is on.
    pub target: String,
    pub call: i64,
    pub response: ServerAnswer,
    /// A staff member's id or a device (DECT handset, pager), as sent.
    pub staff: String,
}

/// What an alarm server says of a person and a call: a response, as the
/// staff page's, or that their handset got the alert (a receipt, §18).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ServerAnswer {
    /// `accepted`, `declined` or `read`.
    Respond(Response),
    /// `received`.
    Received,
}

impl ServerAnswer {
    /// As on the wire.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ServerAnswer::Respond(response) => response.as_str(),
            ServerAnswer::Received => "received",
        }
    }
}

/// Parses an alarm server's answer; the errors are keyed as DECISIONS §3
/// says (`address`, `consumer`, `hash`, `data`, `data.call`, …).
pub(crate) fn parse_alarm_response(
    envelope: &Envelope,
) -> Result<AlarmResponseRequest, FieldErrors> {
    let mut errors = FieldErrors::new();
    let target = v::required_text(&mut errors, "address", envelope.get("target"));
    let signer = signer(&mut errors, envelope);
    let Some(data) = data_object(&mut errors, envelope) else {
        return Err(errors);
    };
    // The order of the contract's `data`: call, response, staff.
    let call = call_id(&mut errors, "data.call", data.get("call"));
    let response = server_answer(&mut errors, "data.response", data.get("response"));
    let staff = v::required_text(&mut errors, "data.staff", data.get("staff"));

    let (Some(target), Some(signer), Some(call), Some(response), Some(staff), true) =
        (target, signer, call, response, staff, errors.is_empty())
    else {
        return Err(errors);
    };
    let data_json = compact_json(envelope.data_raw().unwrap_or("{}"));
    Ok(AlarmResponseRequest {
        credentials: signer.credentials(&target, &data_json),
        target,
        call,
        response,
        staff,
    })
}

/// `data.response`: a response, or `received` (only an alarm server says
/// that: its handset got the alert).
fn server_answer(
    errors: &mut FieldErrors,
    key: &str,
    value: Option<&Value>,
) -> Option<ServerAnswer> {
    if value.and_then(Value::as_str) == Some("received") {
        return Some(ServerAnswer::Received);
    }
    response_choice(errors, key, value).map(ServerAnswer::Respond)
}

/// A call id: a JSON integer (`17`, not `"17"` or `17.0`). One below 1 or
/// beyond [`MAX_CALL_ID`] can name no call: the text of an unknown call,
/// found here already because it needs nothing but the field.
fn call_id(errors: &mut FieldErrors, key: &str, value: Option<&Value>) -> Option<i64> {
    match value.filter(|v| !v.is_null()) {
        None => errors.add(key, message::required(key)),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(id) if (1..=MAX_CALL_ID).contains(&id) => return Some(id),
            Some(_) => errors.add(key, message::invalid_choice(key)),
            None if n.is_u64() => errors.add(key, message::invalid_choice(key)),
            None => errors.add(key, message::integer(key)),
        },
        Some(_) => errors.add(key, message::integer(key)),
    }
    None
}

/// A response: required, one of `accepted`, `declined`, `read` (exactly so
/// spelt). The staff page's `response` and the alarm server's
/// `data.response` share it.
pub(crate) fn response_choice(
    errors: &mut FieldErrors,
    key: &str,
    value: Option<&Value>,
) -> Option<Response> {
    match value.filter(|v| !v.is_null()) {
        None => errors.add(key, message::required(key)),
        Some(Value::String(text)) if text.trim().is_empty() => {
            errors.add(key, message::required(key));
        }
        Some(Value::String(text)) => match Response::parse(text) {
            Some(response) => return Some(response),
            None => errors.add(key, message::invalid_choice(key)),
        },
        Some(_) => errors.add(key, message::string(key)),
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CONSUMER: &str = "6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f";

    fn parsed(body: &str) -> Result<AlarmResponseRequest, Value> {
        let envelope = Envelope::parse(body).unwrap();
        parse_alarm_response(&envelope).map_err(|errors| serde_json::to_value(errors).unwrap())
    }

    #[test]
    fn signs_the_address_and_data_as_sent() {
        let body = format!(
            r#"{{"target":"Zimmer-101","consumer":"{CONSUMER}","hash":"ab","data": {{"call": 17, "response":"accepted", "staff":"DECT-4711"}}}}"#
        );
        let request = parsed(&body).unwrap();
        assert_eq!(
            (request.call, request.response, request.staff.as_str()),
            (17, ServerAnswer::Respond(Response::Accepted), "DECT-4711")
        );
        assert_eq!(
            request.credentials.signing_string,
            format!(
                r#"Zimmer-101.{CONSUMER}.{{"call":17,"response":"accepted","staff":"DECT-4711"}}"#
            )
        );
    }

    #[test]
    fn every_missing_field_at_once() {
        assert_eq!(
            parsed(r#"{"data":{}}"#).unwrap_err(),
            json!({
                "address": ["address muss ausgefüllt werden."],
                "consumer": ["consumer muss ausgefüllt werden."],
                "hash": ["hash muss ausgefüllt werden."],
                "data.call": ["data.call muss ausgefüllt werden."],
                "data.response": ["data.response muss ausgefüllt werden."],
                "data.staff": ["data.staff muss ausgefüllt werden."]
            })
        );
        assert_eq!(
            parsed(&format!(
                r#"{{"target":"A","consumer":"{CONSUMER}","hash":"ab"}}"#
            ))
            .unwrap_err(),
            json!({"data": ["data muss ausgefüllt werden."]})
        );
        assert_eq!(
            parsed(&format!(
                r#"{{"target":"A","consumer":"{CONSUMER}","hash":"ab","data":[]}}"#
            ))
            .unwrap_err(),
            json!({"data": ["data muss ein Objekt sein."]})
        );
    }

    #[test]
    fn ill_typed_fields() {
        let errors = parsed(&format!(
            r#"{{"target":"A","consumer":"{CONSUMER}","hash":"ab","data":{{"call":"17","response":"Accepted","staff":7}}}}"#
        ))
        .unwrap_err();
        assert_eq!(
            errors,
            json!({
                "data.call": ["data.call muss eine ganze Zahl sein."],
                "data.response": ["Der gewählte Wert für data.response ist ungültig."],
                "data.staff": ["data.staff muss eine Zeichenkette sein."]
            })
        );
        for (call, message) in [
            ("17.5", "data.call muss eine ganze Zahl sein."),
            ("true", "data.call muss eine ganze Zahl sein."),
            ("0", "Der gewählte Wert für data.call ist ungültig."),
            ("-3", "Der gewählte Wert für data.call ist ungültig."),
            (
                "9007199254740992",
                "Der gewählte Wert für data.call ist ungültig.",
            ),
            (
                "18446744073709551615",
                "Der gewählte Wert für data.call ist ungültig.",
            ),
        ] {
            let errors = parsed(&format!(
                r#"{{"target":"A","consumer":"{CONSUMER}","hash":"ab","data":{{"call":{call},"response":"read","staff":" "}}}}"#
            ))
            .unwrap_err();
            assert_eq!(
                errors,
                json!({"data.call": [message], "data.staff": ["data.staff muss ausgefüllt werden."]}),
                "{call}"
            );
        }
    }
}
