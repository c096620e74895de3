//! One push as an HTTP request (RFC 8030): the payload encrypted for the
//! browser (RFC 8291, `aes128gcm`), signed with the installation's VAPID
//! key (RFC 8292), both by `web-push-native`; and the headers DECISIONS
//! §15 asks for: `TTL` 60, `Urgency: high`, `Topic` = the call.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use web_push_native::jwt_simple::algorithms::ES256KeyPair;
use web_push_native::p256::PublicKey;
use web_push_native::{Auth, WebPushBuilder};

use nurse_call_core::push::{PUSH_TTL_SECONDS, PushSubscription, VapidKeys, topic_of};

/// The installation's VAPID key, ready to sign.
pub struct Signer {
    key_pair: ES256KeyPair,
    subject: String,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("subject", &self.subject)
            .finish_non_exhaustive()
    }
}

impl Signer {
    /// `subject`: the VAPID `sub` claim (`VAPID_SUBJECT`, DECISIONS §10):
    /// where a push service writes when something is wrong with the pushes.
    pub fn new(keys: &VapidKeys, subject: &str) -> Result<Self, String> {
        let private = URL_SAFE_NO_PAD
            .decode(&keys.private_key)
            .map_err(|_| "the stored VAPID private key is not base64url".to_string())?;
        let key_pair = ES256KeyPair::from_bytes(&private)
            .map_err(|_| "the stored VAPID private key is no P-256 key".to_string())?;
        Ok(Signer {
            key_pair,
            subject: subject.to_string(),
        })
    }

    /// The encrypted, signed request of `payload` to `subscription`.
    pub fn request(
        &self,
        subscription: &PushSubscription,
        call_id: i64,
        payload: &str,
    ) -> Result<http::Request<Vec<u8>>, String> {
        let endpoint = subscription
            .endpoint
            .parse()
            .map_err(|_| "the subscription's endpoint is no URI".to_string())?;
        let decode = |text: &str| URL_SAFE_NO_PAD.decode(text.trim_end_matches('='));
        let public = decode(&subscription.p256dh)
            .ok()
            .and_then(|bytes| PublicKey::from_sec1_bytes(&bytes).ok())
            .ok_or("the subscription's p256dh is no P-256 key")?;
        let auth = decode(&subscription.auth)
            .ok()
            .filter(|bytes| bytes.len() == 16)
            .ok_or("the subscription's auth is not 16 bytes")?;
        let mut request = WebPushBuilder::new(endpoint, public, Auth::clone_from_slice(&auth))
            .with_valid_duration(Duration::from_secs(PUSH_TTL_SECONDS))
            .with_vapid(&self.key_pair, &self.subject)
            .build(payload.as_bytes().to_vec())
            .map_err(|error| format!("the push could not be encrypted: {error}"))?;
        let headers = request.headers_mut();
        headers.insert("urgency", http::HeaderValue::from_static("high"));
        let topic = http::HeaderValue::from_str(&topic_of(call_id))
            .map_err(|_| "the topic is no header value".to_string())?;
        headers.insert("topic", topic);
        Ok(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    const VAPID_SUBJECT: &str = "mailto:admin@localhost";
    use nurse_call_core::Scope;
    use web_push_native::p256::SecretKey;
    use web_push_native::p256::elliptic_curve::sec1::ToEncodedPoint;

    /// A browser's side of a subscription: its key pair and auth secret.
    fn browser() -> (SecretKey, [u8; 16], PushSubscription) {
        let keys = crate::keys::generate(Utc::now());
        let secret =
            SecretKey::from_slice(&URL_SAFE_NO_PAD.decode(&keys.private_key).unwrap()).unwrap();
        let auth = [7u8; 16];
        let subscription = PushSubscription {
            staff_id: "s".into(),
            scope: Scope::installation(),
            endpoint: "https://push.example/send/abc".into(),
            p256dh: URL_SAFE_NO_PAD.encode(secret.public_key().to_encoded_point(false).as_bytes()),
            auth: URL_SAFE_NO_PAD.encode(auth),
            created_at: Utc::now(),
        };
        (secret, auth, subscription)
    }

    #[test]
    fn the_browser_decrypts_what_is_sent_and_the_headers_are_those_of_decisions_15() {
        let signer = Signer::new(&crate::keys::generate(Utc::now()), VAPID_SUBJECT).unwrap();
        let (secret, auth, subscription) = browser();
        let request = signer
            .request(&subscription, 42, r#"{"type":"call.alert"}"#)
            .unwrap();
        let header = |name: &str| request.headers()[name].to_str().unwrap().to_string();
        assert_eq!(header("ttl"), "60");
        assert_eq!(header("urgency"), "high");
        assert_eq!(header("topic"), "call-42");
        assert_eq!(header("content-encoding"), "aes128gcm");
        assert_eq!(header("content-type"), "application/octet-stream");
        assert!(header("authorization").starts_with("vapid t="));
        let plain = web_push_native::decrypt(
            request.body().clone(),
            &secret,
            &Auth::clone_from_slice(&auth),
        )
        .unwrap();
        assert_eq!(plain, br#"{"type":"call.alert"}"#);
    }

    #[test]
    fn a_damaged_subscription_is_an_error_not_a_panic() {
        let signer = Signer::new(&crate::keys::generate(Utc::now()), VAPID_SUBJECT).unwrap();
        let (_, _, subscription) = browser();
        let broken = PushSubscription {
            p256dh: "AAAA".into(),
            ..subscription
        };
        assert!(signer.request(&broken, 1, "{}").is_err());
        let keys = VapidKeys {
            private_key: "not a key".into(),
            ..crate::keys::generate(Utc::now())
        };
        assert!(Signer::new(&keys, VAPID_SUBJECT).is_err());
    }
}
