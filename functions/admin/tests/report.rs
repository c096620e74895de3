//! `nurse-call-admin report` and `elements health` as processes, once on the
//! embedded store and once on DynamoDB (moto): the same hand-computed figures
//! from both. The weekend is Berlin's spring clock change (Sunday 2026-03-29,
//! 02:00 CET → 03:00 CEST), older than the week a central system may date a
//! call in (DECISIONS §5), so its calls are written through the store as the
//! display endpoint writes them, not sent to a server.
//!
//! Needs the `local-server` binary (`cargo build --workspace --bins`) and, for
//! the DynamoDB cases, moto on PATH (scripts/test sets it up).

#[macro_use]
mod support;

use std::sync::Arc;

use nurse_call_core::{
    ElementChange, ElementPolicy, ElementWrite, NewCall, OpenOutcome, Scope, wire_time::parse_local,
};
use support::{Backend, Value, json, signed_body};

on_both_stores!(
    the_report_has_the_hand_computed_figures,
    the_audit_export_opens_in_a_spreadsheet,
    the_html_report_is_one_self_contained_file,
    elements_health_lists_those_needing_attention,
);

struct Consumer {
    id: String,
    secret: String,
}

fn consumer(store: &Backend, name: &str) -> Consumer {
    let created = store.admin_json(&["consumers", "create", "--name", name, "--json"]);
    Consumer {
        id: created["id"].as_str().unwrap().to_string(),
        secret: created["secret"].as_str().unwrap().to_string(),
    }
}

/// What `POST /api/v1/display` with `data`, signed by `by`, stores in
/// production (DECISIONS §5): an open with `created_at`, the element's code
/// and name and the section; or a close at `closed_at` of the calls opened
/// up to then.
async fn send(store: &Arc<dyn nurse_call_core::Backend>, by: &Consumer, target: &str, data: Value) {
    let scope = Scope::installation();
    let snapshot = store.snapshot(&scope, target).await.unwrap();
    let time = |key: &str| {
        parse_local(data[key].as_str().expect(key), chrono_tz::Europe::Berlin).expect("a wire time")
    };
    let closing = data["closed"] == true;
    let at = time(if closing { "closed_at" } else { "created_at" });
    let change = ElementChange {
        address: target.into(),
        battery: None,
        position: None,
        reachable: None,
        at,
    };
    let element = ElementWrite::new(&scope, &change, ElementPolicy::MustExist, &snapshot);
    if closing {
        store
            .close_calls(&snapshot, at, Some(&by.id), &element)
            .await
            .unwrap();
        return;
    }
    let registered = snapshot.element.as_ref().expect("a registered element");
    let call = NewCall {
        address: target.into(),
        event: data["event"].as_str().expect("event").into(),
        position: None,
        section: data["section"].as_str().map(Into::into),
        attribute: None,
        element_code: registered.code.clone(),
        element_name: registered.name.clone(),
        opened_at: at,
        opened_by: Some(by.id.clone()),
    };
    let outcome = store.open_call(&call, &snapshot, &element).await.unwrap();
    assert!(
        matches!(outcome, OpenOutcome::Opened(_)),
        "{target} {data}: {outcome:?}"
    );
}

/// The weekend's calls, as a central system (A) and a second one (B) sent
/// them. Returns (A, B).
async fn weekend(store: &Backend) -> (Consumer, Consumer) {
    // The store as the service prepares it (on DynamoDB: its tables), before
    // the admin command, which creates none.
    let stored = store.open().await;
    for (address, code, name) in [
        ("R1", "Z1", "Zimmer 1"),
        ("R2", "Z2", "Bad Süd"),
        ("R3", "Z3", "Zimmer 3"),
        ("R4", "Z4", "Zimmer 4"),
        ("R5", "Z5", "Technik"),
    ] {
        store
            .admin(&["elements", "add", address, "--code", code, "--name", name])
            .success();
    }
    let a = consumer(store, "Zentrale A");
    let b = consumer(store, "Zentrale B");
    // Normalruf, presence after 3 min, closed by B: 180 s.
    send(
        &stored,
        &a,
        "R1",
        json!({"event": "Normalruf", "section": "Station 1", "created_at": "2026-03-28 10:00:00"}),
    )
    .await;
    send(
        &stored,
        &a,
        "R1",
        json!({"event": "Anwesenheit", "created_at": "2026-03-28 10:03:00"}),
    )
    .await;
    send(
        &stored,
        &b,
        "R1",
        json!({"closed": true, "closed_at": "2026-03-28 10:10:00"}),
    )
    .await;
    // Notruf across midnight; a presence on another address does not count:
    // closed after 30 min, 1800 s.
    send(
        &stored,
        &a,
        "R3",
        json!({"event": "Notruf", "section": "Station 1", "created_at": "2026-03-28 23:50:00"}),
    )
    .await;
    send(
        &stored,
        &a,
        "R4",
        json!({"event": "Anwesenheit", "created_at": "2026-03-28 23:51:00"}),
    )
    .await;
    send(
        &stored,
        &a,
        "R3",
        json!({"closed": true, "closed_at": "2026-03-29 00:20:00"}),
    )
    .await;
    // WC across the clock change, 01:30 CET to 03:30 CEST: 3600 s.
    send(
        &stored,
        &a,
        "R2",
        json!({"event": "WC", "section": "Station 2", "created_at": "2026-03-29 01:30:00"}),
    )
    .await;
    send(
        &stored,
        &a,
        "R2",
        json!({"closed": true, "closed_at": "2026-03-29 03:30:00"}),
    )
    .await;
    // A Störung in Station 1 for two hours: a fault, not a call, so in none
    // of the calls' figures (it would be the slowest, over the threshold, in
    // hour 9 and in Station 1), only in the faults' table.
    send(
        &stored,
        &a,
        "R5",
        json!({"event": "Störung", "section": "Station 1", "created_at": "2026-03-29 09:00:00"}),
    )
    .await;
    send(
        &stored,
        &a,
        "R5",
        json!({"closed": true, "closed_at": "2026-03-29 11:00:00"}),
    )
    .await;
    // The Monday after: not in the report.
    send(
        &stored,
        &a,
        "R1",
        json!({"event": "Notruf", "created_at": "2026-03-30 08:00:00"}),
    )
    .await;
    (a, b)
}

