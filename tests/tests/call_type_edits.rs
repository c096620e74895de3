//! Call types edited by hand (issue 24, DECISIONS §7): a hand-edited call
//! type never outranks or silences a call.
//!
//! Each test edits the running production server's call types behind its
//! back, as an admin does (tests/tests/hand_edits/edits.rs): on SQLite with
//! the sqlite3 tool's statements on its file, with `BLACKBOX_STORE=dynamodb`
//! with the console's `UpdateItem` on its table in moto. Then it asserts the
//! documented fallback on the wire (`GET /api/v1/display/call-types`, an open
//! with `?include=type`) and in the order of the displays' read, exactly one
//! error line per fallback in the server's log, `nurse-call-admin call-types
//! check` listing the same, and every other call type as before the edit.
//! The local server reads the call types on every request (no cache), so no
//! test waits for one.
//!
//! Two edits exist only in DynamoDB (an item without `id`, two items with
//! one `id`): SQLite's schema refuses both (`NOT NULL`, `UNIQUE`), and those
//! tests say that they are skipped there.

mod hand_edits {
    // Each suite uses part of the helpers.
    #[allow(dead_code)]
    pub(crate) mod edits;
    #[allow(dead_code)]
    #[path = "../live_aws/moto_api.rs"]
    pub(crate) mod moto_api;
}

use std::collections::BTreeMap;

use blackbox_tests::*;
use serde_json::{Value, json};

use hand_edits::edits::*;

const FELL_BACK: &str = "call type field fell back";

/// Changes `fields` of call type `name` by hand.
async fn edit_call_type(server: &Server, name: &str, fields: &[(&str, V)]) {
    if on_dynamodb() {
        update_item(server, "call-types", json!({"name": {"S": name}}), fields).await;
    } else {
        update_row(server, "call_types", "name", name, fields);
    }
}

/// A new call type typed by hand: a complete, valid item (`id` 20), with
/// `fields` over it.
async fn new_call_type(server: &Server, name: &str, fields: &[(&str, V)]) {
    let mut all = vec![
        ("id", V::N("20")),
        ("internal_name", V::S("")),
        ("urgency", V::S("NORMAL")),
        ("priority", V::N("4")),
        ("type", V::S("CALL")),
        ("color", V::S("#8e44ad")),
        ("notify", V::B(true)),
        ("notification_interval", V::N("60")),
        ("notification_maxloops", V::N("0")),
        ("notification_sound", V::S("")),
    ];
    for (field, value) in fields {
        match all.iter_mut().find(|(f, _)| f == field) {
            Some(slot) => slot.1 = *value,
            None => panic!("no field {field}"),
        }
    }
    if on_dynamodb() {
        update_item(server, "call-types", json!({"name": {"S": name}}), &all).await;
    } else {
        let columns: Vec<&str> = all.iter().map(|(f, _)| *f).collect();
        let marks: Vec<String> = (2..=all.len() + 1).map(|i| format!("?{i}")).collect();
        let mut values = vec![rusqlite::types::Value::Text(name.to_string())];
        values.extend(all.iter().map(|(_, v)| v.sql()));
        open_store_file(server.data_dir())
            .execute(
                &format!(
                    "INSERT INTO call_types (name, {}) VALUES (?1, {})",
                    columns.join(", "),
                    marks.join(", ")
                ),
                rusqlite::params_from_iter(values),
            )
            .expect("the sqlite3 tool's INSERT");
    }
}

// ---------------------------------------------------------------------------
// What the service then answers
// ---------------------------------------------------------------------------

/// A production server with a display, every seeded call type open once
/// (in the order of spec 2.5), and their `type` objects before any edit.
struct Before {
    server: Server,
    token: String,
    types: BTreeMap<String, Value>,
    listed: Value,
}

async fn before_the_edit() -> Before {
    let server = Server::production(seed());
    let display = server
        .admin(&["displays", "create", "--name", "Flur", "--json"])
        .success()
        .json();
    let token = display["token"].as_str().expect("token").to_string();
    let checked = server.admin(&["call-types", "check", "--json"]);
    assert_eq!(checked.code, Some(0), "the seeded types: {checked:#?}");
    assert_eq!(checked.json()["fallbacks"], json!([]));
    let types = open_each(&server, &CALL_TYPE_NAMES).await;
    let listed = server.get(CALL_TYPES).await.data();
    assert_fell_back(&server, &[]);
    Before {
        server,
        token,
        types,
        listed,
    }
}

