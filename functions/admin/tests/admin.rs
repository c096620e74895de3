//! The admin command as a process, against a production-mode local server on
//! the same store: the embedded SQLite file (the server keeps running while
//! the command writes it) and DynamoDB (moto, the same tables).
//!
//! Needs the `local-server` binary: `cargo build --workspace --bins`; and for
//! the DynamoDB cases `python3` with moto on PATH (scripts/test sets it up).

#[macro_use]
mod support;

use std::time::{Duration, Instant};

use support::{Backend, Value, json, signed_body};

on_both_stores!(
    issued_consumers_sign_rotate_retire_and_revoke,
    sha1_is_accepted_only_when_allowed,
    create_shows_the_secret_once_for_people,
    call_type_edits_are_served_at_once,
    imported_elements_are_accepted_as_targets,
    refusals_exit_non_zero_and_write_nothing,
    replay_protection_switches_on_and_off,
    erase_removes_an_address_and_says_what,
    heartbeats_are_set_listed_removed_and_end_with_their_consumer,
);

fn is_uuid_v4(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            14 => *b == b'4',
            _ => b.is_ascii_digit() || (b'a'..=b'f').contains(b),
        })
}

fn text(value: &Value) -> String {
    value
        .as_str()
        .unwrap_or_else(|| panic!("not a string: {value}"))
        .to_string()
}

async fn issued_consumers_sign_rotate_retire_and_revoke(store: Backend) {
    let server = store.server();
    store
        .admin(&[
            "elements", "add", "A-1", "--code", "Z1", "--name", "Zimmer 1",
        ])
        .success();

    let created = store.admin_json(&["consumers", "create", "--name", "Zentrale 1", "--json"]);
    let id = text(&created["id"]);
    let old = text(&created["secret"]);
    assert!(is_uuid_v4(&id), "{created}");
    assert!(
        old.len() == 64 && old.bytes().all(|b| b.is_ascii_hexdigit()),
        "{created}"
    );
    assert_eq!(created["allow_sha1"], false);
    assert_eq!(server.update_element(&id, &old, "A-1").await, 200);
    assert_eq!(
        server.update_element(&id, "not the secret", "A-1").await,
        400
    );

    // Rotation: both secrets verify.
    let rotated = store.admin_json(&["consumers", "rotate", &id, "--json"]);
    let new = text(&rotated["secret"]);
    assert_ne!(new, old);
    assert_eq!(rotated["secrets"], 2);
    assert_eq!(server.update_element(&id, &old, "A-1").await, 200);
    assert_eq!(server.update_element(&id, &new, "A-1").await, 200);
    store
        .admin(&["consumers", "rotate", &id])
        .fails(1, "already has 2 secrets");

    // Listing shows the count, never a secret.
    for args in [&["consumers", "list", "--json"][..], &["consumers", "list"]] {
        let listed = store.admin(args).success();
        assert!(
            !listed.stdout.contains(&old) && !listed.stdout.contains(&new),
            "a secret was listed: {listed:#?}"
        );
        assert!(listed.stdout.contains(&id) && listed.stdout.contains("Zentrale 1"));
    }
    let listed = store.admin_json(&["consumers", "list", "--json"]);
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["name"], "Zentrale 1");
    assert_eq!(listed[0]["secrets"], 2);
    assert_eq!(listed[0]["allow_sha1"], false);
    assert!(listed[0]["created_at"].is_string());

    // Retiring drops the older secret.
    store.admin(&["consumers", "retire-secret", &id]).success();
    assert_eq!(server.update_element(&id, &old, "A-1").await, 400);
    assert_eq!(server.update_element(&id, &new, "A-1").await, 200);
    store
        .admin(&["consumers", "retire-secret", &id])
        .fails(1, "only one secret");

    // Revoking refuses the consumer.
    let revoked = store.admin_json(&["consumers", "revoke", &id, "--json"]);
    assert_eq!(revoked, json!({"id": id, "revoked": true}));
    assert_eq!(server.update_element(&id, &new, "A-1").await, 400);
    assert_eq!(
        store.admin_json(&["consumers", "list", "--json"]),
        json!([])
    );
    store
        .admin(&["consumers", "revoke", &id])
        .fails(1, "no consumer with id");
}

