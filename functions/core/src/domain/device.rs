//! A person's phones as far as the sign-on test and the alerts tell
//! (DECISIONS §18, "the sign-on test"): a device is one push subscription,
//! named by its tag ([`device_tag`]). The service keeps when it last pushed
//! a test or an alert to it, when its last receipt came, and how many
//! pushes in a row went without one; [`device_state`] makes of those, the
//! time and `RECEIPT_SECONDS` whether the phone is known to show alerts
//! (`confirmed`), may still answer (`waiting`) or is `silent`.
//!
//! A test push carries a receipt of its own ([`TestReceipt`]), which the
//! service worker posts back as it does an alert's.

use std::fmt;

use chrono::{DateTime, Duration, Utc};

use crate::domain::alarm::receipt::{MAX_LEN, device_tag, is_device_tag, is_staff_id};

/// Pushes in a row without a receipt that make a device silent whatever
/// their times (§18: "three pushes in a row without a receipt").
pub const SILENT_AFTER_PUSHES: u32 = 3;

/// What the service knows of one device (a push subscription).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    /// The subscription's endpoint: the device's tag is made of it; never
    /// on the wire or in a log (a capability URL).
    pub endpoint: String,
    /// When the browser subscribed.
    pub created_at: DateTime<Utc>,
    /// When a test or an alert was last pushed to it; `None`: never.
    pub pushed_at: Option<DateTime<Utc>>,
    /// When the last test was pushed to it (its receipt names this time).
    pub tested_at: Option<DateTime<Utc>>,
    /// When its first receipt after its latest push came; `None`: never.
    pub received_at: Option<DateTime<Utc>>,
    /// Test and alert pushes since its last receipt.
    pub unanswered: u32,
}

impl Device {
    /// The device's id on the wire and in its receipts.
    pub fn tag(&self) -> String {
        device_tag(&self.endpoint)
    }
}

/// Whether a device is known to show alerts (§18).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceState {
    /// Its last test or alert has its receipt.
    Confirmed,
    /// Its last push is younger than `RECEIPT_SECONDS`: it may still answer.
    Waiting,
    /// Its last push went unanswered for `RECEIPT_SECONDS`, or three in a
    /// row did.
    Silent,
}

impl DeviceState {
    /// The state's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceState::Confirmed => "confirmed",
            DeviceState::Waiting => "waiting",
            DeviceState::Silent => "silent",
        }
    }
}

/// The state of `device` at `now`, its receipts due within
/// `receipt_seconds`. A device never pushed to counts from its
/// registration (which sends it a test): waiting at first, then silent.
///
/// Three pushes in a row without a receipt make it silent at once (alerts
/// re-alerting faster than `receipt_seconds` would keep it waiting), except
/// while its latest push is a test still within `receipt_seconds`: the
/// person asked whether the phone works now ("Erneut testen" after two
/// failed tests), and the page waits for that answer.
pub fn device_state(device: &Device, now: DateTime<Utc>, receipt_seconds: i64) -> DeviceState {
    if device.unanswered == 0 && device.received_at.is_some() {
        return DeviceState::Confirmed;
    }
    let since = device.pushed_at.unwrap_or(device.created_at);
    let fresh = now < since + Duration::seconds(receipt_seconds);
    let fresh_test = fresh && device.pushed_at.is_some() && device.tested_at == device.pushed_at;
    if device.unanswered >= SILENT_AFTER_PUSHES && !fresh_test {
        DeviceState::Silent
    } else if fresh {
        DeviceState::Waiting
    } else {
        DeviceState::Silent
    }
}

/// Whether a person on duty is to be shown "Telefon stumm" (§18): they
/// have devices and every one is silent. A person without any device is
/// not (nothing of theirs went silent; §18's "no channel" says the rest).
pub fn all_silent(states: &[DeviceState]) -> bool {
    !states.is_empty() && states.iter().all(|state| *state == DeviceState::Silent)
}

/// The receipt of a test push: `t.<unix milliseconds of the test>.<staff
/// id>.<device tag>` (at most 61 characters until the year 2286), told apart
/// from an alert's by its `t`. Milliseconds: a registration's test and the
/// sign-on's right after it are two tests, each with a receipt of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestReceipt {
    /// When the test was pushed, in milliseconds since 1970 (the device's
    /// `tested_at`).
    pub tested_at_ms: i64,
    /// The person tested.
    pub staff_id: String,
    /// The device tested ([`device_tag`]).
    pub device: String,
}

impl fmt::Display for TestReceipt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "t.{}.{}.{}",
            self.tested_at_ms, self.staff_id, self.device
        )
    }
}

impl TestReceipt {
    /// The receipt of the test pushed at `at` to the device at `endpoint`.
    pub fn new(at: DateTime<Utc>, staff_id: &str, endpoint: &str) -> Self {
        TestReceipt {
            tested_at_ms: at.timestamp_millis(),
            staff_id: staff_id.to_string(),
            device: device_tag(endpoint),
        }
    }

    /// Reads an id exactly as `Display` writes it; `None` for anything else.
    pub fn parse(id: &str) -> Option<Self> {
        if id.len() > MAX_LEN {
            return None;
        }
        let mut parts = id.split('.');
        if parts.next()? != "t" {
            return None;
        }
        let tested_at_ms: i64 = parts.next()?.parse().ok()?;
        let (staff_id, device) = (parts.next()?, parts.next()?);
        if parts.next().is_some()
            || tested_at_ms < 1
            || !is_staff_id(staff_id)
            || !is_device_tag(device)
        {
            return None;
        }
        let receipt = TestReceipt {
            tested_at_ms,
            staff_id: staff_id.to_string(),
            device: device.to_string(),
        };
        (receipt.to_string() == id).then_some(receipt)
    }

    /// Whether this receipt is of a test `device` got: the device is the
    /// one it names, tested at or before the receipt's time and not before
    /// it subscribed (an older test's late receipt still tells that the
    /// phone shows pushes).
    pub fn is_of(&self, device: &Device) -> bool {
        device.tested_at.is_some_and(|tested_at| {
            device.tag() == self.device
                && self.tested_at_ms <= tested_at.timestamp_millis()
                && self.tested_at_ms >= device.created_at.timestamp_millis()
        })
    }
}

#[cfg(test)]
mod tests;