/// Opens (or re-opens) a call of each of `names` with `?include=type`: the
/// `type` object of each.
async fn open_each(server: &Server, names: &[&str]) -> BTreeMap<String, Value> {
    let mut types = BTreeMap::new();
    for name in names {
        let data = json!({ "event": name }).to_string();
        let response = server
            .display_query("include=type", &central(), &address_of(name), &data)
            .await;
        assert!(
            [200, 201].contains(&response.status),
            "open {name}: {response:?}"
        );
        types.insert(name.to_string(), response.data()["type"].clone());
    }
    types
}

/// The displays' read lists exactly the calls of `opened`, most urgent
/// first by the priorities on the wire. (Among equal priorities the oldest
/// comes first; calls opened within one second tie, and the tie is the
/// call id's, which only SQLite counts up: not asserted here.)
#[track_caller]
fn assert_order(order: &[String], opened: &[&str], types: &BTreeMap<String, Value>) {
    let mut listed: Vec<&str> = order.iter().map(String::as_str).collect();
    listed.sort_unstable();
    let mut expected = opened.to_vec();
    expected.sort_unstable();
    assert_eq!(listed, expected, "every open call, once");
    let priorities: Vec<i64> = order
        .iter()
        .map(|name| types[name]["priority"].as_i64().expect("a priority"))
        .collect();
    assert!(
        priorities.is_sorted(),
        "most urgent first: {order:?} has priorities {priorities:?}"
    );
}

/// `(item, field, found, used)` of a fallback.
type Fell = (String, String, String, String);

fn fell(item: &str, field: &str, found: &str, used: &str) -> Fell {
    (item.into(), field.into(), found.into(), used.into())
}

/// A new type's item without `escalation` (DECISIONS §14): a name that is
/// not seeded alarms by the fallback policy, never not at all, and says so.
fn no_escalation(item: &str) -> Fell {
    fell(
        item,
        "escalation",
        "missing",
        r#"[{"after":0,"to":"section"},{"after":60,"to":"house"}]"#,
    )
}

/// The server logged exactly `expected`, each once, as errors.
#[track_caller]
fn assert_fell_back(server: &Server, expected: &[Fell]) {
    let is_fallback = |line: &String| line.contains(FELL_BACK);
    let mut logged: Vec<Fell> = server
        .logs_once(|lines| lines.iter().filter(|l| is_fallback(l)).count() >= expected.len())
        .iter()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["message"] == FELL_BACK)
        .map(|line| {
            assert_eq!(line["level"], "ERROR", "{line}");
            let field = |name: &str| line[name].as_str().expect(name).to_string();
            (field("item"), field("field"), field("found"), field("used"))
        })
        .collect();
    logged.sort();
    let mut expected = expected.to_vec();
    expected.sort();
    assert_eq!(logged, expected, "the fallbacks logged, once each");
}

/// `call-types check` lists exactly `expected` and exits 1.
#[track_caller]
fn assert_checked(server: &Server, expected: &[Fell]) {
    let run = server.admin(&["call-types", "check", "--json"]);
    assert_eq!(run.code, Some(1), "{run:#?}");
    let mut listed: Vec<Fell> = run.json()["fallbacks"]
        .as_array()
        .expect("fallbacks")
        .iter()
        .map(|f| {
            let field = |name: &str| f[name].as_str().expect(name).to_string();
            (field("item"), field("field"), field("found"), field("used"))
        })
        .collect();
    listed.sort();
    let mut expected = expected.to_vec();
    expected.sort();
    assert_eq!(listed, expected);
    // And the table for people names them too.
    let table = server.admin(&["call-types", "check"]);
    assert_eq!(table.code, Some(1));
    for (item, field, ..) in &expected {
        assert!(
            table.stdout.contains(item.trim()) && table.stdout.contains(field.as_str()),
            "{}",
            table.stdout
        );
    }
}

