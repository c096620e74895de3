//! Secrets kept sealed with the installation's key (DECISIONS §17): the
//! VAPID private key (Web Push) and the webhook endpoints' secrets are
//! stored encrypted with the installation's KMS key where it has one (a
//! production stack), so that reading the data table, a backup or an
//! export does not give them away: opening one takes `kms:Decrypt`, which
//! only the functions that sign are granted, each for its own kind.
//!
//! A sealed value is text that says so: `kms:` and the ciphertext in
//! base64. Plain values never start like that (a VAPID key is base64url, a
//! webhook secret starts `whsec_`), so stores keep either without knowing
//! which, and an installation without a key (the embedded store, the local
//! server, a sandbox stack) keeps them plain. A sealed value is bound to
//! what it is ([`Sealed`]: the KMS encryption context): a webhook
//! secret copied onto another endpoint does not open.
//!
//! The trait is here, without AWS types; `nurse-call-kms` implements it
//! with KMS, [`NoKey`] is the installation without a key.

use async_trait::async_trait;

/// How a sealed value starts.
pub const SEALED_PREFIX: &str = "kms:";

/// Whether a stored value is sealed (else it is the secret itself).
pub fn is_sealed(stored: &str) -> bool {
    stored.starts_with(SEALED_PREFIX)
}

/// What a sealed value is: its KMS encryption context, checked when it is
/// opened and named in the key policy's conditions and in CloudTrail.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Sealed {
    /// The installation's VAPID private key (one per installation).
    VapidPrivateKey,
    /// A secret of the webhook endpoint with this id.
    WebhookSecret {
        /// The endpoint's id: the secret opens for this endpoint only.
        endpoint: String,
    },
}

impl Sealed {
    /// The encryption context: `purpose` (what the grants' conditions
    /// name), and the endpoint for a webhook secret.
    pub fn context(&self) -> Vec<(&'static str, String)> {
        match self {
            Sealed::VapidPrivateKey => vec![("purpose", "vapid-private-key".to_string())],
            Sealed::WebhookSecret { endpoint } => vec![
                ("purpose", "webhook-secret".to_string()),
                ("endpoint", endpoint.clone()),
            ],
        }
    }
}

/// Why a secret could not be sealed or opened. Never carries the secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    /// The value is sealed and this process has no key to open it with.
    #[error(
        "the {0} is sealed with the installation's KMS key and this process has no key \
         (set SECRETS_KEY_ID, or run the admin command with --secrets-key)"
    )]
    NoKey(&'static str),
    /// KMS refused or could not be reached.
    #[error("KMS: {0}")]
    Kms(String),
}

impl Sealed {
    fn what(&self) -> &'static str {
        match self {
            Sealed::VapidPrivateKey => "VAPID private key",
            Sealed::WebhookSecret { .. } => "webhook secret",
        }
    }
}

/// Seals secrets before they are stored and opens them before use.
#[async_trait]
pub trait Sealer: Send + Sync {
    /// Whether this sealer seals (has a key): a caller may warn about a
    /// secret still kept plain.
    fn has_key(&self) -> bool;

    /// The text to store for `secret`: sealed with the key, or the secret
    /// itself where there is no key.
    async fn seal(&self, secret: &str, what: &Sealed) -> Result<String, SealError>;

    /// The secret of a stored value: a plain one as it is, a sealed one
    /// opened with the key.
    async fn open(&self, stored: &str, what: &Sealed) -> Result<String, SealError>;
}

/// An installation without a key: secrets are kept plain, and a sealed
/// one found in the store is an error that says what to configure.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoKey;

#[async_trait]
impl Sealer for NoKey {
    fn has_key(&self) -> bool {
        false
    }

    async fn seal(&self, secret: &str, _what: &Sealed) -> Result<String, SealError> {
        Ok(secret.to_string())
    }

    async fn open(&self, stored: &str, what: &Sealed) -> Result<String, SealError> {
        if is_sealed(stored) {
            return Err(SealError::NoKey(what.what()));
        }
        Ok(stored.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn without_a_key_secrets_stay_plain_and_a_sealed_one_says_what_to_set() {
        let what = Sealed::WebhookSecret {
            endpoint: "ep_1".into(),
        };
        assert_eq!(NoKey.seal("whsec_abc", &what).await.unwrap(), "whsec_abc");
        assert_eq!(NoKey.open("whsec_abc", &what).await.unwrap(), "whsec_abc");
        let error = NoKey.open("kms:AQID", &what).await.unwrap_err();
        assert_eq!(error, SealError::NoKey("webhook secret"));
        assert!(error.to_string().contains("SECRETS_KEY_ID"));
        assert!(!NoKey.has_key());
    }

    #[test]
    fn the_context_names_the_purpose_and_the_endpoint() {
        assert!(is_sealed("kms:AQID") && !is_sealed("whsec_kms:") && !is_sealed("BOr2"));
        assert_eq!(
            Sealed::WebhookSecret {
                endpoint: "ep_7".into()
            }
            .context(),
            [
                ("purpose", "webhook-secret".to_string()),
                ("endpoint", "ep_7".to_string())
            ]
        );
        assert_eq!(
            Sealed::VapidPrivateKey.context(),
            [("purpose", "vapid-private-key".to_string())]
        );
    }
}
