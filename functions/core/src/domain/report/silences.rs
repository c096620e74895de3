//! The report's table of silences (DECISIONS §13, §19): each time a central
//! system (a consumer with a heartbeat) was silent within the period, with
//! its start (the consumer's last request before it), its end (its next
//! request, or its heartbeat's removal) and its length; a silence that
//! lasts has no end and no length yet.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::domain::links::SilenceRecord;

/// One silence as the report lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReportedSilence {
    /// The consumer's id.
    pub consumer: String,
    /// Its name when the silence began.
    pub name: String,
    /// Its last request before the silence.
    pub since: DateTime<Utc>,
    /// Its next request; `None` while it lasts.
    pub ended_at: Option<DateTime<Utc>>,
    /// `ended_at - since` in seconds; `None` while it lasts.
    pub length_seconds: Option<i64>,
}

/// The silences the store gave for the period (those that overlap it),
/// oldest first.
pub fn silences_of(records: &[SilenceRecord]) -> Vec<ReportedSilence> {
    let mut listed: Vec<ReportedSilence> = records
        .iter()
        .map(|record| ReportedSilence {
            consumer: record.consumer.clone(),
            name: record.name.clone(),
            since: record.since,
            ended_at: record.ended_at,
            length_seconds: record
                .ended_at
                .map(|ended| (ended - record.since).num_seconds().max(0)),
        })
        .collect();
    listed.sort_by(|a, b| a.since.cmp(&b.since).then(a.consumer.cmp(&b.consumer)));
    listed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_silence_has_its_length_once_it_ended() {
        let at = |s: &str| -> DateTime<Utc> { s.parse().unwrap() };
        let records = [
            SilenceRecord {
                consumer: "b".into(),
                name: "Haus B".into(),
                since: at("2026-12-02T09:00:00Z"),
                ended_at: None,
            },
            SilenceRecord {
                consumer: "a".into(),
                name: "Haus A".into(),
                since: at("2026-12-02T08:00:00Z"),
                ended_at: Some(at("2026-12-02T08:07:30Z")),
            },
        ];
        let listed = silences_of(&records);
        assert_eq!(listed[0].consumer, "a");
        assert_eq!(listed[0].length_seconds, Some(450));
        assert_eq!(listed[1].ended_at, None);
        assert_eq!(listed[1].length_seconds, None);
    }
}
