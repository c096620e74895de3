//! The calls of a staff member (DECISIONS §14): `GET /api/v1/staff/calls`
//! (the calls alerting them first, then the other open calls of their duty's
//! sections) and `POST /api/v1/staff/calls/{id}/responses` (accept, decline,
//! read).

use serde::Serialize;
use serde_json::Value;

use crate::app::AppState;
use crate::app::alarm::step::Looked;
use crate::clock;
use crate::domain::alarm::{Refusal, Response};
use crate::domain::model::{Call, MAX_CALL_ID};
use crate::domain::wire_time::format_local;
use crate::http::auth;
use crate::http::endpoint::response_call_id;
use crate::http::error::ApiError;
use crate::http::handlers::display_read::{FailingEndpoint, failing_endpoints, sort_for_display};
use crate::http::handlers::staff::duty_of;
use crate::http::io::{ApiRequest, ApiResponse, json_response};
use crate::request::alarm_response::response_choice;
use crate::request::validation::FieldErrors;
use crate::wire::silence::SilentRecord;
use crate::wire::{CallRecord, StaffRecord, success};

/// `GET /api/v1/staff/calls`.
pub(crate) async fn calls(state: &AppState, request: &ApiRequest) -> Result<ApiResponse, ApiError> {
    let staff = auth::staff(state, request).await?;
    let duty = duty_of(state, &staff).await?;
    let types = state.call_types().await?;
    let (mut alerting, mut others): (Vec<Call>, Vec<Call>) = state
        .store
        .open_calls(&staff.scope)
        .await?
        .into_iter()
        .partition(|call| call.alarm.as_ref().is_some_and(|a| a.alerts(&staff.id)));
    others.retain(|call| {
        duty.as_ref()
            .is_some_and(|duty| duty.covers(call.section.as_deref()))
    });
    sort_for_display(&mut alerting, &types);
    sort_for_display(&mut others, &types);

    let now = clock::now();
    let zone = state.settings.time_zone;
    /// A call as a staff member gets it: `alerting` whether it alerts them.
    #[derive(Serialize)]
    struct StaffCall<'a> {
        #[serde(flatten)]
        call: CallRecord<'a>,
        alerting: bool,
    }
    #[derive(Serialize)]
    struct List<'a> {
        calls: Vec<StaffCall<'a>>,
        version: i64,
        at: String,
        /// As on displays: "Weiterleitung gestört: <name>" (DECISIONS §16).
        forwarding: Vec<FailingEndpoint>,
        /// As on displays: the silent central systems (DECISIONS §19).
        silent: Vec<SilentRecord>,
    }
    let record = |call, alerting| StaffCall {
        call: CallRecord::for_display(call, &types, zone, now),
        alerting,
    };
    let list = List {
        version: alerting
            .iter()
            .chain(&others)
            .map(Call::version)
            .max()
            .unwrap_or(0),
        calls: alerting
            .iter()
            .map(|call| record(call, true))
            .chain(others.iter().map(|call| record(call, false)))
            .collect(),
        at: format_local(now, zone),
        forwarding: failing_endpoints(state, now).await,
        silent: state.silent_links(&staff.scope, now).await,
    };
    Ok(json_response(200, success(&list)))
}

/// `POST /api/v1/staff/calls/{id}/responses` `{"response":"accepted"|"declined"|"read"}`:
/// 200 with the call; 404 for a call that is not the person's scope's (or
/// none, or one without alarm); 403 `not_responsible` for a person neither
/// alerted for it nor on duty for its section (§20); 409
/// `already_accepted` naming who, or `call_closed`.
pub(crate) async fn respond(
    state: &AppState,
    request: &ApiRequest,
) -> Result<ApiResponse, ApiError> {
    let staff = auth::staff(state, request).await?;
    // Canonical decimal only: `+1` or `01` is no name of call 1 (404).
    let call_id = response_call_id(request.uri().path())
        .filter(|id| !id.starts_with('0') && id.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|id| id.parse::<i64>().ok())
        .filter(|id| (1..=MAX_CALL_ID).contains(id))
        .ok_or(ApiError::NotFound)?;
    let envelope = super::envelope(request)?;
    let response = response_of(envelope.get("response"))?;
    let looked = state
        .alarm_runner()
        .respond_to_alarm(&staff, call_id, None, response)
        .await?
        .map_err(refused)
        .inspect_err(|error| {
            tracing::info!(staff_id = %staff.id, call_id, code = error.code(), "response refused");
        })?;
    let Looked::Call { call, changed } = looked else {
        return Err(ApiError::NotFound);
    };
    tracing::info!(
        staff_id = %staff.id,
        call_id,
        response = response.as_str(),
        changed,
        "staff response"
    );
    answered(state, &call).await
}

/// The 403 and 409s of a refused response (DECISIONS §14, §20), for the
/// staff page and alarm servers alike.
pub(crate) fn refused(refusal: Refusal) -> ApiError {
    match refusal {
        Refusal::NotResponsible => ApiError::NotResponsible,
        Refusal::AlreadyAccepted(by) => ApiError::AlreadyAccepted(StaffRecord::from(&by)),
        Refusal::CallClosed => ApiError::CallClosed,
    }
}

/// The 200 of a response: the call with its alarm, as displays show it.
pub(crate) async fn answered(state: &AppState, call: &Call) -> Result<ApiResponse, ApiError> {
    let types = state.call_types().await?;
    let now = clock::now();
    let record = CallRecord::for_display(call, &types, state.settings.time_zone, now);
    Ok(json_response(200, success(&record)))
}

/// `response`: required, one of `accepted`, `declined`, `read`.
fn response_of(value: Option<&Value>) -> Result<Response, ApiError> {
    let mut errors = FieldErrors::new();
    match response_choice(&mut errors, "response", value) {
        Some(response) => Ok(response),
        None => Err(errors.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_response_is_one_of_three_words() {
        assert_eq!(
            response_of(Some(&json!("accepted"))).unwrap(),
            Response::Accepted
        );
        assert_eq!(response_of(Some(&json!("read"))).unwrap(), Response::Read);
        let body = |value: Option<Value>| response_of(value.as_ref()).unwrap_err().body();
        assert!(body(None).contains(r#""response":["response muss ausgefüllt werden."]"#));
        assert!(
            body(Some(json!("Accepted")))
                .contains(r#""response":["Der gewählte Wert für response ist ungültig."]"#)
        );
        assert!(
            body(Some(json!(1)))
                .contains(r#""response":["response muss eine Zeichenkette sein."]"#)
        );
    }
}
