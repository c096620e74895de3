//! Secrets never in logs (issue 8, point 4): everything the server writes
//! (JSON lines on stdout, anything on stderr) over every request path, and
//! the admin command's stderr, hold none of the secrets, none of the hashes
//! sent, none of the hashes the service computed (the sandbox's
//! `debug.hash.expected`) and no cookie proof. In production no error body
//! carries a secret or a `debug` object.
//!
//! The sandbox scenario runs at `info` (the level every stack deploys) and
//! at `trace` (the most an operator could turn on while debugging, the
//! libraries included).

use blackbox_tests::*;
use reqwest::Method;

/// Values that must not appear in any log, with what they are.
#[derive(Default)]
struct Needles(Vec<(String, String)>);

impl Needles {
    fn add(&mut self, what: impl Into<String>, value: impl Into<String>) {
        let value = value.into();
        assert!(value.len() >= 16, "too short to search for: {value:?}");
        self.0.push((what.into(), value));
    }

    /// Asserts that `output` (case-insensitively: hex may be logged in
    /// capitals) contains none of the values.
    fn assert_absent(&self, output: &str, whose: &str) {
        let lower = output.to_ascii_lowercase();
        for (what, value) in &self.0 {
            assert!(
                !lower.contains(&value.to_ascii_lowercase()),
                "{whose} contains {what} ({value}):\n{}",
                lines_with(output, value)
            );
        }
    }
}

