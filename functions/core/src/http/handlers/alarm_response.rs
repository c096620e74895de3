//! `POST /api/v1/response` (DECISIONS §16): an alarm server (a DECT system,
//! a pager gateway) passes on the answer a person gave on their handset.
//! Signed like a display request (§2), `target` the call's address; the
//! same rules and answers as the staff page's responses (§14), the staff
//! member named by their id or their device.
//!
//! The consumer's scope says whose staff and calls are meant: the
//! installation's in production, a sandbox visitor's own in sandbox mode.

use crate::app::AppState;
use crate::app::alarm::step::{Looked, policy_of};
use crate::domain::alarm::Staff;
use crate::domain::model::Scope;
use crate::http::error::ApiError;
use crate::http::handlers::staff_calls::{answered, refused};
use crate::http::io::{ApiRequest, ApiResponse};
use crate::request::alarm_response::{AlarmResponseRequest, ServerAnswer, parse_alarm_response};
use crate::request::validation::{FieldErrors, message};

pub(crate) async fn handle(
    state: &AppState,
    request: &ApiRequest,
) -> Result<ApiResponse, ApiError> {
    // Step 1: the body. Step 2: its structure, every field error at once.
    let envelope = super::envelope(request)?;
    let parsed = parse_alarm_response(&envelope)?;
    // Step 3: the signature.
    let consumer = super::signed_consumer(state, request, &parsed.credentials).await?;
    let scope = state.scope_for(&consumer);
    // Step 4: state. Who answered, among the scope's staff.
    let people = state.alarm_store()?.staff_of(&scope).await?;
    let (staff, matched_by) = match who(&people, &parsed.staff) {
        Found::One(staff, matched_by) => (staff, matched_by),
        unfound => {
            let mut errors = FieldErrors::new();
            let text = match unfound {
                Found::Ambiguous(count) => {
                    // Two handsets of one number is the admin's to mend;
                    // acting for either could cancel the wrong people.
                    tracing::warn!(consumer = %consumer.id, sharing = count, device = %parsed.staff,
                        "alarm server response refused: several staff members have this device");
                    message::ambiguous_choice("data.staff")
                }
                _ => message::invalid_choice("data.staff"),
            };
            errors.add("data.staff", text);
            // Both state errors at once, as a display request reports its
            // element and its event together.
            if !answerable(state, &scope, &parsed).await? {
                errors.add("data.call", message::invalid_choice("data.call"));
            }
            tracing::info!(
                consumer = %consumer.id,
                call_id = parsed.call,
                unknown_call = errors.keys().any(|key| key == "data.call"),
                "alarm server response refused: unknown staff member or device"
            );
            return Err(errors.into());
        }
    };
    // The response, on the call of that id only if it is on `target`.
    let looked = match parsed.response {
        ServerAnswer::Respond(response) => state
            .alarm_runner()
            .respond_to_alarm(staff, parsed.call, Some(&parsed.target), response)
            .await?
            .map_err(refused)
            .inspect_err(|error| {
                tracing::info!(consumer = %consumer.id, staff_id = %staff.id, call_id = parsed.call,
                    code = error.code(), "alarm server response refused");
            })?,
        // A handset's receipt (§18): of a call that alerted this person;
        // any other is as unknown as a call that is not there.
        ServerAnswer::Received => state
            .alarm_runner()
            .receive_by_handset(staff, parsed.call, &parsed.target)
            .await?
            .unwrap_or(Looked::Missing),
    };
    let Looked::Call { call, changed } = looked else {
        tracing::info!(consumer = %consumer.id, staff_id = %staff.id, call_id = parsed.call,
            "alarm server response refused: unknown call");
        let mut errors = FieldErrors::new();
        errors.add("data.call", message::invalid_choice("data.call"));
        return Err(errors.into());
    };
    tracing::info!(
        consumer = %consumer.id,
        staff_id = %staff.id,
        matched_by = matched_by.as_str(),
        call_id = call.id,
        response = parsed.response.as_str(),
        changed,
        "alarm server response"
    );
    answered(state, &call).await
}

/// How `data.staff` named the person.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MatchedBy {
    Id,
    Device,
}

