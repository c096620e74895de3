//! `POST /api/v1/display`: opening and closing calls (spec 2.2, 2.3, 3, 4.1;
//! DECISIONS §4, §5), in sandbox mode.

use blackbox_tests::*;

/// The largest call id DECISIONS §5 allows (2^53 - 1).
const MAX_SAFE_ID: i64 = 9_007_199_254_740_991;

#[tokio::test]
async fn open_returns_201_with_the_call_record() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let response = server
        .display(
            &c,
            "00:0a:95:9d:68:16",
            r#"{"event":"Notruf","position":"Zimmer 101","section":"S1","attribute":"bed-1","code":"C-7"}"#,
        )
        .await;
    response.expect_status(201);
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(object_keys(&response.text), ["success", "data"]);
    assert_eq!(object_keys(&response.raw_data()), CALL_KEYS);
    let call = response.data();
    let id = call["id"].as_i64().expect("id is an integer");
    assert!((1..=MAX_SAFE_ID).contains(&id), "id {id} out of range");
    assert_eq!(call["address"], "00:0a:95:9d:68:16");
    assert_eq!(call["position"], "Zimmer 101");
    assert_eq!(call["section"], "S1");
    assert_eq!(call["attribute"], "bed-1");
    assert_eq!(call["element_code"], "C-7");
    assert_eq!(call["element_name"], "");
    assert_now_in(call["opened_at"].as_str().unwrap(), "Europe/Berlin");
    assert_eq!(call["closed_at"], Value::Null);
    assert_eq!(call["duration"], 0);

    // The store has it, open, with the same fields.
    let state = server.state(&c).await;
    let stored = call_by_id(&state["calls"], id).expect("call stored");
    for key in CALL_KEYS {
        if key != "duration" {
            assert_eq!(stored[key], call[key], "{key}");
        }
    }
    assert_eq!(stored["type"]["name"], "Notruf");
}

#[tokio::test]
async fn open_without_optional_fields_has_nulls_and_empty_codes() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let response = server.display(&c, "A1", r#"{"event":"WC"}"#).await;
    response.expect_status(201);
    let call = response.data();
    assert_eq!(call["position"], Value::Null);
    assert_eq!(call["section"], Value::Null);
    assert_eq!(call["attribute"], Value::Null);
    assert_eq!(call["element_code"], "");
    assert_eq!(call["element_name"], "");
    assert!(call.get("type").is_none(), "type only with include=type");
}

#[tokio::test]
async fn open_with_include_type_adds_the_type_object() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let response = server
        .display_query("include=type", &c, "A1", r#"{"event":"Notruf"}"#)
        .await;
    response.expect_status(201);
    let mut keys: Vec<&str> = CALL_KEYS.to_vec();
    keys.push("type");
    assert_eq!(object_keys(&response.raw_data()), keys);
    let call = response.data();
    let kind = &call["type"];
    assert_eq!(kind["name"], "Notruf");
    assert!(kind["id"].is_i64());
    assert!(kind["urgency"].is_string());
    assert!(kind["priority"].is_i64());
    assert!(kind["type"].is_string());
    assert!(kind["notify"].is_boolean());
    assert!(kind["notification_interval"].is_i64());
    assert!(kind["notification_maxloops"].is_i64());
    assert!(kind["notification_sound"].is_string());
    let color = kind["color"].as_str().unwrap();
    assert!(
        color.len() == 7
            && color.starts_with('#')
            && color[1..].chars().all(|c| c.is_ascii_hexdigit()),
        "colour {color} is not #rrggbb"
    );
}

