//! Signatures over HTTP (spec 5, DECISIONS §2): known answers computed
//! independently with
//! `printf '%s' "$string" | openssl dgst -sha256 -hmac "$secret"` (and `-sha1`),
//! what `data_json` is (the sent text without whitespace outside strings),
//! both algorithms, rotation, and the sandbox `debug` object.

use blackbox_tests::*;

/// A production consumer with a fixed secret, so that hashes can be literals.
const KAT_ID: &str = "6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f";
const KAT_SECRET: &str = "kat-secret-1";
/// Two secrets (rotation).
const ROTATING_ID: &str = "0b3e4a5c-1d2f-4e6a-8b7c-9d0e1f2a3b4c";
/// HMAC-SHA1 allowed (legacy central system).
const LEGACY_ID: &str = "c0ffee00-1234-4abc-9def-001122334455";
const ROOM_101: &str = "00:11:22:33:44:55";
const ROOM_102: &str = "00:11:22:33:44:66";

fn production() -> Server {
    Server::production(
        Seed::new()
            .consumer(KAT_ID, &[KAT_SECRET], false)
            .consumer(ROTATING_ID, &["old-secret", "new-secret"], false)
            .consumer(LEGACY_ID, &[KAT_SECRET], true)
            .element(ROOM_101, "Z101", "Zimmer 101")
            .element(ROOM_102, "Z102", "Zimmer 102"),
    )
}

fn body(target: Option<&str>, consumer: &str, hash: &str, data: &str) -> String {
    envelope(target, consumer, hash, data)
}

