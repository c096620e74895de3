//! A person's receipt of an alert (DECISIONS §18), applied like a response:
//! one look that reads the alarm, lets the engine keep the receipt
//! ([`crate::domain::alarm::receive`]) and step, and writes only if nobody
//! wrote meanwhile. A receipt never alerts anybody by itself, but the step
//! it takes may (a level or a re-alert fell due), so it reads the roster.

use crate::app::alarm::AlarmRunner;
use crate::app::alarm::step::{Looked, Needs};
use crate::domain::alarm::{Staff, Step, receive};
use crate::store::StoreError;

impl AlarmRunner<'_> {
    /// `staff`'s receipt of their alert number `alert` for call `call_id`
    /// of their scope. `None`: no such call, one without an alarm, or an
    /// alert the call never sent them (an unknown receipt).
    pub async fn receive(
        self,
        staff: &Staff,
        call_id: i64,
        alert: i64,
    ) -> Result<Option<Looked>, StoreError> {
        self.receive_on(staff, call_id, Some(alert), None).await
    }

    /// An alarm server's `received` (§16, §18): `staff`'s handset got the
    /// alert of call `call_id` on `address` (the request's `target`); which
    /// alert it was the server does not say: their latest. `None` as for
    /// [`AlarmRunner::receive`], and for a call on another address.
    pub async fn receive_by_handset(
        self,
        staff: &Staff,
        call_id: i64,
        address: &str,
    ) -> Result<Option<Looked>, StoreError> {
        self.receive_on(staff, call_id, None, Some(address)).await
    }

    /// The receipt of alert number `alert` (`None`: the latest) of call
    /// `call_id`, which must be on `address` when one is given.
    async fn receive_on(
        self,
        staff: &Staff,
        call_id: i64,
        alert: Option<i64>,
        address: Option<&str>,
    ) -> Result<Option<Looked>, StoreError> {
        let elsewhere = |call: &crate::domain::model::Call| {
            address.is_some_and(|address| call.address != address)
        };
        let number = |alarm: &crate::domain::alarm::Alarm| {
            alert.unwrap_or_else(|| alarm.recipient(&staff.id).map_or(0, |r| r.alerts))
        };
        let looked = self
            .advance_alarm(
                &staff.scope,
                call_id,
                Needs::AlarmAndRoster,
                None,
                None,
                |prior, situation| {
                    // An unknown receipt, or a call elsewhere, is refused as
                    // a "missing" step: nothing written, nothing sent.
                    let unchanged = || Step {
                        alarm: prior.clone(),
                        effects: Vec::new(),
                        changed: false,
                    };
                    if elsewhere(situation.call) {
                        return Ok(unchanged());
                    }
                    let receipt = receive(prior, situation, &staff.id, number(prior));
                    Ok(receipt.unwrap_or_else(unchanged))
                },
            )
            .await?;
        Ok(match looked {
            Ok(Looked::Call { call, changed }) if !elsewhere(&call) => {
                // Known: an alert the call sent them (the receipt's number
                // at most their alerts so far).
                let known = call
                    .alarm
                    .as_ref()
                    .and_then(|alarm| Some((alarm.recipient(&staff.id)?, number(alarm))))
                    .is_some_and(|(r, number)| (1..=r.alerts).contains(&number));
                known.then_some(Looked::Call { call, changed })
            }
            _ => None,
        })
    }
}
