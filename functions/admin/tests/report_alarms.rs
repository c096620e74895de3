//! The report's alarm figures (DECISIONS §14 "Audit and report") and the
//! audit of one call, from `nurse-call-admin report` and `audit` as
//! processes, on a scripted day (Tuesday 2026-03-10, Berlin, CET) kept once
//! in the embedded store and once in DynamoDB (moto): the same hand-computed
//! figures from both.
//!
//! The day is played as the service plays it, on a scripted clock: staff
//! registered with `staff create`, calls opened and closed through the store,
//! and at each moment the alarm engine steps each call's alarm (or takes a
//! response) and the result is written with the store's conditional write,
//! with its audit lines. No server runs: nothing else steps the alarms.

#[macro_use]
mod support;

use std::sync::Arc;

use chrono::{DateTime, Utc};

use nurse_call_core::{
    AlarmWrite, CallType, ElementChange, ElementPolicy, ElementWrite, NewCall, OpenOutcome, Scope,
    alarm::{AuditEvent, Duty, Response, Roster, Situation, Staff, respond, step},
    wire_time::parse_local,
};
use support::{Backend, Value, json};

on_both_stores!(the_alarm_figures_of_a_scripted_day);

const CENTRAL: &str = "6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f";
const S1: Option<&str> = Some("Station 1");
const S2: Option<&str> = Some("Station 2");

fn at(time: &str) -> DateTime<Utc> {
    parse_local(&format!("2026-03-10 {time}"), chrono_tz::Europe::Berlin).expect("a wire time")
}

/// The day's store, people and call types, and the engine's moves on them.
struct Day {
    store: Arc<dyn nurse_call_core::Backend>,
    scope: Scope,
    staff: Vec<Staff>,
    duties: Vec<Duty>,
    types: Vec<CallType>,
}

impl Day {
    async fn open(&self, event: &str, address: &str, section: Option<&str>, time: &str) -> i64 {
        let opened_at = at(time);
        let snapshot = self.store.snapshot(&self.scope, address).await.unwrap();
        let call = NewCall {
            address: address.into(),
            event: event.into(),
            position: None,
            section: section.map(Into::into),
            attribute: None,
            element_code: String::new(),
            element_name: String::new(),
            opened_at,
            opened_by: Some(CENTRAL.into()),
        };
        let element = ElementWrite::new(
            &self.scope,
            &self.change(address, opened_at),
            ElementPolicy::CreateMissing,
            &snapshot,
        );
        match self
            .store
            .open_call(&call, &snapshot, &element)
            .await
            .unwrap()
        {
            OpenOutcome::Opened(call) => call.id,
            other => panic!("{event} on {address} not opened: {other:?}"),
        }
    }

    async fn close(&self, address: &str, time: &str) {
        let closed_at = at(time);
        let snapshot = self.store.snapshot(&self.scope, address).await.unwrap();
        let element = ElementWrite::new(
            &self.scope,
            &self.change(address, closed_at),
            ElementPolicy::CreateMissing,
            &snapshot,
        );
        self.store
            .close_calls(&snapshot, closed_at, Some(CENTRAL), &element)
            .await
            .unwrap();
    }

    fn change(&self, address: &str, at: DateTime<Utc>) -> ElementChange {
        ElementChange {
            address: address.into(),
            battery: None,
            position: None,
            reachable: None,
            at,
        }
    }

    fn member(&self, name: &str) -> &Staff {
        self.staff
            .iter()
            .find(|s| s.name == name)
            .expect("a member")
    }

    /// The engine looks at call `id` at `time` (a presence on its address
    /// at `presence`), or takes `answer`'s response; the result is written
    /// if anything changed.
    async fn play(
        &self,
        id: i64,
        time: &str,
        presence: Option<&str>,
        answer: Option<(&str, Response)>,
    ) {
        let now = at(time);
        let kept = self
            .store
            .alarm(&self.scope, id)
            .await
            .unwrap()
            .expect("the call's alarm");
        let call_type = self
            .types
            .iter()
            .find(|t| t.name == kept.call.event)
            .unwrap();
        let situation = Situation {
            call: &kept.call,
            policy: &call_type.escalation,
            interval: call_type.notification_interval,
            maxloops: call_type.notification_maxloops,
            roster: Roster {
                staff: &self.staff,
                duties: &self.duties,
                now,
            },
            presence_at: presence.map(at),
            receipt_seconds: 3600,
            without_channel: &[],
            // An accept is not timed out here (DECISIONS §19).
            accept_timeout: 86_400,
        };
        let stepped = match answer {
            None => step(&kept.alarm, &situation),
            Some((name, response)) => {
                respond(&kept.alarm, &situation, self.member(name), None, response)
                    .expect("no refusal")
            }
        };
        if stepped.changed {
            let audit = AuditEvent::all(&stepped.effects, now);
            let written = self
                .store
                .write_alarm(&kept, &stepped.alarm, &audit)
                .await
                .unwrap();
            assert_eq!(written, AlarmWrite::Written, "call {id} at {time}");
        }
    }

