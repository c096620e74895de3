//! Receipt ids (DECISIONS §18): every alert and re-alert to a person carries
//! one, and the phone (or the open page) that showed it posts it back, so
//! that the service knows a person got the alert, not only that a push
//! service took it.
//!
//! An id names what it confirms: the call, which alert of the person it was
//! (1 = the first, 2 = the first re-alert, …), the person, and the path it
//! went by. So a receipt needs no table of ids sent: the person's alarm
//! entry tells whether that alert was sent, and an id of another person
//! never matches the token's. The id is opaque to clients (they post it back
//! as they got it) and at most [`MAX_LEN`] characters.

use std::fmt;

/// Longest receipt id (DECISIONS §18).
pub(crate) const MAX_LEN: usize = 64;

/// The path an alert went by, as far as its receipt tells.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Path {
    /// A push to one of the person's devices: the first 8 hex digits of the
    /// SHA-256 of its subscription's endpoint ([`device_tag`]).
    Push(String),
    /// The person's open staff page (the live feed).
    Page,
}

/// What a receipt confirms.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Receipt {
    /// The call alerted (its id within the scope).
    pub call_id: i64,
    /// Which alert of the person for this call: 1 for the first, 2 for the
    /// first re-alert, and so on.
    pub alert: i64,
    /// The person alerted (a staff id: a UUID v4).
    pub staff_id: String,
    /// The path the alert went by.
    pub path: Path,
}

impl fmt::Display for Receipt {
    /// `<call>.<alert>.<staff id>.<p | device tag>`: 47 characters and the
    /// digits of the call id and the alert's number (so within
    /// [`MAX_LEN`] up to call 999,999,999,999 and alert 99,999).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = match &self.path {
            Path::Page => "p",
            Path::Push(tag) => tag.as_str(),
        };
        write!(
            f,
            "{}.{}.{}.{}",
            self.call_id, self.alert, self.staff_id, path
        )
    }
}

impl Receipt {
    /// The receipt of alert number `alert` of `staff_id` for call `call_id`,
    /// sent by `path`.
    pub fn new(call_id: i64, alert: i64, staff_id: &str, path: Path) -> Self {
        Receipt {
            call_id,
            alert,
            staff_id: staff_id.to_string(),
            path,
        }
    }

    /// Reads an id exactly as [`Receipt`]'s `Display` writes it (no sign,
    /// no leading zero); `None` for anything else (the caller answers 404,
    /// as for an unknown id).
    pub fn parse(id: &str) -> Option<Self> {
        if id.is_empty() || id.len() > MAX_LEN {
            return None;
        }
        let mut parts = id.split('.');
        let call_id: i64 = parts.next()?.parse().ok()?;
        let alert: i64 = parts.next()?.parse().ok()?;
        let staff_id = parts.next()?;
        let path = parts.next()?;
        if parts.next().is_some() || call_id < 1 || alert < 1 || !is_staff_id(staff_id) {
            return None;
        }
        let path = match path {
            "p" => Path::Page,
            tag if is_device_tag(tag) => Path::Push(tag.to_string()),
            _ => return None,
        };
        let receipt = Receipt {
            call_id,
            alert,
            staff_id: staff_id.to_string(),
            path,
        };
        (receipt.to_string() == id).then_some(receipt)
    }
}

/// A device's tag in its receipts: the first 8 hex digits of the SHA-256 of
/// its push subscription's endpoint (the endpoint itself is a capability
/// URL and stays out of ids and logs).
pub fn device_tag(endpoint: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(&Sha256::digest(endpoint.as_bytes())[..4])
}

/// A device's tag as [`device_tag`] makes it: 8 lowercase hex digits.
pub(crate) fn is_device_tag(text: &str) -> bool {
    text.len() == 8 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A staff id as ids are made: lowercase hex and hyphens, 36 characters.
pub(crate) fn is_staff_id(text: &str) -> bool {
    text.len() == 36
        && text
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ANNA: &str = "0b6a4a7e-4a38-4f4e-9a53-1f5f0c7a2b11";

    #[test]
    fn an_id_reads_back_as_written() {
        let push = Receipt::new(7, 2, ANNA, Path::Push(device_tag("https://push.example/x")));
        let page = Receipt::new(7, 1, ANNA, Path::Page);
        for receipt in [push, page] {
            let id = receipt.to_string();
            assert!(id.len() <= MAX_LEN, "{id}");
            assert_eq!(Receipt::parse(&id), Some(receipt));
        }
    }

    #[test]
    fn the_longest_id_fits() {
        let id =
            Receipt::new(999_999_999_999, 99_999, ANNA, Path::Push("0123abcd".into())).to_string();
        assert!(id.len() <= MAX_LEN, "{} characters: {id}", id.len());
    }

    #[test]
    fn other_text_is_no_receipt() {
        for id in [
            "",
            "7.1",
            "7.1.x.p",
            "0.1.0b6a4a7e-4a38-4f4e-9a53-1f5f0c7a2b11.p",
            "7.0.0b6a4a7e-4a38-4f4e-9a53-1f5f0c7a2b11.p",
            "7.1.0b6a4a7e-4a38-4f4e-9a53-1f5f0c7a2b11.q",
            "7.1.0b6a4a7e-4a38-4f4e-9a53-1f5f0c7a2b11.ABCDEF12",
            "7.1.0b6a4a7e-4a38-4f4e-9a53-1f5f0c7a2b11.p.p",
            "-7.1.0b6a4a7e-4a38-4f4e-9a53-1f5f0c7a2b11.p",
            "+7.1.0b6a4a7e-4a38-4f4e-9a53-1f5f0c7a2b11.p",
            "07.1.0b6a4a7e-4a38-4f4e-9a53-1f5f0c7a2b11.p",
        ] {
            assert_eq!(Receipt::parse(id), None, "{id}");
        }
    }

    proptest! {
        /// Any text either is no receipt or one that writes back as itself.
        #[test]
        fn parse_never_panics_and_round_trips(text in ".{0,80}") {
            if let Some(receipt) = Receipt::parse(&text) {
                prop_assert_eq!(receipt.to_string(), text);
            }
        }
    }
}
