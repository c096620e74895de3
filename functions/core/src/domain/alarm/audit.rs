//! The audit of a call's alarm (DECISIONS §14 "Audit and report"): every
//! alert, response, escalation and stop with its time and person, kept by
//! the store in the same write as the alarm that caused it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::domain::alarm::engine::{CancelReason, Effect};
use crate::domain::alarm::state::StaffRef;

/// One line of a call's audit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEvent {
    pub at: DateTime<Utc>,
    /// `alert`, `realert`, `cancel`, `escalated`, `accepted`, `declined`,
    /// `read`, `unattended`, `present`, `ended`.
    pub kind: String,
    /// The level (alerts and escalations), else 0.
    pub level: usize,
    /// Who was alerted, cancelled or answered; `None` for the others.
    pub staff: Option<StaffRef>,
    /// A cancel's reason: `accepted by <id>`, `present`, `ended`, `off duty`.
    pub detail: Option<String>,
}

impl AuditEvent {
    /// The audit line of an effect of the engine at `at`.
    pub fn of(effect: &Effect, at: DateTime<Utc>) -> Self {
        let line = |kind: &str, level: usize, staff: Option<&StaffRef>, detail: Option<String>| {
            AuditEvent {
                at,
                kind: kind.to_string(),
                level,
                staff: staff.cloned(),
                detail,
            }
        };
        match effect {
            Effect::Alert {
                staff,
                level,
                repeat,
            } => line(
                if *repeat { "realert" } else { "alert" },
                *level,
                Some(staff),
                None,
            ),
            Effect::Cancel { staff, reason } => {
                let detail = match reason {
                    CancelReason::Accepted(by) => format!("accepted by {}", by.id),
                    CancelReason::Present => "present".to_string(),
                    CancelReason::Ended => "ended".to_string(),
                    CancelReason::OffDuty => "off duty".to_string(),
                };
                line("cancel", 0, Some(staff), Some(detail))
            }
            Effect::Escalated { level } => line("escalated", *level, None, None),
            Effect::Accepted { by } => line("accepted", 0, Some(by), None),
            Effect::Declined { by } => line("declined", 0, Some(by), None),
            Effect::Read { by } => line("read", 0, Some(by), None),
            Effect::Unattended => line("unattended", 0, None, None),
            Effect::Stopped { status } => line(status.as_str(), 0, None, None),
        }
    }

    /// The audit lines of a step's effects.
    pub fn all(effects: &[Effect], at: DateTime<Utc>) -> Vec<Self> {
        effects.iter().map(|e| Self::of(e, at)).collect()
    }
}
