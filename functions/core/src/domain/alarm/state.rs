//! A call's alarm as it is kept (DECISIONS §14): where its escalation
//! stands, who was alerted how often, who answered what. Stores keep it as
//! the JSON of [`Alarm::to_json`] beside the call, with its `version` for
//! conditional writes and `next_at` in an index of due timers.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Where a call's escalation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlarmStatus {
    /// Recipients are being alerted; more levels may follow.
    Alerting,
    /// Somebody accepted ("Ich komme"): stopped.
    Accepted,
    /// A presence opened on the call's address: stopped.
    Present,
    /// Nobody can be reached: every level started, nobody left to alert.
    Unattended,
    /// The call closed: stopped.
    Ended,
}

impl AlarmStatus {
    /// `alerting`, `accepted`, … as on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            AlarmStatus::Alerting => "alerting",
            AlarmStatus::Accepted => "accepted",
            AlarmStatus::Present => "present",
            AlarmStatus::Unattended => "unattended",
            AlarmStatus::Ended => "ended",
        }
    }

    /// Accepted, present or ended: nothing is alerted any more.
    pub fn is_stopped(self) -> bool {
        matches!(
            self,
            AlarmStatus::Accepted | AlarmStatus::Present | AlarmStatus::Ended
        )
    }
}

/// A staff member's answer to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Response {
    /// "Ich komme": stops the escalation.
    Accepted,
    /// Not this person: they are not alerted again for this call.
    Declined,
    /// Seen; kept for the report.
    Read,
}

impl Response {
    /// The response of a wire name (`accepted`, `declined`, `read`); `None` for
    /// any other text.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "accepted" => Some(Response::Accepted),
            "declined" => Some(Response::Declined),
            "read" => Some(Response::Read),
            _ => None,
        }
    }

    /// The wire name, which [`Response::parse`] reads back.
    pub fn as_str(self) -> &'static str {
        match self {
            Response::Accepted => "accepted",
            Response::Declined => "declined",
            Response::Read => "read",
        }
    }
}

/// A staff member as an alarm names them (the name as it was then).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StaffRef {
    /// Their staff id (UUID v4, lowercase).
    pub id: String,
    /// Their name then, shown to colleagues and on displays (personal data).
    pub name: String,
}

/// Someone a level alerted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recipient {
    /// Who was alerted.
    pub staff: StaffRef,
    /// The level (1-based) that first alerted them.
    pub level: usize,
    /// How often they were alerted (first alert and re-alerts).
    pub alerts: i64,
    /// When they were last alerted (UTC); a re-alert is due `interval` seconds
    /// later.
    pub last_alert_at: DateTime<Utc>,
    /// Whether their alert is still ringing (alerted, not answered, not
    /// cancelled).
    pub ringing: bool,
    /// When they were first alerted (UTC): their receipt deadline runs from
    /// here (§18). `None` before their first alert, and in alarms kept
    /// before receipts existed ([`Recipient::first_alert_at`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alerted_at: Option<DateTime<Utc>>,
    /// When their first receipt for this call arrived (UTC): they got it
    /// (§18). `None` while none has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received_at: Option<DateTime<Utc>>,
}

impl Recipient {
    /// When they were first alerted: an alarm kept before receipts existed
    /// knows only their last alert, which stands in (a deadline from it
    /// comes later, never earlier, than the true one).
    pub fn first_alert_at(&self) -> DateTime<Utc> {
        self.alerted_at.unwrap_or(self.last_alert_at)
    }
}

/// A response as kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    /// Who answered.
    pub staff: StaffRef,
    /// What they answered.
    pub response: Response,
    /// When the answer came (UTC).
    pub at: DateTime<Utc>,
}

/// A call's alarm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Alarm {
    /// Where the escalation stands; `alerting` while pending.
    pub status: AlarmStatus,
    /// Levels started so far (1-based: level 1 is the first).
    pub level: usize,
    /// Levels of the call type's policy when the alarm began.
    pub levels: usize,
    /// When the next level starts, if one is still to come (on the wire).
    pub next_level_at: Option<DateTime<Utc>>,
    /// When the engine must look at this alarm again (a level, a re-alert
    /// or, once accepted, the accept's timeout falls due); `None` once
    /// stopped. The due index's key.
    pub next_at: Option<DateTime<Utc>>,
    /// The first "Ich komme", which stopped the escalation; `None` until
    /// somebody accepts.
    pub accepted: Option<Answer>,
    /// When a presence stopped it.
    pub present_at: Option<DateTime<Utc>>,
    /// Every accept that was not followed by a presence or the close
    /// within the call type's `accept_timeout` (DECISIONS §19: "<Name> kam
    /// nicht"), oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_arrived: Vec<Answer>,
    /// Everyone a level reached, in the order they were first reached.
    pub recipients: Vec<Recipient>,
    /// Every response, in order (the first of each person and kind).
    pub answers: Vec<Answer>,
    /// When each level started (index 0 = level 1).
    pub level_started_at: Vec<DateTime<Utc>>,
    /// Whether it was ever unattended (the report).
    pub was_unattended: bool,
    /// Grows with every change the displays see (state, level, acceptance):
    /// a call's version is 1 + this (+ 1 once closed).
    pub changes: i64,
}

