//! How `call-types list`, `show` and `set` print a call type: the fields of
//! the `type` object of spec 2.3 and the escalation policy (DECISIONS §14),
//! in JSON as the list of levels an admin gives to `--escalation`.

use serde::Serialize;

use nurse_call_core::{AdminStore, CallType, alarm::Policy};

use crate::failure::{Failure, Outcome};
use crate::output::{Output, fields, table};

/// A call type as the service shows it, with its escalation policy.
#[derive(Serialize)]
pub(super) struct CallTypeRow {
    pub id: i64,
    pub name: String,
    pub internal_name: String,
    pub urgency: String,
    pub priority: i64,
    #[serde(rename = "type")]
    pub kind: String,
    pub color: String,
    pub notify: bool,
    pub notification_interval: i64,
    pub notification_maxloops: i64,
    pub notification_sound: String,
    /// The levels, `[{"after":0,"to":"section"}, …]`; `[]`: no alarm.
    pub escalation: serde_json::Value,
    /// Seconds an accept waits for an arrival (DECISIONS §19).
    pub accept_timeout: i64,
    /// The same policy, for the table.
    #[serde(skip)]
    pub policy: Policy,
}

impl From<&CallType> for CallTypeRow {
    fn from(t: &CallType) -> Self {
        CallTypeRow {
            id: t.id,
            name: t.name.clone(),
            internal_name: t.internal_name.clone(),
            urgency: t.urgency.clone(),
            priority: t.priority,
            kind: t.kind.clone(),
            color: t.color.clone(),
            notify: t.notify,
            notification_interval: t.notification_interval,
            notification_maxloops: t.notification_maxloops,
            notification_sound: t.notification_sound.clone(),
            escalation: serde_json::from_str(&t.escalation.to_json())
                .expect("a policy's JSON reads back"),
            policy: t.escalation.clone(),
            accept_timeout: t.accept_timeout,
        }
    }
}

/// `section 0 s · house 60 s · group:Leitung 180 s`, or `none`.
pub(super) fn policy_text(policy: &Policy) -> String {
    if policy.is_none() {
        return "none".to_string();
    }
    policy
        .levels()
        .iter()
        .map(|level| format!("{} {} s", level.to, level.after))
        .collect::<Vec<_>>()
        .join(" · ")
}

pub(super) fn call_type_table(rows: &[&CallTypeRow]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|t| {
            vec![
                t.id.to_string(),
                t.name.clone(),
                t.internal_name.clone(),
                t.urgency.clone(),
                t.priority.to_string(),
                t.kind.clone(),
                t.color.clone(),
                if t.notify { "yes" } else { "no" }.to_string(),
                t.notification_interval.to_string(),
                t.notification_maxloops.to_string(),
                t.notification_sound.clone(),
                t.accept_timeout.to_string(),
                policy_text(&t.policy),
            ]
        })
        .collect();
    table(
        &[
            "ID",
            "NAME",
            "INTERNAL",
            "URGENCY",
            "PRIO",
            "TYPE",
            "COLOR",
            "NOTIFY",
            "INTERVAL",
            "LOOPS",
            "SOUND",
            "ACCEPT",
            "ESCALATION",
        ],
        &cells,
    )
}

/// `call-types show NAME`: every field, and the policy level by level.
pub(super) async fn show(store: &dyn AdminStore, out: Output, name: &str) -> Outcome {
    let name = name.trim();
    let types = store.call_types().await?.types;
    let call_type = types.iter().find(|t| t.name == name).ok_or_else(|| {
        Failure::refused(format!(
            "no call type named {name:?} (see `nurse-call-admin call-types list`)"
        ))
    })?;
    let row = CallTypeRow::from(call_type);
    out.print(&row, |row| {
        let mut text = fields(&[
            ("id", row.id.to_string()),
            ("name", row.name.clone()),
            ("internal_name", row.internal_name.clone()),
            ("urgency", row.urgency.clone()),
            ("priority", row.priority.to_string()),
            ("type", row.kind.clone()),
            ("color", row.color.clone()),
            ("notify", row.notify.to_string()),
            (
                "notification_interval",
                row.notification_interval.to_string(),
            ),
            (
                "notification_maxloops",
                row.notification_maxloops.to_string(),
            ),
            ("notification_sound", row.notification_sound.clone()),
            ("escalation", row.escalation.to_string()),
            ("accept_timeout", format!("{} s", row.accept_timeout)),
        ]);
        let policy = &row.policy;
        if policy.is_none() {
            text.push_str("\nNo alarm: calls of this type alert nobody.\n");
        } else {
            text.push('\n');
            let cells: Vec<Vec<String>> = policy
                .levels()
                .iter()
                .enumerate()
                .map(|(index, level)| {
                    vec![
                        (index + 1).to_string(),
                        format!("{} s", level.after),
                        level.to.to_string(),
                    ]
                })
                .collect();
            text.push_str(&table(&["LEVEL", "AFTER", "ALERTS"], &cells));
        }
        text
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_read_in_one_line() {
        assert_eq!(
            policy_text(&Policy::seeded("Notruf").unwrap()),
            "section 0 s · house 60 s · group:Leitung 180 s"
        );
        assert_eq!(policy_text(&Policy::none()), "none");
    }
}
