//! A silent central system on the wire (DECISIONS §19): the `silent` list
//! of the displays' and staff pages' reads, the live messages
//! `consumer.silent` and `consumer.back` with the same object, and the
//! Technik alert (`consumer.silent` with a receipt), which is also its
//! Web Push payload.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::Serialize;

use crate::config::{Mode, Settings};
use crate::domain::links::Link;
use crate::domain::model::Scope;
use crate::domain::wire_time::format_local;
use crate::wire::live::LiveEvent;

/// A silent consumer: `{"consumer","name","since"}`, `since` the wire time
/// of its last request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct SilentRecord {
    pub(crate) consumer: String,
    pub(crate) name: String,
    pub(crate) since: String,
}

impl SilentRecord {
    /// `consumer` silent since `since`, in `zone`'s wire time.
    pub(crate) fn new(consumer: &str, name: &str, since: DateTime<Utc>, zone: Tz) -> Self {
        SilentRecord {
            consumer: consumer.to_string(),
            name: name.to_string(),
            since: format_local(since, zone),
        }
    }

    /// The silent links of `links` (those with a silence kept), oldest
    /// silence first.
    pub(crate) fn of_links(links: &[Link], zone: Tz) -> Vec<SilentRecord> {
        let mut silent: Vec<(&Link, DateTime<Utc>)> = links
            .iter()
            .filter_map(|link| Some((link, link.silence.as_ref()?.since)))
            .collect();
        silent.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.consumer.cmp(&b.0.consumer)));
        silent
            .into_iter()
            .map(|(link, since)| SilentRecord::new(&link.consumer, &link.name, since, zone))
            .collect()
    }
}

/// Whose displays and staff pages hear of `consumer`'s link: the
/// installation's; in the sandbox, the consumer's own (as its data).
pub(crate) fn link_scope(mode: Mode, consumer: &str) -> Scope {
    match mode {
        Mode::Production => Scope::installation(),
        Mode::Sandbox => Scope::consumer(consumer),
    }
}

/// The live event `consumer.silent` (or, `back`, `consumer.back`) of
/// `consumer`'s silence since `since`, to every display and staff page of
/// its scope: what the AWS broadcast sends from the silence's history item
/// (the local server publishes the same from its sweep).
pub fn link_event(
    settings: &Settings,
    consumer: &str,
    name: &str,
    since: DateTime<Utc>,
    back: bool,
) -> LiveEvent {
    let record = SilentRecord::new(consumer, name, since, settings.time_zone);
    let news = if back {
        SilenceNews::Back
    } else {
        SilenceNews::Silent
    };
    LiveEvent {
        scope: link_scope(settings.mode, consumer),
        section: None,
        message: message(news, &record, None),
    }
}

/// Which of the two messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SilenceNews {
    /// `consumer.silent`: the link broke.
    Silent,
    /// `consumer.back`: its next request came.
    Back,
}

/// The live message of `news` about `record`, with `receipt` for a
/// person's alert (its Web Push payload is the same text).
pub(crate) fn message(news: SilenceNews, record: &SilentRecord, receipt: Option<&str>) -> String {
    #[derive(Serialize)]
    struct Message<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        #[serde(flatten)]
        record: &'a SilentRecord,
        #[serde(skip_serializing_if = "Option::is_none")]
        receipt: Option<&'a str>,
    }
    serde_json::to_string(&Message {
        kind: match news {
            SilenceNews::Silent => "consumer.silent",
            SilenceNews::Back => "consumer.back",
        },
        record,
        receipt,
    })
    .expect("silence messages always serialise")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::links::Silence;

    #[test]
    fn messages_have_the_documented_shape() {
        let since: DateTime<Utc> = "2026-01-05T09:00:00Z".parse().unwrap();
        let record = SilentRecord::new("c1", "Haus A", since, chrono_tz::Europe::Berlin);
        assert_eq!(
            message(SilenceNews::Silent, &record, None),
            r#"{"type":"consumer.silent","consumer":"c1","name":"Haus A","since":"2026-01-05 10:00:00"}"#
        );
        assert_eq!(
            message(SilenceNews::Back, &record, None),
            r#"{"type":"consumer.back","consumer":"c1","name":"Haus A","since":"2026-01-05 10:00:00"}"#
        );
        let alert = message(SilenceNews::Silent, &record, Some("s.1.c1.s1"));
        assert!(alert.ends_with(r#""receipt":"s.1.c1.s1"}"#), "{alert}");
    }

    #[test]
    fn a_silence_event_carries_the_object_the_reads_list() {
        use crate::domain::model::Scope;
        use crate::domain::webhooks::EventType;
        use crate::domain::webhooks::outbox::{Facts, LinkFacts, OutboxEvent};
        let since: DateTime<Utc> = "2026-01-05T09:00:00Z".parse().unwrap();
        let kept = OutboxEvent {
            id: "msg_1".into(),
            position: String::new(),
            scope: Scope::installation(),
            kind: EventType::ConsumerSilent,
            at: "2026-01-05T09:00:16Z".parse().unwrap(),
            call_id: None,
            section: None,
            facts: Facts::of_link(LinkFacts {
                consumer: "c1".into(),
                name: "Haus A".into(),
                since,
            }),
        };
        let stored = Facts::from_json(&kept.facts.to_json()).unwrap();
        assert_eq!(stored, kept.facts, "the outbox keeps the link");
        let event = crate::wire::webhooks::event_of(
            &kept,
            chrono_tz::Europe::Berlin,
            &std::collections::HashMap::new(),
            &[],
        );
        assert_eq!(
            event.body(),
            r#"{"data":{"consumer":"c1","name":"Haus A","since":"2026-01-05 10:00:00"},"timestamp":"2026-01-05T09:00:16.000Z","type":"consumer.silent"}"#
        );
    }

    #[test]
    fn only_silent_links_are_listed_oldest_first() {
        let at = |s: &str| -> DateTime<Utc> { s.parse().unwrap() };
        let link = |consumer: &str, since: Option<&str>| Link {
            consumer: consumer.into(),
            name: consumer.to_uppercase(),
            heartbeat_seconds: 60,
            last_seen_at: at("2026-01-05T09:00:00Z"),
            silence: since.map(|since| Silence {
                since: at(since),
                detected_at: at(since),
                alerts: 0,
                last_alert_at: None,
            }),
        };
        let links = [
            link("b", Some("2026-01-05T09:00:00Z")),
            link("alive", None),
            link("a", Some("2026-01-05T08:00:00Z")),
        ];
        let listed = SilentRecord::of_links(&links, chrono_tz::UTC);
        let names: Vec<&str> = listed.iter().map(|r| r.consumer.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
    }
}
