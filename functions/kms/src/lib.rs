//! The installation's KMS key sealing the secrets the service signs with
//! (DECISIONS §17; `nurse_call_core::sealing` says what and why).
//! A production stack gives the functions that sign the key's ARN in
//! `SECRETS_KEY_ID` and a grant for their kind of secret only (the
//! encryption context's `purpose`): `deliver` seals and opens the VAPID
//! private key, `forward` opens the webhook secrets, the admin command
//! seals the secrets it issues. Without the variable nothing is sealed
//! ([`NoKey`]): the local server, the sandbox stack, the tests on SQLite.
//!
//! A secret is opened once per process: the opened value is kept by its
//! sealed text, so a warm function asks KMS again only for a new secret
//! (a rotation), not for every signature.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use aws_sdk_kms::error::DisplayErrorContext;
use aws_sdk_kms::primitives::Blob;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use nurse_call_core::{
    env_value,
    sealing::{NoKey, SEALED_PREFIX, SealError, Sealed, Sealer, is_sealed},
};

/// The key's id or ARN (or an alias): set by the stack where there is one.
pub const SECRETS_KEY_VAR: &str = "SECRETS_KEY_ID";

/// Points the KMS client at moto in tests (as `DYNAMODB_ENDPOINT` does the
/// store's; without it the SDK configuration's endpoint is used).
pub const KMS_ENDPOINT_VAR: &str = "KMS_ENDPOINT";

/// Seals with one KMS key (`Encrypt`, `Decrypt`: a secret is at most a few
/// dozen bytes, well under the 4 KB KMS encrypts directly).
pub struct KmsSealer {
    client: aws_sdk_kms::Client,
    key_id: String,
    /// Secrets opened so far, by what they are and their sealed text.
    opened: Mutex<HashMap<(Sealed, String), String>>,
}

impl KmsSealer {
    /// Seals with `key_id` through a client from `config`, at `endpoint` when
    /// given (moto in tests).
    pub fn new(config: &aws_config::SdkConfig, key_id: &str, endpoint: Option<&str>) -> Self {
        let mut builder = aws_sdk_kms::config::Builder::from(config);
        if let Some(endpoint) = endpoint {
            builder = builder.endpoint_url(endpoint);
        }
        KmsSealer {
            client: aws_sdk_kms::Client::from_conf(builder.build()),
            key_id: key_id.to_string(),
            opened: Mutex::new(HashMap::new()),
        }
    }

    /// With `key_id`, the client from `config`, at `KMS_ENDPOINT` when that
    /// is set (moto in tests): what the functions and the admin command use.
    pub fn with_key(config: &aws_config::SdkConfig, key_id: &str) -> Self {
        let endpoint = env_value(KMS_ENDPOINT_VAR);
        if let Some(endpoint) = &endpoint {
            tracing::info!(endpoint = %endpoint, "KMS at {KMS_ENDPOINT_VAR}");
        }
        Self::new(config, key_id, endpoint.as_deref())
    }

    /// The key it seals with (id, ARN or alias, as configured).
    pub fn key_id(&self) -> &str {
        &self.key_id
    }
}

/// The sealer the environment asks for: KMS with `SECRETS_KEY_ID`'s key
/// (the client from `config`, `KMS_ENDPOINT` if set), else [`NoKey`].
pub fn sealer_from_env(config: &aws_config::SdkConfig) -> Arc<dyn Sealer> {
    match env_value(SECRETS_KEY_VAR) {
        Some(key_id) => {
            tracing::info!(key = %key_id, "secrets sealed with the installation's KMS key");
            Arc::new(KmsSealer::with_key(config, &key_id))
        }
        None => {
            tracing::info!("no KMS key ({SECRETS_KEY_VAR} unset): secrets are kept plain");
            Arc::new(NoKey)
        }
    }
}

fn kms_error(error: impl std::error::Error) -> SealError {
    SealError::Kms(DisplayErrorContext(error).to_string())
}

#[async_trait]
impl Sealer for KmsSealer {
    fn has_key(&self) -> bool {
        true
    }

    async fn seal(&self, secret: &str, what: &Sealed) -> Result<String, SealError> {
        let mut request = self
            .client
            .encrypt()
            .key_id(&self.key_id)
            .plaintext(Blob::new(secret.as_bytes()));
        for (key, value) in what.context() {
            request = request.encryption_context(key, value);
        }
        let output = request.send().await.map_err(kms_error)?;
        let ciphertext = output
            .ciphertext_blob()
            .ok_or_else(|| SealError::Kms("Encrypt answered without a ciphertext".into()))?;
        let sealed = format!("{SEALED_PREFIX}{}", STANDARD.encode(ciphertext.as_ref()));
        self.remember(what, &sealed, secret);
        Ok(sealed)
    }

    async fn open(&self, stored: &str, what: &Sealed) -> Result<String, SealError> {
        if !is_sealed(stored) {
            return Ok(stored.to_string());
        }
        if let Some(secret) = self.recall(what, stored) {
            return Ok(secret);
        }
        let ciphertext = STANDARD
            .decode(&stored[SEALED_PREFIX.len()..])
            .map_err(|_| SealError::Kms("a sealed value that is not base64".into()))?;
        // The key is named: a value sealed with another key is refused
        // rather than opened with whatever key it names.
        let mut request = self
            .client
            .decrypt()
            .key_id(&self.key_id)
            .ciphertext_blob(Blob::new(ciphertext));
        for (key, value) in what.context() {
            request = request.encryption_context(key, value);
        }
        let output = request.send().await.map_err(kms_error)?;
        let secret = output
            .plaintext()
            .map(|blob| String::from_utf8(blob.as_ref().to_vec()))
            .ok_or_else(|| SealError::Kms("Decrypt answered without a plaintext".into()))?
            .map_err(|_| SealError::Kms("a sealed secret that is not UTF-8".into()))?;
        self.remember(what, stored, &secret);
        Ok(secret)
    }
}

impl KmsSealer {
    fn remember(&self, what: &Sealed, sealed: &str, secret: &str) {
        self.opened
            .lock()
            .expect("opened secrets")
            .insert((what.clone(), sealed.to_string()), secret.to_string());
    }

    fn recall(&self, what: &Sealed, sealed: &str) -> Option<String> {
        self.opened
            .lock()
            .expect("opened secrets")
            .get(&(what.clone(), sealed.to_string()))
            .cloned()
    }
}