#[tokio::test]
async fn known_answer_sha256_compact_body() {
    let server = production();
    // 00:11:22:33:44:55.6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f.{"event":"Notruf"}
    let hash = "61644829c01523ab65d192ca3349fcfb87b81935e75806f93250db2283f0856f";
    let response = server
        .post(
            DISPLAY,
            body(Some(ROOM_101), KAT_ID, hash, r#"{"event":"Notruf"}"#),
        )
        .await;
    response.expect_status(201);
    assert_eq!(response.data()["element_name"], "Zimmer 101");
    // The same hash does not sign other data.
    let response = server
        .post(
            DISPLAY,
            body(Some(ROOM_101), KAT_ID, hash, r#"{"event":"WC"}"#),
        )
        .await;
    response.expect_status(400);
    assert_eq!(response.text, invalid_hash_body());
    // Nor another target.
    let response = server
        .post(
            DISPLAY,
            body(Some(ROOM_102), KAT_ID, hash, r#"{"event":"Notruf"}"#),
        )
        .await;
    assert_eq!(response.text, invalid_hash_body());
}

#[tokio::test]
async fn known_answer_pretty_printed_body_with_php_escapes() {
    let server = production();
    // 00:11:22:33:44:55.6f1c…5e6f.{"event":"Normalruf","position":"Zimmer 1\/2 \u00e4"}
    let hash = "a80b2681353ec73c409bf0d13720f1f8fc13f3a427a720d4c603959a710a2b6a";
    let pretty = "{\n    \"target\": \"00:11:22:33:44:55\",\n    \"consumer\": \"6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f\",\n    \"hash\": \"a80b2681353ec73c409bf0d13720f1f8fc13f3a427a720d4c603959a710a2b6a\",\n    \"data\": {\n        \"event\": \"Normalruf\",\n\t\t\"position\" :  \"Zimmer 1\\/2 \\u00e4\"\r\n    }\n}\n";
    assert!(pretty.contains(hash));
    let response = server.post(DISPLAY, pretty).await;
    response.expect_status(201);
    // The escapes are decoded in what is stored.
    assert_eq!(response.data()["position"], "Zimmer 1/2 ä");
}

#[tokio::test]
async fn escapes_are_signed_as_sent_not_decoded() {
    let server = production();
    let sent = r#"{"event":"Normalruf","position":"Zimmer 1\/2 \u00e4"}"#;
    // Signing the decoded form while sending the escaped one fails.
    let decoded_hash = hmac_sha256_hex(
        KAT_SECRET,
        &format!(r#"{ROOM_101}.{KAT_ID}.{{"event":"Normalruf","position":"Zimmer 1/2 ä"}}"#),
    );
    let response = server
        .post(DISPLAY, body(Some(ROOM_101), KAT_ID, &decoded_hash, sent))
        .await;
    response.expect_status(400);
    assert_eq!(response.text, invalid_hash_body());
    // The other way round too: raw UTF-8 sent, escaped form signed.
    let raw = r#"{"event":"Normalruf","position":"Zimmer 1/2 ä"}"#;
    let escaped_hash = hmac_sha256_hex(KAT_SECRET, &format!("{ROOM_101}.{KAT_ID}.{sent}"));
    let response = server
        .post(DISPLAY, body(Some(ROOM_101), KAT_ID, &escaped_hash, raw))
        .await;
    response.expect_status(400);
}

#[tokio::test]
async fn known_answer_raw_utf8() {
    let server = production();
    // 00:11:22:33:44:55.6f1c…5e6f.{"event":"Störung","position":"Flur Süd"}
    let hash = "ab89231e3085c919ae84f1bade289c09dd7f1fa0485c0edf6eb37432a8d49caf";
    let data = r#"{ "event": "Störung", "position": "Flur Süd" }"#;
    let response = server
        .post(DISPLAY, body(Some(ROOM_101), KAT_ID, hash, data))
        .await;
    response.expect_status(201);
    assert_eq!(response.data()["position"], "Flur Süd");
}

#[tokio::test]
async fn known_answer_multi_form_with_80_point_0() {
    let server = production();
    // .6f1c…5e6f.[{"target":"00:11:22:33:44:55","battery":80.0},{"target":"00:11:22:33:44:66","reachable":true}]
    let hash = "6bd3aa70e5f29bc42da4cd85af918a319feb630791c1b63fbdab2edf037992eb";
    let data = "[\n  {\"target\": \"00:11:22:33:44:55\", \"battery\": 80.0},\n  {\"target\": \"00:11:22:33:44:66\", \"reachable\": true}\n]";
    let response = server.post(ELEMENT, body(None, KAT_ID, hash, data)).await;
    response.expect_status(200);
    let raw = response.raw_data();
    let items = array_items(&raw);
    assert_eq!(items.len(), 2);
    assert!(
        items[0].contains(r#""battery":80,"#),
        "80.0 is shown as 80: {}",
        items[0]
    );
    assert_eq!(response.data()[1]["reachable"], true);

    // The same data signed as if `80` had been sent does not verify.
    let as_80 = hmac_sha256_hex(
        KAT_SECRET,
        &format!(
            r#".{KAT_ID}.[{{"target":"00:11:22:33:44:55","battery":80}},{{"target":"00:11:22:33:44:66","reachable":true}}]"#
        ),
    );
    let response = server.post(ELEMENT, body(None, KAT_ID, &as_80, data)).await;
    response.expect_status(400);
    // Nor does a signing string with a target in front.
    let with_target = hmac_sha256_hex(
        KAT_SECRET,
        &format!("{ROOM_101}.{KAT_ID}.{}", compact_json(data)),
    );
    let response = server
        .post(ELEMENT, body(None, KAT_ID, &with_target, data))
        .await;
    response.expect_status(400);
}

#[tokio::test]
async fn known_answer_sha1_only_where_allowed() {
    let server = production();
    // 00:11:22:33:44:55.c0ffee00-1234-4abc-9def-001122334455.{"event":"Notruf"}
    // with secret kat-secret-1, `openssl dgst -sha1 -hmac`.
    let legacy_sha1 = "61732867f11e663da730c580c4efcc4ef88de292";
    assert_eq!(
        hmac_sha1_hex(
            KAT_SECRET,
            &format!(r#"{ROOM_101}.{LEGACY_ID}.{{"event":"Notruf"}}"#)
        ),
        legacy_sha1,
        "the harness agrees with openssl"
    );
    let response = server
        .post(
            DISPLAY,
            body(
                Some(ROOM_101),
                LEGACY_ID,
                legacy_sha1,
                r#"{"event":"Notruf"}"#,
            ),
        )
        .await;
    response.expect_status(201);
    // SHA-256 works for the legacy consumer too.
    let response = server
        .post(
            DISPLAY,
            body(
                Some(ROOM_102),
                LEGACY_ID,
                &hmac_sha256_hex(
                    KAT_SECRET,
                    &format!(r#"{ROOM_102}.{LEGACY_ID}.{{"event":"WC"}}"#),
                ),
                r#"{"event":"WC"}"#,
            ),
        )
        .await;
    response.expect_status(201);

    // The SHA-256-only consumer: a correct 40-hex SHA-1 is an invalid hash.
    let kat_sha1 = "635ae2799b8521e90641b65f49ed941cf2f21c47";
    let response = server
        .post(
            DISPLAY,
            body(Some(ROOM_101), KAT_ID, kat_sha1, r#"{"event":"Notruf"}"#),
        )
        .await;
    response.expect_status(400);
    assert_eq!(response.text, invalid_hash_body());
}

#[tokio::test]
async fn uppercase_hex_verifies() {
    let server = production();
    let hash = "61644829C01523AB65D192CA3349FCFB87B81935E75806F93250DB2283F0856F";
    let response = server
        .post(
            DISPLAY,
            body(Some(ROOM_101), KAT_ID, hash, r#"{"event":"Notruf"}"#),
        )
        .await;
    response.expect_status(201);
}

#[tokio::test]
async fn both_secrets_of_a_rotating_consumer_verify() {
    let server = production();
    let data = r#"{"event":"Notruf"}"#;
    let old = Consumer::new(ROTATING_ID, "old-secret");
    let new = Consumer::new(ROTATING_ID, "new-secret");
    let gone = Consumer::new(ROTATING_ID, "older-secret");
    server
        .display(&old, ROOM_101, data)
        .await
        .expect_status(201);
    server
        .display(&new, ROOM_102, data)
        .await
        .expect_status(201);
    let response = server.display(&gone, ROOM_101, data).await;
    response.expect_status(400);
    assert_eq!(response.text, invalid_hash_body());
}

#[tokio::test]
async fn pretty_printed_sandbox_bodies_verify() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let data = "{\n  \"event\" : \"Anwesenheit\",\n  \"position\": \"Zimmer 7, Bett 2\",\n  \"battery\": 1e2,\n  \"nested\": { \"a\": [ 1, 2.50 ] }\n}";
    let hash = hmac_sha256_hex(
        &c.secret,
        &format!(
            r#"T-1.{}.{{"event":"Anwesenheit","position":"Zimmer 7, Bett 2","battery":1e2,"nested":{{"a":[1,2.50]}}}}"#,
            c.id
        ),
    );
    let pretty = format!(
        "{{\n  \"target\": \"T-1\",\n  \"consumer\": \"{}\",\n  \"hash\": \"{hash}\",\n  \"data\": {data}\n}}",
        c.id
    );
    let response = server.post(DISPLAY, pretty).await;
    response.expect_status(201);
    assert_eq!(response.data()["position"], "Zimmer 7, Bett 2");
    let state = server.state(&c).await;
    assert_eq!(state["elements"][0]["battery"], 100);
}

#[tokio::test]
async fn sandbox_wrong_hash_shows_debug_for_a_known_consumer() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let data = "{ \"event\": \"Notruf\" }";
    let provided = "ABCDEF0123";
    let response = server
        .post(DISPLAY, envelope(Some("A1"), &c.id, provided, data))
        .await;
    response.expect_status(400);
    let string = format!(r#"A1.{}.{{"event":"Notruf"}}"#, c.id);
    let expected = hmac_sha256_hex(&c.secret, &string);
    assert_eq!(
        response.text,
        format!(
            r#"{{"success":false,"messages":[{{"code":"invalid_hash","status_code":400,"errors":"Ungültiger Hash."}}],"debug":{{"secret":"{}","string":{},"hash":{{"expected":"{expected}","provided":"{provided}"}}}}}}"#,
            c.secret,
            json_string(&string)
        )
    );
    // The expected hash it shows is the one that verifies.
    let response = server
        .post(DISPLAY, envelope(Some("A1"), &c.id, &expected, data))
        .await;
    response.expect_status(201);
}

#[tokio::test]
async fn sandbox_multi_form_debug_string_has_an_empty_target() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let data = r#"[{"target":"E1","battery":5}]"#;
    let response = server
        .post(ELEMENT, envelope(None, &c.id, "00", data))
        .await;
    response.expect_status(400);
    assert_eq!(
        response.json()["debug"]["string"],
        format!(".{}.{data}", c.id)
    );
    server.element_multi(&c, data).await.expect_status(200);
}

#[tokio::test]
async fn sandbox_unknown_consumer_gets_the_plain_invalid_hash() {
    let server = Server::sandbox();
    let known = server.new_consumer().await;
    let stranger = Consumer::new("d1e2f3a4-b5c6-4d7e-8f90-a1b2c3d4e5f6", &known.secret);
    let response = server
        .display(&stranger, "A1", r#"{"event":"Notruf"}"#)
        .await;
    response.expect_status(400);
    assert_eq!(response.text, invalid_hash_body());
    // The same body as a known consumer's wrong hash in production.
    let response = server.display(&stranger, "A1", r#"{"closed":true}"#).await;
    assert_eq!(response.text, invalid_hash_body());
}

#[tokio::test]
async fn production_wrong_hash_has_no_debug() {
    let server = production();
    let wrong = Consumer::new(KAT_ID, "not-the-secret");
    let response = server
        .display(&wrong, ROOM_101, r#"{"event":"Notruf"}"#)
        .await;
    response.expect_status(400);
    assert_eq!(response.text, invalid_hash_body());
    let stranger = Consumer::new("d1e2f3a4-b5c6-4d7e-8f90-a1b2c3d4e5f6", KAT_SECRET);
    let response = server
        .display(&stranger, ROOM_101, r#"{"event":"Notruf"}"#)
        .await;
    assert_eq!(response.text, invalid_hash_body());
}

#[tokio::test]
async fn unknown_keys_in_data_are_ignored_but_signed() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let data = r#"{"event":"Notruf","extra":{"note":"egal"}}"#;
    let response = server.display(&c, "A1", data).await;
    response.expect_status(201);
    // Signed without the extra key: invalid.
    let hash = c.sign("A1", r#"{"event":"Notruf"}"#);
    let response = server
        .post(DISPLAY, envelope(Some("B1"), &c.id, &hash, data))
        .await;
    response.expect_status(400);
    // Element family: the same.
    let data = r#"{"battery":5,"foo":"bar"}"#;
    server.element(&c, "E1", data).await.expect_status(200);
    let hash = c.sign("E1", r#"{"battery":5}"#);
    let response = server
        .post(ELEMENT, envelope(Some("E1"), &c.id, &hash, data))
        .await;
    response.expect_status(400);
}

#[tokio::test]
async fn key_order_is_part_of_the_signature() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let sent = r#"{"position":"P","event":"Notruf"}"#;
    let reordered = c.sign("A1", r#"{"event":"Notruf","position":"P"}"#);
    let response = server
        .post(DISPLAY, envelope(Some("A1"), &c.id, &reordered, sent))
        .await;
    response.expect_status(400);
    server.display(&c, "A1", sent).await.expect_status(201);
}

#[tokio::test]
async fn consumer_and_target_are_signed_exactly_as_sent() {
    let server = production();
    // An uppercase consumer id names the same consumer; the signing string
    // carries it as sent.
    let upper = Consumer::new(&KAT_ID.to_uppercase(), KAT_SECRET);
    server
        .display(&upper, ROOM_101, r#"{"event":"Notruf"}"#)
        .await
        .expect_status(201);
    // Signed with the lowercase id but sent uppercase: invalid.
    let data = r#"{"event":"WC"}"#;
    let hash = Consumer::new(KAT_ID, KAT_SECRET).sign(ROOM_101, data);
    let response = server
        .post(
            DISPLAY,
            envelope(Some(ROOM_101), &KAT_ID.to_uppercase(), &hash, data),
        )
        .await;
    response.expect_status(400);
    assert_eq!(response.text, invalid_hash_body());
}

#[tokio::test]
async fn any_sandbox_target_signs_as_its_text() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let target = "Station 3 / Zimmer 12 – Bett ä";
    let data = r#"{"event":"Hotelruf"}"#;
    let hash = hmac_sha256_hex(
        &c.secret,
        &format!("{target}.{}.{{\"event\":\"Hotelruf\"}}", c.id),
    );
    let body = format!(
        r#"{{"target":"{target}","consumer":"{}","hash":"{hash}","data":{data}}}"#,
        c.id
    );
    let response = server.post(DISPLAY, body).await;
    response.expect_status(201);
    assert_eq!(response.data()["address"], target);
    assert_eq!(server.state(&c).await["elements"][0]["address"], target);
}