    async fn look(&self, id: i64, time: &str) {
        self.play(id, time, None, None).await;
    }
}

/// Anna on duty for Station 1 and Ben for Station 2 from 06:00 to 20:00;
/// Cem (Leitung) and Tom (Technik) off duty.
async fn people(store: &Backend) -> Vec<(&'static str, Option<&'static str>, &'static str)> {
    let people = [
        ("Anna", None, "Station 1"),
        ("Ben", None, "Station 2"),
        ("Cem", Some("Leitung"), ""),
        ("Tom", Some("Technik"), ""),
    ];
    for (name, group, _) in people {
        let mut args = vec!["staff", "create", "--name", name, "--json"];
        if let Some(group) = group {
            args.extend(["--group", group]);
        }
        store.admin_json(&args);
    }
    people.to_vec()
}

async fn the_alarm_figures_of_a_scripted_day(backend: Backend) {
    let store = backend.open().await;
    let scope = Scope::installation();
    let people = people(&backend).await;
    let staff = store.staff_of(&scope).await.unwrap();
    let duties = people
        .iter()
        .filter(|(_, _, section)| !section.is_empty())
        .map(|(name, _, section)| Duty {
            staff_id: staff.iter().find(|s| s.name == *name).unwrap().id.clone(),
            scope: scope.clone(),
            sections: vec![section.to_string()],
            since: at("06:00:00"),
            until: at("20:00:00"),
        })
        .collect();
    let types = store.call_types().await.unwrap().types;
    let day = Day {
        store,
        scope,
        staff,
        duties,
        types,
    };

    // c1 Notruf, Station 1: Anna alerted, accepts after 40 s, arrives after
    // 120 s; closed after 300 s.
    let c1 = day.open("Notruf", "R1", S1, "08:00:00").await;
    day.look(c1, "08:00:00").await;
    day.play(c1, "08:00:40", None, Some(("Anna", Response::Accepted)))
        .await;
    day.open("Anwesenheit", "R1", None, "08:02:00").await;
    day.play(c1, "08:02:00", Some("08:02:00"), None).await;
    day.close("R1", "08:05:00").await;
    day.look(c1, "08:05:00").await;

    // c2 Notruf, Station 2: Ben does not answer, the house (Anna too) after
    // 60 s; Anna accepts after 90 s, arrives after 180 s; closed after 600 s.
    let c2 = day.open("Notruf", "R2", S2, "09:00:00").await;
    day.look(c2, "09:00:00").await;
    day.look(c2, "09:01:00").await;
    day.play(c2, "09:01:30", None, Some(("Anna", Response::Accepted)))
        .await;
    day.open("Anwesenheit", "R2", None, "09:03:00").await;
    day.play(c2, "09:03:00", Some("09:03:00"), None).await;
    day.close("R2", "09:10:00").await;
    day.look(c2, "09:10:00").await;

    // c5 Störung, no section: Tom (Technik, off duty) accepts after 120 s;
    // closed after 1800 s. A fault: in the faults' table, in none of the
    // calls' figures; its alarm is in the audit export.
    let c5 = day.open("Störung", "R5", None, "12:00:00").await;
    day.look(c5, "12:00:00").await;
    day.play(c5, "12:02:00", None, Some(("Tom", Response::Accepted)))
        .await;
    day.close("R5", "12:30:00").await;
    day.look(c5, "12:30:00").await;

    // c3 Normalruf at night, nobody on duty: both levels at once, nobody to
    // alert: unattended; closed after 1800 s.
    let c3 = day.open("Normalruf", "R3", S1, "21:00:00").await;
    day.look(c3, "21:00:00").await;
    day.close("R3", "21:30:00").await;
    day.look(c3, "21:30:00").await;

    // c4 Notruf at night: section and house empty, Leitung (Cem) at once;
    // Cem accepts after 240 s; closed after 600 s.
    let c4 = day.open("Notruf", "R4", S1, "22:00:00").await;
    day.look(c4, "22:00:00").await;
    day.play(c4, "22:04:00", None, Some(("Cem", Response::Accepted)))
        .await;
    day.close("R4", "22:10:00").await;
    day.look(c4, "22:10:00").await;

    let report = backend.admin_json(&[
        "report",
        "--from",
        "2026-03-10",
        "--to",
        "2026-03-10",
        "--format",
        "json",
    ]);
    assert_the_figures(&report);
    assert_the_csv(&backend, [c1, c2, c3, c4, c5]);
    assert_the_audit(&backend, c2);
}

