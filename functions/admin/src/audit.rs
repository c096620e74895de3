//! `audit CALL_ID`: what happened to one call's alarm (DECISIONS §14 "Audit
//! and report"): every alert, re-alert, escalation, response, cancel and stop
//! with its time and person, in the order written. The answer to "who was
//! alerted for the Notruf in room 12 last night, and when did anybody come?".
//!
//! The report (`report`) has the figures of many calls without names; this
//! names people, so it is for the incident at hand, not for ranking staff.

use clap::Args;
use serde::Serialize;

use nurse_call_core::{AlarmStore, Scope, wire_time::format_local};

use crate::failure::{Failure, Outcome};
use crate::output::{Output, fields, or_dash, table};

#[derive(Debug, Args)]
pub(crate) struct Command {
    /// The call's id (the `id` of its call record, a column of the report's CSV).
    call_id: i64,
}

#[derive(Serialize)]
struct Audit {
    call: CallSummary,
    events: Vec<EventRow>,
}

#[derive(Serialize)]
struct CallSummary {
    id: i64,
    call_type: String,
    address: String,
    section: Option<String>,
    opened_at: String,
    closed_at: Option<String>,
    /// Where its alarm stands; `None` for a call without one.
    alarm_state: Option<&'static str>,
    levels_started: usize,
    accepted_by: Option<String>,
}

#[derive(Serialize)]
struct EventRow {
    at: String,
    /// `alert`, `realert`, `cancel`, `escalated`, `accepted`, `declined`,
    /// `read`, `unattended`, `present`, `ended`.
    kind: String,
    /// The level of an alert or escalation; `None` for the others.
    level: Option<usize>,
    staff_id: Option<String>,
    staff_name: Option<String>,
    detail: Option<String>,
}

pub(crate) async fn run(command: Command, store: &dyn AlarmStore, out: Output) -> Outcome {
    let scope = Scope::installation();
    let zone = out.zone();
    let kept = store.alarm(&scope, command.call_id).await?.ok_or_else(|| {
        Failure::refused(format!(
            "no call {} with an alarm (an unknown id, or a call stored before alarms existed)",
            command.call_id
        ))
    })?;
    let events = store.alarm_audit(&scope, command.call_id).await?;
    let call = &kept.call;
    let shown = kept.alarm.is_shown().then_some(&kept.alarm);
    let audit = Audit {
        call: CallSummary {
            id: call.id,
            call_type: call.event.clone(),
            address: call.address.clone(),
            section: call.section.clone(),
            opened_at: format_local(call.opened_at, zone),
            closed_at: call.closed_at.map(|t| format_local(t, zone)),
            alarm_state: shown.map(|a| a.status.as_str()),
            levels_started: kept.alarm.level_started_at.len(),
            accepted_by: kept.alarm.accepted.as_ref().map(|a| a.staff.name.clone()),
        },
        events: events
            .iter()
            .map(|e| EventRow {
                at: format_local(e.at, zone),
                kind: e.kind.clone(),
                level: (e.level > 0).then_some(e.level),
                staff_id: e.staff.as_ref().map(|s| s.id.clone()),
                staff_name: e.staff.as_ref().map(|s| s.name.clone()),
                detail: e.detail.clone(),
            })
            .collect(),
    };
    out.print(&audit, |audit| {
        let call = &audit.call;
        let mut text = fields(&[
            ("call", call.id.to_string()),
            ("type", call.call_type.clone()),
            ("address", call.address.clone()),
            ("section", or_dash(call.section.as_deref())),
            ("opened", call.opened_at.clone()),
            ("closed", or_dash(call.closed_at.as_deref())),
            ("alarm", or_dash(call.alarm_state)),
            ("levels started", call.levels_started.to_string()),
            ("accepted by", or_dash(call.accepted_by.as_deref())),
        ]);
        text.push('\n');
        let cells: Vec<Vec<String>> = audit
            .events
            .iter()
            .map(|e| {
                vec![
                    e.at.clone(),
                    e.kind.clone(),
                    or_dash(e.level),
                    or_dash(e.staff_name.as_deref()),
                    or_dash(e.detail.as_deref()),
                ]
            })
            .collect();
        text.push_str(&table(&["AT", "EVENT", "LEVEL", "STAFF", "DETAIL"], &cells));
        text
    });
    Ok(())
}
