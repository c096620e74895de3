//! The alarm runner of the local server's timers on the embedded store
//! (DECISIONS §14): two workers, each with its own connection to one store
//! file (two servers on one data folder), step the same due alarms at once,
//! and every level still fires once and alerts each person once; a level
//! that fell due while no worker ran is found by the first round of a new one.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration as StdDuration;

use chrono::{DateTime, Duration, Utc};

use nurse_call_core::{
    AppState, Backend, CallRetention, ElementChange, ElementPolicy, ElementWrite, Mode, NewCall,
    OpenOutcome, Scope, Settings,
    alarm::{Duty, Policy, Staff},
    clock, default_call_types,
};
use nurse_call_wiring::{StoreChoice, local_state};

const CALLS: i64 = 12;

async fn open_store(dir: &Path) -> Arc<dyn Backend> {
    StoreChoice::local(dir.to_path_buf(), None)
        .expect("embedded store")
        .open_prepared(CallRetention::default())
        .await
        .expect("store opens")
}

fn state(store: Arc<dyn Backend>) -> AppState {
    let mut settings = Settings::from_vars(Mode::Production, |_| None).expect("settings");
    settings.staff.duty = Duration::hours(1);
    local_state(store, settings)
}

fn member(n: u32, name: &str) -> Staff {
    Staff {
        id: format!("00000000-0000-4000-8000-{n:012}"),
        scope: Scope::installation(),
        name: name.to_string(),
        groups: Vec::new(),
        // A handset: a channel (DECISIONS §18), so that they wait for the
        // receipt deadline rather than being not reached at once.
        device: Some(format!("DECT {n}")),
        token_hash: format!("{n:064}"),
        created_at: Utc::now(),
        revoked: false,
    }
}

/// Notruf with section at once and the house after `house_after` seconds;
/// Anna on duty for section 1, Ben for section 2; `CALLS` calls of section 1,
/// all opened at the time returned with their ids.
async fn prepare(store: &dyn Backend, house_after: i64) -> (Vec<i64>, DateTime<Utc>) {
    let mut notruf = default_call_types()
        .into_iter()
        .find(|t| t.name == "Notruf")
        .expect("Notruf is seeded");
    notruf.escalation = Policy::parse(&format!(
        r#"[{{"after":0,"to":"section"}},{{"after":{house_after},"to":"house"}}]"#
    ))
    .expect("policy");
    // No re-alert inside the test: one alert per person and level.
    notruf.notification_interval = 3600;
    store.put_call_type(&notruf).await.expect("call type");
    let now = clock::now();
    for (n, name, section) in [(1, "Anna", "1"), (2, "Ben", "2")] {
        let staff = member(n, name);
        store.create_staff(&staff).await.expect("staff");
        let duty = Duty {
            staff_id: staff.id.clone(),
            scope: Scope::installation(),
            sections: vec![section.to_string()],
            since: now,
            until: now + Duration::hours(1),
        };
        store.put_duty(&duty).await.expect("duty");
    }
    let mut ids = Vec::new();
    for i in 0..CALLS {
        let address = format!("Z{i}");
        let scope = Scope::installation();
        let snapshot = store.snapshot(&scope, &address).await.expect("snapshot");
        let change = ElementChange {
            address: address.clone(),
            battery: None,
            position: None,
            reachable: None,
            at: now,
        };
        let element = ElementWrite::new(&scope, &change, ElementPolicy::CreateMissing, &snapshot);
        let call = NewCall {
            address,
            event: "Notruf".into(),
            position: None,
            section: Some("1".into()),
            attribute: None,
            element_code: String::new(),
            element_name: String::new(),
            opened_at: now,
            opened_by: None,
        };
        match store
            .open_call(&call, &snapshot, &element)
            .await
            .expect("open")
        {
            OpenOutcome::Opened(call) => ids.push(call.id),
            other => panic!("not opened: {other:?}"),
        }
    }
    (ids, now)
}

