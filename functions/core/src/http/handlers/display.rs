//! `POST /api/v1/display` (spec 4.1): open a call, or close every call on an address.

use chrono::{DateTime, Utc};

use crate::app::AppState;
use crate::app::alarm::start::first_step;
use crate::app::alarm::step::People;
use crate::clock;
use crate::config::Mode;
use crate::domain::model::{CallType, ElementChange, NewCall, Scope};
use crate::http::error::ApiError;
use crate::http::io::{ApiRequest, ApiResponse, json_response, query_param};
use crate::request::parse::{DisplayAction, DisplayRequest, parse_display};
use crate::request::validation::{FieldErrors, message};
use crate::signing::replay;
use crate::store::{AddressSnapshot, CloseOutcome, ElementWrite, OpenOutcome};
use crate::wire::{CallRecord, success};

pub(crate) async fn handle(
    state: &AppState,
    request: &ApiRequest,
) -> Result<ApiResponse, ApiError> {
    // Step 1: the body.
    let envelope = super::envelope(request)?;
    // The service's clock, read once: the times sent must lie near it (step
    // 2), and it stamps the element and the durations shown.
    let now = clock::now();
    // Step 2: structure, including the query, all errors at once.
    let mut query_errors = FieldErrors::new();
    let include_type = include_type(request, &mut query_errors);
    let parsed = match parse_display(&envelope, state.settings.time_zone, now) {
        Ok(parsed) => query_errors.into_result(parsed)?,
        Err(mut errors) => {
            errors.extend(query_errors);
            return Err(errors.into());
        }
    };
    // Step 3: the signature.
    let consumer = super::signed_consumer(state, request, &parsed.credentials).await?;
    let scope = state.scope_for(&consumer);
    // Step 4: state.
    // "The current time" of the spec's open and close: a signed request time
    // stands in for it (see `replay`), so that a client's open and close keep
    // their order on its own clock, and a repeated close never closes a call
    // opened after it was signed.
    let request_time = replay::request_time(parsed.credentials.signed_at, now);
    // An open's first alarm step needs the scope's roster: read with the
    // snapshot, so the answer waits for no extra round trip.
    let (snapshot, people) = match &parsed.action {
        DisplayAction::Open { .. } => {
            state
                .alarm_runner()
                .snapshot_for_open(&scope, &parsed.target, now)
                .await?
        }
        DisplayAction::Close { .. } => (state.store.snapshot(&scope, &parsed.target).await?, None),
    };
    let types = state.call_types().await?;
    check_state(state, &parsed, &snapshot, &types)?;

    // What the request does to its element, decided once for the store and
    // for the live feed.
    let change = ElementChange {
        address: parsed.target.clone(),
        battery: parsed.status.battery,
        position: parsed.status.position.clone(),
        reachable: parsed.status.reachable,
        at: now,
    };
    let write = Write {
        state,
        consumer_id: &consumer.id,
        scope: &scope,
        request: &parsed,
        element: ElementWrite::new(&scope, &change, state.element_policy(), &snapshot),
        snapshot: &snapshot,
        types: &types,
        shown_types: include_type.then_some(types.as_slice()),
        now,
    };
    match &parsed.action {
        DisplayAction::Open { event, created_at } => {
            open(&write, event, created_at.unwrap_or(request_time), people).await
        }
        DisplayAction::Close { closed_at } => {
            close(&write, closed_at.unwrap_or(request_time)).await
        }
    }
}

/// A request past its four checks, with what it writes to its element.
struct Write<'a> {
    state: &'a AppState,
    /// The consumer that signed it.
    consumer_id: &'a str,
    scope: &'a Scope,
    request: &'a DisplayRequest,
    element: ElementWrite,
    /// The address as read before the write (its open calls, its element).
    snapshot: &'a AddressSnapshot,
    types: &'a [CallType],
    /// The call types the answer shows (`?include=type`).
    shown_types: Option<&'a [CallType]>,
    now: DateTime<Utc>,
}

