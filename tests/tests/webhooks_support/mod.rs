//! What the webhook tests share (tests/tests/webhooks.rs): a receiver that
//! verifies every delivery with the Standard Webhooks library from PyPI
//! (tests/receivers/webhook_receiver.py), a production server with staff
//! and an endpoint made by the admin command, and the deliveries read back.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use blackbox_tests::*;

/// The webhook tests run one at a time: each measures times (the first
/// attempt within 1 s, the backoff ± 20 %), and the kill test's 500 calls
/// would take the machine (or moto) from the others.
pub(crate) static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The consumer of the central system in these tests.
pub(crate) const CENTRAL: &str = "6a0f7f0e-2b1c-4d3e-8f4a-5b6c7d8e9f01";
pub(crate) const CENTRAL_SECRET: &str = "central-secret";

/// How long until the server's writes keep events for a new endpoint
/// (DynamoDB: its store's `WEBHOOK_ENDPOINTS_SEEN_WITHIN`, 1 s, and a margin).
pub(crate) const ENDPOINT_SEEN_WITHIN: Duration = Duration::from_millis(1200);

pub(crate) fn central() -> Consumer {
    Consumer::new(CENTRAL, CENTRAL_SECRET)
}

/// Rooms `Zimmer.1` … `Zimmer.<rooms>`, elements of the production seed.
pub(crate) fn room(n: usize) -> String {
    format!("Zimmer.{n}")
}

pub(crate) fn production_options(rooms: usize) -> Options {
    let mut seed = Seed::new().consumer(CENTRAL, &[CENTRAL_SECRET], false);
    for n in 1..=rooms {
        seed = seed.element(&room(n), &format!("Z{n}"), &format!("Zimmer {n}"));
    }
    Options::production(seed)
}

/// One delivery as the receiver recorded it.
#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    pub id: String,
    pub timestamp: i64,
    pub signature: String,
    pub kind: Option<String>,
    pub body: Value,
    pub raw_body: String,
    pub verified: bool,
    pub status: u16,
    pub received_at: f64,
    pub content_type: Option<String>,
}

impl Delivery {
    pub(crate) fn call_id(&self) -> Option<i64> {
        self.body["data"]["call"]["id"].as_i64()
    }
}

/// The receiver process; stopped when dropped.
pub(crate) struct Receiver {
    child: Child,
    pub port: u16,
    client: reqwest::Client,
}

