use chrono::TimeZone;
use proptest::prelude::*;

use super::*;

const ANNA: &str = "0b6a4a7e-4a38-4f4e-9a53-1f5f0c7a2b11";
const ENDPOINT: &str = "https://push.example/device-1";

fn at(seconds: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 26, 7, 0, 0).unwrap() + Duration::seconds(seconds)
}

fn device(pushed: Option<i64>, received: Option<i64>, unanswered: u32) -> Device {
    Device {
        endpoint: ENDPOINT.to_string(),
        created_at: at(0),
        pushed_at: pushed.map(at),
        tested_at: pushed.map(at),
        received_at: received.map(at),
        unanswered,
    }
}

#[test]
fn a_device_whose_last_push_has_its_receipt_is_confirmed() {
    let answered = device(Some(10), Some(12), 0);
    assert_eq!(device_state(&answered, at(11), 30), DeviceState::Confirmed);
    // Long after: still confirmed until the next push goes unanswered.
    assert_eq!(
        device_state(&answered, at(100_000), 30),
        DeviceState::Confirmed
    );
}

#[test]
fn an_unanswered_push_waits_receipt_seconds_then_is_silent() {
    let pushed = device(Some(10), None, 1);
    assert_eq!(device_state(&pushed, at(10), 30), DeviceState::Waiting);
    assert_eq!(device_state(&pushed, at(39), 30), DeviceState::Waiting);
    assert_eq!(device_state(&pushed, at(40), 30), DeviceState::Silent);
    // A receipt before, then a newer push: waiting on the newer one.
    let again = device(Some(50), Some(12), 1);
    assert_eq!(device_state(&again, at(60), 30), DeviceState::Waiting);
    assert_eq!(device_state(&again, at(80), 30), DeviceState::Silent);
}

/// The last push an alert (the test long before).
fn alerted(pushed: i64, unanswered: u32) -> Device {
    Device {
        tested_at: Some(at(1)),
        ..device(Some(pushed), Some(5), unanswered)
    }
}

#[test]
fn three_pushes_in_a_row_without_a_receipt_are_silent_at_once() {
    let third = alerted(100, SILENT_AFTER_PUSHES);
    assert_eq!(device_state(&third, at(100), 30), DeviceState::Silent);
    let second = alerted(100, SILENT_AFTER_PUSHES - 1);
    assert_eq!(device_state(&second, at(100), 30), DeviceState::Waiting);
}

#[test]
fn a_test_asked_for_after_unanswered_pushes_waits_for_its_answer() {
    // "Erneut testen" after two failed tests: the third push is a test.
    let retested = device(Some(100), Some(5), SILENT_AFTER_PUSHES);
    assert_eq!(device_state(&retested, at(100), 30), DeviceState::Waiting);
    assert_eq!(device_state(&retested, at(129), 30), DeviceState::Waiting);
    assert_eq!(device_state(&retested, at(130), 30), DeviceState::Silent);
    // An alert after it: the count again.
    let then_alerted = Device {
        pushed_at: Some(at(110)),
        unanswered: SILENT_AFTER_PUSHES + 1,
        ..retested
    };
    assert_eq!(
        device_state(&then_alerted, at(111), 30),
        DeviceState::Silent
    );
}

#[test]
fn a_device_never_pushed_counts_from_its_registration() {
    let new = device(None, None, 0);
    assert_eq!(device_state(&new, at(29), 30), DeviceState::Waiting);
    assert_eq!(device_state(&new, at(30), 30), DeviceState::Silent);
}

#[test]
fn telefon_stumm_needs_devices_all_silent() {
    use DeviceState::*;
    assert!(all_silent(&[Silent]));
    assert!(all_silent(&[Silent, Silent]));
    assert!(!all_silent(&[Silent, Waiting]));
    assert!(!all_silent(&[Confirmed, Silent]));
    assert!(!all_silent(&[]));
}