fn times(count: u64, median: u64, p90: u64, max: u64) -> Value {
    json!({"count": count, "median_seconds": median, "p90_seconds": p90, "max_seconds": max})
}

fn no_times() -> Value {
    json!({"count": 0, "median_seconds": null, "p90_seconds": null, "max_seconds": null})
}

fn escalations(levels: &[(u64, u64)]) -> Value {
    levels
        .iter()
        .map(|(level, calls)| json!({"level": level, "calls": calls}))
        .collect()
}

fn assert_the_figures(report: &Value) {
    let alarms = &report["alarms"];
    assert_eq!(
        alarms["total"],
        json!({
            "calls": 4, "alarmed": 4,
            // 40, 90, 240 (not the fault's 120): median rank 2, p90 rank ⌈2.7⌉ = 3.
            "to_accept": times(3, 90, 240, 240),
            // 120, 180: median rank 1, p90 rank ⌈1.8⌉ = 2.
            "to_presence": times(2, 120, 180, 180),
            // 300, 600, 600, 1800 (not the fault's 1800): rank 2 and ⌈3.6⌉ = 4.
            "to_close": times(4, 600, 1800, 1800),
            // Level 2: c2, c3, c4; level 3: c4.
            "escalations": escalations(&[(2, 3), (3, 1)]),
            "unattended": 1,
            // Nobody's phone sent a receipt here; who answered got it
            // (§18): c1 Anna 40, c2 Anna 90, c4 Cem 240. Ben's c2 alert,
            // unanswered, was never received.
            "to_first_receipt": times(3, 90, 240, 240),
            "never_received": 1
        }),
        "{alarms:#}"
    );
    // Most urgent first, as the response times: Notruf, Normalruf; no fault.
    assert_eq!(
        alarms["by_call_type"],
        json!([
            {"name": "Notruf", "calls": 3, "alarmed": 3,
             "to_accept": times(3, 90, 240, 240), "to_presence": times(2, 120, 180, 180),
             "to_close": times(3, 600, 600, 600),
             "escalations": escalations(&[(2, 2), (3, 1)]), "unattended": 0,
             "to_first_receipt": times(3, 90, 240, 240), "never_received": 1},
            {"name": "Normalruf", "calls": 1, "alarmed": 1,
             "to_accept": no_times(), "to_presence": no_times(),
             "to_close": times(1, 1800, 1800, 1800),
             "escalations": escalations(&[(2, 1)]), "unattended": 1,
             "to_first_receipt": no_times(), "never_received": 0},
        ])
    );
    assert_eq!(
        alarms["by_section"],
        json!([
            // c1, c3, c4: accepted 40, 240; arrived 120; closed 300, 600, 1800.
            {"name": "Station 1", "calls": 3, "alarmed": 3,
             "to_accept": times(2, 40, 240, 240), "to_presence": times(1, 120, 120, 120),
             "to_close": times(3, 600, 1800, 1800),
             "escalations": escalations(&[(2, 2), (3, 1)]), "unattended": 1,
             "to_first_receipt": times(2, 40, 240, 240), "never_received": 0},
            {"name": "Station 2", "calls": 1, "alarmed": 1,
             "to_accept": times(1, 90, 90, 90), "to_presence": times(1, 180, 180, 180),
             "to_close": times(1, 600, 600, 600),
             "escalations": escalations(&[(2, 1), (3, 0)]), "unattended": 0,
             "to_first_receipt": times(1, 90, 90, 90), "never_received": 1},
        ])
    );
    // Per person, within RECEIPT_SECONDS (30) of their first alert: Anna's
    // c1 answer after 40 s is late, her c2 answer 30 s after the house level
    // alerted her is in time; Ben never; Cem after 240 s. Tom's is a fault's.
    let person = |name: &str, alerted: u64, in_time: u64, share: u64| json!({"name": name, "alerted": alerted, "received_in_time": in_time, "share_percent": share});
    let shares: Vec<Value> = alarms["by_person"]
        .as_array()
        .expect("by_person")
        .iter()
        .map(|p| {
            let mut p = p.clone();
            p.as_object_mut().expect("a person").remove("id");
            p
        })
        .collect();
    assert_eq!(
        shares,
        vec![
            person("Anna", 2, 1, 50),
            person("Ben", 1, 0, 0),
            person("Cem", 1, 0, 0)
        ]
    );
    // The response times are those of before alarms: presence, else close:
    // 120, 180, 600, 1800, median rank 2.
    assert_eq!(report["total"]["count"], 4);
    assert_eq!(report["total"]["median_seconds"], 180);
    // The fault, apart: one Störung, closed after 1800 s.
    let fault = json!({"count": 1, "open": 0, "to_close": times(1, 1800, 1800, 1800)});
    let mut by_type = fault.clone();
    by_type["name"] = json!("Störung");
    assert_eq!(
        report["faults"],
        json!({"total": fault, "by_fault_type": [by_type]}),
        "{:#}",
        report["faults"]
    );
}

