//! Webhook secrets sealed with the installation's KMS key (DECISIONS §17):
//! `--secrets-key` stores what `create` and `rotate` issue sealed, bound to
//! their endpoint, `seal-secrets` seals the ones kept plain before, and the
//! option is a usage error where there is no KMS (the embedded store).
//! On moto (scripts/test puts it on PATH).

#[allow(unused_macros)]
mod support;

use nurse_call_core::sealing::{Sealed, Sealer, is_sealed};
use nurse_call_dynamodb::{Timeouts, sdk_config};
use nurse_call_kms::KmsSealer;
use support::{Backend, Value, json};

const URL: &str = "http://127.0.0.1:9/hook";
/// [`URL`] is on this machine: only with this flag (DECISIONS §20).
const PRIVATE: &str = "--private-network";

/// A new key on moto and a sealer with it.
async fn key_on_moto() -> (String, KmsSealer) {
    let config = sdk_config(
        Some(&store_conformance::moto::endpoint()),
        Timeouts::SLOW_STAND_IN,
    )
    .await;
    let created = aws_sdk_kms::Client::new(&config)
        .create_key()
        .send()
        .await
        .expect("a key on moto");
    let arn = created
        .key_metadata()
        .and_then(|key| key.arn())
        .expect("the key's ARN")
        .to_string();
    let sealer = KmsSealer::new(&config, &arn, None);
    (arn, sealer)
}

/// The stored secrets of endpoint `id`, as the store has them.
async fn stored_secrets(backend: &Backend, id: &str) -> Vec<String> {
    backend
        .open()
        .await
        .endpoints()
        .await
        .expect("the endpoints")
        .into_iter()
        .find(|endpoint| endpoint.id == id)
        .expect("the endpoint")
        .secrets
}

fn secret_of(id: &str) -> Sealed {
    Sealed::WebhookSecret {
        endpoint: id.to_string(),
    }
}

#[tokio::test]
async fn secrets_issued_with_the_key_are_stored_sealed_and_plain_ones_are_sealed_later() {
    let backend = Backend::dynamodb();
    backend.open().await;
    let (key, sealer) = key_on_moto().await;

    // Made before the installation had the option: kept plain.
    let plain = backend.admin_json(&["webhooks", "create", "--url", URL, PRIVATE, "--json"]);
    let plain_id = plain["id"].as_str().unwrap();
    let plain_secret = plain["secret"].as_str().unwrap();
    assert_eq!(stored_secrets(&backend, plain_id).await, [plain_secret]);

    // With the key: the printed secret is the secret, the stored one sealed,
    // bound to its endpoint.
    let created = backend.admin_json(&[
        "--secrets-key",
        &key,
        "webhooks",
        "create",
        "--url",
        URL,
        PRIVATE,
        "--json",
    ]);
    let id = created["id"].as_str().unwrap();
    let secret = created["secret"].as_str().unwrap();
    assert!(secret.starts_with("whsec_"), "{secret}");
    let stored = stored_secrets(&backend, id).await;
    assert!(is_sealed(&stored[0]) && !stored[0].contains(&secret[6..]));
    assert_eq!(
        sealer.open(&stored[0], &secret_of(id)).await.unwrap(),
        secret
    );
    assert!(
        KmsSealer::new(
            &sdk_config(
                Some(&store_conformance::moto::endpoint()),
                Timeouts::SLOW_STAND_IN
            )
            .await,
            &key,
            None
        )
        .open(&stored[0], &secret_of(plain_id))
        .await
        .is_err(),
        "copied onto another endpoint it does not open"
    );

    // A rotation with the key: the second secret sealed too.
    let rotated = backend.admin_json(&["--secrets-key", &key, "webhooks", "rotate", id, "--json"]);
    let second = stored_secrets(&backend, id).await;
    assert_eq!(second.len(), 2);
    assert_eq!(
        sealer.open(&second[1], &secret_of(id)).await.unwrap(),
        rotated["secret"].as_str().unwrap()
    );

    // The list says how many are sealed, never a secret.
    let listed = backend.admin_json(&["webhooks", "list", "--json"]);
    let sealed_of = |id: &str| -> Value {
        let row = listed
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["id"] == id)
            .unwrap();
        json!([row["secrets"], row["sealed"]])
    };
    assert_eq!(sealed_of(plain_id), json!([1, 0]));
    assert_eq!(sealed_of(id), json!([2, 2]));
    let table = backend.admin(&["webhooks", "list"]).success().stdout;
    assert!(table.contains("2 sealed"), "{table}");
    assert!(!table.contains(secret) && !table.contains(plain_secret));

    // seal-secrets: needs the key; seals the plain one, the same secret
    // (the receiver sees no change); a second run seals nothing.
    backend
        .admin(&["webhooks", "seal-secrets"])
        .fails(1, "needs the installation's KMS key");
    let sealed = backend.admin_json(&["--secrets-key", &key, "webhooks", "seal-secrets", "--json"]);
    let mut rows: Vec<Value> = sealed.as_array().unwrap().clone();
    rows.sort_by_key(|row| row["id"] != plain_id);
    assert_eq!(
        rows,
        [
            json!({"id": plain_id, "sealed_now": 1, "sealed_before": 0}),
            json!({"id": id, "sealed_now": 0, "sealed_before": 2}),
        ]
    );
    let now_sealed = stored_secrets(&backend, plain_id).await;
    assert!(is_sealed(&now_sealed[0]));
    assert_eq!(
        sealer
            .open(&now_sealed[0], &secret_of(plain_id))
            .await
            .unwrap(),
        plain_secret
    );
    let again = backend.admin_json(&["--secrets-key", &key, "webhooks", "seal-secrets", "--json"]);
    assert!(
        again
            .as_array()
            .unwrap()
            .iter()
            .all(|row| row["sealed_now"] == 0),
        "{again}"
    );
}

#[tokio::test]
async fn a_key_that_kms_refuses_stores_nothing_and_the_embedded_store_has_no_key() {
    let backend = Backend::dynamodb();
    backend.open().await;
    let missing = "arn:aws:kms:eu-central-1:123456789012:key/00000000-0000-0000-0000-000000000000";
    backend
        .admin(&[
            "--secrets-key",
            missing,
            "webhooks",
            "create",
            "--url",
            URL,
            PRIVATE,
        ])
        .fails(3, "not sealed, nothing stored");
    assert_eq!(
        backend.admin_json(&["webhooks", "list", "--json"]),
        json!([])
    );

    Backend::sqlite()
        .admin(&["--secrets-key", "alias/any", "webhooks", "list"])
        .fails(2, "only an installation on DynamoDB has");
}
