//! The checks of the pure fuzz targets (`envelope`, `compaction`,
//! `signature`), on raw input bytes.
//!
//! Shared by the fuzz targets (nightly, `cargo fuzz`) and by the stable
//! regression test `functions/core/tests/fuzz_corpus.rs`, which includes this
//! file with `#[path]` and replays every kept corpus file through it. So it
//! uses nothing but `nurse_call_core` and crates that core depends on anyway
//! (`serde_json`, `hmac`, `sha1`, `sha2`, `hex`), and no `arbitrary`: the
//! signature input is decoded by hand ([`SignatureInput::decode`]).
//!
//! Every check panics (with the offending values) when an invariant breaks.

use hmac::{Hmac, Mac};
use serde_json::Value;

use nurse_call_core::{
    Envelope, compact_json, parse_strict,
    signature::{sign_sha1, sign_sha256, signing_string, verify},
};

/// The texts a byte input stands for: the bytes themselves when they are
/// UTF-8, and always their lossy decoding (so that non-UTF-8 inputs still
/// exercise the parsers on something close to what was sent).
fn texts(bytes: &[u8]) -> Vec<String> {
    let lossy = String::from_utf8_lossy(bytes).into_owned();
    match std::str::from_utf8(bytes) {
        Ok(text) if text == lossy => vec![lossy],
        Ok(text) => vec![text.to_string(), lossy],
        Err(_) => vec![lossy],
    }
}

/// `envelope`: `Envelope::parse` on arbitrary text never panics, and agrees
/// with serde_json: an accepted body is a JSON object whose every field the
/// envelope returns unchanged, with `data` kept as raw text that parses to
/// the same value (also after compaction); a JSON object that serde_json
/// reads is refused only for a duplicate key.
pub fn check_envelope(bytes: &[u8]) {
    for text in texts(bytes) {
        check_envelope_text(&text);
    }
}

fn check_envelope_text(text: &str) {
    let parsed = Envelope::parse(text);
    let reference = serde_json::from_str::<Value>(text);
    match (&parsed, &reference) {
        (Ok(envelope), Ok(Value::Object(fields))) => {
            for (key, value) in fields {
                assert_eq!(envelope.get(key), Some(value), "field {key:?} of {text:?}");
            }
            assert_eq!(
                envelope.data_raw().is_some(),
                fields.contains_key("data"),
                "data_raw presence for {text:?}"
            );
            if let Some(raw) = envelope.data_raw() {
                let data = &fields["data"];
                let strict = parse_strict(raw)
                    .unwrap_or_else(|e| panic!("raw data {raw:?} of {text:?} unparsable: {e}"));
                assert_eq!(&strict, data, "raw data {raw:?} of {text:?}");
                assert!(
                    text.contains(raw),
                    "raw data {raw:?} is not a slice of {text:?}"
                );
                let compact = compact_json(raw);
                let reparsed: Value = serde_json::from_str(&compact).unwrap_or_else(|e| {
                    panic!("compacted data {compact:?} of {raw:?} unparsable: {e}")
                });
                assert_eq!(&reparsed, data, "compacted data {compact:?} of {raw:?}");
                // A number is read correctly rounded (as Rust's own parser
                // does), so that a battery level is kept exactly as sent.
                if let (Value::Number(number), Ok(exact)) = (data, raw.parse::<f64>()) {
                    let read = number.as_f64().expect("a JSON number is an f64");
                    assert!(
                        read == exact,
                        "number {raw} read as {read:?}, correctly rounded {exact:?}"
                    );
                }
            }
        }
        (Ok(_), Ok(other)) => panic!("envelope accepted a non-object {other:?} from {text:?}"),
        (Ok(_), Err(e)) => panic!("envelope accepted {text:?}, which serde_json refuses: {e}"),
        (Err(malformed), Ok(Value::Object(_))) => assert!(
            has_duplicate_key(text),
            "envelope refused the object {text:?}, which has no duplicate key: {}",
            malformed.0
        ),
        (Err(_), _) => {}
    }
}

