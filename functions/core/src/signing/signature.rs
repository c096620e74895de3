//! Request signatures (spec 5, DECISIONS §2).
//!
//! `hash` = hex of HMAC(key = the consumer's secret as UTF-8, message = the
//! signing string `<target>.<consumer>.<data_json>`). HMAC-SHA256 for every
//! consumer, HMAC-SHA1 only where the consumer's record allows it. The
//! comparison is constant-time (`Mac::verify_slice`), and an unknown consumer
//! costs the same HMAC work as a known one, so the answer does not tell them apart.

use hmac::{Hmac, Mac};
use sha1::Sha1;
use sha2::Sha256;

use crate::domain::model::Consumer;

type HmacSha256 = Hmac<Sha256>;
type HmacSha1 = Hmac<Sha1>;

/// The string that is signed. The multi form of the element family has no
/// top-level target and passes `""`, giving `.<consumer>.<data_json>`.
pub fn signing_string(target: &str, consumer: &str, data_json: &str) -> String {
    let mut s = String::with_capacity(target.len() + consumer.len() + data_json.len() + 2);
    s.push_str(target);
    s.push('.');
    s.push_str(consumer);
    s.push('.');
    s.push_str(data_json);
    s
}

/// Lowercase hex HMAC-SHA256 of `message` keyed by `secret`: what a client sends.
pub fn sign_sha256(secret: &str, message: &str) -> String {
    let mut mac = HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(message.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// Lowercase hex HMAC-SHA1, for legacy consumers that are allowed it.
pub fn sign_sha1(secret: &str, message: &str) -> String {
    let mut mac = HmacSha1::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(message.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// The key an unknown consumer's hash is checked against, so that it costs the
/// same work as a known consumer's (and can never match: no client knows it,
/// and it changes with every process).
fn decoy_secret() -> &'static str {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).expect("the OS random source is available");
        hex::encode(bytes)
    })
}

/// Checks `provided` (hex, either case) against every active secret of
/// `consumer`; `None` (unknown consumer) is checked against a decoy and fails.
pub fn verify(consumer: Option<&Consumer>, message: &str, provided: &str) -> bool {
    let decoded = hex::decode(provided).ok();
    let (secrets, allow_sha1, known): (Vec<&str>, bool, bool) = match consumer {
        Some(c) => (
            c.secrets.iter().map(String::as_str).collect(),
            c.allow_sha1,
            true,
        ),
        None => (vec![decoy_secret()], false, false),
    };
    let mut matched = false;
    for secret in secrets {
        // Always run the HMAC, even when the hex is unusable, so the time spent
        // does not depend on what was sent.
        let mut sha256 = HmacSha256::new_from_slice(secret.as_bytes()).expect("any key length");
        sha256.update(message.as_bytes());
        let sha256_ok = match &decoded {
            Some(bytes) if bytes.len() == 32 => sha256.verify_slice(bytes).is_ok(),
            _ => false,
        };
        let sha1_ok = allow_sha1
            && match &decoded {
                Some(bytes) if bytes.len() == 20 => {
                    let mut sha1 =
                        HmacSha1::new_from_slice(secret.as_bytes()).expect("any key length");
                    sha1.update(message.as_bytes());
                    sha1.verify_slice(bytes).is_ok()
                }
                _ => false,
            };
        matched |= sha256_ok | sha1_ok;
    }
    matched && known
}

/// What the test server shows on a hash mismatch (spec 7.2 `debug`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashDebug {
    /// The consumer's newest secret, the one a visitor of the test page holds.
    pub secret: String,
    /// The signing string the server built from the request.
    pub string: String,
    /// Lowercase hex HMAC-SHA256 of `string` with `secret`: the right `hash`.
    pub expected: String,
    /// The `hash` the request sent, as sent.
    pub provided: String,
}