/// The audit's lines of `kind` for a call, as `(level, staff name)`.
async fn lines(store: &dyn Backend, call_id: i64, kind: &str) -> Vec<(usize, Option<String>)> {
    store
        .alarm_audit(&Scope::installation(), call_id)
        .await
        .expect("audit")
        .into_iter()
        .filter(|line| line.kind == kind)
        .map(|line| (line.level, line.staff.map(|s| s.name)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_workers_on_one_store_fire_each_level_once() {
    let dir = tempfile::tempdir().expect("temp folder");
    let first = open_store(dir.path()).await;
    // The second worker's own connection to the same file.
    let second = open_store(dir.path()).await;
    let (ids, opened_at) = prepare(first.as_ref(), 1).await;
    let (one, two) = (state(first.clone()), state(second));

    // Both look at once, again and again, until the house level is due
    // and past: the opens' pending alarms, then level 2 of every call.
    let until = std::time::Instant::now() + StdDuration::from_millis(2600);
    let mut first_round = None;
    while std::time::Instant::now() < until {
        let now = clock::now();
        first_round.get_or_insert(now);
        let (a, b) = tokio::join!(
            one.alarm_runner().run_due_alarms(now, 100),
            two.alarm_runner().run_due_alarms(now, 100)
        );
        a.expect("first worker");
        b.expect("second worker");
        tokio::time::sleep(StdDuration::from_millis(20)).await;
    }

    // A slow machine (CI: a debug build among other tests) may take longer
    // than the house level's second to open the calls; then the first round
    // already finds both levels due and starts them in one write, as a
    // restarted server would (the next test). The round's own `now` decides.
    let first_round = first_round.expect("at least one round");
    let writes = if first_round < opened_at + Duration::seconds(1) {
        2
    } else {
        1
    };
    for id in ids {
        let kept = first
            .alarm(&Scope::installation(), id)
            .await
            .expect("read")
            .expect("alarm");
        assert_eq!(kept.alarm.level, 2, "call {id}: both levels started");
        assert_eq!(
            lines(first.as_ref(), id, "escalated").await,
            [(2, None)],
            "call {id}: level 2 started once"
        );
        assert_eq!(
            lines(first.as_ref(), id, "alert").await,
            [(1, Some("Anna".into())), (2, Some("Ben".into()))],
            "call {id}: each person alerted once, by their level"
        );
        assert_eq!(
            kept.version, writes,
            "call {id}: {writes} write(s) (level 1, level 2), no lost or doubled one"
        );
    }
}

#[tokio::test]
async fn a_level_that_fell_due_while_no_worker_ran_starts_in_the_first_round() {
    let dir = tempfile::tempdir().expect("temp folder");
    let store = open_store(dir.path()).await;
    let (ids, _) = prepare(store.as_ref(), 1).await;
    // Nobody looked at the opens, and the house level's time passes.
    tokio::time::sleep(StdDuration::from_millis(2100)).await;

    // A worker starts (a restarted server): one round.
    let worker = state(open_store(dir.path()).await);
    let stepped = worker
        .alarm_runner()
        .run_due_alarms(clock::now(), 100)
        .await
        .expect("round");
    assert_eq!(stepped as i64, CALLS, "every call was due");
    for id in ids {
        assert_eq!(
            lines(store.as_ref(), id, "escalated").await,
            [(2, None)],
            "call {id}: both levels at once, the second one escalated"
        );
        let kept = store
            .alarm(&Scope::installation(), id)
            .await
            .expect("read")
            .expect("alarm");
        assert_eq!(kept.alarm.level, 2);
        // Next: the receipt deadline (§18, `RECEIPT_SECONDS` 30), before
        // the re-alert after an hour.
        assert_eq!(
            kept.alarm.next_at,
            Some(kept.alarm.recipients[0].last_alert_at + Duration::seconds(30))
        );
    }
    assert_eq!(
        worker
            .alarm_runner()
            .run_due_alarms(clock::now(), 100)
            .await
            .expect("round"),
        0,
        "nothing left due"
    );
}

/// Timers as AWS takes them (DECISIONS §17, `AlarmRunner::take_timer`), on the
/// embedded store: a due timer steps the alarm once, a duplicate does
/// nothing, one taken early is sent on for the rest, a call that is gone
/// ends its timer.
#[tokio::test]
async fn a_timer_message_steps_once_and_an_early_one_is_sent_on() {
    use nurse_call_core::TimerTaken;
    use nurse_call_core::alarm::Timer;

    let dir = tempfile::tempdir().expect("temp folder");
    let store = open_store(dir.path()).await;
    // The house level 4 s after the open: room for a slow machine's opens
    // (12 calls) before the first timer is taken.
    let (ids, opened_at) = prepare(store.as_ref(), 4).await;
    let worker = state(store.clone());
    let scope = Scope::installation();
    let id = ids[0];

    // The open's timer: level 1 starts; taken again (a duplicate), nothing.
    let first = Timer::new(&scope, id, opened_at);
    let now = clock::now();
    assert_eq!(
        worker
            .alarm_runner()
            .take_timer(&first, now)
            .await
            .expect("taken"),
        TimerTaken::Done { stepped: true }
    );
    assert_eq!(
        worker
            .alarm_runner()
            .take_timer(&first, now)
            .await
            .expect("taken again"),
        TimerTaken::Done { stepped: false }
    );
    let kept = store.alarm(&scope, id).await.expect("read").expect("alarm");
    assert_eq!(kept.alarm.level, 1);
    let house_at = kept.alarm.next_at.expect("the house level is next");
    assert_eq!(house_at, opened_at + Duration::seconds(4));

    // The house level's timer, taken more than half a second early.
    let house = Timer::new(&scope, id, house_at);
    let early = house_at - Duration::milliseconds(1500);
    match worker
        .alarm_runner()
        .take_timer(&house, early)
        .await
        .expect("early")
    {
        TimerTaken::SendOn {
            timer,
            delay_seconds,
        } => {
            assert_eq!(timer, house);
            assert_eq!(delay_seconds, 2, "1.5 s rounded up");
        }
        other => panic!("an early timer is sent on: {other:?}"),
    }
    assert_eq!(lines(store.as_ref(), id, "escalated").await, []);

    // Its time: level 2, once.
    let wait = (house_at - clock::now()).num_milliseconds() + 200;
    tokio::time::sleep(StdDuration::from_millis(u64::try_from(wait).unwrap_or(0))).await;
    assert_eq!(
        worker
            .alarm_runner()
            .take_timer(&house, clock::now())
            .await
            .expect("due"),
        TimerTaken::Done { stepped: true }
    );
    assert_eq!(lines(store.as_ref(), id, "escalated").await, [(2, None)]);
    assert_eq!(
        lines(store.as_ref(), id, "alert").await,
        [(1, Some("Anna".into())), (2, Some("Ben".into()))]
    );

    // A call that does not exist: its timer ends.
    assert_eq!(
        worker
            .alarm_runner()
            .take_timer(&Timer::new(&scope, 999_999, opened_at), clock::now())
            .await
            .expect("missing"),
        TimerTaken::Done { stepped: false }
    );
}
