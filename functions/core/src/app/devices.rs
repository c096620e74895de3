//! The sign-on test and each device's state (DECISIONS §18): signing on,
//! registering a phone and "Erneut testen" push a `staff.test` with a
//! receipt to the person's devices; a receipt of a test or of an alert
//! marks its device; `GET /api/v1/staff/me` says per device whether it is
//! known to show alerts.
//!
//! A test's push is recorded on its device before it is handed on, so that
//! the answer that started it already shows the device waiting, and its
//! receipt (which comes after the push) finds it recorded. Alerts are
//! recorded by the push sender, which alone knows the devices it sends to.
//! In AWS the request's function sends no pushes: the store hands the test
//! on through the table's stream to the `alarm` function, which queues it
//! to `deliver` like an alert (DECISIONS §17).

use crate::app::AppState;
use crate::app::push::PushJob;
use crate::clock;
use crate::domain::alarm::receipt::device_tag;
use crate::domain::alarm::{Duty, Staff};
use crate::domain::device::{Device, DeviceState, all_silent, device_state};
use crate::store::StoreError;

impl AppState {
    /// Pushes the sign-on test to the person's devices, or to the one at
    /// `only`; returns how many were tested. Where this process sends no
    /// pushes (a Lambda function) the store hands the test on to the
    /// process that does (in AWS the table's stream, the `alarm` function
    /// and `deliver`, DECISIONS §17).
    pub(crate) async fn test_devices(
        &self,
        staff: &Staff,
        only: Option<&str>,
    ) -> Result<usize, StoreError> {
        let Some(store) = &self.push else {
            return Ok(0);
        };
        let now = clock::now_ms();
        let mut tested = 0;
        for device in store.push_devices(&staff.id).await? {
            if only.is_some_and(|endpoint| endpoint != device.endpoint) {
                continue;
            }
            // `false`: unsubscribed meanwhile.
            if store
                .record_device_push(&staff.id, &device.endpoint, now, true)
                .await?
            {
                tested += 1;
            }
        }
        if tested == 0 {
            return Ok(0);
        }
        // One job for all the devices tested (their receipts name the same
        // time), or for the one new device: a lane of its own
        // ([`PushJob::lane`]), so neither replaces the other.
        let device = only.map(device_tag);
        let handed = match &self.pushes {
            Some(sink) => {
                sink.send(PushJob::test(&staff.scope, &staff.id, now, device));
                "sent"
            }
            None if store
                .hand_on_device_test(&staff.scope, &staff.id, now, device.as_deref())
                .await? =>
            {
                "handed on"
            }
            // No sender anywhere (the Lambda functions on the embedded
            // store, a test setup): the devices go silent, as they would.
            None => "not sent: no push sender",
        };
        tracing::info!(staff_id = %staff.id, devices = tested, push = handed, "sign-on test");
        Ok(tested)
    }

    /// A receipt of the person's device tagged `tag` came now: the device
    /// is marked (a receipt posted again changes nothing). The device as it
    /// is then; `None` when the person has no such device, or `known` says
    /// the receipt is none of this device's.
    pub(crate) async fn device_receipt(
        &self,
        staff: &Staff,
        tag: &str,
        known: impl FnOnce(&Device) -> bool,
    ) -> Result<Option<Device>, StoreError> {
        let Some(store) = &self.push else {
            return Ok(None);
        };
        let devices = store.push_devices(&staff.id).await?;
        let Some(device) = devices
            .into_iter()
            .find(|device| device.tag() == tag)
            .filter(|device| known(device))
        else {
            return Ok(None);
        };
        let now = clock::now();
        let changed = store
            .record_device_receipt(&staff.id, &device.endpoint, now)
            .await?;
        tracing::info!(staff_id = %staff.id, device = tag, changed, "device receipt");
        Ok(Some(if changed {
            Device {
                received_at: Some(now),
                unanswered: 0,
                ..device
            }
        } else {
            device
        }))
    }

    /// The person's devices, oldest first, each with its state now.
    pub(crate) async fn devices_with_state(
        &self,
        staff_id: &str,
    ) -> Result<Vec<(Device, DeviceState)>, StoreError> {
        let Some(store) = &self.push else {
            return Ok(Vec::new());
        };
        // As precise as the tests' times: a whole second less would keep a
        // device waiting up to a second past its RECEIPT_SECONDS.
        let now = clock::now_ms();
        let receipt_seconds = self.settings.staff.receipt_seconds;
        Ok(store
            .push_devices(staff_id)
            .await?
            .into_iter()
            .map(|device| {
                let state = device_state(&device, now, receipt_seconds);
                (device, state)
            })
            .collect())
    }

    /// The colleagues on duty beside `duty` (sharing a section with it, or
    /// either for the whole house) whose devices are all silent: "Telefon
    /// stumm" on the person's page (§18), by name. Nobody when the person is
    /// off duty. One read of the roster and one of each such colleague's
    /// devices (their states need the devices' own facts).
    pub(crate) async fn silent_colleagues(
        &self,
        staff: &Staff,
        duty: Option<&Duty>,
    ) -> Result<Vec<(Staff, Duty)>, StoreError> {
        let Some(duty) = duty else {
            return Ok(Vec::new());
        };
        if self.push.is_none() {
            return Ok(Vec::new());
        }
        let now = clock::now();
        let roster = self.alarm_store()?.roster(&staff.scope, now).await?;
        let mut silent = Vec::new();
        for colleague in roster.staff {
            if colleague.id == staff.id || colleague.revoked {
                continue;
            }
            let Some(theirs) = roster.duties.iter().find(|d| {
                d.staff_id == colleague.id && d.is_active(now) && d.shares_a_section_with(duty)
            }) else {
                continue;
            };
            let states: Vec<DeviceState> = self
                .devices_with_state(&colleague.id)
                .await?
                .into_iter()
                .map(|(_, state)| state)
                .collect();
            if all_silent(&states) {
                silent.push((colleague, theirs.clone()));
            }
        }
        // As `staff list` orders them, whatever order the store read.
        silent.sort_by(|(a, _), (b, _)| a.name.cmp(&b.name).then_with(|| a.id.cmp(&b.id)));
        Ok(silent)
    }
}
