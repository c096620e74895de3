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

use serde_json::json;

use crate::app::AppState;
use crate::app::push::{PushJob, PushKind, TEST_CALL_ID};
use crate::clock;
use crate::domain::alarm::Staff;
use crate::domain::alarm::receipt::device_tag;
use crate::domain::device::{Device, DeviceState, device_state};
use crate::store::StoreError;

impl AppState {
    /// Pushes the sign-on test to the person's devices, or to the one at
    /// `only`; returns how many were tested. Where this process sends no
    /// pushes (a Lambda function) the devices are marked tested, and the
    /// push leaves with the next delivery path that has one.
    pub(crate) async fn test_devices(
        &self,
        staff: &Staff,
        only: Option<&str>,
    ) -> Result<usize, StoreError> {
        let Some(store) = &self.push else {
            return Ok(0);
        };
        let now = clock::now();
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
        // One job for all the devices tested (their receipts name the same
        // time): the sender keeps only the newest job of a person's lane,
        // and one per device would replace each other.
        if let Some(sink) = &self.pushes
            && tested > 0
        {
            sink.send(PushJob {
                scope: staff.scope.clone(),
                staff_id: staff.id.clone(),
                call_id: TEST_CALL_ID,
                kind: PushKind::Test,
                payload: json!({ "type": "staff.test" }).to_string(),
                made_at: now,
                alert: None,
                device: only.map(device_tag),
            });
        }
        tracing::info!(
            staff_id = %staff.id,
            devices = tested,
            sent = self.pushes.is_some(),
            "sign-on test"
        );
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
        let now = clock::now();
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
}