/// Opens `event` on the address: 201 with the new call, 200 with the one
/// already open (spec 4.1).
async fn open(
    write: &Write<'_>,
    event: &str,
    opened_at: DateTime<Utc>,
    people: Option<People>,
) -> Result<ApiResponse, ApiError> {
    let Write {
        state,
        scope,
        snapshot,
        types,
        now,
        ..
    } = *write;
    let call = new_call(write.request, event, opened_at, snapshot, write.consumer_id);
    // Its alarm starts now, written with the call where the store
    // can (app/alarm/start.rs).
    let first = first_step(
        &call,
        &snapshot.open_calls,
        types,
        people,
        state.settings.staff.receipt_seconds,
        now,
    );
    // The store decides whether the event is open already (spec 4.1).
    let outcome = state
        .store
        .open_call_with_alarm(&call, snapshot, &write.element, &first.first)
        .await?;
    let (status, call) = match &outcome {
        OpenOutcome::Opened(call) => {
            // Its alarm's alerts go out; a presence stops the alarms
            // of the calls already open on its address (DECISIONS §14).
            state
                .alarm_runner()
                .after_open(scope, call, first, &snapshot.open_calls, types, now);
            (201, call)
        }
        OpenOutcome::AlreadyOpen(call) => (200, call),
        OpenOutcome::UnknownElement => return Err(unknown_address()),
    };
    if write.element.writes_element {
        state.publish_element_of(scope, &write.request.target).await;
    }
    let alarm = call.alarm.as_ref();
    tracing::info!(
        consumer = %write.consumer_id,
        address = %call.address,
        event = %call.event,
        call_id = call.id,
        reopened = status == 200,
        alarm = alarm.map(|alarm| alarm.status.as_str()),
        // Not `level`: that key is the line's severity.
        alarm_level = alarm.map(|alarm| alarm.level),
        "call opened"
    );
    let record = CallRecord::new(call, write.shown_types, state.settings.time_zone, now);
    Ok(json_response(status, success(&record)))
}

/// Closes every closable call on the address (DECISIONS §5): 200 with the
/// calls closed, none included.
async fn close(write: &Write<'_>, closed_at: DateTime<Utc>) -> Result<ApiResponse, ApiError> {
    let Write {
        state,
        scope,
        types,
        now,
        ..
    } = *write;
    // The store closes the snapshot's closable calls (DECISIONS §5).
    let outcome = state
        .store
        .close_calls(
            write.snapshot,
            closed_at,
            Some(write.consumer_id),
            &write.element,
        )
        .await?;
    let closed = match outcome {
        CloseOutcome::Closed(closed) => closed,
        CloseOutcome::UnknownElement => return Err(unknown_address()),
    };
    state.publish_calls(scope, &closed, types);
    // Their alarms end (the store may have ended them), and alerts
    // still ringing are cancelled.
    state.alarm_runner().after_close(scope, &closed, types);
    if write.element.writes_element {
        state.publish_element_of(scope, &write.request.target).await;
    }
    tracing::info!(
        consumer = %write.consumer_id,
        address = %write.request.target,
        closed = closed.len(),
        "calls closed"
    );
    let zone = state.settings.time_zone;
    let records: Vec<CallRecord<'_>> = closed
        .iter()
        .map(|call| CallRecord::new(call, write.shown_types, zone, now))
        .collect();
    Ok(json_response(200, success(&records)))
}

/// The element vanished after the snapshot (an admin removed it
/// meanwhile): the same 422 as an unregistered address.
fn unknown_address() -> ApiError {
    let mut errors = FieldErrors::new();
    errors.add("address", message::invalid_choice("address"));
    errors.into()
}

/// `?include=type` shows the call type; any other value is a 422 `include`.
fn include_type(request: &ApiRequest, errors: &mut FieldErrors) -> bool {
    match query_param(request, "include").as_deref() {
        None => false,
        Some("type") => true,
        Some(_) => {
            errors.add("include", message::invalid_choice("include"));
            false
        }
    }
}

/// Step 4: the element must be registered in production, and an opened
/// event must be a configured call type. Both are reported together.
fn check_state(
    state: &AppState,
    request: &DisplayRequest,
    snapshot: &AddressSnapshot,
    types: &[CallType],
) -> Result<(), ApiError> {
    let mut errors = FieldErrors::new();
    if state.settings.mode == Mode::Production && snapshot.element.is_none() {
        errors.add("address", message::invalid_choice("address"));
    }
    if let DisplayAction::Open { event, .. } = &request.action
        && !types.iter().any(|t| &t.name == event)
    {
        errors.add("data.event", message::invalid_choice("data.event"));
    }
    Ok(errors.into_result(())?)
}

/// The call to store: code and position as sent, else the element's;
/// `opened_by` is the consumer that signed the request (audit, DECISIONS §13).
fn new_call(
    request: &DisplayRequest,
    event: &str,
    opened_at: DateTime<Utc>,
    snapshot: &AddressSnapshot,
    opened_by: &str,
) -> NewCall {
    let element = snapshot.element.as_ref();
    NewCall {
        address: request.target.clone(),
        event: event.to_string(),
        position: request
            .status
            .position
            .clone()
            .or_else(|| element.and_then(|e| e.position.clone())),
        section: request.section.clone(),
        attribute: request.attribute.clone(),
        element_code: request
            .code
            .clone()
            .or_else(|| element.map(|e| e.code.clone()))
            .unwrap_or_default(),
        element_name: element.map(|e| e.name.clone()).unwrap_or_default(),
        opened_at,
        opened_by: Some(opened_by.to_string()),
    }
}
