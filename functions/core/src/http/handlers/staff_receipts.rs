//! `POST /api/v1/staff/receipts {"receipt":"<id>"}` (DECISIONS §18): the
//! staff page's service worker posts the receipt id of every alert it
//! showed, and an open page of every alert it shows, so that the service
//! knows the person got it. 200 with the call's id and when the first
//! receipt of this person for the call arrived; a repeat is a 200 that
//! changes nothing; an id that is unknown, malformed or another person's
//! is a 404, as is a call outside the person's scope. A push receipt also
//! marks the device that posted it, and a sign-on test's receipt
//! (`t.<time>.<staff>.<device>`) only that: its `call` is `null`.

use serde::Serialize;
use serde_json::Value;

use crate::app::AppState;
use crate::app::alarm::step::Looked;
use crate::domain::alarm::Staff;
use crate::domain::alarm::receipt::{Path, Receipt};
use crate::domain::device::TestReceipt;
use crate::domain::silence::SilenceReceipt;
use crate::domain::wire_time::format_local;
use crate::http::auth;
use crate::http::error::ApiError;
use crate::http::io::{ApiRequest, ApiResponse, json_response};
use crate::request::validation::{FieldErrors, required_text};
use crate::wire::success;

/// `POST /api/v1/staff/receipts`.
pub(crate) async fn receipt(
    state: &AppState,
    request: &ApiRequest,
) -> Result<ApiResponse, ApiError> {
    let staff = auth::staff(state, request).await?;
    let envelope = super::envelope(request)?;
    let id = receipt_of(envelope.get("receipt"))?;
    if let Some(test) = TestReceipt::parse(&id) {
        return test_receipt(state, &staff, id, test).await;
    }
    if let Some(silence) = SilenceReceipt::parse(&id) {
        return silence_receipt(state, &staff, id, silence);
    }
    // Another person's id is as unknown as one never sent.
    let receipt = Receipt::parse(&id)
        .filter(|receipt| receipt.staff_id == staff.id)
        .ok_or(ApiError::NotFound)?;
    let looked = state
        .alarm_runner()
        .receive(&staff, receipt.call_id, receipt.alert)
        .await?;
    let Some(Looked::Call { call, changed }) = looked else {
        return Err(ApiError::NotFound);
    };
    let received_at = call
        .alarm
        .as_ref()
        .and_then(|alarm| alarm.recipient(&staff.id))
        .and_then(|recipient| recipient.received_at)
        .ok_or(ApiError::NotFound)?;
    let path = match &receipt.path {
        Path::Page => "page",
        Path::Push(_) => "push",
    };
    // The phone that posted it shows alerts (§18): its device is confirmed.
    // A device unsubscribed meanwhile is no reason to refuse the receipt.
    if let Path::Push(tag) = &receipt.path
        && let Err(error) = state.device_receipt(&staff, tag, |_| true).await
    {
        tracing::warn!(staff_id = %staff.id, device = %tag, %error, "device receipt not kept");
    }
    tracing::info!(
        staff_id = %staff.id,
        call_id = call.id,
        alert = receipt.alert,
        path,
        changed,
        "receipt"
    );
    let received = Received {
        receipt: id,
        call: Some(call.id),
        received_at: format_local(received_at, state.settings.time_zone),
    };
    Ok(json_response(200, success(&received)))
}

/// A receipt's answer: `call` is `null` for a test's (§18's sign-on test
/// is about no call).
#[derive(Serialize)]
struct Received {
    receipt: String,
    call: Option<i64>,
    received_at: String,
}

/// The receipt of a sign-on test: known when it names a device of the
/// person that was tested then ([`TestReceipt::is_of`]). `received_at`:
/// when the device's first receipt since its latest push came (a repeat
/// changes nothing, so it answers the same time).
async fn test_receipt(
    state: &AppState,
    staff: &Staff,
    id: String,
    test: TestReceipt,
) -> Result<ApiResponse, ApiError> {
    if test.staff_id != staff.id {
        return Err(ApiError::NotFound);
    }
    let device = state
        .device_receipt(staff, &test.device, |device| test.is_of(device))
        .await?
        .ok_or(ApiError::NotFound)?;
    let received_at = device.received_at.ok_or(ApiError::NotFound)?;
    tracing::info!(staff_id = %staff.id, device = %test.device, path = "push", "test receipt");
    let received = Received {
        receipt: id,
        call: None,
        received_at: format_local(received_at, state.settings.time_zone),
    };
    Ok(json_response(200, success(&received)))
}

/// The receipt of a silence's alert (DECISIONS §19,
/// `s.<since>.<consumer>.<staff>`): the person saw that a central system is
/// silent. Logged as the audit's `received`; nothing is kept, so a repeat
/// answers its own time. Another person's is unknown (404).
fn silence_receipt(
    state: &AppState,
    staff: &Staff,
    id: String,
    receipt: SilenceReceipt,
) -> Result<ApiResponse, ApiError> {
    if receipt.staff_id != staff.id {
        return Err(ApiError::NotFound);
    }
    let now = crate::clock::now();
    tracing::info!(
        audit = "received",
        staff_id = %staff.id,
        consumer = %receipt.consumer,
        since_ms = receipt.since_ms,
        "silence alert receipt"
    );
    let received = Received {
        receipt: id,
        call: None,
        received_at: format_local(now, state.settings.time_zone),
    };
    Ok(json_response(200, success(&received)))
}

/// `receipt`: required, a line of text (422 as every field's, §3); what it
/// names is checked against the alarm, and anything else is a 404.
fn receipt_of(value: Option<&Value>) -> Result<String, ApiError> {
    let mut errors = FieldErrors::new();
    required_text(&mut errors, "receipt", value).ok_or_else(|| errors.into())
}
