//! What a silence of a central system does (DECISIONS §19). A stub for now:
//! the request path calls [`announce_back`] when a sign of life ended a
//! silence.

use chrono::{DateTime, Utc};

use crate::app::AppState;
use crate::domain::links::Silence;

/// A silent consumer sent a request again at `now`: its silence (since
/// `silence.since`) ended. Only logged here.
pub(crate) async fn announce_back(
    state: &AppState,
    consumer: &str,
    silence: &Silence,
    now: DateTime<Utc>,
) {
    let _ = state;
    tracing::warn!(
        consumer,
        since = %silence.since,
        back_at = %now,
        "central system back"
    );
}
