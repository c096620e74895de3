//! The read side for displays (DECISIONS §11, §12): the open calls of the
//! display's scope and sections, and the elements that need attention.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::app::AppState;
use crate::clock;
use crate::domain::model::{Call, CallType};
use crate::domain::supervision::{AttentionReason, attention_reasons};
use crate::domain::wire_time::format_local;
use crate::http::auth;
use crate::http::error::ApiError;
use crate::http::io::{ApiRequest, ApiResponse, json_response, query_param};
use crate::wire::silence::SilentRecord;
use crate::wire::{CallRecord, ElementRecord, success};

/// `GET /api/v1/display/calls[?section=S]`.
pub(crate) async fn calls(state: &AppState, request: &ApiRequest) -> Result<ApiResponse, ApiError> {
    let reader = auth::display_reader(state, request).await?;
    let section = query_param(request, "section").filter(|s| !s.is_empty());
    let types = state.call_types().await?;
    let mut calls: Vec<Call> = state
        .store
        .open_calls(&reader.scope)
        .await?
        .into_iter()
        .filter(|call| reader.sees_section(call.section.as_deref()))
        .filter(|call| section.is_none() || call.section == section)
        .collect();
    sort_for_display(&mut calls, &types);

    let now = clock::now();
    let zone = state.settings.time_zone;
    #[derive(Serialize)]
    struct Snapshot<'a> {
        calls: Vec<CallRecord<'a>>,
        version: i64,
        at: String,
        display: DisplayInfo<'a>,
        /// Webhook endpoints failing for 60 s (DECISIONS §16): the page
        /// says "Weiterleitung gestört: <name>".
        forwarding: Vec<FailingEndpoint>,
        /// Central systems silent (DECISIONS §19): the page's banner
        /// "Keine Verbindung zur Rufanlage <name> seit HH:MM".
        silent: Vec<SilentRecord>,
    }
    #[derive(Serialize)]
    struct DisplayInfo<'a> {
        name: &'a str,
        sections: &'a [String],
    }
    let snapshot = Snapshot {
        version: calls.iter().map(Call::version).max().unwrap_or(0),
        calls: calls
            .iter()
            .map(|call| CallRecord::for_display(call, &types, zone, now))
            .collect(),
        at: format_local(now, zone),
        display: DisplayInfo {
            name: &reader.name,
            sections: &reader.sections,
        },
        forwarding: failing_endpoints(state, now).await,
        silent: state.silent_links(&reader.scope, now).await,
    };
    Ok(json_response(200, success(&snapshot)))
}

/// A webhook endpoint that has failed for 60 s, as displays and staff
/// pages get it (DECISIONS §16).
#[derive(Serialize)]
pub(crate) struct FailingEndpoint {
    name: String,
    since: String,
}

/// The webhook endpoints failing for 60 s or more at `now`, longest first;
/// none where nothing sends webhooks. Where another process delivers (the
/// Lambda functions), read from the store at most every 10 s.
pub(crate) async fn failing_endpoints(
    state: &AppState,
    now: DateTime<Utc>,
) -> Vec<FailingEndpoint> {
    state.refresh_forwarding(now).await;
    let zone = state.settings.time_zone;
    state
        .forwarding
        .as_ref()
        .map(|f| f.shown(now))
        .unwrap_or_default()
        .into_iter()
        .map(|failing| FailingEndpoint {
            name: failing.name,
            since: format_local(failing.since, zone),
        })
        .collect()
}

/// Most urgent first (call type `priority` ascending; a call type an admin
/// has since removed sorts last), then the oldest first, then by id.
pub(crate) fn sort_for_display(calls: &mut [Call], types: &[CallType]) {
    let priority = |call: &Call| {
        types
            .iter()
            .find(|t| t.name == call.event)
            .map_or(i64::MAX, |t| t.priority)
    };
    calls.sort_by(|a, b| {
        priority(a)
            .cmp(&priority(b))
            .then(a.opened_at.cmp(&b.opened_at))
            .then(a.id.cmp(&b.id))
    });
}

/// `GET /api/v1/display/elements[?attention=true]`: with `attention=true` the
/// elements that need attention (DECISIONS §12), else every element of the
/// scope; each with its reasons.
pub(crate) async fn elements(
    state: &AppState,
    request: &ApiRequest,
) -> Result<ApiResponse, ApiError> {
    let reader = auth::display_reader(state, request).await?;
    let only_attention = match query_param(request, "attention").as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => {
            let mut errors = crate::request::validation::FieldErrors::new();
            errors.add(
                "attention",
                crate::request::validation::message::invalid_choice("attention"),
            );
            return Err(errors.into());
        }
    };
    let now = clock::now();
    let zone = state.settings.time_zone;
    let thresholds = &state.settings.supervision;
    let elements = state.store.elements(&reader.scope).await?;

    #[derive(Serialize)]
    struct Supervised<'a> {
        #[serde(flatten)]
        element: ElementRecord<'a>,
        reasons: Vec<AttentionReason>,
    }
    #[derive(Serialize)]
    struct List<'a> {
        elements: Vec<Supervised<'a>>,
        at: String,
    }
    let list = List {
        elements: elements
            .iter()
            .map(|element| Supervised {
                element: ElementRecord::for_display(element, zone),
                reasons: attention_reasons(element, now, thresholds),
            })
            .filter(|supervised| !only_attention || !supervised.reasons.is_empty())
            .collect(),
        at: format_local(now, zone),
    };
    Ok(json_response(200, success(&list)))
}
