//! What a request is signed with, and the exact string its hash covers
//! (spec 5, DECISIONS §2): built here from the parsed request, verified by
//! [`crate::signing::signature::verify`].

use crate::signing::replay;
use crate::signing::signature::signing_string;

/// What a request is signed with, and what was signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Credentials {
    /// The consumer id exactly as sent.
    pub consumer: String,
    pub hash: String,
    /// The optional signed request time (Unix seconds, see [`replay`]).
    pub signed_at: Option<i64>,
    /// `<target>.<consumer>.<data_json>`, followed by `.<signed_at>` when the
    /// request carries one.
    pub signing_string: String,
}

impl Credentials {
    /// `data_json` is the compacted `data` (see [`crate::signing::compact`]).
    pub(crate) fn new(
        target: &str,
        consumer: String,
        hash: String,
        signed_at: Option<i64>,
        data_json: &str,
    ) -> Self {
        let mut signing_string = signing_string(target, &consumer, data_json);
        replay::extend_signing_string(&mut signing_string, signed_at);
        Credentials {
            consumer,
            hash,
            signed_at,
            signing_string,
        }
    }
}
