//! A central system's heartbeat (DECISIONS §19): `POST /api/v1/heartbeat`,
//! the signed envelope of §2 with `target` = the consumer's own id and
//! `data` `{}` (any keys of `data` are signed and otherwise ignored).
//!
//! Only the structure is checked here (DECISIONS §3 step 2): a `target`
//! other than the `consumer` it names is a 422 `address`, before the
//! signature, like every other field error.

use crate::request::envelope::Envelope;
use crate::request::signed::{data_object, signer};
use crate::request::validation::{self as v, FieldErrors, message};
use crate::signing::compact::compact_json;
use crate::signing::credentials::Credentials;

/// A structurally valid heartbeat.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HeartbeatRequest {
    pub credentials: Credentials,
}

/// Parses a heartbeat; the errors are keyed as DECISIONS §3 says
/// (`address`, `consumer`, `hash`, `data`).
pub(crate) fn parse_heartbeat(envelope: &Envelope) -> Result<HeartbeatRequest, FieldErrors> {
    let mut errors = FieldErrors::new();
    let target = v::required_text(&mut errors, "address", envelope.get("target"));
    let consumer = envelope
        .get("consumer")
        .and_then(|c| c.as_str())
        .map(str::to_ascii_lowercase);
    // Its own id (in any case, as the consumer's id is read): anything
    // else addresses something a heartbeat cannot.
    if let (Some(target), Some(consumer)) = (&target, &consumer)
        && !target.eq_ignore_ascii_case(consumer)
    {
        errors.add("address", message::invalid_choice("address"));
    }
    let signer = signer(&mut errors, envelope);
    let data = data_object(&mut errors, envelope);
    let (Some(target), Some(signer), Some(_), true) = (target, signer, data, errors.is_empty())
    else {
        return Err(errors);
    };
    let data_json = compact_json(envelope.data_raw().unwrap_or("{}"));
    Ok(HeartbeatRequest {
        credentials: signer.credentials(&target, &data_json),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "5117e000-0000-4000-8000-000000000001";

    fn parse(body: &str) -> Result<HeartbeatRequest, Vec<String>> {
        let envelope = Envelope::parse(body).unwrap();
        parse_heartbeat(&envelope).map_err(|errors| errors.keys().map(str::to_string).collect())
    }

    #[test]
    fn its_own_id_as_target_signs_target_consumer_and_data() {
        let parsed = parse(&format!(
            r#"{{"target":"{ID}","consumer":"{ID}","hash":"ab","data":{{ }}}}"#
        ))
        .unwrap();
        assert_eq!(parsed.credentials.signing_string, format!("{ID}.{ID}.{{}}"));
    }

    #[test]
    fn another_target_is_an_address_error() {
        let other = "5117e000-0000-4000-8000-000000000002";
        let errors = parse(&format!(
            r#"{{"target":"{other}","consumer":"{ID}","hash":"ab","data":{{}}}}"#
        ))
        .unwrap_err();
        assert_eq!(errors, ["address"]);
    }

    #[test]
    fn every_missing_field_at_once() {
        let mut errors = parse("{}").unwrap_err();
        errors.sort();
        assert_eq!(errors, ["address", "consumer", "data", "hash"]);
    }
}