impl Receiver {
    /// Starts one on a free port (or `port`, a restart on the same one).
    pub(crate) fn start(port: Option<u16>) -> Receiver {
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("receivers")
            .join("webhook_receiver.py");
        let mut child = Command::new("python3")
            .arg(script)
            .args(["--port", &port.unwrap_or(0).to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs the receiver (scripts/test puts the test venv on PATH)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the receiver says where it listens");
        let port = line
            .trim()
            .strip_prefix("listening on ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| {
                panic!("the receiver did not start (is standardwebhooks installed?): {line:?}")
            });
        Receiver {
            child,
            port,
            client: http_client_waiting(Duration::from_secs(30)),
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hook", self.port)
    }

    pub(crate) async fn secrets(&self, secrets: &[&str]) {
        self.control("secrets", json!({ "secrets": secrets })).await;
    }

    /// The statuses the next verified deliveries get, in turn (then 200).
    pub(crate) async fn answers(&self, statuses: &[u16]) {
        self.control("answers", json!({ "statuses": statuses }))
            .await;
    }

    async fn control(&self, what: &str, body: Value) {
        let response = self
            .client
            .post(format!("http://127.0.0.1:{}/control/{what}", self.port))
            .json(&body)
            .send()
            .await
            .expect("receiver control");
        assert_eq!(response.status(), 200);
    }

    /// Everything received so far, in arrival order.
    pub(crate) async fn received(&self) -> Vec<Delivery> {
        let all: Value = self
            .client
            .get(format!("http://127.0.0.1:{}/control/received", self.port))
            .send()
            .await
            .expect("receiver answers")
            .json()
            .await
            .expect("JSON");
        all["deliveries"]
            .as_array()
            .expect("deliveries")
            .iter()
            .map(|d| Delivery {
                id: d["id"].as_str().unwrap_or_default().to_string(),
                timestamp: d["timestamp"]
                    .as_str()
                    .and_then(|t| t.parse().ok())
                    .unwrap_or_default(),
                signature: d["signature"].as_str().unwrap_or_default().to_string(),
                kind: d["type"].as_str().map(str::to_string),
                raw_body: d["body"].as_str().unwrap_or_default().to_string(),
                body: serde_json::from_str(d["body"].as_str().unwrap_or("null"))
                    .unwrap_or(Value::Null),
                verified: d["verified"] == true,
                status: d["status"].as_u64().unwrap_or_default() as u16,
                received_at: d["received_at"].as_f64().unwrap_or_default(),
                content_type: d["content_type"].as_str().map(str::to_string),
            })
            .collect()
    }

    /// Waits until `enough` holds for what was received (at most `within`).
    pub(crate) async fn received_until(
        &self,
        within: Duration,
        enough: impl Fn(&[Delivery]) -> bool,
    ) -> Vec<Delivery> {
        let deadline = Instant::now() + within;
        loop {
            let received = self.received().await;
            if enough(&received) {
                return received;
            }
            assert!(
                Instant::now() < deadline,
                "not received within {within:?}; got {:#?}",
                received
                    .iter()
                    .map(|d| (&d.kind, d.status, d.call_id(), &d.id))
                    .collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An endpoint for `receiver` made with `nurse-call-admin webhooks create`
/// (`extra`: `--event …`, `--section …`); its id and secret, given to the
/// receiver. The receivers listen on loopback, which only an endpoint with
/// `--private-network` reaches (DECISIONS §20). On DynamoDB the server's writes learn of a new endpoint within
/// a second (docs/webhooks.md): the helper waits that long, as an admin
/// would before a test call.
pub(crate) async fn endpoint(
    server: &Server,
    receiver: &Receiver,
    extra: &[&str],
) -> (String, String) {
    let url = receiver.url();
    let mut args = vec![
        "webhooks",
        "create",
        "--url",
        url.as_str(),
        "--private-network",
        "--json",
    ];
    args.extend_from_slice(extra);
    let created = server.admin(&args).success().json();
    let secret = created["secret"].as_str().expect("secret").to_string();
    receiver.secrets(&[&secret]).await;
    if on_dynamodb() {
        tokio::time::sleep(ENDPOINT_SEEN_WITHIN).await;
    }
    (created["id"].as_str().expect("id").to_string(), secret)
}

/// What a display's or staff page's read says of failing endpoints ("Weiterleitung
/// gestört"): the `forwarding` list of an authorised `GET path`
/// (`/api/v1/display/calls` with a display's token, `/api/v1/staff/calls`
/// with a staff member's).
pub(crate) async fn forwarding_of(server: &Server, path: &str, token: &str) -> Value {
    let bearer = format!("Bearer {token}");
    let read = server
        .request(
            reqwest::Method::GET,
            path,
            None,
            &[("Authorization", bearer.as_str())],
            Vec::new(),
        )
        .await;
    read.expect_status(200);
    read.data()["forwarding"].clone()
}

/// A staff member made with `nurse-call-admin staff create`; id and token.
pub(crate) fn staff_member(server: &Server, name: &str, device: &str) -> (String, String) {
    let created = server
        .admin(&[
            "staff", "create", "--name", name, "--device", device, "--json",
        ])
        .success()
        .json();
    (
        created["id"].as_str().expect("id").to_string(),
        created["token"].as_str().expect("token").to_string(),
    )
}

/// Signs `token`'s staff member on for `sections`.
pub(crate) async fn sign_on(server: &Server, token: &str, sections: &[&str]) {
    let bearer = format!("Bearer {token}");
    server
        .request(
            reqwest::Method::PUT,
            "/api/v1/staff/duty",
            Some("application/json"),
            &[("Authorization", bearer.as_str())],
            json!({ "sections": sections }).to_string(),
        )
        .await
        .expect_status(200);
}

/// `token`'s staff member answers call `id`.
pub(crate) async fn respond(server: &Server, token: &str, id: i64, response: &str) -> Response {
    let bearer = format!("Bearer {token}");
    server
        .request(
            reqwest::Method::POST,
            &format!("/api/v1/staff/calls/{id}/responses"),
            Some("application/json"),
            &[("Authorization", bearer.as_str())],
            json!({ "response": response }).to_string(),
        )
        .await
}

/// Opens a Notruf on `address` in `section`; the call's id.
pub(crate) async fn open_notruf(server: &Server, address: &str, section: &str) -> i64 {
    let data = json!({ "event": "Notruf", "section": section }).to_string();
    let response = server.display(&central(), address, &data).await;
    response.expect_status(201);
    response.data()["id"].as_i64().expect("id")
}

pub(crate) async fn close(server: &Server, address: &str) {
    server
        .display(&central(), address, r#"{"closed":true}"#)
        .await
        .expect_status(200);
}

pub(crate) fn now_seconds() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64()
}