impl Alarm {
    /// Nothing started yet: what a store keeps for a call just opened,
    /// due at once, until the engine first looks at it.
    pub fn pending(opened_at: DateTime<Utc>) -> Self {
        Alarm {
            status: AlarmStatus::Alerting,
            level: 0,
            levels: 0,
            next_level_at: None,
            next_at: Some(opened_at),
            accepted: None,
            present_at: None,
            not_arrived: Vec::new(),
            recipients: Vec::new(),
            answers: Vec::new(),
            level_started_at: Vec::new(),
            was_unattended: false,
            changes: 0,
        }
    }

    /// Whether the engine has not looked at it yet.
    pub fn is_pending(&self) -> bool {
        self.level == 0 && self.levels == 0 && self.changes == 0 && !self.status.is_stopped()
    }

    /// Whether it is accepted and waits for the one who accepted to arrive
    /// (DECISIONS §19): a presence, the close or the accept's timeout
    /// (`next_at`) comes next. (An alarm accepted before accept timeouts
    /// existed has no `next_at`: no timer looks at it, but a look for
    /// another reason finds its timeout long past.)
    pub fn awaits_arrival(&self) -> bool {
        self.status == AlarmStatus::Accepted && self.present_at.is_none()
    }

    /// Whether a look may alert anybody: it alerts, is unattended, or
    /// waits for an arrival whose timeout resumes it.
    pub fn is_running(&self) -> bool {
        !self.status.is_stopped() || self.awaits_arrival()
    }

    /// Whether displays and staff are shown an alarm: the engine looked at
    /// it and its type has one (a presence has none).
    pub fn is_shown(&self) -> bool {
        self.levels > 0
    }

    /// Whether `staff_id` declined this call (they are not alerted again),
    /// and did not accept it since: an accept after a decline takes it back
    /// (so that when that accept expires without an arrival, §19, they are
    /// alerted again like everyone else).
    pub fn declined_by(&self, staff_id: &str) -> bool {
        let theirs = |a: &&Answer| a.staff.id == staff_id;
        let declined = self
            .answers
            .iter()
            .filter(theirs)
            .filter(|a| a.response == Response::Declined)
            .map(|a| a.at)
            .max();
        let accepted = self
            .answers
            .iter()
            .filter(|a| a.response == Response::Accepted)
            .chain(&self.not_arrived)
            .chain(&self.accepted)
            .filter(theirs)
            .map(|a| a.at)
            .max();
        match (declined, accepted) {
            (Some(declined), Some(accepted)) => declined > accepted,
            (declined, _) => declined.is_some(),
        }
    }

    /// `staff_id`'s answer as the wire tells it: an accept before a
    /// decline before a read; `None` while they gave none.
    pub fn response_of(&self, staff_id: &str) -> Option<Response> {
        let gave = |response| {
            self.answers
                .iter()
                .any(|a| a.staff.id == staff_id && a.response == response)
        };
        [Response::Accepted, Response::Declined, Response::Read]
            .into_iter()
            .find(|response| gave(*response))
    }

    /// The recipients alerted at least once, in the order first reached:
    /// those the wire and the report list (§18).
    pub fn alerted(&self) -> impl Iterator<Item = &Recipient> {
        self.recipients.iter().filter(|r| r.alerts > 0)
    }

    /// `staff_id`'s entry among the recipients; `None` when no level reached
    /// them.
    pub fn recipient(&self, staff_id: &str) -> Option<&Recipient> {
        self.recipients.iter().find(|r| r.staff.id == staff_id)
    }

    /// Whether `staff_id`'s alert for this call is ringing.
    pub fn alerts(&self, staff_id: &str) -> bool {
        self.recipient(staff_id).is_some_and(|r| r.ringing)
    }

    /// The stored form (the call's `alarm` attribute), which
    /// [`Alarm::from_json`] reads back.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("alarms serialise")
    }

    /// Reads the stored form back; `Err` is serde's reason.
    pub fn from_json(json: &str) -> Result<Self, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }
}
