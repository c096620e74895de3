//! An alarm server's 2xx to a `call.alert` as its handsets' receipts
//! (DECISIONS §16 `--confirms-delivery`, §18): an endpoint registered
//! without the flag promises no `received` of its own, so its answer is all
//! the service will hear; each recipient named in the event with a device
//! then has the receipt of exactly the alert the event carried (a 2xx of an
//! older alert never confirms a re-alert written meanwhile). An endpoint
//! with the flag sends `received` itself (`POST /api/v1/response`), and its
//! 2xx is only a delivery.
//!
//! The receipts are applied by the alarm runner of a state given to the
//! dispatcher ([`Dispatcher::take_receipts_with`]), as a phone's receipt
//! is, before the attempt counts as finished: a Lambda invocation waits
//! for it (`Dispatcher::in_flight`), and the call's next event waits too.

use std::collections::HashMap;

use crate::app::AppState;
use crate::app::alarm::step::Looked;
use crate::domain::model::Scope;
use crate::domain::webhooks::outbox::OutboxEvent;
use crate::domain::webhooks::{Endpoint, EventType};

use super::Dispatcher;

/// Whose receipt a delivered `call.alert` is: its call, and each recipient
/// with a device with which alert of theirs it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Handsets {
    scope: Scope,
    call_id: i64,
    alerts: Vec<(String, i64)>,
}

/// The handsets of `kept` if it is a `call.alert`: its recipients who have
/// a device as it is sent (`devices`, staff id → device), with the number
/// of their alert; `None` for any other event or nobody with a device.
pub(super) fn handsets_of(
    kept: &OutboxEvent,
    devices: &HashMap<String, String>,
) -> Option<Handsets> {
    if kept.kind != EventType::CallAlert {
        return None;
    }
    let call_id = kept.call_id?;
    let alerts: Vec<(String, i64)> = kept
        .facts
        .staff
        .iter()
        .filter(|staff| devices.contains_key(&staff.id))
        .filter_map(|staff| Some((staff.id.clone(), kept.facts.alert_of(&staff.id)?)))
        .collect();
    (!alerts.is_empty()).then(|| Handsets {
        scope: kept.scope.clone(),
        call_id,
        alerts,
    })
}

impl Dispatcher {
    /// From now on, a 2xx to a `call.alert` from an endpoint without
    /// `confirms_delivery` is applied as its handsets' receipts through
    /// `state`'s alarm runner (the local server's state; in AWS the
    /// `forward` function's). Without a state (a test's dispatcher) a 2xx
    /// is only a delivery. The first state given stays.
    pub fn take_receipts_with(&self, state: AppState) {
        if self.receipts.set(state).is_err() {
            tracing::warn!(
                "the webhook dispatcher's receipts were given a state twice: the first stays"
            );
        }
    }

    /// Whether a delivery of `kept` to `endpoint` would be a receipt.
    pub(super) fn answer_is_receipt(&self, kept: &OutboxEvent, endpoint: &Endpoint) -> bool {
        kept.kind == EventType::CallAlert
            && endpoint.answer_is_receipt()
            && self.receipts.get().is_some()
    }

    /// `endpoint` answered 2xx to event `event_id`: each of `handsets`
    /// received their alert. A failure is logged and not retried: the
    /// person then counts as not reached until another receipt comes,
    /// which starts the next level early rather than late.
    pub(super) async fn receive_delivered(
        &self,
        handsets: &Handsets,
        endpoint: &Endpoint,
        event_id: &str,
    ) {
        let Some(state) = self.receipts.get() else {
            return;
        };
        let store = match state.alarm_store() {
            Ok(store) => store,
            Err(error) => {
                tracing::warn!(%error, event = %event_id, "webhook receipts not kept: no alarm store");
                return;
            }
        };
        // The scope's roster (one read; on DynamoDB a Query of its
        // partition, where a single member by id would scan a table).
        let people = match store.staff_of(&handsets.scope).await {
            Ok(people) => people,
            Err(error) => {
                tracing::warn!(%error, call_id = handsets.call_id, event = %event_id,
                    "webhook receipts not kept: staff not read");
                return;
            }
        };
        for (staff_id, alert) in &handsets.alerts {
            let Some(staff) = people.iter().find(|s| s.id == *staff_id && !s.revoked) else {
                continue;
            };
            let looked = state
                .alarm_runner()
                .receive(staff, handsets.call_id, *alert)
                .await;
            match looked {
                Ok(Some(Looked::Call { changed, .. })) => tracing::info!(
                    staff_id = %staff.id,
                    call_id = handsets.call_id,
                    alert,
                    path = "webhook",
                    endpoint = %endpoint.id,
                    event = %event_id,
                    changed,
                    "receipt"
                ),
                // The call or its alarm is gone (closed and purged): nothing
                // left to confirm.
                Ok(_) => tracing::debug!(staff_id = %staff.id, call_id = handsets.call_id,
                    event = %event_id, "webhook receipt of a call no longer kept"),
                Err(error) => tracing::warn!(%error, staff_id = %staff.id,
                    call_id = handsets.call_id, event = %event_id,
                    "webhook receipt not kept: the person counts as not reached until another receipt"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::alarm::StaffRef;
    use crate::domain::webhooks::outbox::Facts;
    use chrono::Utc;

    fn alert(kind: EventType, people: &[(&str, i64)]) -> OutboxEvent {
        let mut facts = Facts::of_element(crate::domain::webhooks::facts::ElementFacts {
            address: "Zimmer.1".into(),
            code: String::new(),
            name: String::new(),
            battery: None,
            position: None,
            reachable: None,
            updated_at: Utc::now(),
            version: 1,
            reasons: Vec::new(),
        });
        for (id, number) in people {
            facts.staff.push(StaffRef {
                id: id.to_string(),
                name: id.to_uppercase(),
            });
            facts.alerts.insert(id.to_string(), *number);
        }
        OutboxEvent {
            id: "msg_1".into(),
            position: String::new(),
            scope: Scope::installation(),
            kind,
            at: Utc::now(),
            call_id: Some(7),
            section: None,
            facts,
        }
    }

    #[test]
    fn only_the_recipients_of_an_alert_with_a_device_and_their_own_alert() {
        let devices = HashMap::from([
            ("anna".to_string(), "DECT-1".to_string()),
            ("carla".to_string(), "DECT-3".to_string()),
        ]);
        let kept = alert(EventType::CallAlert, &[("anna", 2), ("ben", 1)]);
        assert_eq!(
            handsets_of(&kept, &devices),
            Some(Handsets {
                scope: Scope::installation(),
                call_id: 7,
                alerts: vec![("anna".to_string(), 2)],
            })
        );
        let only_ben = alert(EventType::CallAlert, &[("ben", 1)]);
        assert_eq!(
            handsets_of(&only_ben, &devices),
            None,
            "nobody with a device"
        );
        let cancel = alert(EventType::CallCancelled, &[("anna", 2)]);
        assert_eq!(
            handsets_of(&cancel, &devices),
            None,
            "a cancel confirms nothing"
        );
    }
}