#[test]
fn a_test_receipt_reads_back_and_names_its_device() {
    let tested = device(Some(10), None, 1);
    let receipt = TestReceipt::new(at(10), ANNA, ENDPOINT);
    let id = receipt.to_string();
    assert!(id.len() <= MAX_LEN, "{id}");
    assert!(id.starts_with("t."), "{id}");
    assert_eq!(TestReceipt::parse(&id), Some(receipt.clone()));
    assert!(receipt.is_of(&tested));
    // An alert's receipt parser does not take it, nor this one an alert's.
    assert_eq!(crate::domain::alarm::receipt::Receipt::parse(&id), None);
    assert_eq!(
        TestReceipt::parse(&format!("7.1.{ANNA}.{}", device_tag(ENDPOINT))),
        None
    );
    // Another device, a test not yet sent, one from before it subscribed.
    let other = Device {
        endpoint: "https://push.example/device-2".into(),
        ..tested.clone()
    };
    assert!(!receipt.is_of(&other));
    assert!(!TestReceipt::new(at(11), ANNA, ENDPOINT).is_of(&tested));
    assert!(!TestReceipt::new(at(-1), ANNA, ENDPOINT).is_of(&tested));
    assert!(!receipt.is_of(&device(None, None, 0)), "never tested");
    // An older test's late receipt is still this device's.
    let retested = device(Some(20), None, 2);
    assert!(receipt.is_of(&retested));
}

#[test]
fn other_text_is_no_test_receipt() {
    let tag = device_tag(ENDPOINT);
    for id in [
        String::new(),
        "t".into(),
        format!("t.0.{ANNA}.{tag}"),
        format!("t.-5.{ANNA}.{tag}"),
        format!("t.+5.{ANNA}.{tag}"),
        format!("t.05.{ANNA}.{tag}"),
        format!("t.5.{ANNA}.p"),
        format!("t.5.{ANNA}.{}", tag.to_uppercase()),
        format!("t.5.{ANNA}.{tag}.x"),
        format!("T.5.{ANNA}.{tag}"),
        format!("t.5.{}.{tag}", ANNA.to_uppercase()),
        format!("t.{}.{ANNA}.{tag}", "9".repeat(30)),
    ] {
        assert_eq!(TestReceipt::parse(&id), None, "{id}");
    }
}

proptest! {
    /// Any text either is no test receipt or one that writes back as itself.
    #[test]
    fn parse_never_panics_and_round_trips(text in "t\\.[0-9]{0,12}\\..{0,50}|.{0,70}") {
        if let Some(receipt) = TestReceipt::parse(&text) {
            prop_assert_eq!(receipt.to_string(), text);
        }
    }

    /// The state is one of three, only ever confirmed with a receipt after
    /// the last push, and silent once three pushes went unanswered (a test
    /// just sent apart, until its time is up).
    #[test]
    fn the_state_follows_the_facts(
        pushed in proptest::option::of(0i64..1000),
        received in proptest::option::of(0i64..1000),
        unanswered in 0u32..6,
        last_is_test in any::<bool>(),
        now in 0i64..2000,
        receipt_seconds in 1i64..600,
    ) {
        let mut facts = device(pushed, received, unanswered);
        if !last_is_test {
            facts.tested_at = pushed.map(|_| at(-1));
        }
        let state = device_state(&facts, at(now), receipt_seconds);
        let fresh_test = last_is_test && pushed.is_some_and(|p| now < p + receipt_seconds);
        if unanswered >= SILENT_AFTER_PUSHES && !(received.is_some() && unanswered == 0) {
            let expected = if fresh_test { DeviceState::Waiting } else { DeviceState::Silent };
            prop_assert_eq!(state, expected);
        }
        if state == DeviceState::Confirmed {
            prop_assert!(unanswered == 0 && received.is_some());
        }
        if state == DeviceState::Waiting {
            let since = pushed.unwrap_or(0);
            prop_assert!(now < since + receipt_seconds);
        }
        // Later never makes an unanswered device less silent.
        if state == DeviceState::Silent {
            prop_assert_eq!(device_state(&facts, at(now + 1), receipt_seconds), DeviceState::Silent);
        }
    }
}
