//! Where webhooks may go (DECISIONS §20): a URL whose host is or resolves
//! to an address of the home's network or this machine (loopback, private,
//! link-local, unspecified) is refused by `nurse-call-admin webhooks
//! create` unless `--private-network` is given, and every connection is
//! checked again after DNS resolution, so that a name that resolves inside
//! later (DNS rebinding) reaches nothing. Runs on SQLite and, with
//! `BLACKBOX_STORE=dynamodb`, on moto.

mod webhooks_support;
mod hand_edits {
    #[allow(dead_code)]
    pub(crate) mod edits;
    #[allow(dead_code)]
    #[path = "../live_aws/moto_api.rs"]
    pub(crate) mod moto_api;
}

use std::time::Duration;

use blackbox_tests::*;
use hand_edits::edits::{V, update_item, update_row};
use webhooks_support::*;

fn listed(server: &Server) -> Value {
    server
        .admin(&["webhooks", "list", "--json"])
        .success()
        .json()
}

#[tokio::test]
async fn an_inside_address_needs_private_network_at_create() {
    let _serial = SERIAL.lock().await;
    let server = Server::start(production_options(1));

    for url in [
        "https://10.1.2.3/hook",
        "https://192.168.178.20:8443/espa",
        "https://169.254.169.254/latest",
        "https://[::ffff:10.0.0.1]/hook",
        "https://[fd00::5]/hook",
        "https://0.0.0.0/hook",
        "https://localhost/hook",
        "http://127.0.0.1:9/hook",
    ] {
        let refused = server.admin(&["webhooks", "create", "--url", url]);
        assert_eq!(refused.code, Some(1), "{url}: {refused:#?}");
        assert!(
            refused.stderr.contains("--private-network") && refused.stdout.is_empty(),
            "{url}: {refused:#?}"
        );
    }
    assert_eq!(listed(&server), json!([]), "nothing stored");

    let created = server
        .admin(&[
            "webhooks",
            "create",
            "--url",
            "https://10.1.2.3/hook",
            "--private-network",
            "--json",
        ])
        .success()
        .json();
    let endpoints = listed(&server);
    assert_eq!(endpoints.as_array().map(Vec::len), Some(1), "{endpoints}");
    assert_eq!(endpoints[0]["id"], created["id"]);
    assert_eq!(endpoints[0]["private_network"], true, "{endpoints}");
    let table = server.admin(&["webhooks", "list"]).success().stdout;
    assert!(
        table.contains("NETWORK") && table.contains("private"),
        "{table}"
    );

    // An outside address needs no flag, and is listed without it. (A
    // documentation address: it does not resolve, it is not looked up.)
    server
        .admin(&["webhooks", "create", "--url", "https://203.0.113.7/hook"])
        .success();
    let endpoints = listed(&server);
    let public = endpoints
        .as_array()
        .expect("endpoints")
        .iter()
        .find(|e| e["url"] == "https://203.0.113.7/hook")
        .expect("listed");
    assert_eq!(public["private_network"], false, "{endpoints}");
}

/// A name that passed `create` and resolves to this machine now: the
/// endpoint made with the flag for the receiver on `localhost`, then the
/// flag taken away behind the server's back (as an endpoint stored when
/// its name still pointed outside). The sender leaves a name to its
/// resolver, which drops `localhost`'s loopback addresses after resolving
/// it: the attempts are refused before a connection is made, each one is in
/// the delivery log, and the server says so in an error line naming the
/// endpoint, its host and what it resolved to.
#[tokio::test]
async fn a_name_that_resolves_to_this_machine_reaches_nothing_at_connection_time() {
    let _serial = SERIAL.lock().await;
    let server = Server::start(production_options(1));
    let receiver = Receiver::start(None);
    let url = format!("http://localhost:{}/hook?token=do-not-log", receiver.port);
    let created = server
        .admin(&[
            "webhooks",
            "create",
            "--url",
            &url,
            "--private-network",
            "--json",
        ])
        .success()
        .json();
    let id = created["id"].as_str().expect("id").to_string();
    receiver
        .secrets(&[created["secret"].as_str().expect("secret")])
        .await;
    if on_dynamodb() {
        update_item(
            &server,
            "data",
            json!({ "pk": { "S": "webhook#endpoints" }, "sk": { "S": id } }),
            &[("private_network", V::B(false))],
        )
        .await;
    } else {
        update_row(
            &server,
            "webhook_endpoints",
            "id",
            &id,
            &[("private_network", V::B(false))],
        );
    }
    assert_eq!(listed(&server)[0]["private_network"], false);
    tokio::time::sleep(ENDPOINT_SEEN_WITHIN).await;

    open_notruf(&server, &room(1), "1").await;
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let log = loop {
        let log = server
            .admin(&["webhooks", "deliveries", "--failed", "--json"])
            .success()
            .json();
        if log.as_array().is_some_and(|attempts| attempts.len() >= 2) {
            break log;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no attempts logged: {log:#?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    for attempt in log.as_array().expect("attempts") {
        assert_eq!(attempt["endpoint"], id.as_str(), "{log:#?}");
        assert_eq!(attempt["outcome"], "refused: private address", "{log:#?}");
        assert_eq!(
            attempt["end"], "retry",
            "retried like a network error: {log:#?}"
        );
    }
    assert!(
        receiver.received().await.is_empty(),
        "nothing reached the receiver"
    );

    let logs =
        server.logs_once(|lines| lines.iter().any(|l| l.contains("private_address_refused")));
    let line = logs
        .iter()
        .find(|l| l.contains("private_address_refused"))
        .expect("an error line");
    assert!(
        line.contains("ERROR")
            && line.contains(&id)
            && line.contains("localhost")
            && line.contains("127.0.0.1"),
        "{line}"
    );
    assert!(
        !server.all_output().contains("do-not-log"),
        "the URL's query is never logged"
    );
}