/// Whether JSON text has a key twice in one object, at any depth (checked
/// here independently of the envelope's strict parser).
fn has_duplicate_key(text: &str) -> bool {
    use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

    struct Seed;
    impl<'de> DeserializeSeed<'de> for Seed {
        type Value = bool;
        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
            deserializer.deserialize_any(Seed)
        }
    }
    impl<'de> Visitor<'de> for Seed {
        type Value = bool;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("JSON")
        }
        fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_str<E>(self, _: &str) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_unit<E>(self) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
            let mut found = false;
            while let Some(inner) = seq.next_element_seed(Seed)? {
                found |= inner;
            }
            Ok(found)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
            let mut keys = std::collections::HashSet::new();
            let mut found = false;
            while let Some(key) = map.next_key::<String>()? {
                found |= !keys.insert(key);
                found |= map.next_value_seed(Seed)?;
            }
            Ok(found)
        }
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    Seed.deserialize(&mut deserializer).unwrap_or(false)
}

/// JSON whitespace: what `compact_json` removes outside strings.
fn is_json_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// `compaction`: `compact_json` never panics, only removes JSON whitespace,
/// is idempotent on any text, and on valid JSON gives text that parses to
/// the same value (with the lenient and with the strict parser).
pub fn check_compaction(bytes: &[u8]) {
    for text in texts(bytes) {
        check_compaction_text(&text);
    }
}

fn check_compaction_text(text: &str) {
    let compact = compact_json(text);
    assert!(compact.len() <= text.len(), "compaction of {text:?} grew");
    let kept: String = text.chars().filter(|c| !is_json_whitespace(*c)).collect();
    let kept_after: String = compact
        .chars()
        .filter(|c| !is_json_whitespace(*c))
        .collect();
    assert_eq!(
        kept, kept_after,
        "compaction of {text:?} changed more than whitespace"
    );
    assert_eq!(
        compact_json(&compact),
        compact,
        "compaction of {text:?} is not idempotent"
    );
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        let reparsed: Value = serde_json::from_str(&compact)
            .unwrap_or_else(|e| panic!("compaction {compact:?} of valid {text:?} unparsable: {e}"));
        assert_eq!(reparsed, value, "compaction {compact:?} of {text:?}");
        if let Ok(strict) = parse_strict(text) {
            assert_eq!(
                parse_strict(&compact).ok(),
                Some(strict),
                "strict parse of {compact:?}"
            );
        }
    }
}

/// The signature input, decoded from raw bytes:
/// byte 0 flags (bit 0 SHA-1 allowed, bit 1 a second secret), byte 1 the
/// position and byte 2 the new digit of a one-digit change of a correct hash,
/// then `secret \0 second secret \0 message \0 provided hash`, each decoded
/// lossily from UTF-8 (missing parts are empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureInput {
    pub allow_sha1: bool,
    pub secrets: Vec<String>,
    pub message: String,
    pub provided: String,
    pub change_at: u8,
    pub change_to: u8,
}

impl SignatureInput {
    pub fn decode(bytes: &[u8]) -> Self {
        let header = |i: usize| bytes.get(i).copied().unwrap_or(0);
        let flags = header(0);
        let rest = bytes.get(3..).unwrap_or(&[]);
        let mut parts = rest.splitn(4, |b| *b == 0);
        let mut next = || String::from_utf8_lossy(parts.next().unwrap_or(&[])).into_owned();
        let first = next();
        let second = next();
        let message = next();
        let provided = next();
        let mut secrets = vec![first];
        if flags & 2 != 0 {
            secrets.push(second);
        }
        SignatureInput {
            allow_sha1: flags & 1 != 0,
            secrets,
            message,
            provided,
            change_at: header(1),
            change_to: header(2),
        }
    }
}

