//! Consumer secrets and new production consumers (the admin command's
//! `consumers create` and `rotate`): 32 random bytes, shown as hex.

use chrono::{DateTime, Utc};

use crate::domain::model::Consumer;

/// Random bytes in a consumer secret (shown as twice as many hex digits).
pub const SECRET_BYTES: usize = 32;

/// A consumer has at most this many active secrets (the old and the new one
/// while a rotation is under way).
pub const MAX_SECRETS: usize = 2;

/// A fresh secret: [`SECRET_BYTES`] bytes from the OS random source, as
/// lowercase hex.
pub fn new_secret() -> Result<String, getrandom::Error> {
    let mut secret = [0u8; SECRET_BYTES];
    getrandom::fill(&mut secret)?;
    Ok(hex::encode(secret))
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
        secrets: vec![new_secret()?],
        allow_sha1,
        created_at: now,
        expires_at: None,
        require_signed_time,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_64_hex_digits_and_differ() {
        let a = new_secret().unwrap();
        let b = new_secret().unwrap();
        assert_eq!(a.len(), 2 * SECRET_BYTES);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(a, b);
    }

    #[test]
    fn new_consumers_are_production_consumers_with_one_secret() {
        let now = crate::domain::wire_time::now();
        let consumer = new_consumer("Zentrale", true, false, now).unwrap();
        assert!(crate::request::validation::is_uuid(&consumer.id));
        assert_eq!(consumer.id, consumer.id.to_ascii_lowercase());
        assert_eq!(consumer.secrets.len(), 1);
        assert!(consumer.allow_sha1);
        assert_eq!(consumer.expires_at, None);
    }
}