/// Every seeded call type but `edited` is on the wire as before the edit,
/// in the call-types list and in its `type` object.
#[track_caller]
fn others_unchanged(
    before: &Before,
    after: &BTreeMap<String, Value>,
    listed: &Value,
    edited: &[&str],
) {
    for name in CALL_TYPE_NAMES.iter().filter(|n| !edited.contains(n)) {
        assert_eq!(after[*name], before.types[*name], "{name} changed");
        assert_eq!(listed[*name], before.listed[*name], "{name} changed");
    }
}

// ---------------------------------------------------------------------------
// The hand edits of issue 24
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_priority_typed_as_text_keeps_normalruf_below_notruf() {
    let before = before_the_edit().await;
    let server = &before.server;
    edit_call_type(server, "Normalruf", &[("priority", V::S("high"))]).await;

    let after = open_each(server, &CALL_TYPE_NAMES).await;
    // The seeded priority of that name, never 0 above Notruf's 1.
    assert_eq!(after["Normalruf"]["priority"], 3);
    let mut normalruf = before.types["Normalruf"].clone();
    normalruf["priority"] = json!(3);
    assert_eq!(after["Normalruf"], normalruf);
    let order = display_order(server, &before.token).await;
    assert_order(&order, &CALL_TYPE_NAMES, &after);
    let position = |name: &str| order.iter().position(|n| n == name).unwrap();
    assert!(position("Notruf") < position("Normalruf"));
    assert!(position("WC") < position("Normalruf"));

    let listed = server.get(CALL_TYPES).await.data();
    others_unchanged(&before, &after, &listed, &["Normalruf"]);
    let expected = [fell("Normalruf", "priority", "\"high\"", "3")];
    assert_fell_back(server, &expected);
    assert_checked(server, &expected);
}

#[tokio::test]
async fn a_colour_name_and_notify_typed_as_text_keep_wc_coloured_and_loud() {
    let before = before_the_edit().await;
    let server = &before.server;
    edit_call_type(
        server,
        "WC",
        &[("color", V::S("red")), ("notify", V::S("yes"))],
    )
    .await;

    let after = open_each(server, &CALL_TYPE_NAMES).await;
    assert_eq!(
        after["WC"]["color"], "#e67e22",
        "the seeded colour, #rrggbb"
    );
    assert_eq!(after["WC"]["notify"], true, "never silenced");
    assert_eq!(after["WC"], before.types["WC"]);
    let order = display_order(server, &before.token).await;
    assert_order(&order, &CALL_TYPE_NAMES, &after);

    let listed = server.get(CALL_TYPES).await.data();
    others_unchanged(&before, &after, &listed, &["WC"]);
    let expected = [
        fell("WC", "color", "\"red\"", "\"#e67e22\""),
        fell("WC", "notify", "\"yes\"", "true"),
    ];
    assert_fell_back(server, &expected);
    assert_checked(server, &expected);
}

/// An id of the generated kind: a whole number no other type has, safe in
/// JavaScript, the same on every read.
#[track_caller]
fn assert_own_id(after: &BTreeMap<String, Value>, name: &str) -> i64 {
    let id = after[name]["id"].as_i64().expect("a whole number");
    assert!((1..=(1_i64 << 53) - 1).contains(&id), "{id}");
    let holders = after.values().filter(|t| t["id"] == id).count();
    assert_eq!(holders, 1, "{name}'s id {id} is its own");
    id
}

#[tokio::test]
async fn a_new_type_without_an_id_gets_a_stable_id_of_its_own() {
    if !on_dynamodb() {
        eprintln!(
            "{}: skipped on SQLite, whose id column is NOT NULL",
            module_path!()
        );
        return;
    }
    let before = before_the_edit().await;
    let server = &before.server;
    new_call_type(server, "Sonderruf", &[("id", V::Absent)]).await;

    let names: Vec<&str> = CALL_TYPE_NAMES
        .iter()
        .copied()
        .chain(["Sonderruf"])
        .collect();
    let after = open_each(server, &names).await;
    let id = assert_own_id(&after, "Sonderruf");
    assert_eq!(after["Sonderruf"]["priority"], 4, "the rest as typed");
    // The same id on the next read (and in every process: derived from the name).
    assert_eq!(
        open_each(server, &["Sonderruf"]).await["Sonderruf"]["id"],
        id
    );
    assert_order(&display_order(server, &before.token).await, &names, &after);

    let listed = server.get(CALL_TYPES).await.data();
    assert_eq!(listed["Sonderruf"], "");
    others_unchanged(&before, &after, &listed, &[]);
    let expected = [
        fell("Sonderruf", "id", "missing", &id.to_string()),
        no_escalation("Sonderruf"),
    ];
    assert_fell_back(server, &expected);
    assert_checked(server, &expected);
}

