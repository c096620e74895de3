//! A central system (a consumer) by its signature: step 3 of the checks
//! (DECISIONS §2), then the consumer's replay rule.

use crate::app::AppState;
use crate::clock;
use crate::domain::model::{Consumer, HashMismatch, Scope};
use crate::http::error::ApiError;
use crate::http::io::ApiRequest;
use crate::signing::credentials::Credentials;
use crate::signing::replay;
use crate::signing::signature::{self, HashDebug};

/// The consumer whose signature `credentials` carry. An unknown or expired
/// consumer gets the same answer as a wrong hash; the sandbox adds `debug`
/// for a known consumer. A verified request then meets the consumer's
/// replay rule ([`replay::check`]).
pub(crate) async fn consumer(
    state: &AppState,
    request: &ApiRequest,
    credentials: &Credentials,
) -> Result<Consumer, ApiError> {
    let id = credentials.consumer.to_ascii_lowercase();
    let now = clock::now();
    let consumer = state
        .consumer(&id)
        .await?
        .filter(|consumer| !consumer.is_expired(now));
    if signature::verify(
        consumer.as_ref(),
        &credentials.signing_string,
        &credentials.hash,
    ) {
        // `verify` is only true for a known consumer.
        let consumer = consumer.ok_or(ApiError::Internal)?;
        replay::check(&consumer, credentials.signed_at, now).map_err(ApiError::from).inspect_err(|error| {
            tracing::warn!(consumer = %id, signed_at = credentials.signed_at, code = error.code(), "signed time refused");
        })?;
        super::Authenticated::mark(request);
        return Ok(consumer);
    }
    tracing::warn!(consumer = %id, known = consumer.is_some(), "invalid hash");
    let debug = match (&consumer, state.is_sandbox()) {
        (Some(consumer), true) => {
            HashDebug::new(consumer, &credentials.signing_string, &credentials.hash)
        }
        _ => None,
    };
    // Only the sandbox builds `debug`, only for a known consumer: exactly the
    // mismatches the test page of that consumer shows.
    if let (Some(consumer), Some(debug)) = (&consumer, &debug) {
        remember_mismatch(state, consumer, debug).await;
    }
    Err(ApiError::InvalidHash(debug))
}

/// Keeps a sandbox consumer's mismatch for its test page. A failure to keep it
/// only costs the page an entry: the request is still answered with its 400.
async fn remember_mismatch(state: &AppState, consumer: &Consumer, debug: &HashDebug) {
    let mismatch = HashMismatch::new(
        &debug.string,
        &debug.expected,
        &debug.provided,
        clock::now(),
    );
    let scope = Scope::consumer(&consumer.id);
    if let Err(error) = state.sandbox.record_hash_mismatch(&scope, &mismatch).await {
        tracing::warn!(consumer = %consumer.id, %error, "hash mismatch not kept for the test page");
    }
}
