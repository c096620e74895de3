//! Sign-on tests asked for in AWS (DECISIONS §17, §18): the `staff`
//! function that signs a person on (or registers a phone, or is asked to
//! test again) sends no pushes and has no queue client (its zip's budget).
//! It puts a test item; the item's stream record reaches the `alarm`
//! function, which queues the test's push job to `deliver` as it does an
//! audit's alerts. So a test takes the alerts' path to the phone.
//!
//! One item per test (`push#test` / `<time, to the nanosecond>#<staff
//! id>#<device tag or "all">`, an `INSERT` each), gone by TTL an hour later:
//! its stream record is what counts, and a push older than its 60 s `TTL`
//! is dropped by `deliver` anyway.

use chrono::{DateTime, Duration, Utc};

use nurse_call_core::{Scope, StoreError};

use crate::DynamoStore;
use crate::alarm_items::{from_precise, precise};
use crate::error::classify;
use crate::item::{Item, get_s, n, s};

/// The test items' partition.
pub const DEVICE_TEST_PK: &str = "push#test";

/// How long a test item is kept (read by nobody; see the module).
const KEPT: Duration = Duration::hours(1);

/// A sign-on test as its item tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceTest {
    /// The person's scope.
    pub scope: Scope,
    /// The person tested.
    pub staff_id: String,
    /// When the test was recorded on the devices: their receipts name it.
    pub at: DateTime<Utc>,
    /// The one device tested (a new registration); `None`: all of them.
    pub device: Option<String>,
}

impl DynamoStore {
    /// Puts the item of `test` (one `PutItem`).
    pub(crate) async fn put_device_test(&self, test: &DeviceTest) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(&self.tables.data)
            .set_item(Some(device_test_item(test)))
            .send()
            .await
            .map(|_| ())
            .map_err(classify)
    }
}

/// The item of `test`.
fn device_test_item(test: &DeviceTest) -> Item {
    let mut item = Item::from([
        ("pk".to_string(), s(DEVICE_TEST_PK)),
        (
            "sk".to_string(),
            s(format!(
                "{}#{}#{}",
                precise(test.at),
                test.staff_id,
                test.device.as_deref().unwrap_or("all")
            )),
        ),
        ("scope".to_string(), s(test.scope.as_str())),
        ("staff_id".to_string(), s(&test.staff_id)),
        ("at".to_string(), s(precise(test.at))),
        ("ttl".to_string(), n((test.at + KEPT).timestamp())),
    ]);
    if let Some(device) = &test.device {
        item.insert("device".to_string(), s(device));
    }
    item
}

/// The test a test item asks for (`None` for an item that is none).
pub fn device_test_from_item(item: &Item) -> Option<DeviceTest> {
    Some(DeviceTest {
        scope: Scope::from_key(&get_s(item, "scope")?),
        staff_id: get_s(item, "staff_id")?,
        at: get_s(item, "at").and_then(|at| from_precise(&at))?,
        device: get_s(item, "device"),
    })
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn an_item_reads_back_as_its_test() {
        let at = Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).unwrap() + Duration::nanoseconds(7);
        let one = DeviceTest {
            scope: Scope::installation(),
            staff_id: "5af55af5-0000-4000-8000-000000000001".into(),
            at,
            device: Some("0123abcd".into()),
        };
        let all = DeviceTest {
            device: None,
            ..one.clone()
        };
        for test in [one, all] {
            let item = device_test_item(&test);
            assert_eq!(get_s(&item, "pk").as_deref(), Some(DEVICE_TEST_PK));
            assert_eq!(device_test_from_item(&item), Some(test));
        }
        assert_eq!(device_test_from_item(&Item::new()), None);
    }
}
