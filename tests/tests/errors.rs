//! The error catalogue (spec 7, DECISIONS §3): every status and body, and the
//! order of the checks: 413 → 415 → 400 malformed → 422 structure → 400
//! invalid_hash → 422 state.

use blackbox_tests::*;
use reqwest::Method;

const C: &str = "6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f";

fn malformed_text(response: &Response) -> String {
    response.expect_status(400);
    let body = response.json();
    assert_eq!(object_keys(&response.text), ["success", "messages"]);
    assert_eq!(body["success"], false);
    let messages = body["messages"].as_array().expect("messages is an array");
    assert_eq!(messages.len(), 1, "{}", response.text);
    assert_eq!(
        messages[0]["code"], "malformed_request",
        "{}",
        response.text
    );
    assert_eq!(messages[0]["status_code"], 400);
    let text = messages[0]["errors"].as_str().expect("errors is a string");
    assert!(text.starts_with("Der Anfragekörper "), "{text}");
    text.to_string()
}

#[tokio::test]
async fn unknown_path_is_404() {
    let server = Server::sandbox();
    let not_found = error_body(
        "not_found",
        404,
        "Die angeforderte Ressource wurde nicht gefunden.",
    );
    for (method, path) in [
        (Method::GET, "/api/v1/nothing"),
        (Method::POST, "/api/v1/display/"),
        (Method::POST, "/api/v2/display"),
        (Method::GET, "/api/v1/display/call-types/"),
        (Method::DELETE, "/favicon.ico"),
    ] {
        let response = server
            .request(method.clone(), path, Some("application/json"), &[], "{}")
            .await;
        assert_eq!(response.status, 404, "{method} {path}: {}", response.text);
        assert_eq!(response.text, not_found, "{method} {path}");
        assert_eq!(response.header("content-type"), Some("application/json"));
    }
}

#[tokio::test]
async fn wrong_method_is_405_with_allow() {
    let server = Server::sandbox();
    for (method, path, allow) in [
        (Method::GET, DISPLAY, "POST"),
        (Method::PUT, DISPLAY, "POST"),
        (Method::GET, ELEMENT, "POST"),
        (Method::DELETE, ELEMENT, "POST"),
        (Method::POST, CALL_TYPES, "GET"),
        (Method::GET, SANDBOX_CONSUMERS, "POST"),
        (Method::POST, SANDBOX_STATE, "GET"),
        (Method::POST, "/", "GET"),
    ] {
        let response = server
            .request(method.clone(), path, Some("application/json"), &[], "{}")
            .await;
        assert_eq!(response.status, 405, "{method} {path}: {}", response.text);
        assert_eq!(response.header("allow"), Some(allow), "{method} {path}");
        assert_eq!(
            response.text,
            error_body(
                "method_not_allowed",
                405,
                &format!("Die Methode ist für diese Ressource nicht erlaubt. Erlaubt: {allow}.")
            ),
            "{method} {path}"
        );
    }
}

