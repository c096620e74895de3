//! Object-level authorisation (issue 8, point 3). In sandbox mode every
//! visitor's data is its own (DECISIONS §8): consumer A, with its own
//! credentials or with B's id, can neither read nor open, close or update
//! anything of consumer B, even on the same target addresses. In production
//! a revoked consumer and a retired secret are refused (400 `invalid_hash`)
//! and write nothing (DECISIONS §2, §8a; the admin command on the store).

use blackbox_tests::*;
use reqwest::Method;

/// Two sandbox visitors with data on the same addresses: B has an open call
/// and an element on each of them.
struct TwoVisitors {
    server: Server,
    a: Consumer,
    b: Consumer,
    /// B's state after the setup.
    b_before: Value,
}

const SHARED: [&str; 2] = ["Zimmer-1", "00:11:22:33:44:55"];

impl TwoVisitors {
    async fn new() -> TwoVisitors {
        let server = Server::sandbox();
        let a = server.new_consumer().await;
        let b = server.new_consumer().await;
        // An hour ago: within the week a sent time may lie in (DECISIONS §5).
        let hour_ago = WireClock::berlin().at(-3600);
        for target in SHARED {
            server
                .display(
                    &b,
                    target,
                    &format!(
                        r#"{{"event":"Notruf","created_at":"{hour_ago}","battery":40,"position":"B-Fenster","reachable":true}}"#
                    ),
                )
                .await
                .expect_status(201);
        }
        // One mismatch of B's own, for the privacy of mismatches.
        server
            .post(
                DISPLAY,
                envelope(
                    Some("B-geheim"),
                    &b.id,
                    &"0".repeat(64),
                    r#"{"event":"WC"}"#,
                ),
            )
            .await
            .expect_status(400);
        let b_before = server.stable_state(&b).await;
        assert_eq!(b_before["calls"].as_array().map(Vec::len), Some(2));
        assert_eq!(b_before["mismatches"].as_array().map(Vec::len), Some(1));
        TwoVisitors {
            server,
            a,
            b,
            b_before,
        }
    }

    /// B's calls and elements are as after the setup (mismatches aside:
    /// a request naming B's id with a wrong hash is B's mismatch).
    async fn assert_b_untouched(&self, after: &str) {
        let now = self.server.stable_state(&self.b).await;
        assert_eq!(
            now["calls"], self.b_before["calls"],
            "B's calls changed after {after}"
        );
        assert_eq!(
            now["elements"], self.b_before["elements"],
            "B's elements changed after {after}"
        );
    }

    fn state_query(&self, consumer: &str, hash: &str) -> String {
        format!("{SANDBOX_STATE}?consumer={consumer}&hash={hash}")
    }
}

/// A signs B's id with its own secret: what it would send to act as B.
fn a_as_b(a: &Consumer, b: &Consumer) -> Consumer {
    Consumer::new(&b.id, &a.secret)
}

#[tokio::test]
async fn a_cannot_read_bs_state_with_its_own_proof() {
    let t = TwoVisitors::new().await;
    let (a, b) = (&t.a, &t.b);
    let b_upper = b.id.to_ascii_uppercase();
    for (what, path) in [
        ("A's proof, B's id", t.state_query(&b.id, &a.proof())),
        (
            "B's id signed with A's secret",
            t.state_query(&b.id, &hmac_sha256_hex(&a.secret, &b.id)),
        ),
        (
            "B's id in capitals, signed with A's secret",
            t.state_query(&b_upper, &hmac_sha256_hex(&a.secret, &b_upper)),
        ),
        (
            "A's proof in capitals, B's id",
            t.state_query(&b.id, &a.proof().to_ascii_uppercase()),
        ),
        (
            "B's proof as SHA-1 with A's secret",
            t.state_query(&b.id, &hmac_sha1_hex(&a.secret, &b.id)),
        ),
        ("an empty-ish hash", t.state_query(&b.id, "00")),
    ] {
        let response = t.server.get(&path).await;
        assert_eq!(response.status, 400, "{what}: {}", response.text);
        assert_eq!(response.text, invalid_hash_body(), "{what}");
    }
    // A's valid cookie does not stand in for a failed query about B.
    let response = t
        .server
        .request(
            Method::GET,
            &t.state_query(&b.id, &a.proof()),
            None,
            &[("Cookie", &a.cookie())],
            Vec::new(),
        )
        .await;
    assert_eq!(response.status, 400, "{}", response.text);
    assert_eq!(response.text, invalid_hash_body());
    let response = t
        .server
        .request(
            Method::GET,
            &format!("{SANDBOX_STATE}?consumer={}", b.id),
            None,
            &[("Cookie", &a.cookie())],
            Vec::new(),
        )
        .await;
    assert_eq!(response.status, 422, "{}", response.text);
    assert_eq!(
        response.text,
        validation_body(&[("hash", &["hash muss ausgefüllt werden."])])
    );
    // With a second `consumer`, the first one counts: A's own state.
    let response = t
        .server
        .get(&format!(
            "{}&consumer={}",
            t.state_query(&a.id, &a.proof()),
            b.id
        ))
        .await;
    response.expect_status(200);
    assert!(!response.text.contains(&b.id), "{}", response.text);
    assert!(!response.text.contains("B-Fenster"), "{}", response.text);
}

