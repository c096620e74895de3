//! Replay protection (docs/security.md): an optional, signed `signed_at`
//! (Unix seconds) appended to the signing string as `.<signed_at>`. A consumer
//! may be configured to require it; whenever it is sent it must be within
//! 300 s of the server's clock. Clients that never send it see the spec.

use blackbox_tests::*;

const STRICT: &str = "5a5a5a5a-1111-4222-8333-444444444444";
const STRICT_SECRET: &str = "strict-secret";
const PLAIN: &str = "6b6b6b6b-1111-4222-8333-444444444444";
const PLAIN_SECRET: &str = "plain-secret";
const ROOM: &str = "Zimmer-7";
const OTHER_ROOM: &str = "Zimmer-8";

fn strict() -> Consumer {
    Consumer::new(STRICT, STRICT_SECRET)
}

fn plain() -> Consumer {
    Consumer::new(PLAIN, PLAIN_SECRET)
}

fn production() -> Server {
    Server::production(
        Seed::new()
            .consumer_requiring_signed_time(STRICT, STRICT_SECRET)
            .consumer(PLAIN, &[PLAIN_SECRET], false)
            .element(ROOM, "Z7", "Zimmer 7")
            .element(OTHER_ROOM, "Z8", "Zimmer 8"),
    )
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs() as i64
}

/// A body with `signed_at`, signed over `<target>.<consumer>.<data_json>.<signed_at>`.
/// `target` `None` is the multi form (empty target in the string).
fn timed_body(consumer: &Consumer, target: Option<&str>, data: &str, signed_at: i64) -> String {
    let string = format!(
        "{}.{signed_at}",
        signing_string(target.unwrap_or(""), &consumer.id, data)
    );
    let hash = hmac_sha256_hex(&consumer.secret, &string);
    with_signed_at(
        &envelope(target, &consumer.id, &hash, data),
        &signed_at.to_string(),
    )
}

