//! A lost phone (DECISIONS §20): `nurse-call-admin staff rotate` deletes the
//! person's push subscriptions in the same write as the new token, so the
//! old phone at the Web Push stand-in (push/stand_in.rs) gets no further
//! alert; rotate and revoke close the person's open staff page within 5 s,
//! and `displays rotate` / `revoke` a display's live socket likewise (the
//! admin command is another process: the local server checks each open
//! socket's token every 2 s). The times are printed.
//!
//! The local server's live socket and push sender: skipped under cargo
//! lambda watch (tests/lambda-watch-skips.txt). Both stores.

mod alarms_support;
#[path = "push/stand_in.rs"]
#[allow(dead_code)]
mod stand_in;

use std::time::{Duration, Instant};

use alarms_support::*;
use blackbox_tests::*;
use futures_util::{SinkExt, StreamExt};
use reqwest::Method;
use stand_in::{PushService, Recorder, register_tested};
use tokio_tungstenite::tungstenite::Message;

/// DECISIONS §20: "within 5 s".
const CLOSED_WITHIN: Duration = Duration::from_secs(5);
/// WebSocket close code 1008, policy violation: the credential is gone.
const POLICY: u16 = 1008;

/// Waits until the server closes `socket`; how long that took and the
/// close frame's code. Fails when it is still open after
/// [`CLOSED_WITHIN`] (a little slack for a loaded machine).
async fn closed(socket: &mut Socket, what: &str) -> (Duration, Option<u16>) {
    let started = Instant::now();
    let limit = CLOSED_WITHIN + Duration::from_millis(500);
    loop {
        let left = limit.saturating_sub(started.elapsed());
        match tokio::time::timeout(left, socket.next()).await {
            Err(_) => panic!("{what}: the socket is still open after {limit:?}"),
            Ok(None | Some(Err(_))) => return (started.elapsed(), None),
            Ok(Some(Ok(Message::Close(frame)))) => {
                let took = started.elapsed();
                eprintln!(
                    "{what}: closed {} ms after the admin command",
                    took.as_millis()
                );
                return (took, frame.map(|f| u16::from(f.code)));
            }
            Ok(Some(Ok(_))) => continue,
        }
    }
}

fn admin_json(server: &Server, args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.push("--json");
    server.admin(&args).success().json()
}

#[tokio::test]
async fn a_rotated_persons_old_phone_hears_nothing_more_and_their_page_is_closed() {
    let service = PushService::start().await;
    let recorder = Recorder::start(&service).await;
    let server = Server::sandbox();
    let visitor = server.new_consumer().await;
    let anna = staff(&server, &visitor, "Anna", &[]).await;
    let ben = staff(&server, &visitor, "Ben", &[]).await;
    sign_on(&server, &anna, &["1"]).await;
    sign_on(&server, &ben, &["1"]).await;
    let old_phone = register_tested(&server, &service, &recorder, &anna).await;
    let bens_phone = register_tested(&server, &service, &recorder, &ben).await;
    let mut annas_page = connect_staff(&server, &anna).await;
    let mut bens_page = connect_staff(&server, &ben).await;

    // Anna's phone is lost: the admin rotates her token.
    let rotated = admin_json(&server, &["staff", "rotate", &anna.id]);
    let new_token = rotated["token"]
        .as_str()
        .expect("the new token")
        .to_string();
    let (took, code) = closed(&mut annas_page, "rotate: the old phone's staff page").await;
    assert!(
        took <= CLOSED_WITHIN + Duration::from_millis(500),
        "{took:?}"
    );
    assert_eq!(code, Some(POLICY));
    // The old token is refused; the new one has no phone until it registers.
    as_staff(&server, Method::GET, STAFF_ME, &anna.token, None)
        .await
        .expect_status(401);
    let me = as_staff(&server, Method::GET, STAFF_ME, &new_token, None).await;
    me.expect_status(200);
    assert_eq!(me.data()["devices"], json!([]), "{}", me.data());
    assert_eq!(me.data()["duty"]["sections"], json!(["1"]), "still on duty");

    // A Notruf of her section: Ben's phone rings, the old phone hears nothing.
    let id = open(&server, &visitor, "Z1", "Notruf", Some("1")).await;
    let bens = service.wait_for(&bens_phone, 1, WAIT).await;
    assert_eq!(bens.len(), 1, "{bens:?}");
    assert_eq!(bens[0]["call"]["id"], id);
    let lost = service
        .wait_for(&old_phone, 1, Duration::from_secs(2))
        .await;
    assert_eq!(lost, Vec::<Value>::new(), "the lost phone got an alert");

    // Revoked: Ben's open page is closed too.
    admin_json(&server, &["staff", "revoke", &ben.id]);
    let (took, code) = closed(&mut bens_page, "revoke: the staff page").await;
    assert!(
        took <= CLOSED_WITHIN + Duration::from_millis(500),
        "{took:?}"
    );
    assert_eq!(code, Some(POLICY));
}

#[tokio::test]
async fn a_rotated_or_revoked_displays_live_socket_is_closed() {
    let server = Server::production(Seed::new());
    let flur = admin_json(&server, &["displays", "create", "--name", "Flur"]);
    let kueche = admin_json(&server, &["displays", "create", "--name", "Küche"]);
    let token = |display: &Value| display["token"].as_str().expect("token").to_string();
    let mut flur_socket = connect_staff_token(&server, &token(&flur)).await;
    let mut kueche_socket = connect_staff_token(&server, &token(&kueche)).await;

    let flur_id = flur["id"].as_str().expect("id");
    admin_json(&server, &["displays", "rotate", flur_id]);
    let (_, code) = closed(&mut flur_socket, "displays rotate: the old token's socket").await;
    assert_eq!(code, Some(POLICY));
    // The other display stays connected: a ping is still answered.
    kueche_socket
        .send(Message::Text(r#"{"action":"ping"}"#.into()))
        .await
        .expect("ping sent");
    let pong = tokio::time::timeout(WAIT, kueche_socket.next())
        .await
        .expect("a pong in time")
        .expect("open")
        .expect("a frame");
    assert!(
        matches!(pong, Message::Text(ref text) if text.contains("pong")),
        "{pong:?}"
    );

    let kueche_id = kueche["id"].as_str().expect("id");
    admin_json(&server, &["displays", "revoke", kueche_id]);
    let (_, code) = closed(&mut kueche_socket, "displays revoke: the socket").await;
    assert_eq!(code, Some(POLICY));
}
