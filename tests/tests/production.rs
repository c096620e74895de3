//! Production mode (DECISIONS §1, §5, §6, §8): registered elements only, data
//! shared by every consumer of the installation, no sandbox endpoints, no debug.

use blackbox_tests::*;
use reqwest::Method;

const CENTRAL: &str = "11111111-2222-4333-8444-555555555555";
const GATEWAY: &str = "66666666-7777-4888-9999-aaaaaaaaaaaa";
const ROOM_101: &str = "00:11:22:33:44:55";
const ROOM_102: &str = "00:11:22:33:44:66";

fn central() -> Consumer {
    Consumer::new(CENTRAL, "central-secret")
}

fn gateway() -> Consumer {
    Consumer::new(GATEWAY, "gateway-secret")
}

fn production() -> Server {
    Server::production(
        Seed::new()
            .consumer(CENTRAL, &["central-secret"], false)
            .consumer(GATEWAY, &["gateway-secret"], false)
            .element(ROOM_101, "Z101", "Zimmer 101")
            .element(ROOM_102, "Z102", "Zimmer 102 (Frau M.)"),
    )
}

/// Reads an element in production: a signed element request that sends no
/// status field changes nothing and answers with the element.
async fn read_element(server: &Server, address: &str) -> Value {
    let response = server.element(&central(), address, "{}").await;
    response.expect_status(200);
    response.data()
}

