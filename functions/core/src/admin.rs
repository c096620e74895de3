//! What the admin command (`functions/admin`, DECISIONS §8a) needs of a store
//! beyond [`Store`]: listing and changing consumers, elements and call types.
//!
//! The API never uses these operations; they live in a trait of their own so
//! that the request path keeps its small, audited surface. Both stores
//! implement it inside their crates, next to their private connection.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::model::{CallType, Consumer, Display, Scope};
use crate::store::{Store, StoreError};

/// Random bytes in a consumer secret (shown as twice as many hex digits).
pub const SECRET_BYTES: usize = 32;

/// A consumer has at most this many active secrets (the old and the new one
/// while a rotation is under way).
pub const MAX_SECRETS: usize = 2;

/// The result of [`AdminStore::replace_secrets`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretsReplaced {
    /// The consumer had the expected secrets; it has the new ones now.
    Replaced,
    /// No consumer with that id.
    UnknownConsumer,
    /// The consumer's secrets were no longer the expected ones (another admin
    /// changed them meanwhile); nothing was written.
    Changed,
}

#[async_trait]
pub trait AdminStore: Store {
    /// Whether the store is reachable and ready (file opened, tables exist).
    /// Fails with a message naming what is missing.
    async fn check(&self) -> Result<(), StoreError>;

    /// Every consumer (production and sandbox), oldest first.
    async fn consumers(&self) -> Result<Vec<Consumer>, StoreError>;

    /// Sets the secrets of consumer `id` to `secrets` (newest last), if it
    /// still has `expected`, atomically.
    async fn replace_secrets(
        &self,
        id: &str,
        expected: &[String],
        secrets: &[String],
    ) -> Result<SecretsReplaced, StoreError>;

    /// Switches consumer `id`'s replay protection (a signed `signed_at` on
    /// every request, [`crate::replay`]); `false` when there is no such consumer.
    async fn set_require_signed_time(&self, id: &str, required: bool) -> Result<bool, StoreError>;

    /// Removes consumer `id`; `false` when there was none.
    async fn delete_consumer(&self, id: &str) -> Result<bool, StoreError>;

    /// Removes the element of `address` (its calls stay); `false` when there
    /// was none.
    async fn remove_element(&self, scope: &Scope, address: &str) -> Result<bool, StoreError>;

    /// Creates or replaces the call type named `call_type.name`.
    async fn put_call_type(&self, call_type: &CallType) -> Result<(), StoreError>;

    /// Stores a new display (its id and token hash are new).
    async fn create_display(&self, display: &Display) -> Result<(), StoreError>;

    /// Every display, revoked ones included, oldest first.
    async fn displays(&self) -> Result<Vec<Display>, StoreError>;

    /// Gives display `id` a new token hash (the old token stops working at
    /// once) and un-revokes nothing: a revoked display stays revoked.
    /// `false` when there is no such display.
    async fn replace_display_token(&self, id: &str, token_hash: &str) -> Result<bool, StoreError>;

    /// Revokes display `id` (its token stops working at once; the record
    /// stays for the list). `false` when there is no such display.
    async fn revoke_display(&self, id: &str) -> Result<bool, StoreError>;
}

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
        let now = crate::wire_time::now();
        let consumer = new_consumer("Zentrale", true, false, now).unwrap();
        assert!(crate::validation::is_uuid(&consumer.id));
        assert_eq!(consumer.id, consumer.id.to_ascii_lowercase());
        assert_eq!(consumer.secrets.len(), 1);
        assert!(consumer.allow_sha1);
        assert_eq!(consumer.expires_at, None);
    }
}
