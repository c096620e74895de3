//! Fresh secrets from the OS random source: a consumer's (the admin
//! command's `consumers create` and `rotate`: 32 random bytes, shown as hex)
//! and a webhook endpoint's (`webhooks create` and `rotate`: `whsec_` and
//! base64, DECISIONS §16); and new production consumers.

use chrono::{DateTime, Utc};

use crate::domain::model::Consumer;
use crate::domain::webhooks::endpoint;

/// Random bytes in a consumer secret (shown as twice as many hex digits).
pub const SECRET_BYTES: usize = 32;

/// A consumer has at most this many active secrets (the old and the new one
/// while a rotation is under way).
pub const MAX_SECRETS: usize = 2;

/// A fresh consumer secret: [`SECRET_BYTES`] bytes from the OS random
/// source, as lowercase hex.
pub fn new_consumer_secret() -> Result<String, getrandom::Error> {
    let mut secret = [0u8; SECRET_BYTES];
    getrandom::fill(&mut secret)?;
    Ok(hex::encode(secret))
}

/// A fresh webhook endpoint secret: `whsec_` and the base64 of
/// [`endpoint::SECRET_BYTES`] bytes from the OS random source (shown once,
/// by `create` and `rotate`).
pub fn new_webhook_secret() -> Result<String, getrandom::Error> {
    use base64::Engine;
    let mut key = [0u8; endpoint::SECRET_BYTES];
    getrandom::fill(&mut key)?;
    Ok(format!(
        "{}{}",
        endpoint::SECRET_PREFIX,
        base64::engine::general_purpose::STANDARD.encode(key)
    ))
}

/// A new production consumer (UUID v4, one fresh secret, no expiry).
pub fn new_consumer(
    name: &str,
    allow_sha1: bool,
    require_signed_time: bool,
    now: DateTime<Utc>,
) -> Result<Consumer, getrandom::Error> {
    Ok(Consumer {
        id: uuid::Uuid::new_v4().to_string(),
        name: name.to_string(),
        secrets: vec![new_consumer_secret()?],
        allow_sha1,
        created_at: now,
        expires_at: None,
        require_signed_time,
        heartbeat_seconds: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_64_hex_digits_and_differ() {
        let a = new_consumer_secret().unwrap();
        let b = new_consumer_secret().unwrap();
        assert_eq!(a.len(), 2 * SECRET_BYTES);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(a, b);
    }

    #[test]
    fn a_webhook_secret_is_whsec_and_24_random_bytes() {
        use base64::Engine;
        let (a, b) = (new_webhook_secret().unwrap(), new_webhook_secret().unwrap());
        assert_ne!(a, b);
        let key = base64::engine::general_purpose::STANDARD
            .decode(a.strip_prefix("whsec_").expect("prefix"))
            .expect("base64");
        assert_eq!(key.len(), 24);
    }

    #[test]
    fn new_consumers_are_production_consumers_with_one_secret() {
        let now = crate::clock::now();
        let consumer = new_consumer("Zentrale", true, false, now).unwrap();
        assert!(crate::request::validation::is_uuid(&consumer.id));
        assert_eq!(consumer.id, consumer.id.to_ascii_lowercase());
        assert_eq!(consumer.secrets.len(), 1);
        assert!(consumer.allow_sha1);
        assert_eq!(consumer.expires_at, None);
    }
}