#[tokio::test]
async fn a_forged_cookie_for_b_is_no_cookie() {
    let t = TwoVisitors::new().await;
    let (a, b) = (&t.a, &t.b);
    let forged = [
        format!("nc_sandbox={}.{}", b.id, a.proof()),
        format!("nc_sandbox={}.{}", b.id, hmac_sha256_hex(&a.secret, &b.id)),
        format!("nc_sandbox={}.", b.id),
        format!("nc_sandbox={}", b.id),
        format!("nc_sandbox={}.{}", b.id.to_ascii_uppercase(), a.proof()),
        format!("nc_sandbox={}.{}.{}", b.id, a.proof(), b.id),
        format!("nc_sandbox={}.{}", b.id, "0".repeat(64)),
        // The first nc_sandbox cookie counts: a forged one is not skipped.
        format!("nc_sandbox={}.{}; {}", b.id, a.proof(), a.cookie()),
        format!("{}; nc_sandbox={}.{}", "other=1", b.id, a.proof()),
    ];
    for cookie in &forged {
        let state = t
            .server
            .request(
                Method::GET,
                SANDBOX_STATE,
                None,
                &[("Cookie", cookie)],
                Vec::new(),
            )
            .await;
        assert_eq!(state.status, 422, "{cookie}: {}", state.text);
        assert_eq!(
            state.text,
            validation_body(&[
                ("consumer", &["consumer muss ausgefüllt werden."]),
                ("hash", &["hash muss ausgefüllt werden."]),
            ]),
            "{cookie}"
        );
        // The page treats it as a first visit: a fresh pair, nothing of B.
        let page = t
            .server
            .request(Method::GET, "/", None, &[("Cookie", cookie)], Vec::new())
            .await;
        page.expect_status(200);
        assert!(
            !page.text.contains(&b.id),
            "{cookie}: the page shows B's id"
        );
        assert!(
            !page.text.contains(&b.secret),
            "{cookie}: the page shows B's secret"
        );
        assert!(!page.text.contains(&a.secret), "{cookie}: A's secret");
        let set = page.header_all("set-cookie");
        assert_eq!(set.len(), 1, "{cookie}: a new pair: {set:?}");
        assert!(!set[0].contains(&b.id), "{cookie}: {set:?}");
    }
    // A's own valid cookie first: A's state, nothing of B.
    let response = t
        .server
        .request(
            Method::GET,
            SANDBOX_STATE,
            None,
            &[(
                "Cookie",
                &format!("{}; nc_sandbox={}.{}", a.cookie(), b.id, a.proof()),
            )],
            Vec::new(),
        )
        .await;
    response.expect_status(200);
    assert!(!response.text.contains(&b.id));
    assert!(!response.text.contains("B-Fenster"));
    t.assert_b_untouched("forged cookies").await;
}