/// `--require-signed-time` and `consumers signed-time <id> on|off`: requests
/// without a signed `signed_at` are refused while it is on (docs/security.md).
async fn replay_protection_switches_on_and_off(store: Backend) {
    let server = store.server();
    store
        .admin(&[
            "elements", "add", "A-1", "--code", "Z1", "--name", "Zimmer 1",
        ])
        .success();
    let created = store.admin_json(&[
        "consumers",
        "create",
        "--name",
        "Zentrale 2",
        "--require-signed-time",
        "--json",
    ]);
    let (id, secret) = (text(&created["id"]), text(&created["secret"]));
    let listed = store.admin_json(&["consumers", "list", "--json"]);
    assert_eq!(listed[0]["require_signed_time"], true, "{listed}");
    let (status, body) = server
        .post(
            "/api/v1/element",
            signed_body(&id, &secret, "A-1", r#"{"battery":80}"#),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["messages"][0]["code"], "signed_time_required",
        "{body}"
    );

    let off = store.admin_json(&["consumers", "signed-time", &id, "off", "--json"]);
    assert_eq!(off["require_signed_time"], false, "{off}");
    assert_eq!(server.update_element(&id, &secret, "A-1").await, 200);

    store
        .admin(&["consumers", "signed-time", &id, "on"])
        .success();
    assert_eq!(server.update_element(&id, &secret, "A-1").await, 400);
    store
        .admin(&[
            "consumers",
            "signed-time",
            "00000000-0000-4000-8000-000000000000",
            "on",
        ])
        .fails(1, "no consumer with id");
}

async fn sha1_is_accepted_only_when_allowed(store: Backend) {
    use hmac::{Hmac, Mac};
    let server = store.server();
    store
        .admin(&[
            "elements", "add", "A-1", "--code", "Z1", "--name", "Zimmer 1",
        ])
        .success();
    let sha1_body = |id: &str, secret: &str| {
        let data = r#"{"battery":50}"#;
        let mut mac = Hmac::<sha1::Sha1>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(format!("A-1.{id}.{data}").as_bytes());
        let hash = hex::encode(mac.finalize().into_bytes());
        format!(r#"{{"target":"A-1","consumer":"{id}","hash":"{hash}","data":{data}}}"#)
    };
    for (flags, status) in [(&["--sha1"][..], 200), (&[][..], 400)] {
        let mut args = vec!["consumers", "create", "--name", "Altanlage", "--json"];
        args.extend_from_slice(flags);
        let created = store.admin_json(&args);
        assert_eq!(created["allow_sha1"], flags.len() == 1);
        let (id, secret) = (text(&created["id"]), text(&created["secret"]));
        let (got, body) = server
            .post("/api/v1/element", sha1_body(&id, &secret))
            .await;
        assert_eq!(got, status, "{flags:?}: {body}");
    }
}

async fn create_shows_the_secret_once_for_people(store: Backend) {
    let _server = store.server();
    let run = store
        .admin(&["consumers", "create", "--name", "Zentrale"])
        .success();
    let secret = run
        .stdout
        .lines()
        .find_map(|line| line.strip_prefix("secret"))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no secret line: {run:#?}"));
    assert_eq!(secret.len(), 64);
    assert_eq!(run.stdout.matches(secret).count(), 1, "{run:#?}");
    assert!(!run.stderr.contains(secret), "{run:#?}");
    assert!(run.stderr.contains("shown only now"), "{run:#?}");
    assert!(run.stdout.lines().any(|l| l.starts_with("consumer")));
}

async fn call_type_edits_are_served_at_once(store: Backend) {
    let server = store.server();
    let call_types = || async {
        let (status, body) = server.get("/api/v1/display/call-types").await;
        assert_eq!(status, 200, "{body}");
        body["data"].clone()
    };
    assert_eq!(call_types().await["Notruf"], "");

    let set = store.admin_json(&[
        "call-types",
        "set",
        "Notruf",
        "--internal-name",
        "NR",
        "--json",
    ]);
    assert_eq!(set["created"], false);
    assert_eq!(call_types().await["Notruf"], "NR");
    // Only the given field changed.
    let listed = store.admin_json(&["call-types", "list", "--json"]);
    let notruf = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "Notruf")
        .unwrap();
    assert_eq!(
        notruf,
        &json!({"id": 7, "name": "Notruf", "internal_name": "NR", "urgency": "EMERGENCY",
                "priority": 1, "type": "CALL", "color": "#e74c3c", "notify": true,
                "notification_interval": 15, "notification_maxloops": 0,
                "notification_sound": "emergency.mp3",
                "escalation": [{"after": 0, "to": "section"}, {"after": 60, "to": "house"},
                               {"after": 180, "to": "group:Leitung"}]})
    );

    // A new name is created with the next id.
    let created = store.admin_json(&[
        "call-types",
        "set",
        "Sonderruf",
        "--priority",
        "2",
        "--color",
        "#12AB34",
        "--urgency",
        "URGENT",
        "--notify",
        "true",
        "--notification-interval",
        "30",
        "--json",
    ]);
    assert_eq!(
        created,
        json!({"created": true, "id": 11, "name": "Sonderruf", "internal_name": "",
               "urgency": "URGENT", "priority": 2, "type": "CALL", "color": "#12ab34",
               "notify": true, "notification_interval": 30, "notification_maxloops": 0,
               "notification_sound": "",
               // A new type alerts like the fallback until an admin says otherwise.
               "escalation": [{"after": 0, "to": "section"}, {"after": 60, "to": "house"}]})
    );
    assert_eq!(call_types().await["Sonderruf"], "");
    store
        .admin(&["call-types", "set", "Unbekannt", "--internal-name", "U"])
        .fails(1, "--priority and --color");

    // Seeding again keeps the edits.
    let seeded = store.admin_json(&["call-types", "seed", "--json"]);
    assert_eq!(seeded["added"], json!([]));
    assert_eq!(seeded["kept"].as_array().unwrap().len(), 10);
    assert_eq!(call_types().await["Notruf"], "NR");
    let table = store.admin(&["call-types", "list"]).success().stdout;
    assert!(table.starts_with("ID"), "{table}");
    assert!(
        table.contains("Sonderruf") && table.contains("#12ab34"),
        "{table}"
    );
}

async fn imported_elements_are_accepted_as_targets(store: Backend) {
    let server = store.server();
    let created = store.admin_json(&["consumers", "create", "--name", "Zentrale", "--json"]);
    let (id, secret) = (text(&created["id"]), text(&created["secret"]));
    let folder = tempfile::tempdir().unwrap();
    let good = folder.path().join("elements.csv");
    std::fs::write(
        &good,
        "address,code,name\nA-1,Z101,\"Zimmer 101, Bett 1\"\nA-2,Z102,Zimmer 102\n",
    )
    .unwrap();

    // Before the import, production refuses the address.
    assert_eq!(server.update_element(&id, &secret, "A-1").await, 422);
    let imported = store.admin_json(&["elements", "import", good.to_str().unwrap(), "--json"]);
    assert_eq!(imported["imported"], 2);

    let open = signed_body(&id, &secret, "A-1", r#"{"event":"Normalruf"}"#);
    let (status, body) = server.post("/api/v1/display", open).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["data"]["element_code"], "Z101");
    assert_eq!(body["data"]["element_name"], "Zimmer 101, Bett 1");
    assert_eq!(server.update_element(&id, &secret, "A-2").await, 200);
    assert_eq!(server.update_element(&id, &secret, "A-3").await, 422);

    // A file with a bad row writes nothing and names the row.
    let bad = folder.path().join("bad.csv");
    std::fs::write(
        &bad,
        "address,code,name\nA-3,Z103,Zimmer 103\nA-4,,Zimmer 104\n",
    )
    .unwrap();
    let refused = store
        .admin(&["elements", "import", bad.to_str().unwrap()])
        .fails(1, "row 3: code is empty");
    assert!(
        refused.stderr.contains("nothing was imported"),
        "{refused:#?}"
    );
    let listed = store.admin_json(&["elements", "list", "--json"]);
    let addresses: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["address"].as_str().unwrap())
        .collect();
    assert_eq!(addresses, ["A-1", "A-2"]);
    assert_eq!(listed[1]["battery"], 80.0);
    assert_eq!(server.update_element(&id, &secret, "A-3").await, 422);
    let table = store.admin(&["elements", "list"]).success().stdout;
    assert!(table.contains("Zimmer 101, Bett 1"), "{table}");

    // Removing an element refuses its address again.
    store.admin(&["elements", "remove", "A-2"]).success();
    assert_eq!(server.update_element(&id, &secret, "A-2").await, 422);
    store
        .admin(&["elements", "remove", "A-2"])
        .fails(1, "no element with address");
}

async fn refusals_exit_non_zero_and_write_nothing(store: Backend) {
    // The server prepares the store (on DynamoDB it creates the tables).
    let _server = store.server();
    let unknown = "3f2b8c1e-9d4a-4e6f-8b7c-0a1d2e3f4a5b";
    for command in ["rotate", "retire-secret", "revoke"] {
        store
            .admin(&["consumers", command, unknown])
            .fails(1, &format!("no consumer with id {unknown}"));
    }
    store
        .admin(&["consumers", "rotate", "not-an-id"])
        .fails(1, "not a consumer id");
    store
        .admin(&["consumers", "create", "--name", " "])
        .fails(1, "--name is empty");
    // Text the API would refuse (422) is refused here too.
    store
        .admin(&["consumers", "create", "--name", "Zentrale\u{7}"])
        .fails(1, "--name contains a control character");

    store
        .admin(&["call-types", "set", "Notruf", "--color", "red"])
        .fails(2, "#rrggbb");
    store
        .admin(&["call-types", "set", "Notruf", "--color", "#12345"])
        .fails(2, "#rrggbb");
    store
        .admin(&["call-types", "set", "Notruf", "--priority", "high"])
        .fails(2, "priority");
    store
        .admin(&["call-types", "set", "Notruf", "--notify", "yes"])
        .fails(2, "--notify");
    store
        .admin(&["call-types", "set", "Notruf"])
        .fails(1, "nothing to change");
    store
        .admin(&[
            "call-types",
            "set",
            "Not\u{1b}ruf",
            "--priority",
            "1",
            "--color",
            "#000000",
        ])
        .fails(1, "the name contains a control character");
    store
        .admin(&["call-types", "set", "Notruf", "--internal-name", "N\u{1}"])
        .fails(1, "--internal-name contains a control character");
    store
        .admin(&[
            "call-types",
            "set",
            "Notruf",
            "--notification-sound",
            "alarm\n.mp3",
        ])
        .fails(1, "--notification-sound contains a control character");
    let listed = store.admin_json(&["call-types", "list", "--json"]);
    assert_eq!(listed[6]["name"], "Notruf");
    assert_eq!(listed[6]["color"], "#e74c3c");
    assert_eq!(listed[6]["internal_name"], "");
    assert_eq!(listed.as_array().unwrap().len(), 10, "{listed}");

    store
        .admin(&["elements", "add", "A-1", "--code", "", "--name", "Eins"])
        .fails(1, "code is empty");
    store
        .admin(&["elements", "remove", "A-1"])
        .fails(1, "no element with address \"A-1\"");
    store
        .admin(&["elements", "import", "/nonexistent/elements.csv"])
        .fails(1, "cannot read /nonexistent/elements.csv");
    assert_eq!(store.admin_json(&["elements", "list", "--json"]), json!([]));
    assert_eq!(
        store.admin_json(&["consumers", "list", "--json"]),
        json!([])
    );
}

async fn erase_removes_an_address_and_says_what(store: Backend) {
    let server = store.server();
    let created = store.admin_json(&["consumers", "create", "--name", "Zentrale", "--json"]);
    let (id, secret) = (text(&created["id"]), text(&created["secret"]));
    for address in ["A-1", "A-2"] {
        store
            .admin(&[
                "elements", "add", address, "--code", "Z", "--name", "Zimmer",
            ])
            .success();
    }
    let send = |target: &str, data: &str| {
        server.post("/api/v1/display", signed_body(&id, &secret, target, data))
    };
    assert_eq!(send("A-1", r#"{"event":"WC"}"#).await.0, 201);
    assert_eq!(send("A-1", r#"{"closed":true}"#).await.0, 200);
    assert_eq!(send("A-1", r#"{"event":"Notruf"}"#).await.0, 201);
    let (status, kept) = send("A-2", r#"{"event":"Notruf"}"#).await;
    assert_eq!(status, 201, "{kept}");

    let erased = store.admin_json(&["elements", "erase", "A-1", "--json"]);
    assert_eq!(
        erased,
        json!({"address": "A-1", "scope": "installation", "element": true, "calls": 2,
               "open_calls": 1, "mismatches": 0})
    );
    // The address is unknown now; the other one is as it was.
    assert_eq!(server.update_element(&id, &secret, "A-1").await, 422);
    let (status, again) = send("A-2", r#"{"event":"Notruf"}"#).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["data"]["id"], kept["data"]["id"]);
    store.admin(&["elements", "erase", "A-1"]).fails(
        1,
        "nothing is stored for address \"A-1\" in scope installation",
    );

    let told = store.admin(&["elements", "erase", "A-2"]).success().stdout;
    assert_eq!(
        told,
        "Erased address \"A-2\" (scope installation): its element, 1 call (of them 1 open), \
         0 hash mismatches.\n"
    );
    assert_eq!(store.admin_json(&["elements", "list", "--json"]), json!([]));
    store
        .admin(&["elements", "erase", "A-1", "--sandbox-consumer", "visitor"])
        .fails(1, "not a consumer id");
}

#[test]
fn an_unreachable_dynamodb_is_a_store_failure() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let store = Backend::Dynamo {
        endpoint: endpoint.clone(),
        prefix: "unreachable-".into(),
    };
    let started = Instant::now();
    let run = store
        .admin(&["consumers", "list"])
        .fails(3, &format!("DynamoDB at {endpoint}"));
    assert!(run.stderr.contains("unavailable"), "{run:#?}");
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn missing_tables_are_named() {
    let store = Backend::dynamodb();
    let Backend::Dynamo { prefix, .. } = &store else {
        unreachable!()
    };
    // No store there (exit 4), not a failing one: the tables are named.
    store.admin(&["consumers", "list"]).fails(
        4,
        &format!("has no table {prefix}call-types, {prefix}consumers"),
    );
}

#[test]
fn a_file_as_data_dir_is_no_store() {
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("a-file");
    std::fs::write(&file, "not a folder").unwrap();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_nurse-call-admin"));
    command
        .env_remove("DYNAMODB_ENDPOINT")
        .arg("--data-dir")
        .arg(&file)
        .args(["elements", "list"]);
    support::Run::of(command).fails(4, "--data-dir names the store's folder, not its file");
}

#[test]
fn help_names_every_command_and_option() {
    let help = |args: &[&str]| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_nurse-call-admin"));
        command.args(args);
        support::Run::of(command).success().stdout
    };
    let top = help(&["--help"]);
    for word in [
        "consumers",
        "displays",
        "staff",
        "elements",
        "call-types",
        "report",
        "audit",
        "--json",
        "--data-dir",
        "--dynamodb-endpoint",
        "--dynamodb",
        "--table-prefix",
        "TABLE_PREFIX",
        "CALL_TYPES_TABLE",
        "CONSUMERS_TABLE",
        "DATA_TABLE",
        "Exit status",
    ] {
        assert!(top.contains(word), "no {word:?} in --help:\n{top}");
    }
    let consumers = help(&["consumers", "--help"]);
    for word in ["create", "list", "rotate", "retire-secret", "revoke"] {
        assert!(consumers.contains(word), "{consumers}");
    }
    let set = help(&["call-types", "set", "--help"]);
    for word in [
        "--internal-name",
        "--priority",
        "--color",
        "--urgency",
        "--type",
        "--notify",
        "--notification-interval",
        "--notification-maxloops",
        "--notification-sound",
        "--escalation",
    ] {
        assert!(set.contains(word), "{set}");
    }
    let staff = help(&["staff", "--help"]);
    for word in ["create", "list", "rotate", "revoke", "erase"] {
        assert!(staff.contains(word), "{staff}");
    }
}

/// `consumers set ID --heartbeat SECONDS|none` (DECISIONS §19): the
/// interval in the list with the last sign of life, refusals outside 30 to
/// 3600, and a revoked consumer's silence ended in the history (the report
/// never shows it lasting forever).
async fn heartbeats_are_set_listed_removed_and_end_with_their_consumer(store: Backend) {
    // Opened first: on DynamoDB that makes the tables.
    let backend = store.open().await;
    let created = store.admin_json(&["consumers", "create", "--name", "Zentrale 3", "--json"]);
    let id = text(&created["id"]);
    let set = store.admin_json(&["consumers", "set", &id, "--heartbeat", "45", "--json"]);
    assert_eq!(set["heartbeat_seconds"], 45, "{set}");
    let listed = store.admin_json(&["consumers", "list", "--json"]);
    assert_eq!(listed[0]["heartbeat_seconds"], 45, "{listed}");
    assert!(listed[0]["last_seen_at"].is_string(), "{listed}");
    store
        .admin(&["consumers", "set", &id, "--heartbeat", "20"])
        .fails(2, "30 to 3600");
    store
        .admin(&[
            "consumers",
            "set",
            "00000000-0000-4000-8000-000000000000",
            "--heartbeat",
            "60",
        ])
        .fails(1, "no consumer with id");
    let none = store.admin_json(&["consumers", "set", &id, "--heartbeat", "none", "--json"]);
    assert_eq!(none["heartbeat_seconds"], Value::Null, "{none}");
    let listed = store.admin_json(&["consumers", "list", "--json"]);
    assert!(listed[0].get("last_seen_at").is_none(), "{listed}");

    // Silent, then revoked: its silence ends.
    store
        .admin(&["consumers", "set", &id, "--heartbeat", "30"])
        .success();
    let link = backend.links().await.unwrap().remove(0);
    let silence = nurse_call_core::links::Silence {
        since: link.last_seen_at,
        detected_at: link.last_seen_at,
        alerts: 0,
        last_alert_at: None,
    };
    assert!(
        backend
            .mark_silent(&id, link.last_seen_at, &silence)
            .await
            .unwrap()
    );
    store.admin(&["consumers", "revoke", &id]).success();
    let day = chrono::Duration::days(1);
    let silences = backend
        .silences(link.last_seen_at - day, link.last_seen_at + day)
        .await
        .unwrap();
    assert_eq!(silences.len(), 1, "{silences:?}");
    assert!(silences[0].ended_at.is_some(), "{silences:?}");
}