fn lines_with(output: &str, value: &str) -> String {
    let value = value.to_ascii_lowercase();
    output
        .lines()
        .filter(|line| line.to_ascii_lowercase().contains(&value))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Sends a signed request, remembers its hash, returns the response.
async fn signed(
    server: &Server,
    needles: &mut Needles,
    path: &str,
    body: String,
    hash: &str,
) -> Response {
    needles.add(format!("the hash sent to {path}"), hash);
    server.post(path, body).await
}

/// The secret the test page shows for the consumer of its cookie.
fn page_pair(page: &Response) -> Consumer {
    let cookie = page.header_all("set-cookie");
    let pair = cookie[0].split(';').next().expect("cookie pair");
    let value = pair.strip_prefix("nc_sandbox=").expect("nc_sandbox");
    let (id, proof) = value.split_once('.').expect("<id>.<proof>");
    let secret = page
        .text
        .split(|c: char| !c.is_ascii_hexdigit())
        .find(|word| word.len() == 64 && hmac_sha256_hex(word, id) == proof)
        .expect("the page shows the secret");
    Consumer::new(id, secret)
}

/// Every request path of the sandbox, with the secrets and hashes it used.
async fn sandbox_scenario(server: &Server) -> Needles {
    let mut needles = Needles::default();
    let remember = |needles: &mut Needles, c: &Consumer| {
        needles.add(format!("the secret of {}", c.id), c.secret.clone());
        needles.add(format!("the proof of {}", c.id), c.proof());
    };

    // Consumers: by the endpoint, by a first page visit.
    let a = server.new_consumer().await;
    remember(&mut needles, &a);
    let page = server.get("/").await;
    page.expect_status(200);
    let b = page_pair(&page);
    remember(&mut needles, &b);
    // The page again with the cookie, and with a forged one.
    server
        .request(
            Method::GET,
            "/",
            None,
            &[("Cookie", &b.cookie())],
            Vec::new(),
        )
        .await
        .expect_status(200);
    let forged = hmac_sha256_hex("forged", &b.id);
    needles.add("a forged proof", forged.clone());
    let forged_page = server
        .request(
            Method::GET,
            "/",
            None,
            &[("Cookie", &format!("nc_sandbox={}.{forged}", b.id))],
            Vec::new(),
        )
        .await;
    let c = page_pair(&forged_page);
    remember(&mut needles, &c);

    // Display: open, reopen, include=type, close.
    // Dated an hour ago, within the week a sent time may lie in (DECISIONS §5).
    let dated = format!(
        r#"{{"event":"WC","created_at":"{}"}}"#,
        WireClock::berlin().at(-3600)
    );
    for (target, data) in [
        (
            "Zimmer-1",
            r#"{"event":"Notruf","battery":80,"position":"Fenster"}"#,
        ),
        ("Zimmer-1", r#"{"event":"Notruf"}"#),
        ("Zimmer-2", dated.as_str()),
        ("Zimmer-1", r#"{"closed":true}"#),
    ] {
        let hash = a.sign(target, data);
        let response = signed(server, &mut needles, DISPLAY, a.body(target, data), &hash).await;
        assert!(response.status < 300, "{data}: {}", response.text);
    }
    let data = r#"{"event":"Anwesenheit"}"#;
    let hash = b.sign("Zimmer-3", data);
    signed(
        server,
        &mut needles,
        &format!("{DISPLAY}?include=type"),
        b.body("Zimmer-3", data),
        &hash,
    )
    .await
    .expect_status(201);
    // Display: invalid hashes (known consumer: debug with the expected hash;
    // SHA-1; unknown consumer), 422 of structure and of state, malformed.
    for (consumer, hash) in [
        (&a, "ab".repeat(32)),
        (
            &a,
            hmac_sha1_hex(
                &a.secret,
                &signing_string("Zimmer-1", &a.id, r#"{"event":"WC"}"#),
            ),
        ),
        (
            &a,
            hmac_sha256_hex(
                &b.secret,
                &signing_string("Zimmer-1", &a.id, r#"{"event":"WC"}"#),
            ),
        ),
    ] {
        let body = envelope(Some("Zimmer-1"), &consumer.id, &hash, r#"{"event":"WC"}"#);
        let response = signed(server, &mut needles, DISPLAY, body, &hash).await;
        response.expect_status(400);
        let debug = response.json()["debug"].clone();
        let expected = debug["hash"]["expected"].as_str().expect("expected hash");
        needles.add("an expected hash of debug", expected);
        assert_eq!(debug["secret"], consumer.secret.as_str());
    }
    let stranger = Consumer::new(
        "d1e2f3a4-b5c6-4d7e-8f90-a1b2c3d4e5f6",
        "stranger-secret-1234",
    );
    remember(&mut needles, &stranger);
    let hash = stranger.sign("Zimmer-1", r#"{"event":"WC"}"#);
    signed(
        server,
        &mut needles,
        DISPLAY,
        stranger.body("Zimmer-1", r#"{"event":"WC"}"#),
        &hash,
    )
    .await
    .expect_status(400);
    for (data, status) in [
        (r#"{"event":"Feueralarm"}"#, 422),
        (r#"{"event":"Notruf","battery":101}"#, 422),
        (r#"{"event":"Notruf","event":"WC"}"#, 400),
    ] {
        let hash = a.sign("Zimmer-1", data);
        let response = signed(
            server,
            &mut needles,
            DISPLAY,
            a.body("Zimmer-1", data),
            &hash,
        )
        .await;
        assert_eq!(response.status, status, "{data}: {}", response.text);
    }
    let hash = a.sign("Zimmer-1", r#"{"event":"WC"}"#);
    let cut = a.body("Zimmer-1", r#"{"event":"WC"}"#);
    needles.add("the hash of a cut-off body", hash.clone());
    server
        .post(DISPLAY, cut[..cut.len() - 2].to_string())
        .await
        .expect_status(400);

    // Element: single, multi, invalid hash in the multi form.
    let hash = a.sign("Zimmer-1", r#"{"battery":50}"#);
    signed(
        server,
        &mut needles,
        ELEMENT,
        a.body("Zimmer-1", r#"{"battery":50}"#),
        &hash,
    )
    .await
    .expect_status(200);
    let multi =
        r#"[{"target":"Zimmer-1","reachable":true},{"target":"Zimmer-9","position":"Flur"}]"#;
    let hash = b.sign("", multi);
    signed(server, &mut needles, ELEMENT, b.multi_body(multi), &hash)
        .await
        .expect_status(200);
    let wrong = hmac_sha256_hex(&a.secret, multi);
    let response = signed(
        server,
        &mut needles,
        ELEMENT,
        envelope(None, &b.id, &wrong, multi),
        &wrong,
    )
    .await;
    response.expect_status(400);
    needles.add(
        "the expected multi hash",
        response.json()["debug"]["hash"]["expected"]
            .as_str()
            .expect("expected"),
    );

    // Call types, the state by query and by cookie, wrong proofs.
    server.get(CALL_TYPES).await.expect_status(200);
    server
        .get(&format!(
            "{SANDBOX_STATE}?consumer={}&hash={}",
            a.id,
            a.proof()
        ))
        .await
        .expect_status(200);
    server
        .request(
            Method::GET,
            SANDBOX_STATE,
            None,
            &[("Cookie", &b.cookie())],
            Vec::new(),
        )
        .await
        .expect_status(200);
    let wrong_proof = hmac_sha256_hex(&b.secret, &a.id);
    needles.add("a wrong state proof", wrong_proof.clone());
    server
        .get(&format!(
            "{SANDBOX_STATE}?consumer={}&hash={wrong_proof}",
            a.id
        ))
        .await
        .expect_status(400);
    server
        .get(&format!("{SANDBOX_STATE}?consumer=x&hash={}", a.proof()))
        .await
        .expect_status(422);

    // 404, 405, 413, 415 with signed bodies.
    let body = a.body("Zimmer-1", r#"{"closed":true}"#);
    needles.add(
        "the hash of a refused body",
        a.sign("Zimmer-1", r#"{"closed":true}"#),
    );
    for (method, path, content_type, status) in [
        (
            Method::POST,
            "/api/v1/nothing",
            Some("application/json"),
            404,
        ),
        (
            Method::POST,
            "/api/v1/display/",
            Some("application/json"),
            404,
        ),
        (Method::PUT, DISPLAY, Some("application/json"), 405),
        (Method::GET, ELEMENT, Some("application/json"), 405),
        (Method::POST, DISPLAY, Some("text/plain"), 415),
        (Method::POST, ELEMENT, None, 415),
    ] {
        let response = server
            .request(
                method.clone(),
                path,
                content_type,
                &[("Cookie", &a.cookie())],
                body.clone(),
            )
            .await;
        assert_eq!(response.status, status, "{method} {path}");
    }
    let mut oversized = body.clone();
    oversized.push_str(&" ".repeat(256 * 1024));
    server.post(DISPLAY, oversized).await.expect_status(413);
    needles
}

/// Stops the server and returns everything it wrote.
fn output_after_exit(mut server: Server) -> String {
    server.terminate();
    server.all_output()
}

async fn sandbox_logs_hold_no_secret_at(level: &str) {
    let server = Server::start(Options::sandbox().env("RUST_LOG", level));
    let needles = sandbox_scenario(&server).await;
    let output = output_after_exit(server);
    // The logs cover the scenario: one `request` line per request at least.
    let requests = output
        .lines()
        .filter(|line| line.contains(r#""message":"request""#))
        .count();
    assert!(
        requests >= 30,
        "only {requests} request lines at {level}:\n{output}"
    );
    needles.assert_absent(&output, &format!("the server's output at {level}"));
    eprintln!(
        "{level}: {} lines checked for {} values",
        output.lines().count(),
        needles.0.len()
    );
}

#[tokio::test]
async fn sandbox_logs_hold_no_secret_or_hash_at_info() {
    sandbox_logs_hold_no_secret_at("info").await;
}

#[tokio::test]
async fn sandbox_logs_hold_no_secret_or_hash_even_at_trace() {
    sandbox_logs_hold_no_secret_at("trace").await;
}

// ---------------------------------------------------------------------------
// Production
// ---------------------------------------------------------------------------

const CENTRAL: &str = "11111111-2222-4333-8444-555555555555";
const CENTRAL_SECRET: &str = "central-secret-0123456789";
const ROOM: &str = "00:11:22:33:44:55";

/// In production no error body carries a secret, a `debug` object or the
/// hash the service computed, and the logs hold none of them either.
#[tokio::test]
async fn production_error_bodies_and_logs_hold_no_secret() {
    let server = Server::production(
        Seed::new()
            .consumer(CENTRAL, &[CENTRAL_SECRET], true)
            .element(ROOM, "Z101", "Zimmer 101"),
    );
    let central = Consumer::new(CENTRAL, CENTRAL_SECRET);
    let mut needles = Needles::default();
    needles.add("the seeded secret", CENTRAL_SECRET);
    needles.add("the central's proof", central.proof());
    let mut bodies: Vec<(String, Response)> = Vec::new();

    let mut send = |what: &str, response: Response| {
        bodies.push((what.to_string(), response));
    };
    for (what, data) in [
        ("open", r#"{"event":"Notruf"}"#),
        ("unknown event", r#"{"event":"Feueralarm"}"#),
        ("bad battery", r#"{"event":"Notruf","battery":-1}"#),
        ("close", r#"{"closed":true}"#),
    ] {
        needles.add(format!("the hash of {what}"), central.sign(ROOM, data));
        send(what, server.display(&central, ROOM, data).await);
    }
    let unknown_room = central.body("AA:BB", r#"{"event":"Notruf"}"#);
    needles.add(
        "the hash for an unknown room",
        central.sign("AA:BB", r#"{"event":"Notruf"}"#),
    );
    send("unknown element", server.post(DISPLAY, unknown_room).await);
    // Wrong hashes of a known consumer: the right one must not show up.
    for (what, secret) in [("another secret", "not-the-secret"), ("no secret", "")] {
        for data in [r#"{"event":"WC"}"#, r#"{"battery":3}"#] {
            let wrong = hmac_sha256_hex(secret, &signing_string(ROOM, CENTRAL, data));
            needles.add(format!("a wrong hash ({what})"), wrong.clone());
            let path = if data.contains("event") {
                DISPLAY
            } else {
                ELEMENT
            };
            needles.add(
                format!("the right hash of {data}"),
                central.sign(ROOM, data),
            );
            needles.add(
                format!("the right SHA-1 of {data}"),
                hmac_sha1_hex(CENTRAL_SECRET, &signing_string(ROOM, CENTRAL, data)),
            );
            let response = server
                .post(path, envelope(Some(ROOM), CENTRAL, &wrong, data))
                .await;
            assert_eq!(response.status, 400, "{what}: {}", response.text);
            assert_eq!(response.text, invalid_hash_body(), "{what}");
            send(what, response);
        }
    }
    let multi = format!(r#"[{{"target":"{ROOM}","battery":5}}]"#);
    needles.add("a multi hash", central.sign("", &multi));
    send("multi", server.element_multi(&central, &multi).await);
    for (what, method, path, content_type, body) in [
        (
            "malformed",
            Method::POST,
            DISPLAY,
            Some("application/json"),
            "{".to_string(),
        ),
        (
            "415",
            Method::POST,
            ELEMENT,
            Some("text/plain"),
            central.body(ROOM, "{}"),
        ),
        ("405", Method::GET, DISPLAY, None, String::new()),
        ("404", Method::GET, "/", None, String::new()),
        (
            "404 state",
            Method::GET,
            &format!(
                "{SANDBOX_STATE}?consumer={CENTRAL}&hash={}",
                central.proof()
            ),
            None,
            String::new(),
        ),
    ] {
        send(
            what,
            server.request(method, path, content_type, &[], body).await,
        );
    }

    for (what, response) in &bodies {
        let body = &response.text;
        if response.status >= 400 {
            assert!(!body.contains("debug"), "{what}: {body}");
            let json = response.json();
            assert_eq!(json["success"], false, "{what}: {body}");
            assert!(json.get("debug").is_none(), "{what}: {body}");
        }
        needles.assert_absent(body, &format!("the {} body of {what}", response.status));
    }
    assert!(bodies.iter().any(|(_, r)| r.status == 201));
    let output = output_after_exit(server);
    assert!(output.contains(CENTRAL), "the logs name the consumer");
    needles.assert_absent(&output, "the production server's output");
}

// ---------------------------------------------------------------------------
// The admin command
// ---------------------------------------------------------------------------

/// `consumers create` and `rotate` print the secret once, on stdout, by
/// design (nothing else can show it again); stderr (notes, errors) never
/// holds one, nor does `list`, `retire-secret` or `revoke`, in either
/// output format. The server on the same store logs none of them.
#[tokio::test]
async fn admin_prints_a_secret_once_on_stdout_and_never_on_stderr() {
    let server = Server::production(Seed::new().element(ROOM, "Z101", "Zimmer 101"));
    let mut needles = Needles::default();
    let check = |run: &AdminRun, printed: Option<&str>, needles: &Needles| {
        needles.assert_absent(&run.stderr, &format!("admin {:?} stderr", run.args));
        match printed {
            Some(secret) => assert_eq!(
                run.stdout.matches(secret).count(),
                1,
                "admin {:?} shows its secret once: {run:#?}",
                run.args
            ),
            None => needles.assert_absent(&run.stdout, &format!("admin {:?} stdout", run.args)),
        }
    };

    // Human output: `consumer  <id>` and `secret  <hex>` lines.
    let run = server
        .admin(&["consumers", "create", "--name", "Zentrale Station 1"])
        .success();
    let field = |run: &AdminRun, key: &str| -> String {
        run.stdout
            .lines()
            .find_map(|line| line.strip_prefix(key).map(|v| v.trim().to_string()))
            .unwrap_or_else(|| panic!("no {key} line: {run:#?}"))
    };
    let human_id = field(&run, "consumer");
    let human_secret = field(&run, "secret");
    needles.add("the human create's secret", human_secret.clone());
    check(&run, Some(&human_secret), &needles);

    // JSON output.
    let run = server
        .admin(&[
            "--json",
            "consumers",
            "create",
            "--name",
            "Gateway",
            "--sha1",
        ])
        .success();
    let json_id = run.json()["id"].as_str().expect("id").to_string();
    let json_secret = run.json()["secret"].as_str().expect("secret").to_string();
    needles.add("the JSON create's secret", json_secret.clone());
    check(&run, Some(&json_secret), &needles);

    // The new consumers work.
    let human = Consumer::new(&human_id, &human_secret);
    server
        .element(&human, ROOM, r#"{"battery":10}"#)
        .await
        .expect_status(200);
    needles.add(
        "a hash of the human consumer",
        human.sign(ROOM, r#"{"battery":10}"#),
    );

    // Rotation: the new secret once on stdout, in both formats.
    let run = server.admin(&["consumers", "rotate", &human_id]).success();
    let rotated = field(&run, "new secret");
    needles.add("the rotated secret", rotated.clone());
    check(&run, Some(&rotated), &needles);
    let run = server
        .admin(&["--json", "consumers", "rotate", &json_id])
        .success();
    let rotated_json = run.json()["secret"].as_str().expect("secret").to_string();
    needles.add("the rotated JSON secret", rotated_json.clone());
    check(&run, Some(&rotated_json), &needles);

    // Refusals, listings, retiring, revoking: no secret anywhere.
    let run = server.admin(&["consumers", "rotate", &human_id]);
    assert_eq!(run.code, Some(1), "a third secret is refused: {run:#?}");
    check(&run, None, &needles);
    for args in [
        vec!["consumers", "list"],
        vec!["--json", "consumers", "list"],
        vec!["consumers", "retire-secret", &human_id],
        vec!["--json", "consumers", "retire-secret", &json_id],
        vec!["consumers", "list"],
        vec!["consumers", "revoke", &json_id],
        vec!["consumers", "revoke", &json_id],
        vec!["consumers", "rotate", "not-a-uuid"],
    ] {
        let run = server.admin(&args);
        check(&run, None, &needles);
    }
    let output = output_after_exit(server);
    needles.assert_absent(&output, "the server's output");
}
