//! Web Push (DECISIONS §15), as plain data: the installation's VAPID key
//! pair (RFC 8292), a staff member's browser subscription (RFC 8030's push
//! resource with the RFC 8291 keys), what makes a subscription acceptable,
//! and the headers every alarm push carries. The encryption, the signature
//! and the HTTP request are the push adapter's (`functions/push`), made with
//! a well-kept crate; nothing here speaks HTTP.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Duration, Utc};

use crate::domain::model::Scope;
use crate::domain::push_services::{NOT_A_PUSH_SERVICE, PushServices};
use crate::domain::webhooks::Outcome;
use crate::domain::webhooks::schedule::backoff;

/// A push lives this long at the push service (`TTL`): an alert older than
/// a minute is replaced by the re-alert or the cancel that follows it, and
/// retries stop once it would have expired anyway.
pub const PUSH_TTL_SECONDS: u64 = 60;

/// Longest subscription endpoint taken (the browsers' push services use a
/// few hundred characters).
pub(crate) const MAX_ENDPOINT_CHARS: usize = 2048;

/// Most subscriptions (devices) one person may register.
pub const MAX_SUBSCRIPTIONS_PER_STAFF: usize = 10;

/// The installation's VAPID key pair: P-256, both halves base64url without
/// padding, as browsers and push services take them: the public key as
/// the 65-byte uncompressed point (`applicationServerKey`), the private key
/// as the 32-byte scalar. Made once by the push sender (`functions/push`,
/// which has the curve arithmetic; the Lambda functions do not link it) and
/// kept in the store; the first one stored wins when two processes start
/// at once.
#[derive(Clone, PartialEq, Eq)]
pub struct VapidKeys {
    /// The uncompressed point, 65 bytes: what browsers subscribe with.
    pub public_key: String,
    /// The scalar, 32 bytes; as stored in AWS production sealed with the
    /// installation's key (`kms:…`), opened before it signs.
    pub private_key: String,
    /// When the pair was made (UTC).
    pub created_at: DateTime<Utc>,
}

impl std::fmt::Debug for VapidKeys {
    // Never the private key, in a log line or a panic message.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VapidKeys")
            .field("public_key", &self.public_key)
            .field("created_at", &self.created_at)
            .finish_non_exhaustive()
    }
}

/// One browser (device) of a staff member that takes pushes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushSubscription {
    /// Whose device (a `Staff::id`): their alerts and cancels go to it.
    pub staff_id: String,
    /// That staff member's scope.
    pub scope: Scope,
    /// The push resource (RFC 8030); unique per browser and service worker.
    pub endpoint: String,
    /// The browser's ECDH public key (65 bytes, base64url), RFC 8291.
    pub p256dh: String,
    /// The browser's auth secret (16 bytes, base64url), RFC 8291.
    pub auth: String,
    /// When the browser subscribed (UTC).
    pub created_at: DateTime<Utc>,
}

/// Why a subscription's field is refused: the 422's message per field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SubscriptionFault {
    pub key: &'static str,
    pub message: String,
}

/// The three fields a subscription needs, checked: `endpoint` a URL of one
/// of the `services` (DECISIONS §20), `keys.p256dh` an
/// uncompressed P-256 point, `keys.auth` 16 bytes, both base64url as the
/// browser's `PushSubscription.toJSON()` gives them.
pub(crate) fn check_subscription(
    endpoint: &str,
    p256dh: &str,
    auth: &str,
    services: &PushServices,
) -> Result<(), Vec<SubscriptionFault>> {
    let mut faults = Vec::new();
    if let Err(message) = check_endpoint(endpoint, services) {
        faults.push(SubscriptionFault {
            key: "endpoint",
            message,
        });
    }
    // The uncompressed point's form (0x04 and two coordinates); whether it
    // lies on the curve the push sender finds when it encrypts (a refused
    // push, logged), which keeps the curve arithmetic out of the Lambda
    // functions.
    if decode(p256dh).is_none_or(|bytes| bytes.len() != 65 || bytes[0] != 4) {
        faults.push(SubscriptionFault {
            key: "keys.p256dh",
            message:
                "keys.p256dh muss ein öffentlicher P-256-Schlüssel (base64url, 65 Bytes) sein."
                    .to_string(),
        });
    }
    if decode(auth).is_none_or(|bytes| bytes.len() != 16) {
        faults.push(SubscriptionFault {
            key: "keys.auth",
            message: "keys.auth muss 16 Bytes in base64url sein.".to_string(),
        });
    }
    if faults.is_empty() {
        Ok(())
    } else {
        Err(faults)
    }
}

fn check_endpoint(endpoint: &str, services: &PushServices) -> Result<(), String> {
    if endpoint.chars().count() > MAX_ENDPOINT_CHARS {
        return Err(format!(
            "endpoint darf maximal {MAX_ENDPOINT_CHARS} Zeichen haben."
        ));
    }
    if services.allows(endpoint) {
        Ok(())
    } else {
        Err(NOT_A_PUSH_SERVICE.to_string())
    }
}

/// base64url with or without padding (browsers send it without).
fn decode(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')).ok()
}

/// What follows a push's attempt at one subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushNext {
    /// The push service took it (2xx).
    Delivered,
    /// 404 or 410: the subscription is gone (the browser unsubscribed, the
    /// app was removed); it is deleted and never tried again.
    Gone,
    /// A network error, a timeout, 408, 429 or 5xx: tried again then
    /// (DECISIONS §16's backoff).
    RetryAt(DateTime<Utc>),
    /// Not tried again: `refused` (any other answer: a retry would get the
    /// same), or `expired` (the next try would come after the push's `TTL`,
    /// when a re-alert or a cancel has replaced it anyway).
    GiveUp(&'static str),
}

