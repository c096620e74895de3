//! A staff member by their bearer token (DECISIONS §14): only its SHA-256
//! is looked up, and no log line names it.

use crate::app::AppState;
use crate::domain::alarm::Staff;
use crate::http::error::ApiError;
use crate::http::io::ApiRequest;
use crate::signing::tokens::token_hash;

use super::{Authenticated, bearer_token};

/// The staff member of the request's bearer token; a missing, unknown or
/// revoked token is the 401 of DECISIONS §11.
pub(crate) async fn staff(state: &AppState, request: &ApiRequest) -> Result<Staff, ApiError> {
    let token = bearer_token(request.headers()).ok_or(ApiError::Unauthorized)?;
    let staff = staff_by_token(state, token)
        .await?
        .ok_or(ApiError::Unauthorized)?;
    Authenticated::mark(request);
    Ok(staff)
}

/// The usable (not revoked) staff member whose token is `token`, if any;
/// refusals are logged by the member's id, never by the token.
pub(crate) async fn staff_by_token(
    state: &AppState,
    token: &str,
) -> Result<Option<Staff>, ApiError> {
    let Some(store) = &state.alarms else {
        return Ok(None);
    };
    match store.staff_by_token_hash(&token_hash(token)).await? {
        Some(staff) if !staff.revoked => Ok(Some(staff)),
        Some(revoked) => {
            tracing::warn!(staff_id = %revoked.id, "revoked staff token refused");
            Ok(None)
        }
        None => Ok(None),
    }
}