#[tokio::test]
async fn a_cannot_open_a_call_of_b() {
    let t = TwoVisitors::new().await;
    let (a, b) = (&t.a, &t.b);
    // A's own open on B's addresses is A's call: 201 and a new id.
    let b_ids: Vec<Value> = t.b_before["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| c["id"].clone())
        .collect();
    for target in SHARED {
        let response = t
            .server
            .display(a, target, r#"{"event":"Notruf","position":"A-Tür"}"#)
            .await;
        response.expect_status(201);
        let call = response.data();
        assert!(!b_ids.contains(&call["id"]), "A got B's call: {call}");
        // B's element position is no default for A.
        assert_eq!(call["position"], "A-Tür");
        let response = t.server.display(a, target, r#"{"event":"Flucht"}"#).await;
        response.expect_status(201);
        assert_eq!(response.data()["position"], "A-Tür");
    }
    // Signing as B with A's secret: refused before anything is written.
    for target in SHARED {
        for data in [r#"{"event":"WC"}"#, r#"{"event":"Notruf"}"#] {
            let response = t.server.display(&a_as_b(a, b), target, data).await;
            assert_eq!(response.status, 400, "{}", response.text);
            assert_eq!(response.json()["messages"][0]["code"], "invalid_hash");
        }
    }
    t.assert_b_untouched("A's opens").await;
    let a_state = t.server.stable_state(a).await;
    assert_eq!(a_state["calls"].as_array().map(Vec::len), Some(4));
    assert!(!a_state.to_string().contains("B-Fenster"), "{a_state}");
}

#[tokio::test]
async fn a_close_never_closes_bs_calls() {
    let t = TwoVisitors::new().await;
    let (a, b) = (&t.a, &t.b);
    let target = SHARED[0];
    let a_open = t.server.display(a, target, r#"{"event":"Notruf"}"#).await;
    a_open.expect_status(201);
    let a_id = a_open.data()["id"].clone();
    // A closes "every call on the address": only A's. Dated now, a close
    // is after B's calls too (the latest a close may be dated is 5 minutes
    // ahead, DECISIONS §5).
    let dated = format!(r#","closed_at":"{}""#, WireClock::berlin().at(0));
    for closed_at in ["", dated.as_str()] {
        let response = t
            .server
            .display(a, target, &format!(r#"{{"closed":true{closed_at}}}"#))
            .await;
        response.expect_status(200);
        let closed: Vec<Value> = response
            .data()
            .as_array()
            .expect("closed calls")
            .iter()
            .map(|c| c["id"].clone())
            .collect();
        let expected = if closed_at.is_empty() {
            vec![a_id.clone()]
        } else {
            Vec::new()
        };
        assert_eq!(closed, expected, "A's close closed {closed:?}");
    }
    // As B with A's secret, and on B's other address: refused.
    for target in SHARED {
        for data in [
            r#"{"closed":true}"#.to_string(),
            format!(r#"{{"closed":true{dated}}}"#),
        ] {
            let response = t.server.display(&a_as_b(a, b), target, &data).await;
            assert_eq!(response.status, 400, "{}", response.text);
        }
    }
    t.assert_b_untouched("A's closes").await;
    for call in t.server.stable_state(b).await["calls"]
        .as_array()
        .expect("calls")
    {
        assert_eq!(call["closed_at"], Value::Null, "B's call closed: {call}");
    }
}

#[tokio::test]
async fn a_element_update_never_changes_bs_element() {
    let t = TwoVisitors::new().await;
    let (a, b) = (&t.a, &t.b);
    for target in SHARED {
        let response = t
            .server
            .element(
                a,
                target,
                r#"{"battery":1,"position":"A-Flur","reachable":false}"#,
            )
            .await;
        response.expect_status(200);
        let element = response.data();
        assert_eq!(element["battery"], 1);
        assert_eq!(element["position"], "A-Flur");
    }
    let multi = format!(
        r#"[{{"target":"{}","battery":2}},{{"target":"{}","reachable":true}},{{"target":"{}","position":"A-Bad"}}]"#,
        SHARED[0], SHARED[1], SHARED[0]
    );
    t.server.element_multi(a, &multi).await.expect_status(200);
    // With status fields on a display request too.
    t.server
        .display(
            a,
            SHARED[1],
            r#"{"event":"WC","battery":3,"position":"A-Bett"}"#,
        )
        .await
        .expect_status(201);
    // As B with A's secret: refused, single and multi form.
    let response = t
        .server
        .element(&a_as_b(a, b), SHARED[0], r#"{"battery":99}"#)
        .await;
    assert_eq!(response.status, 400, "{}", response.text);
    let response = t.server.element_multi(&a_as_b(a, b), &multi).await;
    assert_eq!(response.status, 400, "{}", response.text);
    t.assert_b_untouched("A's element updates").await;

    let a_elements = t.server.stable_state(a).await["elements"].clone();
    let a_elements = a_elements.as_array().expect("elements");
    assert_eq!(a_elements.len(), 2, "{a_elements:?}");
    for element in a_elements {
        assert_ne!(element["position"], "B-Fenster");
    }
}

/// A's hash mismatches and B's are kept apart: neither state shows the
/// other's, and a mismatch never carries the other consumer's secret.
#[tokio::test]
async fn hash_mismatches_stay_private() {
    let t = TwoVisitors::new().await;
    let (a, b) = (&t.a, &t.b);
    let wrong = "1".repeat(64);
    let response = t
        .server
        .post(
            DISPLAY,
            envelope(Some("A-geheim"), &a.id, &wrong, r#"{"event":"WC"}"#),
        )
        .await;
    response.expect_status(400);
    let debug = response.json()["debug"].clone();
    assert_eq!(debug["secret"], a.secret.as_str(), "A's own secret only");
    assert!(!response.text.contains(&b.secret));

    let a_state = t.server.state(a).await;
    let b_state = t.server.state(b).await;
    let strings = |state: &Value| -> Vec<String> {
        state["mismatches"]
            .as_array()
            .expect("mismatches")
            .iter()
            .map(|m| m["string"].as_str().expect("string").to_string())
            .collect()
    };
    assert_eq!(
        strings(&a_state),
        [format!(r#"A-geheim.{}.{{"event":"WC"}}"#, a.id)]
    );
    assert_eq!(
        strings(&b_state),
        [format!(r#"B-geheim.{}.{{"event":"WC"}}"#, b.id)]
    );
    for (state, other) in [(&a_state, b), (&b_state, a)] {
        let text = state.to_string();
        assert!(!text.contains(&other.id), "{text}");
        assert!(!text.contains(&other.secret), "{text}");
        assert!(!text.contains(&a.secret) && !text.contains(&b.secret));
    }
    // A cannot read B's mismatches by any of its own proofs.
    let response = t.server.get(&t.state_query(&b.id, &a.proof())).await;
    assert_eq!(response.text, invalid_hash_body());
    t.assert_b_untouched("A's mismatch").await;
}

/// Spec 7.2 puts the consumer's secret (`debug.secret`) and the valid hash
/// of the sent string (`debug.hash.expected`) into the sandbox's 400, for
/// any request that names a known consumer id. So whoever learns B's id
/// gets B's secret from one bad request, and with it B's state and calls:
/// in the sandbox the consumer id is as good as the secret. This test
/// states the property that the contract (spec 7.2, DECISIONS §3) would
/// need to change for; it fails today.
#[tokio::test]
#[ignore = "spec 7.2 debug.secret / debug.hash.expected: B's id alone yields B's secret (needs a DECISIONS change)"]
async fn knowing_bs_id_does_not_reveal_bs_secret() {
    let t = TwoVisitors::new().await;
    let (a, b) = (&t.a, &t.b);
    let response = t
        .server
        .display(&a_as_b(a, b), "Zimmer-1", r#"{"closed":true}"#)
        .await;
    assert_eq!(response.status, 400);
    assert!(
        !response.text.contains(&b.secret),
        "the 400 for a request naming B carries B's secret: {}",
        response.text
    );
    let expected = response.json()["debug"]["hash"]["expected"].clone();
    if let Some(expected) = expected.as_str() {
        // The expected hash signs A's chosen request as B.
        let replay = t
            .server
            .post(
                DISPLAY,
                envelope(Some("Zimmer-1"), &b.id, expected, r#"{"closed":true}"#),
            )
            .await;
        assert_eq!(replay.status, 400, "A closed B's calls: {}", replay.text);
    }
    t.assert_b_untouched("A's use of B's id").await;
}

// ---------------------------------------------------------------------------
// Production: revoked consumers, retired secrets (the admin command)
// ---------------------------------------------------------------------------

const CENTRAL: &str = "11111111-2222-4333-8444-555555555555";
const GATEWAY: &str = "66666666-7777-4888-9999-aaaaaaaaaaaa";
const ROOM: &str = "00:11:22:33:44:55";

fn production() -> Server {
    Server::production(
        Seed::new()
            .consumer(CENTRAL, &["central-secret"], false)
            .consumer(GATEWAY, &["gateway-secret"], false)
            .element(ROOM, "Z101", "Zimmer 101"),
    )
}

/// The element and the open calls of ROOM, read by the gateway: the
/// element through an empty element request, the calls by re-opening each
/// event (200 with the existing call, nothing written).
async fn room_as_seen_by_gateway(server: &Server, events: &[&str]) -> (Value, Vec<Value>) {
    let gateway = Consumer::new(GATEWAY, "gateway-secret");
    let response = server.element(&gateway, ROOM, "{}").await;
    response.expect_status(200);
    let element = response.data();
    let mut calls = Vec::new();
    for event in events {
        let response = server
            .display(&gateway, ROOM, &format!(r#"{{"event":"{event}"}}"#))
            .await;
        assert_eq!(
            response.status, 200,
            "{event} is not open: {}",
            response.text
        );
        let mut call = response.data();
        call.as_object_mut().expect("a call").remove("duration");
        calls.push(call);
    }
    (element, calls)
}

/// Every kind of request of a consumer: open, close, element (both forms).
fn every_request(c: &Consumer) -> Vec<(&'static str, String)> {
    vec![
        (DISPLAY, c.body(ROOM, r#"{"event":"Flucht","battery":1}"#)),
        (DISPLAY, c.body(ROOM, r#"{"closed":true}"#)),
        (ELEMENT, c.body(ROOM, r#"{"battery":2,"position":"weg"}"#)),
        (
            ELEMENT,
            c.multi_body(&format!(r#"[{{"target":"{ROOM}","reachable":false}}]"#)),
        ),
    ]
}

#[tokio::test]
async fn a_revoked_consumer_is_refused_and_writes_nothing() {
    let server = production();
    let central = Consumer::new(CENTRAL, "central-secret");
    server
        .display(&central, ROOM, r#"{"event":"Notruf","battery":50}"#)
        .await
        .expect_status(201);
    let before = room_as_seen_by_gateway(&server, &["Notruf"]).await;

    let run = server
        .admin(&["--json", "consumers", "revoke", CENTRAL])
        .success();
    assert_eq!(run.json()["revoked"], true, "{run:#?}");
    for (path, body) in every_request(&central) {
        let response = server.post(path, body.clone()).await;
        assert_eq!(response.status, 400, "{path} {body}: {}", response.text);
        assert_eq!(response.text, invalid_hash_body(), "{path}");
    }
    assert_eq!(room_as_seen_by_gateway(&server, &["Notruf"]).await, before);
    // Revoked is gone: listing no longer shows it, the gateway still works.
    let listed = server
        .admin(&["--json", "consumers", "list"])
        .success()
        .json();
    let ids: Vec<&str> = listed
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert_eq!(ids, [GATEWAY]);
}

#[tokio::test]
async fn a_retired_secret_is_refused_after_rotation() {
    let server = production();
    let old = Consumer::new(CENTRAL, "central-secret");
    let rotated = server
        .admin(&["--json", "consumers", "rotate", CENTRAL])
        .success()
        .json();
    let new = Consumer::new(CENTRAL, rotated["secret"].as_str().expect("the new secret"));
    assert_eq!(rotated["secrets"], 2);
    // During the rotation both verify.
    server
        .element(&old, ROOM, r#"{"battery":10}"#)
        .await
        .expect_status(200);
    server
        .element(&new, ROOM, r#"{"battery":11}"#)
        .await
        .expect_status(200);
    server
        .display(&new, ROOM, r#"{"event":"Notruf"}"#)
        .await
        .expect_status(201);

    server
        .admin(&["consumers", "retire-secret", CENTRAL])
        .success();
    let before = room_as_seen_by_gateway(&server, &["Notruf"]).await;
    assert_eq!(before.0["battery"], 11);
    for (path, body) in every_request(&old) {
        let response = server.post(path, body.clone()).await;
        assert_eq!(response.status, 400, "{path} {body}: {}", response.text);
        assert_eq!(response.text, invalid_hash_body(), "{path}");
    }
    assert_eq!(room_as_seen_by_gateway(&server, &["Notruf"]).await, before);
    // The new secret still does everything.
    for (path, body) in every_request(&new) {
        let response = server.post(path, body.clone()).await;
        assert!(response.status < 300, "{path} {body}: {}", response.text);
    }
}