/// HMAC-SHA256 computed here, independently of `nurse_call_core::signature`.
pub fn oracle_sha256(secret: &str, message: &str) -> String {
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(message.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// HMAC-SHA1 computed here, independently of `nurse_call_core::signature`.
pub fn oracle_sha1(secret: &str, message: &str) -> String {
    let mut mac = Hmac::<sha1::Sha1>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(message.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// A hex digit other than `digit` (case-insensitively), chosen by `pick`.
fn other_hex_digit(digit: char, pick: u8) -> char {
    let digits = b"0123456789abcdef";
    let current = digit.to_ascii_lowercase();
    let candidates: Vec<char> = digits
        .iter()
        .map(|b| char::from(*b))
        .filter(|c| *c != current)
        .collect();
    candidates[usize::from(pick) % candidates.len()]
}

/// `signature`: `verify` never panics; a correct hash (SHA-256 always, SHA-1
/// only for a consumer that allows it, either secret, either case) always
/// verifies; a changed, shortened or lengthened one never does; an arbitrary
/// provided hash verifies exactly when it is a correct one; an unknown
/// consumer never verifies.
pub fn check_signature(bytes: &[u8]) {
    let input = SignatureInput::decode(bytes);
    // Built by the service's own constructor, so that fields added to
    // `Consumer` later keep their defaults here.
    let mut consumer = nurse_call_core::new_sandbox_consumer();
    consumer.secrets.clone_from(&input.secrets);
    consumer.allow_sha1 = input.allow_sha1;
    consumer.expires_at = None;
    let message = input.message.as_str();

    let mut correct: Vec<String> = Vec::new();
    for secret in &input.secrets {
        let sha256 = oracle_sha256(secret, message);
        let sha1 = oracle_sha1(secret, message);
        assert_eq!(
            sign_sha256(secret, message),
            sha256,
            "sign_sha256 of {input:?}"
        );
        assert_eq!(sign_sha1(secret, message), sha1, "sign_sha1 of {input:?}");

        for hash in [sha256.clone(), sha256.to_ascii_uppercase()] {
            assert!(
                verify(Some(&consumer), message, &hash),
                "correct {hash} refused: {input:?}"
            );
            assert!(
                !verify(None, message, &hash),
                "unknown consumer verified: {input:?}"
            );
        }
        assert_eq!(
            verify(Some(&consumer), message, &sha1),
            input.allow_sha1,
            "SHA-1 {sha1} for allow_sha1={}: {input:?}",
            input.allow_sha1
        );

        // A one-digit change, a shortened and a lengthened hash never verify.
        for good in [&sha256, &sha1] {
            let at = usize::from(input.change_at) % good.len();
            let mut changed: Vec<char> = good.chars().collect();
            changed[at] = other_hex_digit(changed[at], input.change_to);
            let changed: String = changed.into_iter().collect();
            let shortened = &good[..good.len() - 2];
            let lengthened = format!("{good}00");
            for bad in [changed.as_str(), shortened, &lengthened] {
                assert!(
                    !verify(Some(&consumer), message, bad),
                    "changed hash {bad} verified: {input:?}"
                );
            }
        }
        correct.push(sha256);
        if input.allow_sha1 {
            correct.push(sha1);
        }
    }

    // An arbitrary hash verifies exactly when it is one of the correct ones.
    let expected = correct
        .iter()
        .any(|hash| hash.eq_ignore_ascii_case(&input.provided));
    assert_eq!(
        verify(Some(&consumer), message, &input.provided),
        expected,
        "provided {:?}: {input:?}",
        input.provided
    );
    assert!(
        !verify(None, message, &input.provided),
        "unknown consumer verified: {input:?}"
    );

    // The signing string is the three parts joined by dots.
    assert_eq!(
        signing_string(&input.provided, &consumer.id, message),
        format!("{}.{}.{message}", input.provided, consumer.id)
    );
}