fn assert_the_csv(backend: &Backend, [c1, c2, c3, c4, c5]: [i64; 5]) {
    let csv = backend
        .admin(&[
            "report",
            "--from",
            "2026-03-10",
            "--to",
            "2026-03-10",
            "--format",
            "csv",
        ])
        .success()
        .stdout;
    let mut lines = csv.trim_start_matches('\u{feff}').lines();
    let header = lines.next().unwrap();
    assert!(
        header.ends_with(
            ";opened_by;closed_by;alarm_state;levels_started;accept_seconds;presence_seconds;unattended;\
             first_received_at"
        ),
        "{header}"
    );
    // id, then the alarm's columns (the last six; the first receipt or
    // answer of anybody alerted, §18).
    let alarm_columns: Vec<(i64, String)> = lines
        .map(|line| {
            let fields: Vec<&str> = line.split(';').collect();
            (
                fields[0].parse().unwrap(),
                fields[fields.len() - 6..].join(";"),
            )
        })
        .collect();
    for (id, expected) in [
        (c1, "ended;1;40;120;false;2026-03-10 08:00:40"),
        (c2, "ended;2;90;180;false;2026-03-10 09:01:30"),
        (c5, "ended;1;120;;false;2026-03-10 12:02:00"),
        (c3, "ended;2;;;true;"),
        (c4, "ended;3;240;;false;2026-03-10 22:04:00"),
    ] {
        assert!(
            alarm_columns.contains(&(id, expected.to_string())),
            "call {id}: {expected} not in {alarm_columns:?}"
        );
    }
    // The presences have no alarm.
    assert_eq!(
        alarm_columns
            .iter()
            .filter(|(_, columns)| columns == ";;;;;")
            .count(),
        2,
        "{alarm_columns:?}"
    );
}

fn assert_the_audit(backend: &Backend, c2: i64) {
    let audit = backend.admin_json(&["audit", &c2.to_string(), "--json"]);
    assert_eq!(audit["call"]["accepted_by"], "Anna");
    assert_eq!(audit["call"]["levels_started"], 2);
    let lines: Vec<(String, String, Value, Value)> = audit["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["at"].as_str().unwrap()[11..].to_string(),
                e["kind"].as_str().unwrap().to_string(),
                e["level"].clone(),
                e["staff_name"].clone(),
            )
        })
        .collect();
    let line = |time: &str, kind: &str, level: Value, staff: Value| {
        (time.to_string(), kind.to_string(), level, staff)
    };
    // Ben first; Notruf re-alerts every 15 s, so at 09:01:00 Ben again too.
    for expected in [
        line("09:00:00", "alert", json!(1), json!("Ben")),
        line("09:01:00", "escalated", json!(2), Value::Null),
        line("09:01:00", "alert", json!(2), json!("Anna")),
        line("09:01:30", "accepted", Value::Null, json!("Anna")),
        line("09:01:30", "cancel", Value::Null, json!("Ben")),
        line("09:10:00", "ended", Value::Null, Value::Null),
    ] {
        assert!(lines.contains(&expected), "{expected:?} not in {lines:#?}");
    }
    let people = backend.admin(&["audit", &c2.to_string()]).success().stdout;
    assert!(people.contains("accepted by     Anna"), "{people}");
    backend
        .admin(&["audit", "999999"])
        .fails(1, "no call 999999 with an alarm");
}
