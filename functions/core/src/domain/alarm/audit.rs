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
    /// When it happened (UTC): the `now` of the step that made it.
    pub at: DateTime<Utc>,
    /// `alert`, `realert`, `cancel`, `escalated`, `accepted`, `declined`,
    /// `read`, `received` (a receipt, §18), `accept_expired` (an accept
    /// followed by no arrival in time, §19), `unattended`, `present`, `ended`.
    pub kind: String,
    /// The level (alerts and escalations), else 0.
    pub level: usize,
    /// Who was alerted, cancelled, answered or confirmed; `None` for the
    /// others.
    pub staff: Option<StaffRef>,
    /// A cancel's reason: `accepted by <id>`, `present`, `ended`, `off duty`;
    /// an alert's number for the person: `alert 2` (its receipt names it).
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
                alert,
            } => line(
                if *repeat { "realert" } else { "alert" },
                *level,
                Some(staff),
                Some(format!("alert {alert}")),
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
            Effect::Received { by } => line("received", 0, Some(by), None),
            Effect::AcceptExpired { by } => line("accept_expired", 0, Some(by), None),
            Effect::Unattended => line("unattended", 0, None, None),
            Effect::Stopped { status } => line(status.as_str(), 0, None, None),
        }
    }

    /// The effect a person is told about (an alert or a cancel) that this
    /// line records, for whoever reads the audit instead of the step (the
    /// AWS path reads the table's stream, DECISIONS §17). A cancel because
    /// of an accept names the accepter as `accepted_by`, whose name the
    /// line does not keep: `accepted_by` gives it (the call's alarm's).
    /// `None` for every other line.
    pub fn personal_effect(&self, accepted_by: Option<&StaffRef>) -> Option<Effect> {
        let staff = self.staff.clone()?;
        match self.kind.as_str() {
            "alert" | "realert" => Some(Effect::Alert {
                staff,
                level: self.level,
                repeat: self.kind == "realert",
                // Lines kept before receipts name no number: the first.
                alert: self
                    .detail
                    .as_deref()
                    .and_then(|detail| detail.strip_prefix("alert "))
                    .and_then(|number| number.parse().ok())
                    .unwrap_or(1),
            }),
            "cancel" => {
                let detail = self.detail.as_deref().unwrap_or_default();
                let reason = match detail {
                    "present" => CancelReason::Present,
                    "ended" => CancelReason::Ended,
                    "off duty" => CancelReason::OffDuty,
                    _ => match detail.strip_prefix("accepted by ") {
                        Some(id) => CancelReason::Accepted(
                            accepted_by
                                .filter(|by| by.id == id)
                                .cloned()
                                .unwrap_or_else(|| StaffRef {
                                    id: id.to_string(),
                                    name: String::new(),
                                }),
                        ),
                        // An unknown reason: the alert stops all the same.
                        None => CancelReason::Ended,
                    },
                };
                Some(Effect::Cancel { staff, reason })
            }
            _ => None,
        }
    }

    /// The audit lines of a step's effects.
    pub fn all(effects: &[Effect], at: DateTime<Utc>) -> Vec<Self> {
        effects.iter().map(|e| Self::of(e, at)).collect()
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::domain::alarm::AlarmStatus;

    fn person(id: &str, name: &str) -> StaffRef {
        StaffRef {
            id: id.into(),
            name: name.into(),
        }
    }

    #[test]
    fn an_alert_or_a_cancel_reads_back_from_its_line_and_nothing_else_does() {
        let at = Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).unwrap();
        let (anna, ben) = (person("a1", "Anna"), person("b2", "Ben"));
        let personal = [
            Effect::Alert {
                staff: anna.clone(),
                level: 2,
                repeat: false,
                alert: 1,
            },
            Effect::Alert {
                staff: anna.clone(),
                level: 1,
                repeat: true,
                alert: 3,
            },
            Effect::Cancel {
                staff: anna.clone(),
                reason: CancelReason::Accepted(ben.clone()),
            },
            Effect::Cancel {
                staff: anna.clone(),
                reason: CancelReason::Present,
            },
            Effect::Cancel {
                staff: anna.clone(),
                reason: CancelReason::Ended,
            },
            Effect::Cancel {
                staff: anna.clone(),
                reason: CancelReason::OffDuty,
            },
        ];
        for effect in &personal {
            let line = AuditEvent::of(effect, at);
            assert_eq!(line.personal_effect(Some(&ben)).as_ref(), Some(effect));
        }
        // Without the accepter's name: the id stays, the name is empty.
        let line = AuditEvent::of(&personal[2], at);
        assert_eq!(
            line.personal_effect(None),
            Some(Effect::Cancel {
                staff: anna.clone(),
                reason: CancelReason::Accepted(person("b2", "")),
            })
        );
        let others = [
            Effect::Escalated { level: 2 },
            Effect::Accepted { by: ben.clone() },
            Effect::Declined { by: ben.clone() },
            Effect::Read { by: ben.clone() },
            Effect::Received { by: ben.clone() },
            Effect::AcceptExpired { by: ben },
            Effect::Unattended,
            Effect::Stopped {
                status: AlarmStatus::Ended,
            },
        ];
        for effect in &others {
            assert_eq!(
                AuditEvent::of(effect, at).personal_effect(None),
                None,
                "{effect:?}"
            );
        }
    }
}
