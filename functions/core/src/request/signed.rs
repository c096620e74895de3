//! What every signed request has besides its own fields (spec 2.1,
//! DECISIONS §2, §3): `consumer`, `hash` and the optional `signed_at`
//! ([`signer`]), and for the display request and an alarm server's response
//! a `data` object ([`data_object`]). Checked in one place, so that every
//! signed endpoint reports them with the same keys and texts.

use serde_json::{Map, Value};

use crate::request::envelope::Envelope;
use crate::request::validation::{self as v, FieldErrors, message};
use crate::signing::credentials::Credentials;
use crate::signing::replay;

/// The signing fields of a request that passed the structure checks.
pub(crate) struct Signer {
    consumer: String,
    hash: String,
    signed_at: Option<i64>,
}

impl Signer {
    pub(crate) fn credentials(self, target: &str, data_json: &str) -> Credentials {
        Credentials::new(target, self.consumer, self.hash, self.signed_at, data_json)
    }
}

/// `consumer`, `hash` and the optional `signed_at`, checked in that order
/// after the caller's `address`; `None` when any of them has an error.
pub(crate) fn signer(errors: &mut FieldErrors, envelope: &Envelope) -> Option<Signer> {
    let consumer = match envelope.get("consumer").filter(|c| !c.is_null()) {
        None => {
            errors.add("consumer", message::required("consumer"));
            None
        }
        Some(Value::String(s)) if s.trim().is_empty() => {
            errors.add("consumer", message::required("consumer"));
            None
        }
        Some(Value::String(s)) if v::is_uuid(s) => Some(s.clone()),
        Some(_) => {
            errors.add("consumer", message::uuid("consumer"));
            None
        }
    };
    let hash = match envelope.get("hash").filter(|h| !h.is_null()) {
        None => {
            errors.add("hash", message::required("hash"));
            None
        }
        Some(Value::String(s)) if s.is_empty() => {
            errors.add("hash", message::required("hash"));
            None
        }
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            errors.add("hash", message::string("hash"));
            None
        }
    };
    let errors_before = errors.keys().count();
    let signed_at = v::optional_integer(errors, replay::FIELD, envelope.get(replay::FIELD));
    let signed_at_ok = errors.keys().count() == errors_before;
    match (consumer, hash, signed_at_ok) {
        (Some(consumer), Some(hash), true) => Some(Signer {
            consumer,
            hash,
            signed_at,
        }),
        _ => None,
    }
}

/// `data`, required and an object (`null` counts as absent); `None` when it
/// has an error, which is added to `errors`.
pub(crate) fn data_object<'e>(
    errors: &mut FieldErrors,
    envelope: &'e Envelope,
) -> Option<&'e Map<String, Value>> {
    match envelope.get("data").filter(|d| !d.is_null()) {
        None => {
            errors.add("data", message::required("data"));
            None
        }
        Some(Value::Object(data)) => Some(data),
        Some(_) => {
            errors.add("data", message::object("data"));
            None
        }
    }
}
