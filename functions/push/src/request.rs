//! One push as an HTTP request (RFC 8030): the payload encrypted for the
//! browser (RFC 8291, `aes128gcm`) by `web-push-native`, signed with the
//! installation's VAPID key (RFC 8292) by the `jwt-simple` it re-exports;
//! and the headers DECISIONS §15 asks for: `TTL` 60, `Urgency: high`,
//! `Topic` = the call.
//!
//! The VAPID claims are made here, not by `web-push-native` 0.5's
//! `with_vapid`: its `aud` is scheme and host only, while RFC 8292 §2 asks
//! for the push resource's origin, which has the port when it is not the
//! scheme's default (RFC 6454 §6.1); a push service on its own port
//! refuses such a token.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use web_push_native::jwt_simple::algorithms::{
    ECDSAP256KeyPairLike, ECDSAP256PublicKeyLike, ES256KeyPair,
};
use web_push_native::jwt_simple::claims::Claims;
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
        let authorization = self.authorization(&subscription.endpoint)?;
        let mut request = WebPushBuilder::new(endpoint, public, Auth::clone_from_slice(&auth))
            .with_valid_duration(Duration::from_secs(PUSH_TTL_SECONDS))
            .build(payload.as_bytes().to_vec())
            .map_err(|error| format!("the push could not be encrypted: {error}"))?;
        let headers = request.headers_mut();
        headers.insert(http::header::AUTHORIZATION, authorization);
        headers.insert("urgency", http::HeaderValue::from_static("high"));
        let topic = http::HeaderValue::from_str(&topic_of(call_id))
            .map_err(|_| "the topic is no header value".to_string())?;
        headers.insert("topic", topic);
        Ok(request)
    }
}

impl Signer {
    /// `vapid t=<JWT>, k=<public key>` (RFC 8292 §3), the JWT's `aud` the
    /// endpoint's origin, valid for the push's `TTL` (as `web-push-native`
    /// makes it, but for the `aud`).
    fn authorization(&self, endpoint: &str) -> Result<http::HeaderValue, String> {
        let claims = Claims::create(Duration::from_secs(PUSH_TTL_SECONDS).into())
            .with_audience(audience(endpoint)?)
            .with_subject(&self.subject);
        let token = self
            .key_pair
            .sign(claims)
            .map_err(|error| format!("the VAPID claims could not be signed: {error}"))?;
        let public = self.key_pair.public_key();
        let public = URL_SAFE_NO_PAD.encode(public.public_key().to_bytes_uncompressed());
        http::HeaderValue::try_from(format!("vapid t={token}, k={public}"))
            .map_err(|_| "the VAPID authorization is no header value".to_string())
    }
}

/// The push resource's origin (RFC 6454 §6.1): scheme, host, and the port
/// when it is not the scheme's default.
fn audience(endpoint: &str) -> Result<String, String> {
    let url = url::Url::parse(endpoint)
        .map_err(|_| "the subscription's endpoint is no URL".to_string())?;
    match url.origin() {
        origin @ url::Origin::Tuple(..) => Ok(origin.ascii_serialization()),
        url::Origin::Opaque(_) => Err("the subscription's endpoint has no origin".to_string()),
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
        assert_eq!(claims_of(&request)["aud"], "https://push.example");
        let plain = web_push_native::decrypt(
            request.body().clone(),
            &secret,
            &Auth::clone_from_slice(&auth),
        )
        .unwrap();
        assert_eq!(plain, br#"{"type":"call.alert"}"#);
    }

    /// The VAPID JWT's claims, its signature checked with the `k` it
    /// names.
    fn claims_of(request: &http::Request<Vec<u8>>) -> serde_json::Value {
        let value = request.headers()["authorization"].to_str().unwrap();
        let (token, key) = value
            .strip_prefix("vapid t=")
            .and_then(|rest| rest.split_once(", k="))
            .expect("vapid t=…, k=…");
        let key = web_push_native::jwt_simple::algorithms::ES256PublicKey::from_bytes(
            &URL_SAFE_NO_PAD.decode(key).unwrap(),
        )
        .unwrap();
        key.verify_token::<web_push_native::jwt_simple::claims::NoCustomClaims>(token, None)
            .expect("signed by the key it names");
        let claims = token.split('.').nth(1).expect("a JWT's claims part");
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).unwrap()).unwrap()
    }

    #[test]
    fn the_vapid_audience_is_the_push_resources_origin_with_its_port() {
        let signer = Signer::new(&crate::keys::generate(Utc::now()), VAPID_SUBJECT).unwrap();
        let (_, _, subscription) = browser();
        for (endpoint, audience) in [
            ("http://127.0.0.1:37943/x", "http://127.0.0.1:37943"),
            (
                "https://fcm.googleapis.com/fcm/send/x",
                "https://fcm.googleapis.com",
            ),
            (
                "https://web.push.apple.com:443/x",
                "https://web.push.apple.com",
            ),
            ("https://push.example:8443/a/b", "https://push.example:8443"),
        ] {
            let subscription = PushSubscription {
                endpoint: endpoint.into(),
                ..subscription.clone()
            };
            let claims = claims_of(&signer.request(&subscription, 1, "{}").unwrap());
            assert_eq!(claims["aud"], audience, "{endpoint}");
            assert_eq!(claims["sub"], VAPID_SUBJECT);
            let lifetime = claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap();
            assert_eq!(lifetime, PUSH_TTL_SECONDS);
        }
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
