//! The test server (spec 5.3, DECISIONS §8): consumers, the cookie, the state
//! endpoint, the page, and isolation between visitors.

use blackbox_tests::*;
use reqwest::Method;

fn cookie_parts(set_cookie: &str) -> (String, Vec<String>) {
    let mut parts = set_cookie.split(';').map(|p| p.trim().to_string());
    let pair = parts.next().expect("cookie pair");
    (pair, parts.collect())
}

#[tokio::test]
async fn create_consumer_returns_a_pair_and_the_cookie() {
    let server = Server::sandbox();
    let response = server.post(SANDBOX_CONSUMERS, "").await;
    response.expect_status(201);
    let data = response.data();
    let id = data["consumer"].as_str().unwrap();
    let secret = data["secret"].as_str().unwrap();
    assert!(is_uuid_v4(id), "{id} is not a UUID v4");
    assert_eq!(secret.len(), 64, "32 random bytes as hex");
    assert!(secret.chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(object_keys(&response.raw_data()), ["consumer", "secret"]);

    let cookies = response.header_all("set-cookie");
    assert_eq!(cookies.len(), 1, "{cookies:?}");
    let (pair, attributes) = cookie_parts(&cookies[0]);
    assert_eq!(
        pair,
        format!("nc_sandbox={id}.{}", hmac_sha256_hex(secret, id))
    );
    assert!(attributes.iter().any(|a| a == "HttpOnly"), "{attributes:?}");
    assert!(
        attributes.iter().any(|a| a == "SameSite=Lax"),
        "{attributes:?}"
    );
    assert!(
        !attributes.iter().any(|a| a == "Secure"),
        "no Secure on http: {attributes:?}"
    );

    // Two calls give two different pairs.
    let other = server.new_consumer().await;
    assert_ne!(other.id, id);
    assert_ne!(other.secret, secret);
}

#[tokio::test]
async fn cookie_is_secure_behind_https() {
    let server = Server::sandbox();
    let response = server
        .request(
            Method::POST,
            SANDBOX_CONSUMERS,
            None,
            &[("X-Forwarded-Proto", "https")],
            "",
        )
        .await;
    response.expect_status(201);
    let (_, attributes) = cookie_parts(&response.header_all("set-cookie")[0]);
    assert!(attributes.iter().any(|a| a == "Secure"), "{attributes:?}");
    assert!(attributes.iter().any(|a| a == "HttpOnly"));
}

#[tokio::test]
async fn a_new_consumer_signs_requests_right_away() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    server
        .display(&c, "anything at all", r#"{"event":"Notruf"}"#)
        .await
        .expect_status(201);
    let state = server.state(&c).await;
    assert_eq!(state["calls"][0]["address"], "anything at all");
}

#[tokio::test]
async fn state_by_query_and_by_cookie_agree() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    // Within the last week, the range the service accepts (DECISIONS §5).
    let clock = WireClock::berlin();
    let (opened_at, closed_at) = (clock.at(-3600), clock.at(-3600 + 300));
    server
        .display(
            &c,
            "A1",
            &format!(r#"{{"event":"WC","created_at":"{opened_at}","section":"S"}}"#),
        )
        .await
        .expect_status(201);
    server
        .display(
            &c,
            "A1",
            &format!(r#"{{"closed":true,"closed_at":"{closed_at}","battery":42}}"#),
        )
        .await
        .expect_status(200);
    let by_query = server
        .get(&format!(
            "{SANDBOX_STATE}?consumer={}&hash={}",
            c.id,
            c.proof()
        ))
        .await;
    by_query.expect_status(200);
    assert_eq!(
        object_keys(&by_query.raw_data()),
        ["calls", "elements", "mismatches", "staff"]
    );
    let by_cookie = server
        .request(
            Method::GET,
            SANDBOX_STATE,
            None,
            &[("Cookie", &format!("nc_sandbox={}.{}", c.id, c.proof()))],
            Vec::new(),
        )
        .await;
    by_cookie.expect_status(200);
    assert_eq!(by_query.text, by_cookie.text);

    let data = by_query.data();
    let call = &data["calls"][0];
    let mut keys: Vec<&str> = CALL_KEYS.to_vec();
    keys.push("type");
    let calls = array_items(&raw_member(&by_query.raw_data(), "calls"));
    assert_eq!(calls.len(), 1);
    assert_eq!(object_keys(&calls[0]), keys);
    let elements = array_items(&raw_member(&by_query.raw_data(), "elements"));
    assert_eq!(object_keys(&elements[0]), ELEMENT_KEYS);
    assert_eq!(call["opened_at"], opened_at.as_str());
    assert_eq!(call["closed_at"], closed_at.as_str());
    assert_eq!(call["duration"], 300);
    assert_eq!(call["section"], "S");
    assert_eq!(call["type"]["name"], "WC");
    assert_eq!(data["elements"][0]["address"], "A1");
    assert_eq!(data["elements"][0]["battery"], 42);
}

#[tokio::test]
async fn state_lists_open_calls_first_then_newest_first() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    // "hh:00" today is `hour(hh)`, a time of the last few hours: a sent time
    // lies within the last week (DECISIONS §5).
    let clock = WireClock::berlin();
    let hour = |hh: i64| clock.at((hh - 12) * 3600);
    let open =
        |event: &str, hh: i64| format!(r#"{{"event":"{event}","created_at":"{}"}}"#, hour(hh));
    // Closed calls on C1.
    server
        .display(&c, "C1", &open("Notruf", 7))
        .await
        .expect_status(201);
    server
        .display(&c, "C1", &open("WC", 10))
        .await
        .expect_status(201);
    server
        .display(
            &c,
            "C1",
            &format!(r#"{{"closed":true,"closed_at":"{}"}}"#, hour(11)),
        )
        .await
        .expect_status(200);
    // Open calls on O1.
    server
        .display(&c, "O1", &open("Notruf", 8))
        .await
        .expect_status(201);
    server
        .display(&c, "O1", &open("WC", 9))
        .await
        .expect_status(201);

    let state = server.state(&c).await;
    let order: Vec<(String, String, bool)> = state["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| {
            (
                call["address"].as_str().unwrap().to_string(),
                call["opened_at"].as_str().unwrap().to_string(),
                call["closed_at"].is_null(),
            )
        })
        .collect();
    let expected: Vec<(String, String, bool)> = [
        ("O1", 9, true),
        ("O1", 8, true),
        ("C1", 10, false),
        ("C1", 7, false),
    ]
    .iter()
    .map(|(a, hh, o)| (a.to_string(), hour(*hh), *o))
    .collect();
    assert_eq!(order, expected);
}

#[tokio::test]
async fn state_needs_a_valid_proof() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let wrong = server
        .get(&format!(
            "{SANDBOX_STATE}?consumer={}&hash={}",
            c.id,
            hmac_sha256_hex("other", &c.id)
        ))
        .await;
    wrong.expect_status(400);
    assert_eq!(wrong.text, invalid_hash_body());

    let unknown = server
        .get(&format!(
            "{SANDBOX_STATE}?consumer=d1e2f3a4-b5c6-4d7e-8f90-a1b2c3d4e5f6&hash={}",
            c.proof()
        ))
        .await;
    unknown.expect_status(400);
    assert_eq!(unknown.text, invalid_hash_body());

    let none = server.get(SANDBOX_STATE).await;
    none.expect_status(422);
    assert_eq!(
        none.text,
        validation_body(&[
            ("consumer", &["consumer muss ausgefüllt werden."]),
            ("hash", &["hash muss ausgefüllt werden."]),
        ])
    );

    let bad = server
        .get(&format!("{SANDBOX_STATE}?consumer=abc&hash="))
        .await;
    bad.expect_status(422);
    assert_eq!(
        bad.text,
        validation_body(&[
            ("consumer", &["consumer muss ein UUID sein."]),
            ("hash", &["hash muss ausgefüllt werden."]),
        ])
    );

    // A forged cookie is no cookie.
    let forged = server
        .request(
            Method::GET,
            SANDBOX_STATE,
            None,
            &[(
                "Cookie",
                &format!("nc_sandbox={}.{}", c.id, "ab".repeat(32)),
            )],
            Vec::new(),
        )
        .await;
    forged.expect_status(422);
}

#[tokio::test]
async fn two_consumers_on_the_same_target_never_see_each_other() {
    let server = Server::sandbox();
    let a = server.new_consumer().await;
    let b = server.new_consumer().await;

    let a_open = server
        .display(&a, "Zimmer-1", r#"{"event":"Notruf","position":"A-Pos"}"#)
        .await;
    a_open.expect_status(201);
    let a_id = a_open.data()["id"].as_i64().unwrap();
    server
        .element(&a, "Zimmer-1", r#"{"battery":10}"#)
        .await
        .expect_status(200);

    // B's open of the same event on the same target is B's own new call.
    let b_open = server
        .display(&b, "Zimmer-1", r#"{"event":"Notruf"}"#)
        .await;
    b_open.expect_status(201);
    let b_id = b_open.data()["id"].as_i64().unwrap();
    assert_ne!(a_id, b_id);
    // A's element position is not B's default.
    assert_eq!(b_open.data()["position"], Value::Null);

    // B's close closes only B's call.
    let b_close = server.display(&b, "Zimmer-1", r#"{"closed":true}"#).await;
    b_close.expect_status(200);
    let closed: Vec<i64> = b_close
        .data()
        .as_array()
        .unwrap()
        .iter()
        .map(|call| call["id"].as_i64().unwrap())
        .collect();
    assert_eq!(closed, [b_id]);

    // B's element update does not touch A's element.
    server
        .element(&b, "Zimmer-1", r#"{"battery":99}"#)
        .await
        .expect_status(200);

    let a_state = server.state(&a).await;
    let a_calls = a_state["calls"].as_array().unwrap();
    assert_eq!(a_calls.len(), 1, "{a_state}");
    assert_eq!(a_calls[0]["id"], a_id);
    assert_eq!(a_calls[0]["closed_at"], Value::Null);
    assert_eq!(a_state["elements"].as_array().unwrap().len(), 1);
    assert_eq!(a_state["elements"][0]["battery"], 10);
    assert_eq!(a_state["elements"][0]["position"], "A-Pos");

    let b_state = server.state(&b).await;
    let b_calls = b_state["calls"].as_array().unwrap();
    assert_eq!(b_calls.len(), 1, "{b_state}");
    assert_eq!(b_calls[0]["id"], b_id);
    assert!(b_calls[0]["closed_at"].is_string());
    assert_eq!(b_state["elements"][0]["battery"], 99);
    assert_eq!(b_state["elements"][0]["position"], Value::Null);

    // B cannot read A's state with B's secret.
    let response = server
        .get(&format!(
            "{SANDBOX_STATE}?consumer={}&hash={}",
            a.id,
            hmac_sha256_hex(&b.secret, &a.id)
        ))
        .await;
    response.expect_status(400);
}

#[tokio::test]
async fn page_creates_a_consumer_once_and_shows_it() {
    let server = Server::sandbox();
    let first = server.get("/").await;
    first.expect_status(200);
    assert_eq!(
        first.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    let cookies = first.header_all("set-cookie");
    assert_eq!(cookies.len(), 1, "{cookies:?}");
    let (pair, attributes) = cookie_parts(&cookies[0]);
    assert!(attributes.iter().any(|a| a == "HttpOnly"));
    assert!(attributes.iter().any(|a| a == "SameSite=Lax"));
    let value = pair.strip_prefix("nc_sandbox=").expect("nc_sandbox cookie");
    let (id, proof) = value.split_once('.').expect("<consumer>.<proof>");
    assert!(is_uuid_v4(id));
    assert!(first.text.contains(id), "page shows the consumer id");
    assert!(
        first.text.contains(server.base_url()),
        "page shows the base URL"
    );
    for name in CALL_TYPE_NAMES {
        assert!(first.text.contains(name), "page lists {name}");
    }
    // The page shows the secret: some 64-hex word in it proves the cookie.
    let secret = hex_words(&first.text)
        .into_iter()
        .find(|word| word.len() == 64 && hmac_sha256_hex(word, id) == proof)
        .expect("page shows the secret of the cookie's consumer");
    let consumer = Consumer::new(id, &secret);
    server
        .display(&consumer, "Zimmer-101", r#"{"event":"Normalruf"}"#)
        .await
        .expect_status(201);

    // A later visit with the cookie shows the same pair, sets no new cookie.
    let again = server
        .request(
            Method::GET,
            "/",
            None,
            &[("Cookie", &format!("other=1; {pair}"))],
            Vec::new(),
        )
        .await;
    again.expect_status(200);
    assert!(again.header_all("set-cookie").is_empty());
    assert!(again.text.contains(id));
    assert!(again.text.contains(&secret));

    // A forged cookie gets a fresh consumer.
    let forged = server
        .request(
            Method::GET,
            "/",
            None,
            &[("Cookie", &format!("nc_sandbox={id}.{}", "00".repeat(32)))],
            Vec::new(),
        )
        .await;
    forged.expect_status(200);
    let cookies = forged.header_all("set-cookie");
    assert_eq!(cookies.len(), 1);
    assert!(!cookies[0].contains(id));
}

fn hex_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_hexdigit())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

// ---------------------------------------------------------------------------
// Hash mismatches on the test page
// ---------------------------------------------------------------------------

/// `data.mismatches` of the state: the `debug` objects of this consumer's
/// invalid hashes, without the secret, newest first.
#[tokio::test]
async fn state_lists_this_consumers_hash_mismatches_newest_first() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let empty = server
        .get(&format!(
            "{SANDBOX_STATE}?consumer={}&hash={}",
            c.id,
            c.proof()
        ))
        .await;
    assert_eq!(raw_member(&empty.raw_data(), "mismatches"), "[]");

    let wrong = "ab".repeat(32);
    let first = server
        .post(
            DISPLAY,
            envelope(Some("Zimmer-1"), &c.id, &wrong, r#"{ "event" : "WC" }"#),
        )
        .await;
    first.expect_status(400);
    // The multi form: an empty target, and a 40-hex (SHA-1 length) hash.
    let sha1 = hmac_sha1_hex(&c.secret, &format!(".{}.[]", c.id));
    let second = server
        .post(
            ELEMENT,
            envelope(None, &c.id, &sha1, r#"[{"target":"E1","battery":5}]"#),
        )
        .await;
    second.expect_status(400);
    // Neither a valid request nor a 422 is a mismatch.
    server
        .display(&c, "Zimmer-1", r#"{"event":"WC"}"#)
        .await
        .expect_status(201);
    server
        .post(DISPLAY, envelope(Some("Zimmer-1"), &c.id, &wrong, "{}"))
        .await
        .expect_status(422);

    let response = server
        .get(&format!(
            "{SANDBOX_STATE}?consumer={}&hash={}",
            c.id,
            c.proof()
        ))
        .await;
    response.expect_status(200);
    let raw = array_items(&raw_member(&response.raw_data(), "mismatches"));
    assert_eq!(raw.len(), 2, "{}", response.text);
    assert_eq!(object_keys(&raw[0]), ["at", "string", "hash"]);
    assert_eq!(
        object_keys(&raw_member(&raw[0], "hash")),
        ["expected", "provided"]
    );
    let mismatches = response.data()["mismatches"].clone();
    for (shown, answer) in [(&mismatches[0], &second), (&mismatches[1], &first)] {
        let debug = &answer.json()["debug"];
        assert_eq!(shown["string"], debug["string"]);
        assert_eq!(shown["hash"], debug["hash"]);
        let at = shown["at"].as_str().expect("at");
        assert!(
            chrono::NaiveDateTime::parse_from_str(at, "%Y-%m-%d %H:%M:%S").is_ok(),
            "wire time: {at}"
        );
    }
    assert_eq!(
        mismatches[1]["string"],
        format!(r#"Zimmer-1.{}.{{"event":"WC"}}"#, c.id)
    );
    assert_eq!(
        mismatches[0]["string"],
        format!(r#".{}.[{{"target":"E1","battery":5}}]"#, c.id)
    );
    assert_eq!(mismatches[0]["hash"]["provided"], sha1);
    assert!(
        !response.text.contains(&c.secret),
        "the state never repeats the secret"
    );
}

/// Each consumer sees only its own mismatches; an unknown consumer's are
/// kept nowhere; only the newest ten are kept.
#[tokio::test]
async fn hash_mismatches_stay_with_their_consumer() {
    let server = Server::sandbox();
    let a = server.new_consumer().await;
    let b = server.new_consumer().await;
    let wrong = "0".repeat(64);
    for i in 0..12 {
        server
            .post(
                DISPLAY,
                envelope(
                    Some(&format!("A-{i:02}")),
                    &a.id,
                    &wrong,
                    r#"{"event":"WC"}"#,
                ),
            )
            .await
            .expect_status(400);
    }
    server
        .post(
            DISPLAY,
            envelope(Some("B-1"), &b.id, &wrong, r#"{"event":"WC"}"#),
        )
        .await
        .expect_status(400);
    // An unknown consumer gets no debug and leaves nothing anywhere.
    let unknown = server
        .post(
            DISPLAY,
            envelope(
                Some("U-1"),
                "d1e2f3a4-b5c6-4d7e-8f90-a1b2c3d4e5f6",
                &wrong,
                r#"{"event":"WC"}"#,
            ),
        )
        .await;
    unknown.expect_status(400);
    assert_eq!(unknown.text, invalid_hash_body());

    let targets = |state: &Value| -> Vec<String> {
        state["mismatches"]
            .as_array()
            .expect("mismatches")
            .iter()
            .map(|m| {
                m["string"]
                    .as_str()
                    .expect("string")
                    .split('.')
                    .next()
                    .expect("target")
                    .to_string()
            })
            .collect()
    };
    let expected_a: Vec<String> = (2..12).rev().map(|i| format!("A-{i:02}")).collect();
    assert_eq!(targets(&server.state(&a).await), expected_a);
    assert_eq!(targets(&server.state(&b).await), ["B-1"]);
}

/// Production never keeps a mismatch (and answers without `debug`).
#[tokio::test]
async fn production_keeps_no_hash_mismatch() {
    if skip_unless_sqlite("production_keeps_no_hash_mismatch") {
        return;
    }
    let id = "6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f";
    let server = Server::production(Seed::new().consumer(id, &["my-secret"], false).element(
        "Zimmer-101",
        "Z101",
        "Zimmer 101",
    ));
    let response = server
        .post(
            DISPLAY,
            envelope(Some("Zimmer-101"), id, &"0".repeat(64), r#"{"event":"WC"}"#),
        )
        .await;
    response.expect_status(400);
    assert_eq!(response.text, invalid_hash_body());
    let kept: i64 = open_store_file(server.data_dir())
        .query_row("SELECT count(*) FROM hash_mismatches", [], |row| row.get(0))
        .expect("the mismatch table exists");
    assert_eq!(kept, 0);
}
