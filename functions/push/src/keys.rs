//! The installation's VAPID key pair (RFC 8292): made once, from the
//! operating system's random numbers, and kept in the store, where the
//! first pair written stays (two processes starting at once agree on it),
//! its private half sealed with the installation's key where there is one.
//! Here and not in the core: the curve arithmetic stays out of the Lambda
//! functions, which only read the public key.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use web_push_native::p256::SecretKey;
use web_push_native::p256::elliptic_curve::sec1::ToEncodedPoint;

use nurse_call_core::{
    PushStore,
    push::VapidKeys,
    sealing::{Sealed, Sealer, is_sealed},
};

/// A new P-256 key pair, both halves base64url without padding.
pub fn generate(now: DateTime<Utc>) -> VapidKeys {
    let secret = loop {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).expect("the operating system's random numbers");
        // A scalar must be below the group's order: all but about one in
        // 2^32 random values are; the rest are drawn again.
        if let Ok(secret) = SecretKey::from_slice(&bytes) {
            break secret;
        }
    };
    let public = secret.public_key().to_encoded_point(false);
    VapidKeys {
        public_key: URL_SAFE_NO_PAD.encode(public.as_bytes()),
        private_key: URL_SAFE_NO_PAD.encode(secret.to_bytes()),
        created_at: now,
    }
}

/// The key pair kept, made and kept now when there is none yet, with its
/// private key opened: a new one is sealed with the installation's key
/// before it is stored (DECISIONS §17), where `sealer` has one.
pub async fn kept_or_made(
    store: &dyn PushStore,
    sealer: &dyn Sealer,
    now: DateTime<Utc>,
) -> Result<VapidKeys, String> {
    let kept = match store.vapid_keys().await.map_err(|e| e.to_string())? {
        Some(kept) => kept,
        None => {
            let made = generate(now);
            let private_key = sealer
                .seal(&made.private_key, &Sealed::VapidPrivateKey)
                .await
                .map_err(|e| format!("the new VAPID private key not sealed: {e}"))?;
            let sealed = VapidKeys {
                private_key,
                ..made
            };
            let kept = store
                .keep_vapid_keys(&sealed)
                .await
                .map_err(|e| e.to_string())?;
            tracing::info!(public_key = %kept.public_key, sealed = is_sealed(&kept.private_key), "web push: the installation's VAPID key pair is ready");
            kept
        }
    };
    if sealer.has_key() && !is_sealed(&kept.private_key) {
        // Made before the installation had a key: it still signs; saying
        // so lets the operator decide (docs/deploy.md, "Secrets").
        tracing::warn!(
            "web push: the VAPID private key is kept plain, not sealed with the installation's key"
        );
    }
    let private_key = sealer
        .open(&kept.private_key, &Sealed::VapidPrivateKey)
        .await
        .map_err(|e| format!("the VAPID private key not opened: {e}"))?;
    Ok(VapidKeys {
        private_key,
        ..kept
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_key_pair_is_a_p256_pair_in_base64url() {
        let keys = generate(Utc::now());
        let public = URL_SAFE_NO_PAD.decode(&keys.public_key).unwrap();
        let private = URL_SAFE_NO_PAD.decode(&keys.private_key).unwrap();
        assert_eq!((public.len(), public[0], private.len()), (65, 4, 32));
        let secret = SecretKey::from_slice(&private).unwrap();
        assert_eq!(
            secret.public_key().to_encoded_point(false).as_bytes(),
            &public[..]
        );
        assert_ne!(keys, generate(Utc::now()), "drawn anew each time");
        assert!(!format!("{keys:?}").contains(&keys.private_key));
    }
}