fn run_report(store: &Backend, format: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "report",
        "--from",
        "2026-03-28",
        "--to",
        "2026-03-29",
        "--format",
        format,
    ];
    args.extend_from_slice(extra);
    store.admin(&args).success().stdout
}

fn stats(count: u64, median: u64, p90: u64, max: u64, over: u64) -> Value {
    json!({
        "count": count, "unanswered": 0, "median_seconds": median, "p90_seconds": p90,
        "max_seconds": max, "over_threshold": over
    })
}

fn with_name(name: Value, stats: Value) -> Value {
    let mut group = stats;
    group["name"] = name;
    group
}

async fn the_report_has_the_hand_computed_figures(store: Backend) {
    weekend(&store).await;
    let report: Value = serde_json::from_str(&run_report(&store, "json", &[])).unwrap();

    assert_eq!(
        report["period"],
        json!({
            "first_day": "2026-03-28", "last_day": "2026-03-29", "time_zone": "Europe/Berlin",
            "from": "2026-03-28 00:00:00", "to": "2026-03-30 00:00:00"
        })
    );
    assert_eq!(report["threshold_seconds"], 300);
    // Responses 180, 1800, 3600: median rank 2, p90 rank 3; two over 5 min.
    assert_eq!(report["total"], stats(3, 1800, 3600, 3600, 2));
    assert_eq!(
        report["by_call_type"],
        json!([
            with_name(json!("Notruf"), stats(1, 1800, 1800, 1800, 1)),
            with_name(json!("WC"), stats(1, 3600, 3600, 3600, 1)),
            with_name(json!("Normalruf"), stats(1, 180, 180, 180, 0)),
        ])
    );
    assert_eq!(
        report["by_section"],
        json!([
            with_name(json!("Station 1"), stats(2, 180, 1800, 1800, 1)),
            with_name(json!("Station 2"), stats(1, 3600, 3600, 3600, 1)),
        ])
    );
    let mut hours = vec![0; 24];
    hours[1] = 1;
    hours[10] = 1;
    hours[23] = 1;
    assert_eq!(report["by_hour"], json!(hours));
    let slowest: Vec<(&str, i64, i64, &str)> = report["slowest"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["call_type"].as_str().unwrap(),
                c["response_seconds"].as_i64().unwrap(),
                c["duration_seconds"].as_i64().unwrap(),
                c["answered_by"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        slowest,
        [
            ("WC", 3600, 3600, "close"),
            ("Notruf", 1800, 1800, "close"),
            ("Normalruf", 180, 600, "presence"),
        ]
    );
    // Three calls, two presences and a fault were opened in the period.
    assert_eq!(report["calls"].as_array().unwrap().len(), 6);
    let two_hours =
        json!({"count": 1, "median_seconds": 7200, "p90_seconds": 7200, "max_seconds": 7200});
    assert_eq!(
        report["faults"],
        json!({
            "total": {"count": 1, "open": 0, "to_close": two_hours},
            "by_fault_type": [{"name": "Störung", "count": 1, "open": 0, "to_close": two_hours}]
        })
    );
    assert_eq!(
        report["alarms"]["total"]["calls"], 3,
        "the fault is no call"
    );

    let station: Value = serde_json::from_str(&report_section(&store, "Station 2")).unwrap();
    assert_eq!(station["section"], "Station 2");
    assert_eq!(station["total"], stats(1, 3600, 3600, 3600, 1));
    // A longer threshold: nothing over it.
    let lenient: Value =
        serde_json::from_str(&run_report(&store, "json", &["--threshold-minutes", "60"])).unwrap();
    assert_eq!(lenient["total"]["over_threshold"], 0);
}

fn report_section(store: &Backend, section: &str) -> String {
    run_report(store, "json", &["--section", section])
}

async fn the_audit_export_opens_in_a_spreadsheet(store: Backend) {
    let (a, b) = weekend(&store).await;
    let csv = run_report(&store, "csv", &[]);
    assert!(csv.starts_with('\u{feff}'), "UTF-8 with a byte order mark");
    let mut lines = csv.trim_start_matches('\u{feff}').lines();
    assert_eq!(
        lines.next(),
        Some(
            "id;opened_at;closed_at;address;element_code;element_name;position;section;\
             call_type;type;response_seconds;answered_by;duration_seconds;over_threshold;\
             opened_by;closed_by;alarm_state;levels_started;accept_seconds;presence_seconds;\
             unattended;first_received_at"
        )
    );
    // The columns before the alarms': no alarm engine runs here
    // (tests/report_alarms.rs has those).
    let rows: Vec<Vec<&str>> = lines
        .map(|line| line.split(';').skip(1).take(15).collect())
        .collect();
    let normalruf = format!(
        "2026-03-28 10:00:00;2026-03-28 10:10:00;R1;Z1;Zimmer 1;;Station 1;Normalruf;CALL;180;presence;600;false;{};{}",
        a.id, b.id
    );
    let wc = format!(
        "2026-03-29 01:30:00;2026-03-29 03:30:00;R2;Z2;Bad Süd;;Station 2;WC;CALL;3600;close;3600;true;{};{}",
        a.id, a.id
    );
    let presence_r4 = format!(
        "2026-03-28 23:51:00;;R4;Z4;Zimmer 4;;;Anwesenheit;PRESENCE;;;;false;{};",
        a.id
    );
    let fault = format!(
        "2026-03-29 09:00:00;2026-03-29 11:00:00;R5;Z5;Technik;;Station 1;Störung;FAULT;;;7200;false;{};{}",
        a.id, a.id
    );
    let rows: Vec<String> = rows.iter().map(|r| r.join(";")).collect();
    assert_eq!(rows.len(), 6, "{csv}");
    assert!(
        rows.contains(&fault),
        "the audit export lists the fault: {csv}"
    );
    assert_eq!(rows[0], normalruf);
    assert!(rows.contains(&wc), "{csv}");
    assert!(rows.contains(&presence_r4), "{csv}");
}

async fn the_html_report_is_one_self_contained_file(store: Backend) {
    weekend(&store).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bericht.html");
    store
        .admin(&[
            "report",
            "--from",
            "2026-03-28",
            "--to",
            "2026-03-29",
            "--format",
            "html",
            "--out",
            file.to_str().unwrap(),
        ])
        .success();
    let html = std::fs::read_to_string(&file).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert_eq!(html.matches("<svg").count(), 2, "two charts");
    assert!(html.contains("Bad Süd"), "names as UTF-8");
    assert!(html.contains("@page { size: A4"));
    // The fault's own table: one Störung, two hours to close.
    assert!(html.contains("<h2>Störungen</h2>"), "{html}");
    assert!(html.contains("2:00:00 · 2:00:00 · 2:00:00 (1)"), "{html}");
    for external in ["src=", "href=", "url(", "<script", "<link"] {
        assert!(
            !html.contains(external),
            "{external} in a self-contained report"
        );
    }
}

async fn elements_health_lists_those_needing_attention(store: Backend) {
    let server = store.server();
    for address in ["H1", "H2", "H3"] {
        store
            .admin(&[
                "elements", "add", address, "--code", address, "--name", "Funk",
            ])
            .success();
    }
    let central = consumer(&store, "Gateway");
    for (target, data) in [
        ("H1", r#"{"battery":15}"#),
        ("H2", r#"{"battery":90,"reachable":false}"#),
        ("H3", r#"{"battery":60,"reachable":true}"#),
    ] {
        let body = signed_body(&central.id, &central.secret, target, data);
        assert_eq!(server.post("/api/v1/element", body).await.0, 200);
    }
    let listed = store.admin_json(&["elements", "health", "--json"]);
    let reasons: Vec<(String, Value)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["address"].as_str().unwrap().to_string(),
                e["reasons"].clone(),
            )
        })
        .collect();
    assert_eq!(
        reasons,
        [
            ("H1".to_string(), json!(["battery_low"])),
            ("H2".to_string(), json!(["unreachable"])),
        ]
    );
    // The thresholds are the service's settings.
    let strict = store
        .admin_with_env(
            &["elements", "health", "--json"],
            &[("LOW_BATTERY_PERCENT", "70")],
        )
        .success()
        .json();
    let addresses: Vec<&str> = strict
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["address"].as_str().unwrap())
        .collect();
    assert_eq!(addresses, ["H1", "H2", "H3"]);
    let refused = store.admin(&["elements", "health", "--low-battery-percent", "120"]);
    assert_eq!(refused.code, Some(2), "{refused:#?}");
    assert!(
        refused.stderr.contains("LOW_BATTERY_PERCENT"),
        "{refused:#?}"
    );
}