/// After the `failed`-th failed attempt (1 for the first) of a push made
/// at `made_at`, at `now`.
pub fn after_push(
    outcome: Outcome,
    failed: u32,
    made_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> PushNext {
    match outcome {
        outcome if outcome.delivered() => PushNext::Delivered,
        Outcome::Status(404 | 410) => PushNext::Gone,
        outcome if outcome.retryable() => {
            let at = now + backoff(failed);
            if at > made_at + Duration::seconds(PUSH_TTL_SECONDS as i64) {
                PushNext::GiveUp("expired")
            } else {
                PushNext::RetryAt(at)
            }
        }
        _ => PushNext::GiveUp("refused"),
    }
}

/// The `Topic` of a call's pushes: a newer push with the same topic
/// replaces an older one still waiting at the push service (RFC 8030 5.4;
/// at most 32 base64url characters).
pub fn topic_of(call_id: i64) -> String {
    format!("call-{call_id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const P256DH: &str =
        "BLn9b-VR0ca83knDNZ32dCHGyjJp-1riX9ZTN40MqV8K_LpQmLqxC_DoHvqvFXO_nGdAB4W9dogZb_sM-uV4JbY";
    const AUTH: &str = "_ordMnz7uTCmrpBTeUV4Bw";

    /// The default services and the tests' push service on this machine.
    fn services() -> PushServices {
        crate::domain::push_services::parse_push_services(&format!(
            "{},localhost,127.0.0.1,[::1]",
            crate::domain::push_services::DEFAULT_PUSH_SERVICES
        ))
        .unwrap()
    }

    #[test]
    fn a_browsers_subscription_is_taken() {
        for endpoint in [
            "https://fcm.googleapis.com/fcm/send/abc:def",
            "https://web.push.apple.com/QGuQyavXutnMH",
            "http://localhost:8090/notify/1",
            "http://127.0.0.1:8090/notify/1",
            "http://[::1]:8090/notify/1",
        ] {
            assert_eq!(
                check_subscription(endpoint, P256DH, AUTH, &services()),
                Ok(()),
                "{endpoint}"
            );
        }
        // With base64 padding, as some libraries write it.
        assert_eq!(
            check_subscription(
                "https://web.push.apple.com/1",
                P256DH,
                "_ordMnz7uTCmrpBTeUV4Bw==",
                &services()
            ),
            Ok(())
        );
    }

    #[test]
    fn an_endpoint_of_no_push_service_and_bad_keys_are_refused_field_by_field() {
        let faults = |endpoint: &str, p256dh: &str, auth: &str| {
            check_subscription(endpoint, p256dh, auth, &services()).unwrap_err()
        };
        let keys = |endpoint: &str, p256dh: &str, auth: &str| {
            faults(endpoint, p256dh, auth)
                .into_iter()
                .map(|fault| fault.key)
                .collect::<Vec<_>>()
        };
        for endpoint in [
            "http://fcm.googleapis.com/1",
            "https://push.example/1",
            "ftp://fcm.googleapis.com/1",
            "no url",
        ] {
            assert_eq!(
                faults(endpoint, P256DH, AUTH),
                [SubscriptionFault {
                    key: "endpoint",
                    message: NOT_A_PUSH_SERVICE.to_string()
                }],
                "{endpoint}"
            );
        }
        let too_long = format!("https://fcm.googleapis.com/{}", "a".repeat(2048));
        assert_eq!(keys(&too_long, P256DH, AUTH), ["endpoint"]);
        let endpoint = "https://fcm.googleapis.com/1";
        assert_eq!(keys(endpoint, "AAAA", AUTH), ["keys.p256dh"]);
        // 65 bytes, but a compressed point's tag.
        let compressed_tag = URL_SAFE_NO_PAD.encode([2u8; 65]);
        assert_eq!(keys(endpoint, &compressed_tag, AUTH), ["keys.p256dh"]);
        assert_eq!(
            keys("http://x.example", "!!", "short"),
            ["endpoint", "keys.p256dh", "keys.auth"]
        );
    }

    #[test]
    fn a_push_is_retried_with_the_backoff_within_its_ttl_and_a_gone_one_removed() {
        let made = chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 11, 26, 7, 0, 0).unwrap();
        let at = |seconds: i64| made + Duration::seconds(seconds);
        assert_eq!(
            after_push(Outcome::Status(201), 0, made, at(0)),
            PushNext::Delivered
        );
        assert_eq!(
            after_push(Outcome::Status(410), 1, made, at(0)),
            PushNext::Gone
        );
        assert_eq!(
            after_push(Outcome::Status(404), 1, made, at(0)),
            PushNext::Gone
        );
        assert_eq!(
            after_push(Outcome::Status(429), 1, made, at(0)),
            PushNext::RetryAt(at(1))
        );
        assert_eq!(
            after_push(Outcome::Status(503), 3, made, at(3)),
            PushNext::RetryAt(at(7))
        );
        assert_eq!(
            after_push(Outcome::TimedOut, 5, made, at(15)),
            PushNext::RetryAt(at(31))
        );
        // The sixth failure would wait 30 s more: past the 60 s TTL.
        assert_eq!(
            after_push(Outcome::NetworkError, 6, made, at(31)),
            PushNext::GiveUp("expired")
        );
        assert_eq!(
            after_push(Outcome::Status(400), 1, made, at(0)),
            PushNext::GiveUp("refused")
        );
        assert_eq!(
            after_push(Outcome::Status(413), 1, made, at(0)),
            PushNext::GiveUp("refused")
        );
    }

    #[test]
    fn a_calls_topic_fits_rfc_8030() {
        let topic = topic_of(i64::MAX);
        assert!(topic.len() <= 32);
        assert!(
            topic
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
    }
}