#[tokio::test]
async fn element_code_name_and_position_come_from_the_registered_element() {
    let server = production();
    let response = server
        .display(&central(), ROOM_102, r#"{"event":"Notruf"}"#)
        .await;
    response.expect_status(201);
    let call = response.data();
    assert_eq!(call["element_code"], "Z102");
    assert_eq!(call["element_name"], "Zimmer 102 (Frau M.)");
    assert_eq!(call["position"], Value::Null);

    // data.code wins over the element's code; the name stays the element's.
    let response = server
        .display(&central(), ROOM_102, r#"{"event":"WC","code":"X9"}"#)
        .await;
    response.expect_status(201);
    assert_eq!(response.data()["element_code"], "X9");
    assert_eq!(response.data()["element_name"], "Zimmer 102 (Frau M.)");

    // The element's last known position is the default position.
    server
        .element(&gateway(), ROOM_102, r#"{"position":"Bett am Fenster"}"#)
        .await
        .expect_status(200);
    let response = server
        .display(&central(), ROOM_102, r#"{"event":"Störung"}"#)
        .await;
    response.expect_status(201);
    assert_eq!(response.data()["position"], "Bett am Fenster");
    assert_eq!(response.data()["element_code"], "Z102");
}

#[tokio::test]
async fn element_records_show_the_registered_code_and_name() {
    let server = production();
    let response = server
        .element(&gateway(), ROOM_101, r#"{"battery":64,"reachable":true}"#)
        .await;
    response.expect_status(200);
    let element = response.data();
    assert_eq!(element["address"], ROOM_101);
    assert_eq!(element["code"], "Z101");
    assert_eq!(element["name"], "Zimmer 101");
    assert_eq!(element["battery"], 64);
    assert_eq!(object_keys(&response.raw_data()), ELEMENT_KEYS);
    let again = read_element(&server, ROOM_101).await;
    assert_eq!(again["battery"], 64);
    assert_eq!(again["reachable"], true);
}

#[tokio::test]
async fn unknown_element_is_422_address() {
    let server = production();
    let expected =
        validation_body(&[("address", &["Der gewählte Wert für address ist ungültig."])]);
    for data in [r#"{"event":"Notruf"}"#, r#"{"closed":true}"#] {
        let response = server.display(&central(), "AA:BB:CC:DD:EE:FF", data).await;
        response.expect_status(422);
        assert_eq!(response.text, expected, "{data}");
    }
    let response = server
        .element(&central(), "AA:BB:CC:DD:EE:FF", r#"{"battery":50}"#)
        .await;
    response.expect_status(422);
    assert_eq!(response.text, expected);

    // With an unknown event as well: both state errors at once.
    let response = server
        .display(&central(), "AA:BB:CC:DD:EE:FF", r#"{"event":"Feueralarm"}"#)
        .await;
    response.expect_status(422);
    assert_eq!(
        response.text,
        validation_body(&[
            ("address", &["Der gewählte Wert für address ist ungültig."]),
            (
                "data.event",
                &["Der gewählte Wert für data.event ist ungültig."]
            ),
        ])
    );
    // A wrong hash is checked first.
    let wrong = Consumer::new(CENTRAL, "nope");
    let response = server
        .display(&wrong, "AA:BB:CC:DD:EE:FF", r#"{"event":"Notruf"}"#)
        .await;
    response.expect_status(400);
    assert_eq!(response.text, invalid_hash_body());
}

#[tokio::test]
async fn unknown_event_is_422_data_event() {
    let server = production();
    let response = server
        .display(&central(), ROOM_101, r#"{"event":"Feueralarm"}"#)
        .await;
    response.expect_status(422);
    assert_eq!(
        response.text,
        validation_body(&[(
            "data.event",
            &["Der gewählte Wert für data.event ist ungültig."]
        )])
    );
}

#[tokio::test]
async fn multi_form_with_an_unknown_target_writes_nothing() {
    let server = production();
    let data = r#"[{"target":"00:11:22:33:44:55","battery":10},{"target":"unknown-1","battery":20},{"target":"00:11:22:33:44:66","reachable":false},{"target":"unknown-2"}]"#;
    let response = server.element_multi(&gateway(), data).await;
    response.expect_status(422);
    assert_eq!(
        response.text,
        validation_body(&[
            (
                "data.1.address",
                &["Der gewählte Wert für data.1.address ist ungültig."]
            ),
            (
                "data.3.address",
                &["Der gewählte Wert für data.3.address ist ungültig."]
            ),
        ])
    );
    assert_eq!(
        read_element(&server, ROOM_101).await["battery"],
        Value::Null
    );
    assert_eq!(
        read_element(&server, ROOM_102).await["reachable"],
        Value::Null
    );

    // The known targets alone are written.
    let data = r#"[{"target":"00:11:22:33:44:55","battery":10},{"target":"00:11:22:33:44:66","reachable":false}]"#;
    let response = server.element_multi(&gateway(), data).await;
    response.expect_status(200);
    assert_eq!(read_element(&server, ROOM_101).await["battery"], 10);
    assert_eq!(read_element(&server, ROOM_102).await["reachable"], false);
}

#[tokio::test]
async fn all_consumers_share_the_installations_calls() {
    let server = production();
    let open = server
        .display(&central(), ROOM_101, r#"{"event":"Notruf"}"#)
        .await;
    open.expect_status(201);
    let id = open.data()["id"].clone();

    // Another consumer's open of the same event is the same call.
    let again = server
        .display(&gateway(), ROOM_101, r#"{"event":"Notruf","battery":30}"#)
        .await;
    again.expect_status(200);
    assert_eq!(again.data()["id"], id);
    assert_eq!(read_element(&server, ROOM_101).await["battery"], 30);

    // And its close closes it.
    let close = server
        .display(&gateway(), ROOM_101, r#"{"closed":true}"#)
        .await;
    close.expect_status(200);
    let closed = close.data();
    assert_eq!(closed.as_array().unwrap().len(), 1);
    assert_eq!(closed[0]["id"], id);
    assert_eq!(closed[0]["element_name"], "Zimmer 101");
}

#[tokio::test]
async fn sandbox_endpoints_and_the_page_are_404() {
    let server = production();
    let body = error_body(
        "not_found",
        404,
        "Die angeforderte Ressource wurde nicht gefunden.",
    );
    let state_query = format!(
        "{SANDBOX_STATE}?consumer={CENTRAL}&hash={}",
        central().proof()
    );
    for (method, path) in [
        (Method::GET, "/"),
        (Method::POST, "/"),
        (Method::POST, SANDBOX_CONSUMERS),
        (Method::GET, SANDBOX_CONSUMERS),
        (Method::GET, SANDBOX_STATE),
        (Method::GET, state_query.as_str()),
    ] {
        let response = server
            .request(method.clone(), path, Some("application/json"), &[], "")
            .await;
        assert_eq!(response.status, 404, "{method} {path}");
        assert_eq!(response.text, body, "{method} {path}");
    }
}

#[tokio::test]
async fn sha1_from_a_sha256_only_consumer_is_invalid() {
    let server = production();
    let data = r#"{"event":"Notruf"}"#;
    let hash = hmac_sha1_hex("central-secret", &signing_string(ROOM_101, CENTRAL, data));
    let response = server
        .post(DISPLAY, envelope(Some(ROOM_101), CENTRAL, &hash, data))
        .await;
    response.expect_status(400);
    assert_eq!(response.text, invalid_hash_body());
}