#[tokio::test]
async fn a_new_type_with_notrufs_id_gets_its_own_and_notruf_keeps_7() {
    if !on_dynamodb() {
        eprintln!(
            "{}: skipped on SQLite, whose id column is UNIQUE",
            module_path!()
        );
        return;
    }
    let before = before_the_edit().await;
    let server = &before.server;
    assert_eq!(before.types["Notruf"]["id"], 7);
    new_call_type(server, "Doppelt", &[("id", V::N("7"))]).await;

    let names: Vec<&str> = CALL_TYPE_NAMES.iter().copied().chain(["Doppelt"]).collect();
    let after = open_each(server, &names).await;
    assert_eq!(after["Notruf"], before.types["Notruf"], "Notruf keeps 7");
    let id = assert_own_id(&after, "Doppelt");
    assert_order(&display_order(server, &before.token).await, &names, &after);

    let listed = server.get(CALL_TYPES).await.data();
    others_unchanged(&before, &after, &listed, &[]);
    let expected = [
        fell("Doppelt", "id", "7", &id.to_string()),
        no_escalation("Doppelt"),
    ];
    assert_fell_back(server, &expected);
    assert_checked(server, &expected);
}

#[tokio::test]
async fn an_id_and_a_priority_of_ten_to_the_twentieth_stay_below_notruf() {
    let before = before_the_edit().await;
    let server = &before.server;
    let huge = "100000000000000000000";
    new_call_type(
        server,
        "Riesig",
        &[("id", V::N(huge)), ("priority", V::N(huge))],
    )
    .await;

    let names: Vec<&str> = CALL_TYPE_NAMES.iter().copied().chain(["Riesig"]).collect();
    let after = open_each(server, &names).await;
    let id = assert_own_id(&after, "Riesig");
    // No seeded priority of that name: 5, less urgent than Notruf, WC, Normalruf.
    assert_eq!(after["Riesig"]["priority"], 5);
    let order = display_order(server, &before.token).await;
    assert_order(&order, &names, &after);
    let position = |name: &str| order.iter().position(|n| n == name).unwrap();
    assert!(position("Notruf") < position("Riesig"));
    assert!(position("Normalruf") < position("Riesig"));

    let listed = server.get(CALL_TYPES).await.data();
    others_unchanged(&before, &after, &listed, &[]);
    let expected = [
        fell("Riesig", "id", huge, &id.to_string()),
        fell("Riesig", "priority", huge, "5"),
        no_escalation("Riesig"),
    ];
    assert_fell_back(server, &expected);
    assert_checked(server, &expected);
}

#[tokio::test]
async fn a_blank_name_is_skipped_neither_listed_nor_opened() {
    let before = before_the_edit().await;
    let server = &before.server;
    new_call_type(server, " ", &[]).await;

    let response = server.get(CALL_TYPES).await;
    assert_eq!(object_keys(&response.raw_data()), CALL_TYPE_NAMES);
    let listed = response.data();
    let response = server
        .display(&central(), &address_of("Notruf"), r#"{"event":" "}"#)
        .await;
    response.expect_status(422);
    let after = open_each(server, &CALL_TYPE_NAMES).await;
    assert_order(
        &display_order(server, &before.token).await,
        &CALL_TYPE_NAMES,
        &after,
    );
    others_unchanged(&before, &after, &listed, &[]);
    let expected = [fell(" ", "name", "\" \"", "skipped")];
    assert_fell_back(server, &expected);
    assert_checked(server, &expected);
}
