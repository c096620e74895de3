//! What the admin command writes, as a process (issue 29): every time in the
//! installation's zone, a reader that closes the pipe early (`… | head -1`)
//! ends it quietly with exit status 0, dates that are not `YYYY-MM-DD` are
//! refused naming the format, and `report --json` is `--format json`.
//!
//! On both stores; the DynamoDB cases need moto on PATH (scripts/test).

#[macro_use]
mod support;

use std::io::Read;

use chrono::{DateTime, Duration, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;

use support::{Backend, Value, json};

on_both_stores!(
    printed_times_are_in_the_installations_zone,
    a_pipe_closed_early_ends_quietly_with_success,
    dates_name_their_format_and_report_json_is_json,
);

/// A printed time read back as an instant of `zone`.
fn instant(text: &str, zone: Tz) -> DateTime<Utc> {
    let naive = NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S")
        .unwrap_or_else(|e| panic!("{text:?} is no local wire time: {e}"));
    zone.from_local_datetime(&naive)
        .earliest()
        .expect("no time in a gap")
        .with_timezone(&Utc)
}

fn field(listed: &Value, name: &str) -> String {
    listed[0][name]
        .as_str()
        .unwrap_or_else(|| panic!("no {name} in {listed}"))
        .to_string()
}

async fn printed_times_are_in_the_installations_zone(store: Backend) {
    store.open().await;
    let before = Utc::now() - Duration::seconds(1);
    store
        .admin(&["displays", "create", "--name", "Flur"])
        .success();
    store
        .admin(&[
            "elements", "add", "R1", "--code", "Z1", "--name", "Zimmer 1",
        ])
        .success();
    store
        .admin(&["consumers", "create", "--name", "Zentrale"])
        .success();
    store
        .admin(&["staff", "create", "--name", "Anna"])
        .success();
    let after = Utc::now() + Duration::seconds(1);

    // Berlin by default; a zone far from it by option and by variable.
    let berlin = chrono_tz::Europe::Berlin;
    let new_york = chrono_tz::America::New_York;
    for (list, name) in [
        ("displays", "created_at"),
        ("elements", "updated_at"),
        ("consumers", "created_at"),
        ("staff", "created_at"),
    ] {
        let by_default = store.admin_json(&[list, "list", "--json"]);
        let by_option =
            store.admin_json(&[list, "list", "--json", "--time-zone", "America/New_York"]);
        let by_variable = store
            .admin_with_env(
                &[list, "list", "--json"],
                &[("SERVICE_TIME_ZONE", "America/New_York")],
            )
            .success()
            .json();
        let zoned = [
            (field(&by_default, name), berlin),
            (field(&by_option, name), new_york),
            (field(&by_variable, name), new_york),
        ];
        for (text, zone) in zoned {
            let at = instant(&text, zone);
            assert!(
                before <= at && at <= after,
                "{list}: {text} is not now in {zone}"
            );
        }
        // The table shows the same local time.
        let table = store.admin(&[list, "list"]).success().stdout;
        let shown = field(&by_default, name);
        assert!(
            table.contains(&shown[..16]),
            "{list}: no {shown} in\n{table}"
        );
    }
}

/// Runs `args` with stdout a pipe whose reading end is closed before the
/// command writes (it opens the store first), as `| head -1` does at
/// worst; returns the exit status and stderr.
fn with_closed_pipe(store: &Backend, args: &[&str]) -> (Option<i32>, String) {
    let mut child = store.spawn_admin(args);
    drop(child.stdout.take());
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (child.wait().unwrap().code(), stderr)
}

async fn a_pipe_closed_early_ends_quietly_with_success(store: Backend) {
    store.open().await;
    // Something to print in each list.
    store
        .admin(&["consumers", "create", "--name", "Zentrale"])
        .success();
    store
        .admin(&[
            "elements", "add", "R1", "--code", "Z1", "--name", "Zimmer 1",
        ])
        .success();
    let commands: [&[&str]; 4] = [
        &["elements", "list"],
        &["consumers", "list", "--json"],
        &["call-types", "list"],
        &[
            "report",
            "--from",
            "2026-11-01",
            "--to",
            "2026-11-30",
            "--format",
            "csv",
        ],
    ];
    for args in commands {
        // A race lost once in five runs is what the tester saw: run it often.
        for run in 0..5 {
            let (code, stderr) = with_closed_pipe(&store, args);
            assert!(!stderr.contains("panicked"), "{args:?} run {run}: {stderr}");
            assert_eq!(code, Some(0), "{args:?} run {run}: {stderr}");
            assert!(!stderr.contains("error"), "{args:?} run {run}: {stderr}");
        }
    }
}

async fn dates_name_their_format_and_report_json_is_json(store: Backend) {
    store.open().await;
    let refused = store.admin(&[
        "report",
        "--from",
        "25.11.2026",
        "--to",
        "2026-11-30",
        "--format",
        "csv",
    ]);
    let refused = refused.fails(2, "25.11.2026 is not a date in the format YYYY-MM-DD");
    assert!(refused.stderr.contains("--from"), "{refused:#?}");
    store
        .admin(&[
            "report",
            "--from",
            "2026-11-01",
            "--to",
            "2026-02-30",
            "--format",
            "csv",
        ])
        .fails(2, "2026-02-30 is not a date in the format YYYY-MM-DD");

    let days = ["report", "--from", "2026-11-01", "--to", "2026-11-30"];
    let as_json = store.admin_json(&[&days[..], &["--json"]].concat());
    let as_format = store.admin_json(&[&days[..], &["--format", "json"]].concat());
    assert_eq!(as_json, as_format);
    assert_eq!(as_json["period"]["first_day"], json!("2026-11-01"));
    store
        .admin(&[&days[..], &["--json", "--format", "csv"]].concat())
        .fails(2, "--json asks for JSON, --format csv for another format");
    store
        .admin(&days)
        .fails(2, "report needs --format html|csv|json (or --json)");
}
