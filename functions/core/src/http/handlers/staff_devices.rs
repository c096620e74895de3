//! `POST /api/v1/staff/device-tests` (DECISIONS §18, "Erneut testen"): the
//! sign-on test again, without signing on again: a `staff.test` push with a
//! receipt to each of the person's devices. 200 with the person as
//! `GET /api/v1/staff/me` shows them, each device tested now `waiting`.

use crate::app::AppState;
use crate::http::auth;
use crate::http::error::ApiError;
use crate::http::handlers::staff::{answer_me, duty_of};
use crate::http::io::{ApiRequest, ApiResponse};

/// `POST /api/v1/staff/device-tests`, body `{}`.
pub(crate) async fn test_again(
    state: &AppState,
    request: &ApiRequest,
) -> Result<ApiResponse, ApiError> {
    let staff = auth::staff(state, request).await?;
    // An object, as every body (§3's first check); no field is read.
    super::envelope(request)?;
    state.test_devices(&staff, None).await?;
    let duty = duty_of(state, &staff).await?;
    answer_me(state, &staff, duty.as_ref()).await
}
