//! One call as the CSV and JSON exports show it (the audit record): local
//! times, seconds, who opened and closed it, and how its alarm went
//! (DECISIONS §14; the time to close is `duration_seconds`). No staff
//! names: who accepted which call is in `nurse-call-admin audit`.

use chrono_tz::Tz;
use serde::Serialize;

use nurse_call_core::{
    report::{Answer, ReportedCall},
    wire_time::format_local,
};

/// The columns of the CSV export, in order; also a JSON call record.
#[derive(Debug, Serialize)]
pub(super) struct CallRow<'a> {
    pub id: i64,
    /// Local wire time (`YYYY-MM-DD HH:MM:SS`).
    pub opened_at: String,
    pub closed_at: Option<String>,
    pub address: &'a str,
    pub element_code: &'a str,
    pub element_name: &'a str,
    pub position: Option<&'a str>,
    pub section: Option<&'a str>,
    pub call_type: &'a str,
    /// The call type's `type` (`CALL`, `PRESENCE`, …).
    #[serde(rename = "type")]
    pub kind: &'a str,
    pub response_seconds: Option<i64>,
    pub answered_by: Option<Answer>,
    pub duration_seconds: Option<i64>,
    pub over_threshold: bool,
    /// Consumer ids; empty for calls stored before they were kept.
    pub opened_by: Option<&'a str>,
    pub closed_by: Option<&'a str>,
    /// `alerting`, `accepted`, `present`, `unattended`, `ended`; empty for
    /// a call without an alarm (a presence, one stored before alarms).
    pub alarm_state: Option<&'static str>,
    /// Levels its alarm started (2 and more: it escalated).
    pub levels_started: Option<usize>,
    /// `opened_at` to the first "Ich komme".
    pub accept_seconds: Option<i64>,
    /// `opened_at` to the first presence on its address.
    pub presence_seconds: Option<i64>,
    /// Whether nobody could be reached at some moment.
    pub unattended: Option<bool>,
    /// When anybody alerted first said they got it (a receipt, DECISIONS
    /// §18), local wire time; empty: nobody's receipt came.
    pub first_received_at: Option<String>,
}

impl<'a> CallRow<'a> {
    pub(super) fn new(reported: &'a ReportedCall, zone: Tz) -> Self {
        let call = &reported.call;
        let alarm = reported.alarm.as_ref();
        CallRow {
            id: call.id,
            opened_at: format_local(call.opened_at, zone),
            closed_at: call.closed_at.map(|t| format_local(t, zone)),
            address: &call.address,
            element_code: &call.element_code,
            element_name: &call.element_name,
            position: call.position.as_deref(),
            section: call.section.as_deref(),
            call_type: &call.event,
            kind: &reported.kind,
            response_seconds: reported.response.map(|r| r.num_seconds()),
            answered_by: reported.answered_by,
            duration_seconds: reported.duration.map(|d| d.num_seconds()),
            over_threshold: reported.over_threshold,
            opened_by: call.opened_by.as_deref(),
            closed_by: call.closed_by.as_deref(),
            alarm_state: alarm.map(|a| a.state.as_str()),
            levels_started: alarm.map(|a| a.levels_started),
            accept_seconds: alarm.and_then(|a| a.to_accept).map(|d| d.num_seconds()),
            presence_seconds: reported.to_presence.map(|d| d.num_seconds()),
            unattended: alarm.map(|a| a.unattended),
            first_received_at: alarm
                .and_then(|a| a.to_first_receipt)
                .map(|after| format_local(call.opened_at + after, zone)),
        }
    }
}