#[tokio::test]
async fn wrong_content_type_is_415() {
    let server = Server::sandbox();
    let body = error_body(
        "unsupported_media_type",
        415,
        "Der Content-Type muss application/json sein.",
    );
    let c = server.new_consumer().await;
    let signed = c.body("A1", r#"{"event":"Notruf"}"#);
    for path in [DISPLAY, ELEMENT] {
        for content_type in [
            Some("text/plain"),
            Some("application/x-www-form-urlencoded"),
            Some("application/jsonx"),
            Some("application/problem+json"),
            None,
        ] {
            let response = server
                .request(Method::POST, path, content_type, &[], signed.clone())
                .await;
            assert_eq!(response.status, 415, "{path} {content_type:?}");
            assert_eq!(response.text, body);
        }
    }
    // Nothing was opened by any of them.
    assert_eq!(server.state(&c).await["calls"], json!([]));
}

#[tokio::test]
async fn content_type_parameters_and_case_are_fine() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    for (i, content_type) in [
        "application/json; charset=utf-8",
        "Application/JSON",
        "APPLICATION/JSON;charset=UTF-8",
    ]
    .into_iter()
    .enumerate()
    {
        let response = server
            .request(
                Method::POST,
                DISPLAY,
                Some(content_type),
                &[],
                c.body(&format!("A{i}"), r#"{"event":"Notruf"}"#),
            )
            .await;
        assert_eq!(response.status, 201, "{content_type}: {}", response.text);
    }
}

#[tokio::test]
async fn body_over_256_kib_is_413_before_anything_else() {
    let server = Server::sandbox();
    let body = error_body(
        "payload_too_large",
        413,
        "Der Anfragekörper ist größer als 256 KiB.",
    );
    let oversized = vec![b'x'; 256 * 1024 + 1];
    for (path, content_type) in [
        (DISPLAY, Some("application/json")),
        (DISPLAY, Some("text/plain")),
        (ELEMENT, None),
    ] {
        let response = server
            .request(Method::POST, path, content_type, &[], oversized.clone())
            .await;
        assert_eq!(response.status, 413, "{path} {content_type:?}");
        assert_eq!(response.text, body);
    }
}

#[tokio::test]
async fn body_of_exactly_256_kib_is_accepted() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let mut body = c.body("A1", r#"{"event":"Notruf"}"#);
    // Whitespace after the object is still one JSON object.
    body.push_str(&" ".repeat(256 * 1024 - body.len()));
    assert_eq!(body.len(), 256 * 1024);
    server.post(DISPLAY, body).await.expect_status(201);
}

#[tokio::test]
async fn malformed_bodies_are_400() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let deep = format!(
        r#"{{"target":"A1","consumer":"{C}","hash":"ab","data":{{"x":{}1{}}}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", b"".to_vec()),
        ("not JSON", b"not json".to_vec()),
        ("truncated", br#"{"target":"A1","#.to_vec()),
        ("array", b"[]".to_vec()),
        ("string", br#""hello""#.to_vec()),
        ("number", b"42".to_vec()),
        ("null", b"null".to_vec()),
        ("two objects", b"{} {}".to_vec()),
        (
            "duplicate top-level key",
            format!(r#"{{"target":"A1","target":"B2","consumer":"{C}","hash":"ab","data":{{"event":"Notruf"}}}}"#).into_bytes(),
        ),
        (
            "duplicate key in data",
            format!(r#"{{"target":"A1","consumer":"{C}","hash":"ab","data":{{"event":"Notruf","event":"WC"}}}}"#).into_bytes(),
        ),
        (
            "duplicate key deep inside data",
            format!(r#"{{"target":"A1","consumer":"{C}","hash":"ab","data":{{"event":"Notruf","x":[{{"y":1,"y":1}}]}}}}"#).into_bytes(),
        ),
        (
            "number out of f64 range",
            format!(r#"{{"target":"A1","consumer":"{C}","hash":"ab","data":{{"event":"Notruf","battery":1e400}}}}"#).into_bytes(),
        ),
        (
            "lone surrogate escape",
            format!(r#"{{"target":"\ud800","consumer":"{C}","hash":"ab","data":{{"event":"Notruf"}}}}"#).into_bytes(),
        ),
        ("nesting too deep", deep.into_bytes()),
        (
            "duplicate key spelled with an escape",
            format!(r#"{{"target":"A1","consumer":"{C}","hash":"ab","data":{{"event":"Notruf","\u0065vent":"WC"}}}}"#).into_bytes(),
        ),
        ("trailing comma", br#"{"target":"A1",}"#.to_vec()),
        ("single quotes", b"{'target':'A1'}".to_vec()),
    ];
    for (what, body) in cases {
        for path in [DISPLAY, ELEMENT] {
            let response = server.post(path, body.clone()).await;
            assert_eq!(response.status, 400, "{what} on {path}: {}", response.text);
            malformed_text(&response);
        }
    }
    // A valid body with a duplicate key is still refused when signed right.
    let data = r#"{"event":"Notruf","event":"WC"}"#;
    let response = server.post(DISPLAY, c.body("A1", data)).await;
    malformed_text(&response);
    assert_eq!(server.state(&c).await["calls"], json!([]));
}

#[tokio::test]
async fn body_that_is_not_utf8_is_400() {
    let server = Server::sandbox();
    let mut body =
        format!(r#"{{"target":"A1","consumer":"{C}","hash":"ab","data":{{"event":""#).into_bytes();
    body.extend([0xff, 0xfe]);
    body.extend(br#""}}"#);
    let response = server.post(DISPLAY, body).await;
    response.expect_status(400);
    assert_eq!(
        response.text,
        error_body(
            "malformed_request",
            400,
            "Der Anfragekörper ist kein gültiges UTF-8."
        )
    );
}

#[tokio::test]
async fn order_415_before_400_and_400_before_422() {
    let server = Server::sandbox();
    // Not JSON and the wrong type: 415.
    let response = server
        .request(Method::POST, DISPLAY, Some("text/plain"), &[], "not json")
        .await;
    response.expect_status(415);
    // Malformed and structurally wrong (no target, no hash): 400.
    let response = server
        .post(DISPLAY, r#"{"data":{"event":"Notruf","event":"Notruf"}}"#)
        .await;
    malformed_text(&response);
}

#[tokio::test]
async fn missing_fields_are_reported_all_at_once() {
    let server = Server::sandbox();
    let response = server.post(DISPLAY, "{}").await;
    response.expect_status(422);
    assert_eq!(
        response.text,
        validation_body(&[
            ("address", &["address muss ausgefüllt werden."]),
            ("consumer", &["consumer muss ausgefüllt werden."]),
            ("hash", &["hash muss ausgefüllt werden."]),
            ("data", &["data muss ausgefüllt werden."]),
        ])
    );
    let response = server.post(DISPLAY, r#"{"data":{}}"#).await;
    response.expect_status(422);
    assert_eq!(
        response.text,
        validation_body(&[
            ("address", &["address muss ausgefüllt werden."]),
            ("consumer", &["consumer muss ausgefüllt werden."]),
            ("hash", &["hash muss ausgefüllt werden."]),
            (
                "data.event",
                &["data.event muss ausgefüllt werden, wenn data.closed nicht true ist."]
            ),
        ])
    );
}

#[tokio::test]
async fn missing_target_is_keyed_address_and_missing_event_data_event() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let data = r#"{"position":"x"}"#;
    let body = envelope(None, &c.id, &c.sign("", data), data);
    let response = server.post(DISPLAY, body).await;
    response.expect_status(422);
    assert_eq!(
        response.text,
        validation_body(&[
            ("address", &["address muss ausgefüllt werden."]),
            (
                "data.event",
                &["data.event muss ausgefüllt werden, wenn data.closed nicht true ist."]
            ),
        ])
    );
    // closed false still needs an event; blank and null are missing.
    for data in [
        r#"{"closed":false}"#,
        r#"{"event":"   "}"#,
        r#"{"event":""}"#,
        r#"{"event":null}"#,
    ] {
        let response = server.display(&c, "A1", data).await;
        response.expect_status(422);
        assert_eq!(
            response.text,
            validation_body(&[(
                "data.event",
                &["data.event muss ausgefüllt werden, wenn data.closed nicht true ist."]
            )]),
            "{data}"
        );
    }
    // Blank and null targets are missing too.
    for target in [json!("  "), json!(""), json!(null)] {
        let data = r#"{"event":"Notruf"}"#;
        let body = format!(
            r#"{{"target":{target},"consumer":"{}","hash":"{}","data":{data}}}"#,
            c.id,
            c.sign("", data)
        );
        let response = server.post(DISPLAY, body).await;
        response.expect_status(422);
        assert_eq!(
            response.text,
            validation_body(&[("address", &["address muss ausgefüllt werden."])]),
            "{target}"
        );
    }
}

#[tokio::test]
async fn every_display_field_error_in_order() {
    let server = Server::sandbox();
    let long = "x".repeat(256);
    let body = format!(
        r#"{{"target":5,"consumer":"not-a-uuid","hash":7,"data":{{"closed_at":"gestern","created_at":"2026-13-01 00:00:00","code":{long:?},"attribute":[],"battery":101,"reachable":"true","section":1,"position":{long:?},"closed":1,"event":3}}}}"#
    );
    let response = server.post(&format!("{DISPLAY}?include=all"), body).await;
    response.expect_status(422);
    assert_eq!(
        response.text,
        validation_body(&[
            ("address", &["address muss eine Zeichenkette sein."]),
            ("consumer", &["consumer muss ein UUID sein."]),
            ("hash", &["hash muss eine Zeichenkette sein."]),
            ("data.event", &["data.event muss eine Zeichenkette sein."]),
            ("data.closed", &["data.closed muss wahr oder falsch sein."]),
            (
                "data.position",
                &["data.position darf maximal 255 Zeichen haben."]
            ),
            (
                "data.section",
                &["data.section muss eine Zeichenkette sein."]
            ),
            (
                "data.reachable",
                &["data.reachable muss wahr oder falsch sein."]
            ),
            (
                "data.battery",
                &["data.battery muss zwischen 0 und 100 liegen."]
            ),
            (
                "data.attribute",
                &["data.attribute muss eine Zeichenkette sein."]
            ),
            ("data.code", &["data.code darf maximal 255 Zeichen haben."]),
            (
                "data.created_at",
                &["data.created_at muss dem Format Y-m-d H:i:s entsprechen."]
            ),
            (
                "data.closed_at",
                &["data.closed_at muss dem Format Y-m-d H:i:s entsprechen."]
            ),
            ("include", &["Der gewählte Wert für include ist ungültig."]),
        ])
    );
}

#[tokio::test]
async fn a_bad_closed_value_keeps_data_event_first() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let response = server.display(&c, "A1", r#"{"closed":1}"#).await;
    response.expect_status(422);
    assert_eq!(
        response.text,
        validation_body(&[
            (
                "data.event",
                &["data.event muss ausgefüllt werden, wenn data.closed nicht true ist."]
            ),
            ("data.closed", &["data.closed muss wahr oder falsch sein."]),
        ])
    );
}

#[tokio::test]
async fn single_field_errors_and_messages() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let cases: [(&str, &str, &str); 16] = [
        (
            r#"{"event":"Notruf","battery":"80"}"#,
            "data.battery",
            "data.battery muss eine Zahl sein.",
        ),
        (
            r#"{"event":"Notruf","battery":true}"#,
            "data.battery",
            "data.battery muss eine Zahl sein.",
        ),
        (
            r#"{"event":"Notruf","battery":-1}"#,
            "data.battery",
            "data.battery muss zwischen 0 und 100 liegen.",
        ),
        (
            r#"{"event":"Notruf","battery":100.01}"#,
            "data.battery",
            "data.battery muss zwischen 0 und 100 liegen.",
        ),
        (
            r#"{"event":"Notruf","reachable":1}"#,
            "data.reachable",
            "data.reachable muss wahr oder falsch sein.",
        ),
        (
            r#"{"event":"Notruf","reachable":"false"}"#,
            "data.reachable",
            "data.reachable muss wahr oder falsch sein.",
        ),
        (
            r#"{"event":"Notruf","closed":"true"}"#,
            "data.closed",
            "data.closed muss wahr oder falsch sein.",
        ),
        (
            r#"{"event":"Notruf","created_at":"2026-01-15T08:00:00"}"#,
            "data.created_at",
            "data.created_at muss dem Format Y-m-d H:i:s entsprechen.",
        ),
        (
            r#"{"event":"Notruf","created_at":"2026-1-15 08:00:00"}"#,
            "data.created_at",
            "data.created_at muss dem Format Y-m-d H:i:s entsprechen.",
        ),
        (
            r#"{"event":"Notruf","created_at":"2026-02-30 08:00:00"}"#,
            "data.created_at",
            "data.created_at muss dem Format Y-m-d H:i:s entsprechen.",
        ),
        (
            r#"{"event":"Notruf","created_at":1768464000}"#,
            "data.created_at",
            "data.created_at muss dem Format Y-m-d H:i:s entsprechen.",
        ),
        (
            r#"{"closed":true,"closed_at":"2026-01-15 08:00"}"#,
            "data.closed_at",
            "data.closed_at muss dem Format Y-m-d H:i:s entsprechen.",
        ),
        (
            r#"{"event":["Notruf"]}"#,
            "data.event",
            "data.event muss eine Zeichenkette sein.",
        ),
        (
            r#"{"event":"Notruf","position":5}"#,
            "data.position",
            "data.position muss eine Zeichenkette sein.",
        ),
        (
            r#"{"event":"Notruf","attribute":true}"#,
            "data.attribute",
            "data.attribute muss eine Zeichenkette sein.",
        ),
        (
            r#"{"event":"Notruf","code":{}}"#,
            "data.code",
            "data.code muss eine Zeichenkette sein.",
        ),
    ];
    for (data, key, message) in cases {
        let response = server.display(&c, "A1", data).await;
        assert_eq!(response.status, 422, "{data}: {}", response.text);
        assert_eq!(
            response.text,
            validation_body(&[(key, &[message])]),
            "{data}"
        );
    }
    // Text over 255 characters.
    let data = format!(r#"{{"event":"Notruf","section":"{}"}}"#, "ä".repeat(256));
    let response = server.display(&c, "A1", &data).await;
    assert_eq!(
        response.text,
        validation_body(&[(
            "data.section",
            &["data.section darf maximal 255 Zeichen haben."]
        )])
    );
    let target = "t".repeat(256);
    let response = server.display(&c, &target, r#"{"event":"Notruf"}"#).await;
    assert_eq!(
        response.text,
        validation_body(&[("address", &["address darf maximal 255 Zeichen haben."])])
    );
    assert_eq!(server.state(&c).await["calls"], json!([]), "nothing stored");
}

#[tokio::test]
async fn data_of_the_wrong_type_and_include_values() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    for data in [r#""x""#, "[]", "1", "true"] {
        let response = server.display(&c, "A1", data).await;
        response.expect_status(422);
        assert_eq!(
            response.text,
            validation_body(&[("data", &["data muss ein Objekt sein."])]),
            "{data}"
        );
    }
    for query in ["include=types", "include=", "include=TYPE"] {
        let response = server
            .display_query(query, &c, "A1", r#"{"event":"Notruf"}"#)
            .await;
        response.expect_status(422);
        assert_eq!(
            response.text,
            validation_body(&[("include", &["Der gewählte Wert für include ist ungültig."])]),
            "{query}"
        );
    }
}

#[tokio::test]
async fn hash_checks_come_after_structure_and_before_state() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    // A structure error with a wrong hash: 422.
    let data = r#"{"event":"Notruf","battery":500}"#;
    let response = server
        .post(DISPLAY, envelope(Some("A1"), &c.id, &"0".repeat(64), data))
        .await;
    response.expect_status(422);
    assert_eq!(
        response.text,
        validation_body(&[(
            "data.battery",
            &["data.battery muss zwischen 0 und 100 liegen."]
        )])
    );
    // An unknown event with a wrong hash: 400 (unknown consumer, so no debug).
    let stranger = Consumer::new(C, "nope");
    let response = server
        .display(&stranger, "A1", r#"{"event":"Feueralarm"}"#)
        .await;
    response.expect_status(400);
    assert_eq!(response.text, invalid_hash_body());
    // Right hash: 422 data.event.
    let response = server.display(&c, "A1", r#"{"event":"Feueralarm"}"#).await;
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
async fn empty_hash_is_422_and_unusable_hashes_are_invalid() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let data = r#"{"event":"Notruf"}"#;
    let response = server
        .post(DISPLAY, envelope(Some("A1"), &c.id, "", data))
        .await;
    response.expect_status(422);
    assert_eq!(
        response.text,
        validation_body(&[("hash", &["hash muss ausgefüllt werden."])])
    );
    let right = c.sign("A1", data);
    for hash in [
        "zz".to_string(),
        "abc".to_string(),
        right[..63].to_string(),
        format!("{right}00"),
        right[..40].to_string(),
        format!(" {right}"),
    ] {
        let response = server
            .post(DISPLAY, envelope(Some("A1"), &c.id, &hash, data))
            .await;
        assert_eq!(response.status, 400, "{hash}: {}", response.text);
        assert_eq!(response.json()["messages"][0]["code"], "invalid_hash");
    }
    assert_eq!(server.state(&c).await["calls"], json!([]));
}

#[tokio::test]
async fn element_family_structure_errors() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let cases: Vec<(String, String)> = vec![
        (
            "{}".to_string(),
            validation_body(&[
                ("address", &["address muss ausgefüllt werden."]),
                ("consumer", &["consumer muss ausgefüllt werden."]),
                ("hash", &["hash muss ausgefüllt werden."]),
                ("data", &["data muss ausgefüllt werden."]),
            ]),
        ),
        (
            format!(r#"{{"consumer":"{C}","hash":"ab","data":"x"}}"#),
            validation_body(&[
                ("address", &["address muss ausgefüllt werden."]),
                ("data", &["data muss ein Objekt oder ein Array sein."]),
            ]),
        ),
        (
            format!(r#"{{"target":"A","consumer":"{C}","hash":"ab","data":[{{"target":"B"}}]}}"#),
            validation_body(&[(
                "address",
                &["address darf im Mehrfachformat nicht angegeben werden."],
            )]),
        ),
        (
            format!(r#"{{"consumer":"{C}","hash":"ab","data":[]}}"#),
            validation_body(&[("data", &["data muss mindestens 1 Element haben."])]),
        ),
        (
            format!(
                r#"{{"consumer":"{C}","hash":"ab","data":[{{"battery":5}},7,{{"target":"B","reachable":1,"battery":"x","position":false}},{{"target":" "}}]}}"#
            ),
            validation_body(&[
                (
                    "data.0.address",
                    &["data.0.address muss ausgefüllt werden."],
                ),
                ("data.1", &["data.1 muss ein Objekt sein."]),
                (
                    "data.2.position",
                    &["data.2.position muss eine Zeichenkette sein."],
                ),
                (
                    "data.2.reachable",
                    &["data.2.reachable muss wahr oder falsch sein."],
                ),
                ("data.2.battery", &["data.2.battery muss eine Zahl sein."]),
                (
                    "data.3.address",
                    &["data.3.address muss ausgefüllt werden."],
                ),
            ]),
        ),
        (
            format!(
                r#"{{"target":"A","consumer":"{C}","hash":"ab","data":{{"battery":101,"reachable":"ja"}}}}"#
            ),
            validation_body(&[
                (
                    "data.reachable",
                    &["data.reachable muss wahr oder falsch sein."],
                ),
                (
                    "data.battery",
                    &["data.battery muss zwischen 0 und 100 liegen."],
                ),
            ]),
        ),
    ];
    for (body, expected) in cases {
        let response = server.post(ELEMENT, body.clone()).await;
        assert_eq!(response.status, 422, "{body}: {}", response.text);
        assert_eq!(response.text, expected, "{body}");
    }
    // 101 items are too many; 100 are fine.
    let items = |n: usize| {
        let items: Vec<String> = (0..n)
            .map(|i| format!(r#"{{"target":"E{i}","battery":{}}}"#, i % 101))
            .collect();
        format!("[{}]", items.join(","))
    };
    let response = server.element_multi(&c, &items(101)).await;
    response.expect_status(422);
    assert_eq!(
        response.text,
        validation_body(&[("data", &["data darf maximal 100 Elemente haben."])])
    );
    let response = server.element_multi(&c, &items(100)).await;
    response.expect_status(200);
    assert_eq!(response.data().as_array().unwrap().len(), 100);
}

#[tokio::test]
async fn a_store_that_stays_locked_is_503_with_retry_after_and_a_retry_succeeds() {
    if skip_unless_sqlite("a_store_that_stays_locked_is_503") {
        return;
    }
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let body = c.body("A1", r#"{"event":"Notruf"}"#);
    // Another process (an admin command) holds the write lock past the
    // store's busy timeout.
    let lock = StoreLock::take(server.data_dir());
    let response = server.post(DISPLAY, body.clone()).await;
    drop(lock);
    response.expect_status(503);
    assert_eq!(response.header("retry-after"), Some("1"));
    assert_eq!(
        response.text,
        error_body(
            "service_unavailable",
            503,
            "Der Dienst ist vorübergehend nicht verfügbar. Bitte später erneut versuchen."
        )
    );
    // Nothing was written; the client's retry opens the call once.
    assert_eq!(server.state(&c).await["calls"], json!([]));
    server.post(DISPLAY, body.clone()).await.expect_status(201);
    server.post(DISPLAY, body).await.expect_status(200);
    assert_eq!(server.state(&c).await["calls"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn an_internal_failure_is_500_without_internals() {
    if skip_unless_sqlite("an_internal_failure_is_500_without_internals") {
        return;
    }
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    server
        .display(&c, "A1", r#"{"event":"WC"}"#)
        .await
        .expect_status(201);
    // A stored call the service cannot read (a broken row, written behind
    // its back) makes every read of the address fail.
    open_store_file(server.data_dir())
        .execute(
            "UPDATE calls SET opened_at = 'kaputt' WHERE address = 'A1'",
            [],
        )
        .expect("row changed");
    let response = server.display(&c, "A1", r#"{"closed":true}"#).await;
    response.expect_status(500);
    assert_eq!(
        response.text,
        error_body("internal_error", 500, "Interner Fehler.")
    );
    // Other addresses still work.
    server
        .display(&c, "B1", r#"{"event":"WC"}"#)
        .await
        .expect_status(201);
}
