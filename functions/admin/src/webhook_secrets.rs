//! The webhook secrets the command issues (DECISIONS §16, §17): drawn
//! anew, printed exactly once, and stored sealed with the installation's
//! KMS key when `--secrets-key` names it (bound to their endpoint: the KMS
//! encryption context), so that the data table, its backups and exports
//! hold no secret a receiver trusts. `seal-secrets` seals the ones an
//! installation kept plain before it had the option.

use serde::Serialize;

use nurse_call_core::{
    WebhookStore,
    sealing::{Sealed, Sealer, is_sealed},
    secrets::new_webhook_secret,
};

use crate::failure::{Failure, Outcome};
use crate::output::{Output, fields, table};

/// The one output that carries a secret.
#[derive(Serialize)]
pub(crate) struct IssuedSecret {
    pub id: String,
    pub name: String,
    pub url: String,
    pub secret: String,
    /// How many secrets sign each attempt now (1 after create, 2 after rotate).
    pub secrets: usize,
}

impl IssuedSecret {
    pub(crate) fn print(&self, out: Output) {
        out.print(self, |issued| {
            fields(&[
                ("endpoint", issued.id.clone()),
                ("name", issued.name.clone()),
                ("url", issued.url.clone()),
                ("secret", issued.secret.clone()),
            ])
        });
        out.note(
            "The secret is shown only now. Give it to the receiver, which verifies every \
             delivery with a Standard Webhooks library (docs/webhooks.md).",
        );
    }
}

/// A new secret for endpoint `id`: the secret (to print) and what to store
/// (sealed, or the secret itself without a key).
pub(crate) async fn new_sealed_secret(
    sealer: &dyn Sealer,
    id: &str,
) -> Result<(String, String), Failure> {
    let secret = new_webhook_secret()
        .map_err(|error| Failure::refused(format!("the OS random source failed: {error}")))?;
    let stored = seal(sealer, id, &secret).await?;
    Ok((secret, stored))
}

async fn seal(sealer: &dyn Sealer, id: &str, secret: &str) -> Result<String, Failure> {
    let what = Sealed::WebhookSecret {
        endpoint: id.to_string(),
    };
    sealer.seal(secret, &what).await.map_err(|error| {
        Failure::Store(format!(
            "the secret of endpoint {id} not sealed, nothing stored: {error}"
        ))
    })
}

/// One endpoint's secrets after `seal-secrets`.
#[derive(Serialize)]
struct SealedRow {
    id: String,
    /// Secrets sealed now.
    sealed_now: usize,
    /// Secrets that were sealed already.
    sealed_before: usize,
}

/// Seals every endpoint's plain secrets (the same secrets: receivers see
/// no change). Needs the key: without `--secrets-key` there is nothing to
/// seal with.
pub(crate) async fn seal_secrets(
    store: &dyn WebhookStore,
    sealer: &dyn Sealer,
    out: Output,
) -> Outcome {
    if !sealer.has_key() {
        return Err(Failure::refused(
            "seal-secrets needs the installation's KMS key: --secrets-key (or SECRETS_KEY_ID)",
        ));
    }
    let mut rows = Vec::new();
    for mut endpoint in store.endpoints().await? {
        let sealed_before = endpoint.secrets.iter().filter(|s| is_sealed(s)).count();
        let mut sealed_now = 0;
        for stored in &mut endpoint.secrets {
            if !is_sealed(stored) {
                *stored = seal(sealer, &endpoint.id, stored).await?;
                sealed_now += 1;
            }
        }
        // Deleted meanwhile: nothing to seal.
        if sealed_now > 0 && !store.update_endpoint(&endpoint).await? {
            continue;
        }
        rows.push(SealedRow {
            id: endpoint.id,
            sealed_now,
            sealed_before,
        });
    }
    out.print(&rows, |rows| {
        let cells: Vec<Vec<String>> = rows
            .iter()
            .map(|r| {
                vec![
                    r.id.clone(),
                    r.sealed_now.to_string(),
                    r.sealed_before.to_string(),
                ]
            })
            .collect();
        table(&["ID", "SEALED NOW", "SEALED BEFORE"], &cells)
    });
    Ok(())
}
