//! The store the admin command works on must exist (issue 29): a mistyped
//! `--data-dir` or table prefix is refused with exit status 4 and creates
//! nothing, so that no second, empty store beside the service's can take a
//! display or a consumer the service never sees. `init` is the one way to
//! make the embedded store; DynamoDB tables are the stack's (or the local
//! server's), and `init` only finds them.
//!
//! On both stores; the DynamoDB cases need moto on PATH (scripts/test).

#[macro_use]
mod support;

use std::path::Path;

use support::{Backend, admin_without_store, json};

on_both_stores!(
    a_missing_store_is_refused_and_nothing_is_created,
    init_makes_the_store_once,
);

/// Every entry under `folder`, for "nothing was created".
fn entries(folder: &Path) -> Vec<String> {
    std::fs::read_dir(folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

async fn a_missing_store_is_refused_and_nothing_is_created(backend: Backend) {
    match &backend {
        Backend::Sqlite(_) => {
            let cwd = tempfile::tempdir().unwrap();
            // Without --data-dir: the default `data` of the working folder.
            let expected = format!(
                "no store at {}; check --data-dir, or create one with `nurse-call-admin init`",
                cwd.path().join("data").join("nurse-call.sqlite3").display()
            );
            admin_without_store(cwd.path(), &["displays", "create", "--name", "Flur"])
                .fails(4, &expected);
            // The monthly report's timer must notice: no empty report.
            admin_without_store(
                cwd.path(),
                &[
                    "report",
                    "--from",
                    "2026-11-01",
                    "--to",
                    "2026-11-30",
                    "--format",
                    "csv",
                ],
            )
            .fails(4, &expected);
            // A mistyped --data-dir, absolute and relative.
            let typo = cwd.path().join("dat");
            admin_without_store(
                cwd.path(),
                &["--data-dir", typo.to_str().unwrap(), "consumers", "list"],
            )
            .fails(
                4,
                &format!("no store at {}", typo.join("nurse-call.sqlite3").display()),
            );
            admin_without_store(cwd.path(), &["--data-dir", "dat", "elements", "list"])
                .fails(4, "check --data-dir");
            assert!(entries(cwd.path()).is_empty(), "{:?}", entries(cwd.path()));
        }
        Backend::Dynamo { prefix, .. } => {
            let refused = backend
                .admin(&["displays", "create", "--name", "Flur"])
                .fails(4, "no store: DynamoDB at http://");
            assert!(
                refused.stderr.contains(&format!("{prefix}data")),
                "{refused:#?}"
            );
            // init finds no tables either, and makes none.
            backend
                .admin(&["init"])
                .fails(4, "The admin command creates no DynamoDB tables");
            backend
                .admin(&["consumers", "list"])
                .fails(4, &format!("{prefix}call-types"));
        }
    }
}

async fn init_makes_the_store_once(backend: Backend) {
    match &backend {
        Backend::Sqlite(_) => {
            let cwd = tempfile::tempdir().unwrap();
            let created = admin_without_store(cwd.path(), &["init", "--json"])
                .success()
                .json();
            let file = cwd.path().join("data").join("nurse-call.sqlite3");
            assert_eq!(
                created,
                json!({"store": file.display().to_string(), "created": true})
            );
            assert!(file.is_file());
            // The store the server would make: the ten default call types.
            let types = admin_without_store(cwd.path(), &["call-types", "list", "--json"])
                .success()
                .json();
            assert_eq!(types.as_array().unwrap().len(), 10, "{types}");
            admin_without_store(cwd.path(), &["consumers", "create", "--name", "Zentrale"])
                .success();
            // Again: nothing changes, the consumer stays.
            let again = admin_without_store(cwd.path(), &["init"]).success();
            assert!(
                again.stdout.contains("exists already; nothing changed"),
                "{again:#?}"
            );
            let consumers = admin_without_store(cwd.path(), &["consumers", "list", "--json"])
                .success()
                .json();
            assert_eq!(consumers[0]["name"], "Zentrale");
        }
        Backend::Dynamo { .. } => {
            // The tables as the local server (or the stack) makes them.
            backend.open().await;
            let found = backend.admin_json(&["init", "--json"]);
            assert_eq!(found["created"], false, "{found}");
            backend
                .admin(&["consumers", "create", "--name", "Zentrale"])
                .success();
        }
    }
}
