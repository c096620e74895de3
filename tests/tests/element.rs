//! `POST /api/v1/element` (spec 2.4, 4.2; DECISIONS §4, §6) in sandbox mode:
//! single and multi form, only sent fields change, all or nothing.

use blackbox_tests::*;

#[tokio::test]
async fn single_form_returns_the_element() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let response = server
        .element(
            &c,
            "E1",
            r#"{"battery":80.0,"position":"Flur","reachable":true}"#,
        )
        .await;
    response.expect_status(200);
    let raw = response.raw_data();
    assert_eq!(object_keys(&raw), ELEMENT_KEYS);
    let updated_at = response.data()["updated_at"].as_str().unwrap().to_string();
    assert_now_in(&updated_at, "Europe/Berlin");
    assert_eq!(
        response.text,
        format!(
            r#"{{"success":true,"data":{{"address":"E1","code":"","name":"","battery":80,"position":"Flur","reachable":true,"updated_at":"{updated_at}"}}}}"#
        )
    );
}

#[tokio::test]
async fn each_field_may_be_sent_alone_and_only_sent_fields_change() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let response = server.element(&c, "E1", r#"{"battery":55.5}"#).await;
    response.expect_status(200);
    let element = response.data();
    assert_eq!(element["battery"], 55.5);
    assert_eq!(element["position"], Value::Null);
    assert_eq!(element["reachable"], Value::Null);

    let response = server.element(&c, "E1", r#"{"reachable":false}"#).await;
    response.expect_status(200);
    assert_eq!(response.data()["battery"], 55.5);
    assert_eq!(response.data()["reachable"], false);

    let response = server.element(&c, "E1", r#"{"position":"Bad"}"#).await;
    response.expect_status(200);
    let element = response.data();
    assert_eq!(element["battery"], 55.5);
    assert_eq!(element["reachable"], false);
    assert_eq!(element["position"], "Bad");

    // null is absent: nothing changes.
    let response = server
        .element(&c, "E1", r#"{"battery":null,"position":null}"#)
        .await;
    response.expect_status(200);
    assert_eq!(response.data()["battery"], 55.5);
    assert_eq!(response.data()["position"], "Bad");

    let state = server.state(&c).await;
    assert_eq!(state["elements"].as_array().unwrap().len(), 1);
    assert_eq!(state["elements"][0]["battery"], 55.5);
    assert_eq!(state["elements"][0]["reachable"], false);
    assert_eq!(state["elements"][0]["position"], "Bad");
}

#[tokio::test]
async fn battery_bounds_are_inclusive() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    for (sent, shown) in [("0", json!(0)), ("100", json!(100)), ("-0", json!(0))] {
        let response = server
            .element(&c, "E1", &format!(r#"{{"battery":{sent}}}"#))
            .await;
        response.expect_status(200);
        assert_eq!(response.data()["battery"], shown, "{sent}");
    }
    for sent in ["100.5", "-0.1", "1e3"] {
        let response = server
            .element(&c, "E1", &format!(r#"{{"battery":{sent}}}"#))
            .await;
        response.expect_status(422);
        assert_eq!(
            response.text,
            validation_body(&[(
                "data.battery",
                &["data.battery muss zwischen 0 und 100 liegen."]
            )])
        );
    }
}

#[tokio::test]
async fn multi_form_updates_every_target_and_merges_same_targets_in_order() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let data = r#"[
        {"target":"E1","battery":10,"position":"alt"},
        {"target":"E2","reachable":true},
        {"target":"E1","battery":20,"reachable":false},
        {"target":"E1","position":"neu"}
    ]"#;
    let response = server.element_multi(&c, data).await;
    response.expect_status(200);
    let items = array_items(&response.raw_data());
    assert_eq!(items.len(), 2, "one element per target: {}", response.text);
    for item in &items {
        assert_eq!(object_keys(item), ELEMENT_KEYS);
    }
    let elements = response.data();
    assert_eq!(elements[0]["address"], "E1");
    assert_eq!(elements[0]["battery"], 20);
    assert_eq!(elements[0]["reachable"], false);
    assert_eq!(elements[0]["position"], "neu");
    assert_eq!(elements[1]["address"], "E2");
    assert_eq!(elements[1]["reachable"], true);
    assert_eq!(elements[1]["battery"], Value::Null);

    let state = server.state(&c).await;
    let stored = state["elements"].as_array().unwrap();
    assert_eq!(stored.len(), 2);
    let e1 = stored.iter().find(|e| e["address"] == "E1").unwrap();
    assert_eq!(e1["battery"], 20);
    assert_eq!(e1["position"], "neu");
    assert_eq!(e1["reachable"], false);
}

#[tokio::test]
async fn multi_form_with_one_target_returns_an_array() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let response = server
        .element_multi(&c, r#"[{"target":"E1","battery":33}]"#)
        .await;
    response.expect_status(200);
    assert!(response.data().is_array());
    assert_eq!(response.data()[0]["battery"], 33);
}

#[tokio::test]
async fn a_bad_item_writes_nothing() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    server
        .element(&c, "E1", r#"{"battery":50}"#)
        .await
        .expect_status(200);
    let response = server
        .element_multi(
            &c,
            r#"[{"target":"E1","battery":10},{"target":"E2","reachable":true},{"target":"E3","battery":101}]"#,
        )
        .await;
    response.expect_status(422);
    assert_eq!(
        response.text,
        validation_body(&[(
            "data.2.battery",
            &["data.2.battery muss zwischen 0 und 100 liegen."]
        )])
    );
    let state = server.state(&c).await;
    let elements = state["elements"].as_array().unwrap();
    assert_eq!(elements.len(), 1, "E2 and E3 not created: {state}");
    assert_eq!(elements[0]["address"], "E1");
    assert_eq!(elements[0]["battery"], 50, "E1 unchanged");
}

#[tokio::test]
async fn a_wrong_hash_writes_nothing() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let data = r#"[{"target":"E1","battery":10}]"#;
    let response = server
        .post(ELEMENT, envelope(None, &c.id, &c.sign("E1", data), data))
        .await;
    response.expect_status(400);
    assert_eq!(response.json()["messages"][0]["code"], "invalid_hash");
    assert_eq!(server.state(&c).await["elements"], json!([]));
}
