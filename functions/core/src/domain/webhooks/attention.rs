//! `element.attention` (DECISIONS §12, §16): an alarm server's technician
//! hears of an element that needs attention (battery low, not reachable,
//! silent too long) once, when it starts needing it, not on every report.
//!
//! A sweep compares each element's reasons now with what was last announced
//! for it (its *mark*, kept in the store). A reason the mark lacks is news:
//! the new mark and one event go to the store in one atomic step, on the
//! condition that the mark is still what the sweep read (so two processes
//! never announce the same news twice, and a crash between the two writes
//! cannot happen). A reason that went away is written to the mark without
//! an event, so that it is news again when it comes back. Silence (`stale`)
//! is news without any write of the element, which is why this is a sweep
//! over time and not a step of the element's write.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::event::EventType;
pub(crate) use super::facts::ElementFacts;
use super::facts::{Facts, OutboxEvent};
use crate::domain::model::{Element, Scope};
use crate::domain::supervision::{Thresholds, attention_reasons};

/// One element's mark to move, and the event that announces it (none when
/// reasons only went away).
#[derive(Debug, Clone, PartialEq)]
pub struct AttentionChange {
    /// The element's address: whose mark it is.
    pub address: String,
    /// The mark the sweep read; `None`: the element never had one.
    pub before: Option<Vec<String>>,
    /// The reasons now (wire names), empty when it is fine again.
    pub after: Vec<String>,
    /// The `element.attention` to keep with the mark; `None` when reasons only
    /// went away.
    pub event: Option<OutboxEvent>,
}

/// The marks to move and the events to keep for `elements` (the
/// installation's, the only ones forwarded) at `now`, given the `marks`
/// read from the store (address → reasons last announced); `new_id` gives
/// each event its `webhook-id` ([`crate::clock::new_event_id`]).
pub fn attention_changes(
    elements: &[Element],
    marks: &HashMap<String, Vec<String>>,
    now: DateTime<Utc>,
    thresholds: &Thresholds,
    mut new_id: impl FnMut() -> String,
) -> Vec<AttentionChange> {
    let mut changes = Vec::new();
    for element in elements {
        let after: Vec<String> = attention_reasons(element, now, thresholds)
            .iter()
            .map(|r| r.as_str().to_string())
            .collect();
        let before = marks.get(&element.address);
        let announced = before.map(Vec::as_slice).unwrap_or_default();
        let news = after.iter().any(|reason| !announced.contains(reason));
        if !news && announced == after.as_slice() {
            continue;
        }
        let event = news.then(|| OutboxEvent {
            id: new_id(),
            position: String::new(),
            scope: Scope::installation(),
            kind: EventType::ElementAttention,
            at: now,
            call_id: None,
            section: None,
            facts: Facts::of_element(ElementFacts::of(element, after.clone())),
        });
        changes.push(AttentionChange {
            address: element.address.clone(),
            before: before.cloned(),
            after,
            event,
        });
    }
    changes
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, TimeZone};

    use super::*;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 26, 12, 0, 0).unwrap()
    }

    fn element(address: &str, battery: Option<f64>, reachable: Option<bool>) -> Element {
        Element {
            address: address.into(),
            code: "Z1".into(),
            name: "Zimmer 1".into(),
            battery,
            position: None,
            reachable,
            updated_at: now() - Duration::minutes(5),
            version: 3,
        }
    }

    fn marks(pairs: &[(&str, &[&str])]) -> HashMap<String, Vec<String>> {
        pairs
            .iter()
            .map(|(a, r)| (a.to_string(), r.iter().map(|s| s.to_string()).collect()))
            .collect()
    }

    fn changes(elements: &[Element], marks: &HashMap<String, Vec<String>>) -> Vec<AttentionChange> {
        let mut ids = (1..).map(|n| format!("msg_{n}"));
        attention_changes(elements, marks, now(), &Thresholds::default(), || {
            ids.next().expect("ids")
        })
    }

    #[test]
    fn a_fine_element_without_a_mark_is_left_alone() {
        assert_eq!(
            changes(&[element("a", Some(80.0), Some(true))], &marks(&[])),
            []
        );
    }

    #[test]
    fn a_low_battery_is_announced_once() {
        let low = element("a", Some(10.0), Some(true));
        let first = changes(std::slice::from_ref(&low), &marks(&[]));
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].before, None);
        assert_eq!(first[0].after, ["battery_low"]);
        let event = first[0].event.as_ref().expect("an event");
        assert_eq!(event.kind, EventType::ElementAttention);
        assert_eq!(event.call_id, None);
        assert_eq!(event.scope, Scope::installation());
        let facts = event.facts.element.as_ref().expect("the element");
        assert_eq!(facts.reasons, ["battery_low"]);
        assert_eq!(facts.to_element(), low);
        // Once marked, the same reason is no news.
        assert_eq!(changes(&[low], &marks(&[("a", &["battery_low"])])), []);
    }

    #[test]
    fn a_further_reason_is_news_with_every_reason_in_it() {
        let both = element("a", Some(10.0), Some(false));
        let found = changes(&[both], &marks(&[("a", &["battery_low"])]));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].after, ["battery_low", "unreachable"]);
        let event = found[0].event.as_ref().expect("an event");
        assert_eq!(
            event.facts.element.as_ref().unwrap().reasons,
            ["battery_low", "unreachable"]
        );
    }

    #[test]
    fn a_reason_gone_moves_the_mark_silently_so_that_it_is_news_again() {
        let fixed = element("a", Some(90.0), Some(true));
        let found = changes(&[fixed], &marks(&[("a", &["battery_low"])]));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].after, Vec::<String>::new());
        assert_eq!(found[0].event, None);
        let low_again = element("a", Some(12.0), Some(true));
        let again = changes(&[low_again], &marks(&[("a", &[])]));
        assert!(again[0].event.is_some());
    }

    #[test]
    fn silence_is_news_without_any_write_of_the_element() {
        let mut silent = element("a", None, None);
        silent.updated_at = now() - Duration::hours(25);
        let found = changes(&[silent], &marks(&[]));
        assert_eq!(found[0].after, ["stale"]);
        assert!(found[0].event.is_some());
    }
}