impl HashDebug {
    /// The debug of `provided` over `message`, with the consumer's newest
    /// secret; `None` for a consumer without secrets.
    pub fn new(consumer: &Consumer, message: &str, provided: &str) -> Option<Self> {
        let secret = consumer.secrets.last()?.clone();
        let expected = sign_sha256(&secret, message);
        Some(HashDebug {
            secret,
            string: message.to_string(),
            expected,
            provided: provided.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    fn consumer(secrets: &[&str], allow_sha1: bool) -> Consumer {
        Consumer {
            id: "6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f".into(),
            name: "test".into(),
            secrets: secrets.iter().map(|s| s.to_string()).collect(),
            allow_sha1,
            created_at: Utc::now(),
            expires_at: None,
            require_signed_time: false,
            heartbeat_seconds: None,
        }
    }

    // Known answers computed independently with
    // `printf '%s' "$message" | openssl dgst -sha256 -hmac "$secret"`.
    const SECRET: &str = "s3cr3t";
    const MESSAGE: &str = r#"A1.6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f.{"event":"Normalruf"}"#;

    #[test]
    fn sha256_known_answer() {
        assert_eq!(
            sign_sha256("key", "The quick brown fox jumps over the lazy dog"),
            "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
        );
        assert_eq!(
            sign_sha1("key", "The quick brown fox jumps over the lazy dog"),
            "de7c9b85b8b78aa6bc8a7a36f70a90701c9db4d9"
        );
    }

    #[test]
    fn verifies_lower_and_upper_hex() {
        let c = consumer(&[SECRET], false);
        let hash = sign_sha256(SECRET, MESSAGE);
        assert!(verify(Some(&c), MESSAGE, &hash));
        assert!(verify(Some(&c), MESSAGE, &hash.to_uppercase()));
        assert!(!verify(Some(&c), MESSAGE, &sign_sha256("other", MESSAGE)));
    }

    #[test]
    fn sha1_only_where_allowed() {
        let hash = sign_sha1(SECRET, MESSAGE);
        assert!(!verify(Some(&consumer(&[SECRET], false)), MESSAGE, &hash));
        assert!(verify(Some(&consumer(&[SECRET], true)), MESSAGE, &hash));
    }

    #[test]
    fn either_of_two_secrets_verifies() {
        let c = consumer(&["old", "new"], false);
        assert!(verify(Some(&c), MESSAGE, &sign_sha256("old", MESSAGE)));
        assert!(verify(Some(&c), MESSAGE, &sign_sha256("new", MESSAGE)));
        assert!(!verify(Some(&c), MESSAGE, &sign_sha256("gone", MESSAGE)));
    }

    #[test]
    fn unknown_consumer_never_verifies() {
        assert!(!verify(None, MESSAGE, &sign_sha256(SECRET, MESSAGE)));
        assert!(!verify(
            None,
            MESSAGE,
            &sign_sha256(decoy_secret(), MESSAGE)
        ));
    }

    #[test]
    fn junk_hashes_are_just_invalid() {
        let c = consumer(&[SECRET], true);
        for junk in ["", "zz", "abc", &"a".repeat(63), &"0".repeat(200), "ä"] {
            assert!(!verify(Some(&c), MESSAGE, junk));
        }
    }

    #[test]
    fn multi_form_string_has_an_empty_target() {
        assert_eq!(signing_string("", "c", "[]"), ".c.[]");
    }

    proptest::proptest! {
        #[test]
        fn verify_never_panics(message in ".*", provided in ".*") {
            let c = consumer(&[SECRET, "second"], true);
            let _ = verify(Some(&c), &message, &provided);
            let _ = verify(None, &message, &provided);
        }

        #[test]
        fn verify_never_panics_on_arbitrary_bytes(
            message in proptest::collection::vec(proptest::num::u8::ANY, 0..256),
            provided in proptest::collection::vec(proptest::num::u8::ANY, 0..128),
        ) {
            let c = consumer(&[SECRET], true);
            let message = String::from_utf8_lossy(&message);
            let provided = String::from_utf8_lossy(&provided);
            let _ = verify(Some(&c), &message, &provided);
            let _ = verify(None, &message, &provided);
        }

        #[test]
        fn verify_never_panics_on_hex(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..80)) {
            let c = consumer(&[SECRET], true);
            let provided = hex::encode(bytes);
            let _ = verify(Some(&c), MESSAGE, &provided);
        }
    }
}