impl MatchedBy {
    fn as_str(self) -> &'static str {
        match self {
            MatchedBy::Id => "id",
            MatchedBy::Device => "device",
        }
    }
}

/// Whom `data.staff` names among a scope's staff.
#[derive(Debug, PartialEq)]
enum Found<'a> {
    One(&'a Staff, MatchedBy),
    /// Nobody usable: no such id or device, or a revoked member's.
    Unknown,
    /// A device that this many usable members share.
    Ambiguous(usize),
}

/// The member whose id is `sent` (either case, as UUIDs are written), else
/// the one whose device it is; revoked members are nobody (DECISIONS §16).
fn who<'a>(staff: &'a [Staff], sent: &str) -> Found<'a> {
    let usable = || staff.iter().filter(|member| !member.revoked);
    if let Some(member) = usable().find(|member| member.id.eq_ignore_ascii_case(sent)) {
        return Found::One(member, MatchedBy::Id);
    }
    let by_device: Vec<&Staff> = usable()
        .filter(|member| member.device.as_deref() == Some(sent))
        .collect();
    match by_device.as_slice() {
        [] => Found::Unknown,
        [member] => Found::One(member, MatchedBy::Device),
        many => Found::Ambiguous(many.len()),
    }
}

/// Whether the request's call is one a response could reach: a call of the
/// scope, on `target`, whose type has an alarm. Only read when the staff
/// check failed already, to report both errors at once; with a known
/// member the response itself finds this out (one read, not two).
async fn answerable(
    state: &AppState,
    scope: &Scope,
    request: &AlarmResponseRequest,
) -> Result<bool, ApiError> {
    let Some(kept) = state.alarm_store()?.alarm(scope, request.call).await? else {
        return Ok(false);
    };
    if kept.call.address != request.target {
        return Ok(false);
    }
    let types = state.call_types().await?;
    Ok(!policy_of(&types, &kept.call.event).policy.is_none())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    fn member(id: &str, device: Option<&str>, revoked: bool) -> Staff {
        Staff {
            id: id.to_string(),
            scope: Scope::installation(),
            name: id.to_uppercase(),
            groups: Vec::new(),
            device: device.map(str::to_string),
            token_hash: String::new(),
            created_at: Utc::now(),
            revoked,
        }
    }

    #[test]
    fn the_id_first_then_the_device_of_a_usable_member() {
        let staff = [
            member(
                "0b5e3f0a-8c1d-4e2f-9a3b-5c6d7e8f9a0b",
                Some("DECT-1"),
                false,
            ),
            // Ben's device is Anna's id: the id wins.
            member(
                "1c6f4a1b-9d2e-4f3a-8b4c-6d7e8f9a0b1c",
                Some("0b5e3f0a-8c1d-4e2f-9a3b-5c6d7e8f9a0b"),
                false,
            ),
            member("2d7a5b2c-0e3f-4a4b-9c5d-7e8f9a0b1c2d", Some("DECT-3"), true),
            member(
                "3e8b6c3d-1f4a-4b5c-8d6e-8f9a0b1c2d3e",
                Some("DECT-4"),
                false,
            ),
            member(
                "4f9c7d4e-2a5b-4c6d-9e7f-9a0b1c2d3e4f",
                Some("DECT-4"),
                false,
            ),
        ];
        assert_eq!(
            who(&staff, "0B5E3F0A-8C1D-4E2F-9A3B-5C6D7E8F9A0B"),
            Found::One(&staff[0], MatchedBy::Id)
        );
        assert_eq!(
            who(&staff, &staff[0].id),
            Found::One(&staff[0], MatchedBy::Id)
        );
        assert_eq!(
            who(&staff, "DECT-1"),
            Found::One(&staff[0], MatchedBy::Device)
        );
        assert_eq!(who(&staff, "dect-1"), Found::Unknown, "a device is exact");
        // Revoked: neither by id nor by device.
        assert_eq!(who(&staff, "DECT-3"), Found::Unknown);
        assert_eq!(who(&staff, &staff[2].id), Found::Unknown);
        assert_eq!(who(&staff, "DECT-4"), Found::Ambiguous(2));
        assert_eq!(who(&staff, ""), Found::Unknown);
    }
}
