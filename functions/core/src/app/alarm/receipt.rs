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
        let looked = self
            .advance_alarm(
                &staff.scope,
                call_id,
                Needs::AlarmAndRoster,
                None,
                None,
                |prior, situation| {
                    // An unknown receipt is refused as a "missing" step:
                    // nothing written, nothing sent.
                    Ok(
                        receive(prior, situation, &staff.id, alert).unwrap_or_else(|| Step {
                            alarm: prior.clone(),
                            effects: Vec::new(),
                            changed: false,
                        }),
                    )
                },
            )
            .await?;
        Ok(match looked {
            Ok(Looked::Call { call, changed }) => {
                let known = call
                    .alarm
                    .as_ref()
                    .and_then(|alarm| alarm.recipient(&staff.id))
                    .is_some_and(|r| (1..=r.alerts).contains(&alert));
                known.then_some(Looked::Call { call, changed })
            }
            _ => None,
        })
    }
}
