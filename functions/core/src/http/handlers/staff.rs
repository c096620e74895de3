//! Staff and their duty (DECISIONS §14): `GET /api/v1/staff/me`,
//! `PUT /api/v1/staff/duty {"sections":[…]}` (sign on, for `DUTY_HOURS`) and
//! `DELETE /api/v1/staff/duty` (sign off; signing on pushes the sign-on
//! test to the person's phones, DECISIONS §18). Staff authenticate with their
//! bearer token as displays do (DECISIONS §11): only its SHA-256 is looked
//! up, and no log line names it.

use http::Method;
use serde_json::Value;

use crate::app::AppState;
use crate::clock;
use crate::domain::alarm::{Duty, Staff};
use crate::http::auth;
use crate::http::error::ApiError;
use crate::http::io::{ApiRequest, ApiResponse, json_response};
use crate::request::validation::{FieldErrors, message, required_text};
use crate::wire::staff::{ColleagueRecord, DeviceRecord, StaffRecord};
use crate::wire::success;

/// Most sections one duty may name.
pub(crate) const MAX_DUTY_SECTIONS: usize = 100;

/// `GET /api/v1/staff/me`.
pub(crate) async fn me(state: &AppState, request: &ApiRequest) -> Result<ApiResponse, ApiError> {
    let staff = auth::staff(state, request).await?;
    let duty = duty_of(state, &staff).await?;
    answer_me(state, &staff, duty.as_ref()).await
}

/// The person as `GET /api/v1/staff/me` shows them: with their duty and
/// their devices' states (§18); also the answer of the duty and the
/// device-test endpoints.
pub(crate) async fn answer_me(
    state: &AppState,
    staff: &Staff,
    duty: Option<&Duty>,
) -> Result<ApiResponse, ApiError> {
    let zone = state.settings.time_zone;
    let devices = state
        .devices_with_state(&staff.id)
        .await?
        .iter()
        .map(|(device, device_state)| DeviceRecord::new(device, *device_state, zone))
        .collect();
    let silent = state.silent_colleagues(staff, duty).await?;
    let silent = silent
        .iter()
        .map(|(colleague, duty)| ColleagueRecord::new(colleague, duty))
        .collect();
    Ok(json_response(
        200,
        success(&StaffRecord::new(staff, duty, zone).with_devices(devices, silent)),
    ))
}

/// `PUT` (sign on) or `DELETE` (sign off) `/api/v1/staff/duty`.
pub(crate) async fn duty(state: &AppState, request: &ApiRequest) -> Result<ApiResponse, ApiError> {
    let staff = auth::staff(state, request).await?;
    let store = state.alarms.as_ref().ok_or(ApiError::Internal)?;
    let duty = if request.method() == Method::PUT {
        let envelope = super::envelope(request)?;
        let sections = sections(envelope.get("sections"))?;
        let since = clock::now();
        let duty = Duty {
            staff_id: staff.id.clone(),
            scope: staff.scope.clone(),
            sections,
            since,
            until: since + state.settings.staff.duty,
        };
        store.put_duty(&duty).await?;
        tracing::info!(staff_id = %staff.id, sections = duty.sections.len(), "duty signed on");
        // The sign-on test (§18): each of the person's phones gets a push
        // whose receipt says that alerts reach it. A failure here is the
        // test's, not the duty's: the person is on duty, and the page says
        // that no phone confirmed.
        if let Err(error) = state.test_devices(&staff, None).await {
            tracing::warn!(staff_id = %staff.id, %error, "sign-on test not sent");
        }
        Some(duty)
    } else {
        let ended = store.end_duty(&staff.scope, &staff.id).await?;
        tracing::info!(staff_id = %staff.id, ended, "duty signed off");
        None
    };
    // Calls waiting for somebody, or alerting whoever just left, are looked
    // at again now (after the commit; the answer does not wait for it).
    state.alarm_runner().look_at_scope_later(&staff.scope);
    answer_me(state, &staff, duty.as_ref()).await
}

/// The staff member's duty now, if any.
pub(crate) async fn duty_of(state: &AppState, staff: &Staff) -> Result<Option<Duty>, ApiError> {
    let store = state.alarms.as_ref().ok_or(ApiError::Internal)?;
    let now = clock::now();
    Ok(store
        .duties(&staff.scope, now)
        .await?
        .into_iter()
        .find(|duty| duty.staff_id == staff.id && duty.is_active(now)))
}

/// `sections`: absent or `null` = the whole house; else a list of section
/// codes (strings, each at most 255 characters, no control or invisible
/// format character), trimmed (`" A"` is section `A`, as a call's section
/// is), duplicates dropped; a blank one is refused.
fn sections(value: Option<&Value>) -> Result<Vec<String>, ApiError> {
    let mut errors = FieldErrors::new();
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => {
            errors.add("sections", "sections muss ein Array sein.".to_string());
            return Err(errors.into());
        }
    };
    if items.len() > MAX_DUTY_SECTIONS {
        errors.add(
            "sections",
            message::max_items("sections", MAX_DUTY_SECTIONS),
        );
        return Err(errors.into());
    }
    let mut sections: Vec<String> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let key = format!("sections.{index}");
        let Some(section) = required_text(&mut errors, &key, Some(item)) else {
            continue;
        };
        let section = section.trim().to_string();
        if section.is_empty() {
            errors.add(&key, message::required(&key));
        } else if !sections.contains(&section) {
            sections.push(section);
        }
    }
    Ok(errors.into_result(sections)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refused(value: Value) -> String {
        match sections(Some(&value)) {
            Err(error) => error.body(),
            Ok(sections) => panic!("{value} was taken as {sections:?}"),
        }
    }

    #[test]
    fn sections_are_a_list_of_codes_and_none_is_the_whole_house() {
        assert_eq!(sections(None).unwrap(), Vec::<String>::new());
        assert_eq!(sections(Some(&Value::Null)).unwrap(), Vec::<String>::new());
        assert_eq!(
            sections(Some(&json!(["1", "2", "1"]))).unwrap(),
            ["1", "2"],
            "duplicates dropped"
        );
        assert!(refused(json!("1")).contains(r#""sections":["sections muss ein Array sein."]"#));
        let body = refused(json!(["1", 2, " ", "a\u{0007}"]));
        assert!(
            body.contains(r#""sections.1":["sections.1 muss eine Zeichenkette sein."]"#),
            "{body}"
        );
        assert!(
            body.contains(r#""sections.2":["sections.2 muss ausgefüllt werden."]"#),
            "{body}"
        );
        assert!(
            body.contains(r#""sections.3":["sections.3 darf keine Steuerzeichen enthalten."]"#),
            "{body}"
        );
        let too_many: Vec<String> = (0..=MAX_DUTY_SECTIONS).map(|i| i.to_string()).collect();
        assert!(refused(json!(too_many)).contains("sections darf maximal 100 Elemente haben."));
    }
}