#[tokio::test]
async fn type_objects_follow_spec_order_and_notruf_and_flucht_are_most_urgent() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let mut priorities = Vec::new();
    let mut ids = Vec::new();
    for (i, name) in CALL_TYPE_NAMES.iter().enumerate() {
        let data = format!(r#"{{"event":{}}}"#, json_string(name));
        let response = server
            .display_query("include=type", &c, &format!("T{i}"), &data)
            .await;
        response.expect_status(201);
        let raw = response.raw_data();
        let record = response.data();
        let raw_type = serde_json::to_string(&record["type"]).unwrap();
        assert_eq!(record["type"]["name"], *name);
        // Key order of the type object as in the spec table 2.3.
        let type_text = &raw[raw.find(r#""type":{"#).expect("type object") + 7..raw.len() - 1];
        assert_eq!(
            object_keys(type_text),
            [
                "id",
                "name",
                "urgency",
                "priority",
                "type",
                "color",
                "notify",
                "notification_interval",
                "notification_maxloops",
                "notification_sound"
            ],
            "{raw_type}"
        );
        priorities.push((record["type"]["priority"].as_i64().unwrap(), *name));
        ids.push(record["type"]["id"].as_i64().unwrap());
    }
    let top = priorities.iter().map(|(p, _)| *p).min().unwrap();
    let most_urgent: Vec<&str> = priorities
        .iter()
        .filter(|(p, _)| *p == top)
        .map(|(_, n)| *n)
        .collect();
    assert_eq!(most_urgent, ["Notruf", "Flucht"]);
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 10, "type ids are distinct");
}

#[tokio::test]
async fn reopen_of_an_open_event_is_200_with_the_same_call_and_applies_element_fields() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let first = server
        .display(
            &c,
            "A1",
            r#"{"event":"Notruf","battery":50,"position":"Bett 1"}"#,
        )
        .await;
    first.expect_status(201);
    let first = first.data();

    let again = server
        .display(
            &c,
            "A1",
            r#"{"event":"Notruf","battery":20,"reachable":false,"position":"Bett 2"}"#,
        )
        .await;
    again.expect_status(200);
    let again_call = again.data();
    assert_eq!(again_call["id"], first["id"]);
    assert_eq!(again_call["opened_at"], first["opened_at"]);
    assert_eq!(again_call["closed_at"], Value::Null);
    assert_eq!(object_keys(&again.raw_data()), CALL_KEYS);

    let state = server.state(&c).await;
    assert_eq!(state["calls"].as_array().unwrap().len(), 1, "{state}");
    let element = &state["elements"][0];
    assert_eq!(element["address"], "A1");
    assert_eq!(element["battery"], 20);
    assert_eq!(element["reachable"], false);
    assert_eq!(element["position"], "Bett 2");

    // With include=type the re-open shows the type too.
    let typed = server
        .display_query("include=type", &c, "A1", r#"{"event":"Notruf"}"#)
        .await;
    typed.expect_status(200);
    assert_eq!(typed.data()["id"], first["id"]);
    assert_eq!(typed.data()["type"]["name"], "Notruf");

    // Another event on the same address is a new call.
    let other = server.display(&c, "A1", r#"{"event":"WC"}"#).await;
    other.expect_status(201);
    assert_ne!(other.data()["id"], first["id"]);
}

#[tokio::test]
async fn close_closes_every_open_call_on_the_address_only() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let notruf = server.display(&c, "A1", r#"{"event":"Notruf"}"#).await;
    let wc = server.display(&c, "A1", r#"{"event":"WC"}"#).await;
    let other = server.display(&c, "B2", r#"{"event":"Notruf"}"#).await;
    for response in [&notruf, &wc, &other] {
        response.expect_status(201);
    }
    let (notruf, wc, other) = (notruf.data(), wc.data(), other.data());

    let closed = server.display(&c, "A1", r#"{"closed":true}"#).await;
    closed.expect_status(200);
    let records = closed.data();
    let records = records.as_array().expect("data is an array");
    let mut ids: Vec<i64> = records.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    ids.sort_unstable();
    let mut expected = vec![notruf["id"].as_i64().unwrap(), wc["id"].as_i64().unwrap()];
    expected.sort_unstable();
    assert_eq!(ids, expected);
    for (raw, record) in array_items(&closed.raw_data()).iter().zip(records) {
        assert_eq!(object_keys(raw), CALL_KEYS);
        assert_eq!(record["address"], "A1");
        assert_now_in(record["closed_at"].as_str().unwrap(), "Europe/Berlin");
        assert!(record.get("type").is_none());
    }

    let state = server.state(&c).await;
    for id in &expected {
        let call = call_by_id(&state["calls"], *id).unwrap();
        assert!(call["closed_at"].is_string(), "{call}");
    }
    let untouched = call_by_id(&state["calls"], other["id"].as_i64().unwrap()).unwrap();
    assert_eq!(untouched["closed_at"], Value::Null);

    // Nothing open any more: 200 with an empty list.
    let again = server.display(&c, "A1", r#"{"closed":true}"#).await;
    again.expect_status(200);
    assert_eq!(again.text, r#"{"success":true,"data":[]}"#);
}

#[tokio::test]
async fn close_on_an_address_without_calls_is_200_with_an_empty_list() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let response = server
        .display(&c, "nothing-here", r#"{"closed":true}"#)
        .await;
    response.expect_status(200);
    assert_eq!(response.text, r#"{"success":true,"data":[]}"#);
}

#[tokio::test]
async fn closed_true_wins_over_event() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let open = server.display(&c, "A1", r#"{"event":"WC"}"#).await;
    open.expect_status(201);
    let id = open.data()["id"].clone();
    let response = server
        .display(&c, "A1", r#"{"event":"Notruf","closed":true}"#)
        .await;
    response.expect_status(200);
    let data = response.data();
    assert_eq!(data.as_array().unwrap().len(), 1);
    assert_eq!(data[0]["id"], id);
    let state = server.state(&c).await;
    assert_eq!(
        state["calls"].as_array().unwrap().len(),
        1,
        "nothing opened"
    );
    assert!(state["calls"][0]["closed_at"].is_string());
}

#[tokio::test]
async fn close_with_include_type_shows_the_type_in_every_record() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    server
        .display(&c, "A1", r#"{"event":"Notruf"}"#)
        .await
        .expect_status(201);
    server
        .display(&c, "A1", r#"{"event":"Störung"}"#)
        .await
        .expect_status(201);
    let response = server
        .display_query("include=type", &c, "A1", r#"{"closed":true}"#)
        .await;
    response.expect_status(200);
    let mut names: Vec<String> = response
        .data()
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["type"]["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["Notruf", "Störung"]);
    for raw in array_items(&response.raw_data()) {
        assert_eq!(object_keys(&raw).last().map(String::as_str), Some("type"));
    }
}

#[tokio::test]
async fn dated_close_leaves_a_later_opened_call_open_and_replays_close_nothing_new() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    // Dated within the last week, the range the service accepts (DECISIONS §5).
    let clock = WireClock::berlin();
    let (eight, nine, half_past_nine, ten) = (
        clock.at(-3 * 3600),
        clock.at(-2 * 3600),
        clock.at(-3 * 1800),
        clock.at(-3600),
    );
    let early = server
        .display(
            &c,
            "A1",
            &format!(r#"{{"event":"Notruf","created_at":"{eight}"}}"#),
        )
        .await;
    early.expect_status(201);
    let early_id = early.data()["id"].as_i64().unwrap();
    assert_eq!(early.data()["opened_at"], eight.as_str());
    let late = server
        .display(
            &c,
            "A1",
            &format!(r#"{{"event":"WC","created_at":"{ten}"}}"#),
        )
        .await;
    late.expect_status(201);
    let late_id = late.data()["id"].as_i64().unwrap();

    let close = format!(r#"{{"closed":true,"closed_at":"{nine}"}}"#);
    let response = server.display(&c, "A1", &close).await;
    response.expect_status(200);
    assert_eq!(
        response.text,
        format!(
            r#"{{"success":true,"data":[{{"id":{early_id},"address":"A1","position":null,"section":null,"attribute":null,"element_code":"","element_name":"","opened_at":"{eight}","closed_at":"{nine}","duration":3600}}]}}"#
        )
    );
    let state = server.state(&c).await;
    assert_eq!(
        call_by_id(&state["calls"], late_id).unwrap()["closed_at"],
        Value::Null
    );

    // A new Notruf opened after the close time; the same close replayed
    // closes nothing.
    let reopened = server
        .display(
            &c,
            "A1",
            &format!(r#"{{"event":"Notruf","created_at":"{half_past_nine}"}}"#),
        )
        .await;
    reopened.expect_status(201);
    let replay = server.display(&c, "A1", &close).await;
    replay.expect_status(200);
    assert_eq!(replay.text, r#"{"success":true,"data":[]}"#);
    let state = server.state(&c).await;
    let open: Vec<i64> = state["calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|call| call["closed_at"].is_null())
        .map(|call| call["id"].as_i64().unwrap())
        .collect();
    let mut open_sorted = open.clone();
    open_sorted.sort_unstable();
    let mut expected = vec![late_id, reopened.data()["id"].as_i64().unwrap()];
    expected.sort_unstable();
    assert_eq!(open_sorted, expected);

    // An undated close closes the rest.
    let rest = server.display(&c, "A1", r#"{"closed":true}"#).await;
    rest.expect_status(200);
    assert_eq!(rest.data().as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn created_at_is_the_opening_time_and_duration_counts_from_it() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let ninety_ago = (now_in("Europe/Berlin") - chrono::Duration::seconds(90))
        .format("%Y-%m-%d %H:%M:%S")
        .to_string();
    let data = format!(r#"{{"event":"Normalruf","created_at":"{ninety_ago}"}}"#);
    let response = server.display(&c, "A1", &data).await;
    response.expect_status(201);
    let call = response.data();
    assert_eq!(call["opened_at"], ninety_ago.as_str());
    let duration = call["duration"].as_i64().unwrap();
    assert!(
        (88..=95).contains(&duration),
        "duration {duration} of a call opened 90 s ago"
    );
    // Closed: whole seconds from opened_at to closed_at.
    let clock = WireClock::berlin();
    let (opened_at, closed_at) = (clock.at(-3600), clock.at(-3600 + 90));
    let closed = server
        .display(
            &c,
            "B1",
            &format!(r#"{{"event":"Normalruf","created_at":"{opened_at}"}}"#),
        )
        .await;
    closed.expect_status(201);
    let response = server
        .display(
            &c,
            "B1",
            &format!(r#"{{"closed":true,"closed_at":"{closed_at}"}}"#),
        )
        .await;
    response.expect_status(200);
    assert_eq!(response.data()[0]["duration"], 90);
    assert_eq!(response.data()[0]["opened_at"], opened_at.as_str());
    assert_eq!(response.data()[0]["closed_at"], closed_at.as_str());
}

#[tokio::test]
async fn display_status_fields_update_the_element() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    server
        .display(
            &c,
            "A1",
            r#"{"event":"Notruf","battery":80.0,"reachable":false,"position":"Flur"}"#,
        )
        .await
        .expect_status(201);
    let state = server.state(&c).await;
    let element = &state["elements"][0];
    assert_eq!(element["address"], "A1");
    assert_eq!(element["battery"], 80);
    assert_eq!(element["reachable"], false);
    assert_eq!(element["position"], "Flur");

    // A close carries them too.
    server
        .display(&c, "A1", r#"{"closed":true,"battery":12.5}"#)
        .await
        .expect_status(200);
    let state = server.state(&c).await;
    assert_eq!(state["elements"][0]["battery"], 12.5);
    assert_eq!(state["elements"][0]["position"], "Flur");
}

#[tokio::test]
async fn position_defaults_to_the_elements_last_known_position() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    server
        .element(&c, "A1", r#"{"position":"Bett 3"}"#)
        .await
        .expect_status(200);
    let open = server.display(&c, "A1", r#"{"event":"Notruf"}"#).await;
    open.expect_status(201);
    assert_eq!(open.data()["position"], "Bett 3");
    let sent = server
        .display(&c, "A1", r#"{"event":"WC","position":"Bad"}"#)
        .await;
    sent.expect_status(201);
    assert_eq!(sent.data()["position"], "Bad");
}

#[tokio::test]
async fn null_counts_as_absent() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let open = server
        .display(
            &c,
            "A1",
            r#"{"event":"Notruf","closed":null,"position":null,"battery":null,"created_at":null}"#,
        )
        .await;
    open.expect_status(201);
    assert_eq!(open.data()["position"], Value::Null);
    assert_now_in(open.data()["opened_at"].as_str().unwrap(), "Europe/Berlin");
    let close = server
        .display(&c, "A1", r#"{"event":null,"closed":true,"closed_at":null}"#)
        .await;
    close.expect_status(200);
    assert_eq!(close.data()[0]["id"], open.data()["id"]);
}

#[tokio::test]
async fn text_fields_take_255_characters_not_bytes() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let long = "ä".repeat(255);
    let data = format!(r#"{{"event":"Notruf","position":"{long}","section":"{long}"}}"#);
    let response = server.display(&c, "A1", &data).await;
    response.expect_status(201);
    assert_eq!(response.data()["position"], long.as_str());
    assert_eq!(response.data()["section"], long.as_str());
}

#[tokio::test]
async fn unknown_event_is_422_data_event() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let response = server.display(&c, "A1", r#"{"event":"Feueralarm"}"#).await;
    response.expect_status(422);
    assert_eq!(
        response.text,
        validation_body(&[(
            "data.event",
            &["Der gewählte Wert für data.event ist ungültig."]
        )])
    );
    // Call type names are case sensitive.
    let response = server.display(&c, "A1", r#"{"event":"notruf"}"#).await;
    response.expect_status(422);
    let state = server.state(&c).await;
    assert_eq!(state["calls"], json!([]), "nothing stored");
}

#[tokio::test]
async fn every_call_type_name_opens_a_call() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    for name in CALL_TYPE_NAMES {
        let data = format!(r#"{{"event":{}}}"#, json_string(name));
        server.display(&c, "A1", &data).await.expect_status(201);
    }
    let state = server.state(&c).await;
    let mut names: Vec<&str> = state["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| call["type"]["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    let mut expected = CALL_TYPE_NAMES.to_vec();
    expected.sort_unstable();
    assert_eq!(names, expected);
}