/// Inserts `"signed_at":<raw>` as the envelope's first key.
fn with_signed_at(body: &str, raw: &str) -> String {
    format!(r#"{{"signed_at":{raw},{}"#, &body[1..])
}

fn open(event: &str) -> String {
    format!(r#"{{"event":"{event}"}}"#)
}

const CLOSE: &str = r#"{"closed":true}"#;

/// The calls open on `target`, read by closing them with `consumer`'s valid
/// request (so only at the end of a test).
async fn close_all(server: &Server, consumer: &Consumer, target: &str) -> Vec<Value> {
    let body = timed_body(consumer, Some(target), CLOSE, unix_now());
    let response = server.post(DISPLAY, body).await;
    response.expect_status(200);
    response.data().as_array().expect("a list").clone()
}

fn signed_time_required_body() -> String {
    error_body(
        "signed_time_required",
        400,
        "Dieser Consumer muss signed_at senden und mitsignieren.",
    )
}

fn out_of_range_body() -> String {
    error_body(
        "signed_time_out_of_range",
        400,
        "signed_at weicht mehr als 300 Sekunden von der Serverzeit ab.",
    )
}

#[tokio::test]
async fn a_consumer_that_requires_a_signed_time_is_refused_without_one() {
    let server = production();
    // Correctly signed the spec's way, but without `signed_at`.
    let response = server.display(&strict(), ROOM, &open("Notruf")).await;
    response.expect_status(400);
    assert_eq!(response.text, signed_time_required_body());
    assert!(
        close_all(&server, &strict(), ROOM).await.is_empty(),
        "nothing was opened"
    );
}

#[tokio::test]
async fn a_signed_time_within_300_seconds_is_accepted_in_every_form() {
    let server = production();
    for skew in [0, -290, 290] {
        let body = timed_body(&strict(), Some(ROOM), &open("Notruf"), unix_now() + skew);
        let response = server.post(DISPLAY, body).await;
        assert!(
            [200, 201].contains(&response.status),
            "skew {skew}: {} {}",
            response.status,
            response.text
        );
    }
    let data = r#"{"battery":80,"reachable":true}"#;
    let response = server
        .post(ELEMENT, timed_body(&strict(), Some(ROOM), data, unix_now()))
        .await;
    response.expect_status(200);
    assert_eq!(response.data()["battery"], 80);

    let multi =
        format!(r#"[{{"target":"{ROOM}","battery":50}},{{"target":"{OTHER_ROOM}","battery":40}}]"#);
    let response = server
        .post(ELEMENT, timed_body(&strict(), None, &multi, unix_now()))
        .await;
    response.expect_status(200);
    assert_eq!(response.data()[1]["battery"], 40);

    let closed = close_all(&server, &strict(), ROOM).await;
    assert_eq!(closed.len(), 1, "one Notruf was open: {closed:?}");
}

#[tokio::test]
async fn a_signed_time_more_than_300_seconds_off_is_refused_for_every_consumer() {
    let server = production();
    for consumer in [strict(), plain()] {
        for skew in [-301, 301, -86_400] {
            let body = timed_body(&consumer, Some(ROOM), &open("WC"), unix_now() + skew);
            let response = server.post(DISPLAY, body).await;
            response.expect_status(400);
            assert_eq!(response.text, out_of_range_body(), "skew {skew}");
        }
        // A time of 0 (an unset clock) is far outside the window.
        let response = server
            .post(DISPLAY, timed_body(&consumer, Some(ROOM), &open("WC"), 0))
            .await;
        assert_eq!(response.text, out_of_range_body());
    }
    assert!(
        close_all(&server, &plain(), ROOM).await.is_empty(),
        "no refused request opened a call"
    );
}

#[tokio::test]
async fn the_signed_time_is_part_of_the_signature() {
    let server = production();
    let now = unix_now();
    for consumer in [strict(), plain()] {
        // Signed with one time, sent with another: the hash no longer matches.
        let body = timed_body(&consumer, Some(ROOM), &open("WC"), now);
        let altered = body.replacen(
            &format!(r#""signed_at":{now}"#),
            &format!(r#""signed_at":{}"#, now + 1),
            1,
        );
        let response = server.post(DISPLAY, altered).await;
        response.expect_status(400);
        assert_eq!(response.text, invalid_hash_body());

        // Signed the spec's way, then a time added that the hash does not cover.
        let unsigned_time = with_signed_at(&consumer.body(ROOM, &open("WC")), &now.to_string());
        let response = server.post(DISPLAY, unsigned_time).await;
        response.expect_status(400);
        assert_eq!(response.text, invalid_hash_body());
    }
    assert!(close_all(&server, &plain(), ROOM).await.is_empty());
}

#[tokio::test]
async fn a_signed_time_must_be_an_integer() {
    let server = production();
    for raw in [
        r#""1763772000""#,
        "1763772000.5",
        "1.7e9",
        "true",
        "[]",
        "{}",
    ] {
        let body = with_signed_at(&strict().body(ROOM, &open("WC")), raw);
        let response = server.post(DISPLAY, body).await;
        response.expect_status(422);
        assert_eq!(
            response.text,
            validation_body(&[("signed_at", &["signed_at muss eine ganze Zahl sein."])]),
            "{raw}"
        );
    }
    // `null` is absent, as for every field: the requirement applies.
    let body = with_signed_at(&strict().body(ROOM, &open("WC")), "null");
    let response = server.post(DISPLAY, body).await;
    assert_eq!(response.text, signed_time_required_body());
}

#[tokio::test]
async fn a_consumer_without_the_requirement_keeps_the_spec_behaviour() {
    let server = production();
    let response = server.display(&plain(), ROOM, &open("Normalruf")).await;
    response.expect_status(201);
    let response = server
        .post(
            DISPLAY,
            timed_body(&plain(), Some(OTHER_ROOM), &open("Normalruf"), unix_now()),
        )
        .await;
    response.expect_status(201);
    assert_eq!(close_all(&server, &plain(), ROOM).await.len(), 1);
    assert_eq!(close_all(&server, &plain(), OTHER_ROOM).await.len(), 1);
}

#[tokio::test]
async fn a_repeated_close_never_closes_a_call_opened_after_it_was_signed() {
    let server = production();
    let signed_at = unix_now() - 5;
    let response = server
        .post(
            DISPLAY,
            timed_body(&strict(), Some(ROOM), &open("Notruf"), signed_at - 5),
        )
        .await;
    response.expect_status(201);
    let close = timed_body(&strict(), Some(ROOM), CLOSE, signed_at);
    let response = server.post(DISPLAY, close.clone()).await;
    response.expect_status(200);
    assert_eq!(response.data().as_array().unwrap().len(), 1);

    // A new call, then the captured close sent again within the window.
    let response = server
        .post(
            DISPLAY,
            timed_body(&strict(), Some(ROOM), &open("Notruf"), unix_now()),
        )
        .await;
    response.expect_status(201);
    let replayed = server.post(DISPLAY, close).await;
    replayed.expect_status(200);
    assert_eq!(replayed.data(), json!([]), "the replay closed nothing");
    assert_eq!(
        close_all(&server, &strict(), ROOM).await.len(),
        1,
        "the new call was still open"
    );
}
