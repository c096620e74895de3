//! Sealing with a KMS key on moto: what is stored is not the secret, it
//! opens only as what it was sealed as and only with its key, and a new
//! process (a cold start) opens it too.

use nurse_call_core::sealing::{NoKey, SealError, Sealed, Sealer, is_sealed};
use nurse_call_dynamodb::{Timeouts, sdk_config};
use nurse_call_kms::KmsSealer;
use store_conformance::moto;

async fn new_key(config: &aws_config::SdkConfig) -> String {
    let client = aws_sdk_kms::Client::new(config);
    let key = client
        .create_key()
        .description("nurse-call test")
        .send()
        .await
        .expect("a key on moto");
    key.key_metadata()
        .expect("the key's metadata")
        .arn()
        .expect("the key's ARN")
        .to_string()
}

fn secret_of(endpoint: &str) -> Sealed {
    Sealed::WebhookSecret {
        endpoint: endpoint.into(),
    }
}

#[tokio::test]
async fn a_sealed_secret_opens_only_as_what_it_was_sealed_as_and_with_its_key() {
    let config = sdk_config(Some(&moto::endpoint()), Timeouts::SLOW_STAND_IN).await;
    let key = new_key(&config).await;
    let sealer = KmsSealer::new(&config, &key, None);
    let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    let sealed = sealer.seal(secret, &secret_of("ep_1")).await.unwrap();
    assert!(is_sealed(&sealed), "{sealed}");
    assert!(!sealed.contains(secret) && !sealed.contains("MfKQ9r8G"));
    assert_ne!(
        sealer.seal(secret, &secret_of("ep_1")).await.unwrap(),
        sealed,
        "each sealing is a new ciphertext"
    );

    // A cold start (nothing remembered) opens it with the key.
    let cold = KmsSealer::new(&config, &key, None);
    assert_eq!(
        cold.open(&sealed, &secret_of("ep_1")).await.unwrap(),
        secret
    );
    assert_eq!(
        cold.open(&sealed, &secret_of("ep_1")).await.unwrap(),
        secret
    );

    // Copied onto another endpoint, or read as the VAPID key: refused.
    for other in [secret_of("ep_2"), Sealed::VapidPrivateKey] {
        let refused = KmsSealer::new(&config, &key, None)
            .open(&sealed, &other)
            .await
            .expect_err("another context");
        assert!(matches!(refused, SealError::Kms(_)), "{refused:?}");
        assert!(!refused.to_string().contains(secret));
    }

    // With another key named: refused, not opened with whatever key the
    // ciphertext names.
    let other_key = new_key(&config).await;
    let refused = KmsSealer::new(&config, &other_key, None)
        .open(&sealed, &secret_of("ep_1"))
        .await;
    assert!(refused.is_err(), "{refused:?}");

    // Without a key: the sealed value is an error that says what to set;
    // a plain one is used as it is by either.
    let error = NoKey.open(&sealed, &secret_of("ep_1")).await.unwrap_err();
    assert!(error.to_string().contains("SECRETS_KEY_ID"), "{error}");
    assert_eq!(
        cold.open("whsec_plain", &secret_of("ep_1")).await.unwrap(),
        "whsec_plain"
    );
}

#[tokio::test]
async fn a_missing_key_is_an_error_naming_kms_not_a_plain_secret() {
    let config = sdk_config(Some(&moto::endpoint()), Timeouts::SLOW_STAND_IN).await;
    let sealer = KmsSealer::new(
        &config,
        "arn:aws:kms:eu-central-1:123456789012:key/00000000-0000-0000-0000-000000000000",
        None,
    );
    let error = sealer
        .seal("whsec_abc", &secret_of("ep_1"))
        .await
        .expect_err("no such key");
    assert!(matches!(error, SealError::Kms(_)), "{error:?}");
    assert!(!error.to_string().contains("whsec_abc"));
}
