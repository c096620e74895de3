//! Hostile input over HTTP (issue 8, point 2): bodies that are not JSON, cut
//! off, nested 10,000 deep, huge, ambiguous (duplicate keys), of the wrong
//! types, with odd numbers, NUL and control characters, invalid UTF-8, lone
//! surrogates, too many items, unknown keys, wrong content types, wrong
//! methods and path tricks. Every case asserts the documented status and the
//! exact body (DECISIONS §3), and that the consumer's data did not change.
//!
//! Where DECISIONS is silent, these tests pin what was decided (each
//! decision is named at its test):
//! - `malformed_request` texts are German, name the cause and point into
//!   the body (line and byte column, also inside `data`).
//! - Nesting: at most 128 levels in all, the envelope included (serde_json's
//!   recursion limit); deeper is 400, never a crash.
//! - Text fields (address, event, position, section, attribute, code) refuse
//!   control characters (Unicode Cc, `\u0000` included) with a 422; unknown
//!   keys may hold anything a JSON string may.
//! - Top-level keys other than target, consumer, hash, data (and the replay
//!   field) are ignored and not signed; unknown keys in `data` are ignored
//!   and signed (DECISIONS §6).
//! - The `charset` parameter of `application/json` is ignored (the body is
//!   UTF-8, RFC 8259 §8.1); two `Content-Type` headers are a 415.
//! - Only the documented method of a path is served: HEAD and OPTIONS are
//!   405 with `Allow` like any other method.
//! - Paths match byte for byte: no trailing slash, no `//`, no dot segments,
//!   no percent-decoding, no case folding (404). Query parameters other than
//!   `include` on the display path are ignored.
//! - A body that ends before its `Content-Length` is a 400.

use std::sync::atomic::{AtomicUsize, Ordering};

use blackbox_tests::*;
use reqwest::Method;

/// Inputs sent by this file (each test prints its own count too).
static TRIED: AtomicUsize = AtomicUsize::new(0);

fn tried(test: &str, count: usize) {
    let total = TRIED.fetch_add(count, Ordering::Relaxed) + count;
    eprintln!("{test}: {count} inputs (file total so far {total})");
}

// ---------------------------------------------------------------------------
// Expected bodies
// ---------------------------------------------------------------------------

fn malformed(text: &str) -> String {
    error_body("malformed_request", 400, text)
}

fn incomplete(column: usize) -> String {
    malformed(&format!(
        "Der Anfragekörper ist unvollständig (Zeile 1, Spalte {column}). Erwartet wird ein JSON-Objekt."
    ))
}

fn not_json(column: usize) -> String {
    malformed(&format!(
        "Der Anfragekörper ist kein gültiges JSON (Zeile 1, Spalte {column}). Erwartet wird ein JSON-Objekt."
    ))
}

fn not_an_object(column: usize) -> String {
    malformed(&format!(
        "Der Anfragekörper ist kein JSON-Objekt (Zeile 1, Spalte {column}). Erwartet wird ein JSON-Objekt."
    ))
}

fn too_deep(column: usize) -> String {
    malformed(&format!(
        "Der Anfragekörper ist zu tief verschachtelt (Zeile 1, Spalte {column}). Erlaubt sind höchstens 128 Ebenen."
    ))
}

fn out_of_range(column: usize) -> String {
    malformed(&format!(
        "Der Anfragekörper enthält eine Zahl außerhalb des Wertebereichs (Zeile 1, Spalte {column}). \
         Zahlen müssen als 64-Bit-Gleitkommazahl darstellbar sein."
    ))
}

fn bad_escape(column: usize) -> String {
    malformed(&format!(
        "Der Anfragekörper enthält eine ungültige Escape-Sequenz (Zeile 1, Spalte {column}). \
         Ein \\u-Escape muss ein Unicode-Zeichen ergeben (Surrogate nur als Paar)."
    ))
}

fn raw_control_character(column: usize) -> String {
    malformed(&format!(
        "Der Anfragekörper enthält ein Steuerzeichen in einer Zeichenkette (Zeile 1, Spalte {column}). \
         Steuerzeichen sind in JSON-Zeichenketten nur als \\u-Escape erlaubt."
    ))
}

fn duplicate(key: &str, column: usize) -> String {
    malformed(&format!(
        "Der Anfragekörper enthält den Schlüssel \"{key}\" doppelt (Zeile 1, Spalte {column}). \
         Jeder Schlüssel darf in einem Objekt nur einmal vorkommen."
    ))
}

fn trailing(column: usize) -> String {
    malformed(&format!(
        "Der Anfragekörper enthält nach dem JSON-Objekt weitere Zeichen (Zeile 1, Spalte {column}). \
         Erwartet wird genau ein JSON-Objekt."
    ))
}

fn not_utf8() -> String {
    malformed("Der Anfragekörper ist kein gültiges UTF-8.")
}

fn unsupported_media_type() -> String {
    error_body(
        "unsupported_media_type",
        415,
        "Der Content-Type muss application/json sein.",
    )
}

fn not_found() -> String {
    error_body(
        "not_found",
        404,
        "Die angeforderte Ressource wurde nicht gefunden.",
    )
}

fn method_not_allowed(allow: &str) -> String {
    error_body(
        "method_not_allowed",
        405,
        &format!("Die Methode ist für diese Ressource nicht erlaubt. Erlaubt: {allow}."),
    )
}

fn payload_too_large() -> String {
    error_body(
        "payload_too_large",
        413,
        "Der Anfragekörper ist größer als 256 KiB.",
    )
}

/// A 422 with one field and one message.
fn invalid(key: &str, message: &str) -> String {
    validation_body(&[(key, &[message])])
}

/// The 1-based byte column of the first `needle` in a one-line `body`.
fn column_of(body: &str, needle: &str) -> usize {
    body.find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in {body}"))
        + 1
}

// ---------------------------------------------------------------------------
// The fixture: a consumer with known data, and its state before and after
// ---------------------------------------------------------------------------

/// A sandbox server and a consumer that already has an open call, a closed
/// call and two elements. Hostile requests carry this consumer's id (and a
/// valid hash wherever the body can be signed), so that anything they wrote
/// would show in its state.
struct Fixture {
    server: Server,
    c: Consumer,
    before: Value,
}

impl Fixture {
    async fn new() -> Fixture {
        let server = Server::sandbox();
        let c = server.new_consumer().await;
        // Dated within the last week, the range the service accepts (DECISIONS §5).
        let clock = WireClock::berlin();
        let (seven, half_past, eight) = (
            clock.at(-3 * 3600),
            clock.at(-5 * 1800),
            clock.at(-2 * 3600),
        );
        for (target, data, status) in [
            (
                "Zimmer-1",
                format!(
                    r#"{{"event":"Notruf","created_at":"{eight}","battery":50,"position":"Fenster","reachable":true}}"#
                ),
                201,
            ),
            (
                "Zimmer-2",
                format!(r#"{{"event":"WC","created_at":"{seven}"}}"#),
                201,
            ),
            (
                "Zimmer-2",
                format!(r#"{{"closed":true,"closed_at":"{half_past}","battery":20}}"#),
                200,
            ),
        ] {
            server
                .display(&c, target, &data)
                .await
                .expect_status(status);
        }
        let before = state_of(&server, &c).await;
        assert_eq!(before["calls"].as_array().map(Vec::len), Some(2));
        assert_eq!(before["elements"].as_array().map(Vec::len), Some(2));
        Fixture { server, c, before }
    }

    /// Asserts that the consumer's data is as it was at the start.
    async fn assert_unchanged(&self, after: &str) {
        let now = state_of(&self.server, &self.c).await;
        assert_eq!(now, self.before, "the store changed after {after}");
    }

    /// Sends `body` to `path` as JSON and asserts status and exact body.
    async fn expect(&self, path: &str, body: &[u8], status: u16, expected: &str) {
        let response = self.server.post(path, body.to_vec()).await;
        let shown = String::from_utf8_lossy(body);
        let shown: String = shown.chars().take(300).collect();
        assert_eq!(response.status, status, "{path} {shown}: {}", response.text);
        assert_eq!(response.text, expected, "{path} {shown}");
        assert_eq!(
            response.header("content-type"),
            Some("application/json"),
            "{path} {shown}"
        );
    }
}

/// The consumer's state, without the `duration` of calls.
async fn state_of(server: &Server, c: &Consumer) -> Value {
    server.stable_state(c).await
}

// ---------------------------------------------------------------------------
// Not JSON, cut off, nested too deep
// ---------------------------------------------------------------------------

/// Bodies that are not JSON, or not one JSON object.
#[tokio::test]
async fn bodies_that_are_not_json_are_400() {
    let f = Fixture::new().await;
    let signed = f.c.body("Zimmer-1", r#"{"closed":true}"#);
    let cases: Vec<(String, String)> = vec![
        (String::new(), incomplete(0)),
        ("   ".into(), incomplete(3)),
        (
            "\r\n".into(),
            malformed(
                "Der Anfragekörper ist unvollständig (Zeile 2, Spalte 0). Erwartet wird ein JSON-Objekt.",
            ),
        ),
        ("not json".into(), not_json(2)),
        ("<xml/>".into(), not_json(1)),
        ("}".into(), not_json(1)),
        ("{'target':'A1'}".into(), not_json(2)),
        ("{target:\"A1\"}".into(), not_json(2)),
        (r#"{"target" "A1"}"#.into(), not_json(11)),
        (r#"{"target":"A1",}"#.into(), not_json(16)),
        (r#"{"target":"A1" /* c */}"#.into(), not_json(16)),
        (r#"{"battery":NaN}"#.into(), not_json(12)),
        (r#"{"battery":Infinity}"#.into(), not_json(12)),
        (r#"{"battery":0x10}"#.into(), not_json(13)),
        (r#"{"battery":01}"#.into(), not_json(13)),
        (r#"{"battery":+1}"#.into(), not_json(12)),
        (r#"{"battery":.5}"#.into(), not_json(12)),
        (r#"{"battery":1.}"#.into(), not_json(14)),
        (r#"{"target":"A1\q"}"#.into(), bad_escape(15)),
        (format!("\u{feff}{signed}"), not_json(1)),
        ("[]".into(), not_an_object(0)),
        ("[{}]".into(), not_an_object(0)),
        (r#""{}""#.into(), not_an_object(4)),
        ("42".into(), not_an_object(2)),
        ("null".into(), not_an_object(4)),
        ("true".into(), not_an_object(4)),
        ("{} {}".into(), trailing(4)),
        (format!("{signed}x"), trailing(signed.len() + 1)),
        (format!("{signed}{signed}"), trailing(signed.len() + 1)),
        (
            format!("{signed}\n{signed}"),
            malformed(
                "Der Anfragekörper enthält nach dem JSON-Objekt weitere Zeichen (Zeile 2, Spalte 1). Erwartet wird genau ein JSON-Objekt.",
            ),
        ),
    ];
    let mut count = 0;
    for (body, expected) in &cases {
        for path in [DISPLAY, ELEMENT] {
            f.expect(path, body.as_bytes(), 400, expected).await;
            count += 1;
        }
    }
    f.assert_unchanged("bodies that are not JSON").await;
    tried("bodies_that_are_not_json_are_400", count);
}

/// Every prefix of a valid, signed body: 400 "unvollständig" at the byte
/// where it ends, never a partial write.
#[tokio::test]
async fn every_truncation_of_a_valid_body_is_400() {
    let f = Fixture::new().await;
    let bodies = [
        (
            DISPLAY,
            f.c.body(
                "Zimmer-1",
                r#"{"event":"WC","battery":80,"reachable":false,"position":"Tür","x":[null,{}]}"#,
            ),
        ),
        (
            ELEMENT,
            f.c.multi_body(r#"[{"target":"Zimmer-1","battery":7},{"target":"Zimmer-3"}]"#),
        ),
    ];
    let mut count = 0;
    for (path, body) in &bodies {
        for end in 0..body.len() {
            // Cut between bytes, not inside the UTF-8 of "ü".
            if !body.is_char_boundary(end) {
                continue;
            }
            let cut = &body.as_bytes()[..end];
            f.expect(path, cut, 400, &incomplete(end)).await;
            count += 1;
        }
    }
    f.assert_unchanged("truncated bodies").await;
    // The whole bodies are fine.
    for (path, body) in bodies {
        let response = f.server.post(path, body).await;
        assert!(response.status < 300, "{path}: {}", response.text);
    }
    tried("every_truncation_of_a_valid_body_is_400", count);
}

/// 10,000 levels (arrays and objects, in `data`, in an unknown top-level
/// key, as the body itself) are refused at the 128th level of the value;
/// 128 levels in all pass.
#[tokio::test]
async fn deep_nesting_is_400_and_128_levels_pass() {
    let f = Fixture::new().await;
    let n = 10_000;
    let c = &f.c.id;
    let mut cases: Vec<(String, String, String)> = Vec::new();
    // In `data`, signed: the value of "x" starts after the prefix.
    for (open, close) in [("[", "]"), ("{\"a\":", "}")] {
        let data = format!(
            r#"{{"event":"Notruf","x":{}1{}}}"#,
            open.repeat(n),
            close.repeat(n)
        );
        let body = f.c.body("Zimmer-1", &data);
        // Each top-level member is parsed on its own and may nest 127
        // levels; the 128th opener of `data` (its own `{` is the first) fails.
        let first = column_of(&body, &open.repeat(2));
        cases.push((
            format!("data {open}"),
            body,
            too_deep(first + 126 * open.len()),
        ));
    }
    // As `data` itself.
    let body = format!(
        r#"{{"target":"Zimmer-1","consumer":"{c}","hash":"ab","data":{}{}}}"#,
        "[".repeat(n),
        "]".repeat(n)
    );
    let first = column_of(&body, "[");
    cases.push(("data itself".into(), body, too_deep(first + 127)));
    // In an unknown top-level key.
    let body = format!(
        r#"{{"target":"Zimmer-1","consumer":"{c}","hash":"ab","data":{{}},"x":{}{}}}"#,
        "[".repeat(n),
        "]".repeat(n)
    );
    let first = column_of(&body, "[");
    cases.push(("unknown top-level key".into(), body, too_deep(first + 127)));
    // The body itself: arrays are no object; objects nest too deep.
    cases.push((
        "body of arrays".into(),
        format!("{}{}", "[".repeat(n), "]".repeat(n)),
        not_an_object(0),
    ));
    let body = format!("{}1{}", "{\"a\":".repeat(n), "}".repeat(n));
    // The outer object is the envelope; its "a" value starts at column 6.
    cases.push(("body of objects".into(), body, too_deep(6 + 127 * 5)));
    // Cut off inside the nesting.
    let body = format!(r#"{{"data":{}"#, "[".repeat(n));
    cases.push(("unclosed".into(), body.clone(), incomplete(body.len())));

    let mut count = 0;
    for (what, body, expected) in &cases {
        for path in [DISPLAY, ELEMENT] {
            let response = f.server.post(path, body.clone()).await;
            assert_eq!(response.status, 400, "{what} on {path}: {}", response.text);
            assert_eq!(&response.text, expected, "{what} on {path}");
            count += 1;
        }
    }
    f.assert_unchanged("deep nesting").await;

    // 128 levels in all (envelope, data, 126 arrays) pass; 129 do not.
    let data = |arrays: usize| {
        format!(
            r#"{{"event":"Anwesenheit","x":{}{}}}"#,
            "[".repeat(arrays),
            "]".repeat(arrays)
        )
    };
    let response = f.server.display(&f.c, "Tief-1", &data(126)).await;
    response.expect_status(201);
    let body = f.c.body("Tief-2", &data(127));
    let first = column_of(&body, "[[");
    f.expect(DISPLAY, body.as_bytes(), 400, &too_deep(first + 126))
        .await;
    count += 2;
    let state = state_of(&f.server, &f.c).await;
    assert!(
        !state.to_string().contains("Tief-2"),
        "129 levels wrote: {state}"
    );
    tried("deep_nesting_is_400_and_128_levels_pass", count);
}

// ---------------------------------------------------------------------------
// Huge and overlong values
// ---------------------------------------------------------------------------

/// Strings of 200 KiB in every text field: 422 within the 256 KiB limit;
/// anything over the limit is 413 whatever it holds.
#[tokio::test]
async fn huge_strings_are_422_within_the_limit_and_413_beyond() {
    let f = Fixture::new().await;
    let huge = "x".repeat(200 * 1024);
    let max = |key: &str| invalid(key, &format!("{key} darf maximal 255 Zeichen haben."));
    let mut count = 0;

    let display_cases: Vec<(String, String, String)> = vec![
        (huge.clone(), r#"{"event":"Notruf"}"#.into(), max("address")),
        (
            "Zimmer-1".into(),
            format!(r#"{{"event":"{huge}"}}"#),
            max("data.event"),
        ),
        (
            "Zimmer-1".into(),
            format!(r#"{{"event":"Notruf","position":"{huge}"}}"#),
            max("data.position"),
        ),
        (
            "Zimmer-1".into(),
            format!(r#"{{"event":"Notruf","section":"{huge}"}}"#),
            max("data.section"),
        ),
        (
            "Zimmer-1".into(),
            format!(r#"{{"event":"Notruf","attribute":"{huge}"}}"#),
            max("data.attribute"),
        ),
        (
            "Zimmer-1".into(),
            format!(r#"{{"event":"Notruf","code":"{huge}"}}"#),
            max("data.code"),
        ),
        (
            "Zimmer-1".into(),
            format!(r#"{{"event":"Notruf","created_at":"{huge}"}}"#),
            invalid(
                "data.created_at",
                "data.created_at muss dem Format Y-m-d H:i:s entsprechen.",
            ),
        ),
    ];
    for (target, data, expected) in &display_cases {
        f.expect(DISPLAY, f.c.body(target, data).as_bytes(), 422, expected)
            .await;
        count += 1;
    }
    let element_cases: Vec<(String, String)> = vec![
        (f.c.body(&huge, r#"{"battery":5}"#), max("address")),
        (
            f.c.body("Zimmer-1", &format!(r#"{{"position":"{huge}"}}"#)),
            max("data.position"),
        ),
        (
            f.c.multi_body(&format!(r#"[{{"target":"{huge}"}}]"#)),
            max("data.0.address"),
        ),
        (
            f.c.multi_body(&format!(r#"[{{"target":"Zimmer-1","position":"{huge}"}}]"#)),
            max("data.0.position"),
        ),
    ];
    for (body, expected) in &element_cases {
        f.expect(ELEMENT, body.as_bytes(), 422, expected).await;
        count += 1;
    }
    // A huge consumer is no UUID; a huge hash is an invalid hash (unknown
    // consumer here, so no debug).
    let data = r#"{"event":"Notruf"}"#;
    f.expect(
        DISPLAY,
        envelope(Some("Zimmer-1"), &huge, "ab", data).as_bytes(),
        422,
        &invalid("consumer", "consumer muss ein UUID sein."),
    )
    .await;
    f.expect(
        DISPLAY,
        envelope(
            Some("Zimmer-1"),
            "d1e2f3a4-b5c6-4d7e-8f90-a1b2c3d4e5f6",
            &huge,
            data,
        )
        .as_bytes(),
        400,
        &invalid_hash_body(),
    )
    .await;
    count += 2;
    f.assert_unchanged("huge strings").await;

    // Over 256 KiB: 413, even when the rest would be fine.
    let over = "y".repeat(256 * 1024);
    for (path, body) in [
        (
            DISPLAY,
            f.c.body("Zimmer-1", &format!(r#"{{"event":"Notruf","x":"{over}"}}"#)),
        ),
        (
            ELEMENT,
            f.c.body("Zimmer-1", &format!(r#"{{"battery":1,"x":"{over}"}}"#)),
        ),
        (DISPLAY, format!(r#"{{"target":"{over}"}}"#)),
        (ELEMENT, format!("[{over}")),
    ] {
        f.expect(path, body.as_bytes(), 413, &payload_too_large())
            .await;
        count += 1;
    }
    f.assert_unchanged("bodies over 256 KiB").await;

    // A huge unknown key and value, signed, within the limit: accepted.
    let data = format!(
        r#"{{"event":"Anwesenheit","{huge}":"{}"}}"#,
        &huge[..40_000]
    );
    f.server
        .display(&f.c, "Gross-1", &data)
        .await
        .expect_status(201);
    count += 1;
    tried(
        "huge_strings_are_422_within_the_limit_and_413_beyond",
        count,
    );
}

/// 256 characters are one too many in every text field, whatever the bytes;
/// 255 pass (characters, not bytes: "ä" and "😀" count once).
#[tokio::test]
async fn overlong_fields_are_422_and_255_characters_pass() {
    let f = Fixture::new().await;
    let mut count = 0;
    for letter in ["x", "ä", "😀"] {
        let long = letter.repeat(256);
        let cases: Vec<(&str, String, String, &str)> = vec![
            (
                DISPLAY,
                long.clone(),
                r#"{"event":"Notruf"}"#.into(),
                "address",
            ),
            (
                DISPLAY,
                "Zimmer-1".into(),
                format!(r#"{{"event":"{long}"}}"#),
                "data.event",
            ),
            (
                DISPLAY,
                "Zimmer-1".into(),
                format!(r#"{{"event":"Notruf","position":"{long}"}}"#),
                "data.position",
            ),
            (
                DISPLAY,
                "Zimmer-1".into(),
                format!(r#"{{"event":"Notruf","section":"{long}"}}"#),
                "data.section",
            ),
            (
                DISPLAY,
                "Zimmer-1".into(),
                format!(r#"{{"event":"Notruf","attribute":"{long}"}}"#),
                "data.attribute",
            ),
            (
                DISPLAY,
                "Zimmer-1".into(),
                format!(r#"{{"event":"Notruf","code":"{long}"}}"#),
                "data.code",
            ),
            (
                DISPLAY,
                "Zimmer-1".into(),
                format!(r#"{{"closed":true,"position":"{long}"}}"#),
                "data.position",
            ),
            (ELEMENT, long.clone(), r#"{"battery":5}"#.into(), "address"),
            (
                ELEMENT,
                "Zimmer-1".into(),
                format!(r#"{{"position":"{long}"}}"#),
                "data.position",
            ),
        ];
        for (path, target, data, key) in cases {
            let expected = invalid(key, &format!("{key} darf maximal 255 Zeichen haben."));
            f.expect(path, f.c.body(&target, &data).as_bytes(), 422, &expected)
                .await;
            count += 1;
        }
        for (data, key) in [
            (format!(r#"[{{"target":"{long}"}}]"#), "data.0.address"),
            (
                format!(r#"[{{"target":"A"}},{{"target":"B","position":"{long}"}}]"#),
                "data.1.position",
            ),
        ] {
            let expected = invalid(key, &format!("{key} darf maximal 255 Zeichen haben."));
            f.expect(ELEMENT, f.c.multi_body(&data).as_bytes(), 422, &expected)
                .await;
            count += 1;
        }
    }
    f.assert_unchanged("overlong fields").await;

    // 255 characters pass everywhere (the event is then simply unknown).
    for (i, letter) in ["x", "ä", "😀"].into_iter().enumerate() {
        let text = letter.repeat(255);
        let target = format!("{i}{}", letter.repeat(254));
        let data = format!(
            r#"{{"event":"Anwesenheit","position":"{text}","section":"{text}","attribute":"{text}","code":"{text}"}}"#
        );
        let response = f.server.display(&f.c, &target, &data).await;
        response.expect_status(201);
        let call = response.data();
        assert_eq!(call["address"], target.as_str());
        assert_eq!(call["position"], text.as_str());
        assert_eq!(call["element_code"], text.as_str());
        let response = f
            .server
            .element_multi(
                &f.c,
                &format!(r#"[{{"target":"{target}","position":"{text}"}}]"#),
            )
            .await;
        response.expect_status(200);
        let response = f
            .server
            .display(&f.c, "Zimmer-1", &format!(r#"{{"event":"{text}"}}"#))
            .await;
        assert_eq!(
            response.text,
            invalid(
                "data.event",
                "Der gewählte Wert für data.event ist ungültig."
            )
        );
        count += 3;
    }
    tried("overlong_fields_are_422_and_255_characters_pass", count);
}

// ---------------------------------------------------------------------------
// Duplicate keys, wrong types, numbers
// ---------------------------------------------------------------------------

/// A key twice, anywhere (top level, in `data`, deep inside it, in a multi
/// item, spelled with an escape), is 400: no parser may pick one of them.
/// Keys differing in case are different keys.
#[tokio::test]
async fn duplicate_keys_are_400_wherever_they_are() {
    let f = Fixture::new().await;
    let c = &f.c.id;
    let h = "ab";
    let cases: Vec<(&str, String, &str, &str)> = vec![
        // (path, body, key, text before which the duplicate's closing quote ends)
        (
            DISPLAY,
            format!(
                r#"{{"target":"Zimmer-1","target":"Zimmer-2","consumer":"{c}","hash":"{h}","data":{{"closed":true}}}}"#
            ),
            "target",
            r#""target":"Zimmer-2""#,
        ),
        (
            DISPLAY,
            format!(
                r#"{{"target":"Zimmer-1","consumer":"{c}","consumer":"{c}","hash":"{h}","data":{{"closed":true}}}}"#
            ),
            "consumer",
            r#""consumer":"{c}","hash""#,
        ),
        (
            DISPLAY,
            format!(
                r#"{{"target":"Zimmer-1","consumer":"{c}","hash":"{h}","hash":"{h}","data":{{"closed":true}}}}"#
            ),
            "hash",
            r#""hash":"{h}","data""#,
        ),
        (
            DISPLAY,
            format!(
                r#"{{"target":"Zimmer-1","consumer":"{c}","hash":"{h}","data":{{"closed":true}},"data":{{"event":"Notruf"}}}}"#
            ),
            "data",
            r#""data":{"event""#,
        ),
        (
            DISPLAY,
            format!(
                r#"{{"target":"Zimmer-1","consumer":"{c}","hash":"{h}","data":{{"closed":true,"closed":false}}}}"#
            ),
            "closed",
            r#""closed":false"#,
        ),
        (
            DISPLAY,
            format!(
                r#"{{"target":"Zimmer-1","consumer":"{c}","hash":"{h}","data":{{"event":"Notruf","event":"WC"}}}}"#
            ),
            "event",
            r#""event":"WC""#,
        ),
        (
            DISPLAY,
            format!(
                r#"{{"target":"Zimmer-1","consumer":"{c}","hash":"{h}","data":{{"event":"Notruf","battery":5,"battery":6}}}}"#
            ),
            "battery",
            r#""battery":6"#,
        ),
        (
            DISPLAY,
            format!(
                r#"{{"target":"Zimmer-1","consumer":"{c}","hash":"{h}","data":{{"event":"Notruf","x":[{{"y":1,"y":1}}]}}}}"#
            ),
            "y",
            r#""y":1}"#,
        ),
        (
            DISPLAY,
            format!(
                r#"{{"target":"Zimmer-1","consumer":"{c}","hash":"{h}","data":{{"event":"Notruf","\u0065vent":"WC"}}}}"#
            ),
            "event",
            r#""\u0065vent""#,
        ),
        (
            DISPLAY,
            format!(
                r#"{{"target":"Zimmer-1","\u0074arget":"Zimmer-2","consumer":"{c}","hash":"{h}","data":{{"closed":true}}}}"#
            ),
            "target",
            r#""\u0074arget""#,
        ),
        (
            ELEMENT,
            format!(
                r#"{{"consumer":"{c}","hash":"{h}","data":[{{"target":"Zimmer-1","target":"Zimmer-2","battery":1}}]}}"#
            ),
            "target",
            r#""target":"Zimmer-2""#,
        ),
        (
            ELEMENT,
            format!(
                r#"{{"consumer":"{c}","hash":"{h}","data":[{{"target":"Zimmer-1"}},{{"target":"Zimmer-2","reachable":true,"reachable":false}}]}}"#
            ),
            "reachable",
            r#""reachable":false"#,
        ),
        (
            ELEMENT,
            format!(
                r#"{{"target":"Zimmer-1","consumer":"{c}","hash":"{h}","data":{{"battery":1,"battery":99}}}}"#
            ),
            "battery",
            r#""battery":99"#,
        ),
    ];
    let mut count = 0;
    for (path, body, key, second) in &cases {
        let second = second.replace("{c}", c).replace("{h}", h);
        // serde_json stops at the closing quote of the repeated key.
        let at = column_of(body, &second) + second.find("\":").unwrap_or(second.len() - 1);
        f.expect(path, body.as_bytes(), 400, &duplicate(key, at))
            .await;
        count += 1;
    }
    // Signed right, still refused.
    let body = f.c.body("Zimmer-1", r#"{"closed":true,"closed":false}"#);
    let at = column_of(&body, r#""closed":false"#) + 7;
    f.expect(DISPLAY, body.as_bytes(), 400, &duplicate("closed", at))
        .await;
    count += 1;
    f.assert_unchanged("duplicate keys").await;

    // "Event" is not "event": an unknown key, ignored (and signed).
    let response = f
        .server
        .display(
            &f.c,
            "Zimmer-5",
            r#"{"event":"WC","Event":"Notruf","EVENT":1}"#,
        )
        .await;
    response.expect_status(201);
    assert!(response.data()["id"].is_i64(), "{}", response.text);
    count += 1;
    tried("duplicate_keys_are_400_wherever_they_are", count);
}

/// Whether a JSON value text is of the wrong type for a field.
type IsWrong = fn(&str) -> bool;
/// The message of a field's type rule, for its key.
type MessageOf = fn(&str) -> String;
/// A request and its refusal: path, content type, body, status, body.
type Refusal<'a> = (&'a str, Option<&'a str>, Vec<u8>, u16, String);

/// Every field with every wrong JSON type: one 422 naming it, with the
/// message of its rule; signed right, so the type check is all that stops it.
#[tokio::test]
async fn every_field_of_the_wrong_type_is_422() {
    let f = Fixture::new().await;
    let c = &f.c;
    let string_msg = |key: &str| format!("{key} muss eine Zeichenkette sein.");
    let bool_msg = |key: &str| format!("{key} muss wahr oder falsch sein.");
    let time_msg = |key: &str| format!("{key} muss dem Format Y-m-d H:i:s entsprechen.");
    let mut count = 0;

    // The envelope: target, consumer, hash, data.
    let data = r#"{"event":"Notruf"}"#;
    for wrong in [
        "5",
        "-1.5",
        "true",
        "false",
        "[]",
        r#"["Zimmer-1"]"#,
        "{}",
        r#"{"a":"b"}"#,
    ] {
        let target_body = format!(
            r#"{{"target":{wrong},"consumer":"{}","hash":"{}","data":{data}}}"#,
            c.id,
            c.sign("", data)
        );
        for path in [DISPLAY, ELEMENT] {
            let body = if path == DISPLAY {
                target_body.clone()
            } else {
                target_body.replace(data, r#"{"battery":5}"#)
            };
            f.expect(
                path,
                body.as_bytes(),
                422,
                &invalid("address", &string_msg("address")),
            )
            .await;
            let consumer_body =
                format!(r#"{{"target":"Zimmer-1","consumer":{wrong},"hash":"ab","data":{data}}}"#);
            f.expect(
                path,
                consumer_body.as_bytes(),
                422,
                &invalid("consumer", "consumer muss ein UUID sein."),
            )
            .await;
            let hash_body = format!(
                r#"{{"target":"Zimmer-1","consumer":"{}","hash":{wrong},"data":{data}}}"#,
                c.id
            );
            f.expect(
                path,
                hash_body.as_bytes(),
                422,
                &invalid("hash", &string_msg("hash")),
            )
            .await;
            count += 3;
        }
    }
    for wrong in ["5", "true", r#""x""#, r#""{}""#, "[]", "[{}]"] {
        let body = c.body("Zimmer-1", wrong);
        f.expect(
            DISPLAY,
            body.as_bytes(),
            422,
            &invalid("data", "data muss ein Objekt sein."),
        )
        .await;
        count += 1;
        if !wrong.starts_with('[') {
            f.expect(
                ELEMENT,
                body.as_bytes(),
                422,
                &invalid("data", "data muss ein Objekt oder ein Array sein."),
            )
            .await;
            count += 1;
        }
    }
    // A UUID-looking consumer of another shape, and null fields.
    for consumer in [
        r#""6f1c7d2e5a8b4c3d9e0f1a2b3c4d5e6f""#,
        r#""{6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f}""#,
        r#""6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6g""#,
        r#"" 6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f""#,
    ] {
        let body =
            format!(r#"{{"target":"Zimmer-1","consumer":{consumer},"hash":"ab","data":{data}}}"#);
        f.expect(
            DISPLAY,
            body.as_bytes(),
            422,
            &invalid("consumer", "consumer muss ein UUID sein."),
        )
        .await;
        count += 1;
    }
    let body = r#"{"target":null,"consumer":null,"hash":null,"data":null}"#;
    for path in [DISPLAY, ELEMENT] {
        f.expect(
            path,
            body.as_bytes(),
            422,
            &validation_body(&[
                ("address", &["address muss ausgefüllt werden."]),
                ("consumer", &["consumer muss ausgefüllt werden."]),
                ("hash", &["hash muss ausgefüllt werden."]),
                ("data", &["data muss ausgefüllt werden."]),
            ]),
        )
        .await;
        count += 1;
    }

    // The fields of `data` (display).
    let wrong_values = [
        "5",
        "0",
        "-1",
        "1.5",
        "true",
        "false",
        r#""""#,
        r#""x""#,
        "[]",
        r#"["a"]"#,
        "{}",
        r#"{"a":1}"#,
    ];
    let display_fields: [(&str, &str, IsWrong); 10] = [
        ("event", "string", |v| !v.starts_with('"')),
        ("closed", "bool", |v| v != "true" && v != "false"),
        ("position", "string", |v| !v.starts_with('"')),
        ("section", "string", |v| !v.starts_with('"')),
        ("reachable", "bool", |v| v != "true" && v != "false"),
        ("battery", "number", |v| {
            !v.starts_with(|c: char| c.is_ascii_digit() || c == '-')
        }),
        ("attribute", "string", |v| !v.starts_with('"')),
        ("code", "string", |v| !v.starts_with('"')),
        ("created_at", "time", |_| true),
        ("closed_at", "time", |_| true),
    ];
    for (field, kind, is_wrong) in display_fields {
        for wrong in wrong_values.iter().copied().filter(|v| is_wrong(v)) {
            let key = format!("data.{field}");
            let message = match kind {
                "string" => string_msg(&key),
                "bool" => bool_msg(&key),
                "number" => format!("{key} muss eine Zahl sein."),
                _ => time_msg(&key),
            };
            // A close when the field is `event` or `closed` would change the
            // other rule's outcome; keep `event` valid otherwise.
            let data = match field {
                "event" => format!(r#"{{"event":{wrong}}}"#),
                "closed" => format!(r#"{{"event":"Notruf","closed":{wrong}}}"#),
                _ => format!(r#"{{"event":"Notruf","{field}":{wrong}}}"#),
            };
            f.expect(
                DISPLAY,
                c.body("Zimmer-1", &data).as_bytes(),
                422,
                &invalid(&key, &message),
            )
            .await;
            count += 1;
        }
    }

    // The fields of `data` (element, single and multi form).
    let element_fields: [(&str, MessageOf, IsWrong); 3] = [
        (
            "battery",
            |k| format!("{k} muss eine Zahl sein."),
            |v| !v.starts_with(|c: char| c.is_ascii_digit() || c == '-'),
        ),
        (
            "position",
            |k| format!("{k} muss eine Zeichenkette sein."),
            |v| !v.starts_with('"'),
        ),
        (
            "reachable",
            |k| format!("{k} muss wahr oder falsch sein."),
            |v| v != "true" && v != "false",
        ),
    ];
    for (field, message, is_wrong) in element_fields {
        for wrong in wrong_values.iter().copied().filter(|v| is_wrong(v)) {
            let key = format!("data.{field}");
            f.expect(
                ELEMENT,
                c.body("Zimmer-1", &format!(r#"{{"{field}":{wrong}}}"#))
                    .as_bytes(),
                422,
                &invalid(&key, &message(&key)),
            )
            .await;
            let key = format!("data.1.{field}");
            f.expect(
                ELEMENT,
                c.multi_body(&format!(
                    r#"[{{"target":"Zimmer-1"}},{{"target":"Zimmer-2","{field}":{wrong}}}]"#
                ))
                .as_bytes(),
                422,
                &invalid(&key, &message(&key)),
            )
            .await;
            count += 2;
        }
    }
    // Multi items that are no objects, and item targets of the wrong type.
    for wrong in ["5", "true", r#""Zimmer-1""#, "[]", "null"] {
        f.expect(
            ELEMENT,
            c.multi_body(&format!(r#"[{{"target":"Zimmer-1"}},{wrong}]"#))
                .as_bytes(),
            422,
            &invalid("data.1", "data.1 muss ein Objekt sein."),
        )
        .await;
        count += 1;
    }
    for wrong in ["5", "true", "[]", r#"{"a":1}"#] {
        f.expect(
            ELEMENT,
            c.multi_body(&format!(r#"[{{"target":{wrong},"battery":1}}]"#))
                .as_bytes(),
            422,
            &invalid(
                "data.0.address",
                "data.0.address muss eine Zeichenkette sein.",
            ),
        )
        .await;
        count += 1;
    }
    f.assert_unchanged("wrong types").await;
    tried("every_field_of_the_wrong_type_is_422", count);
}

/// Number spellings for battery: `-0`, `-0.0`, `1e2`, `1E2`, `100.0`,
/// `1e-400` (rounds to 0) are numbers in range; `1e400` does not fit an f64
/// (400); `1e3`, `-1e-9`, `100.0000001` are out of range (422).
#[tokio::test]
async fn number_spellings_for_battery() {
    let f = Fixture::new().await;
    let between = invalid(
        "data.battery",
        "data.battery muss zwischen 0 und 100 liegen.",
    );
    let mut count = 0;
    // Out of f64's range, anywhere in the body: 400.
    for (path, data, number) in [
        (DISPLAY, r#"{"event":"Notruf","battery":1e400}"#, "1e400"),
        (DISPLAY, r#"{"event":"Notruf","battery":-1e400}"#, "-1e400"),
        (DISPLAY, r#"{"event":"Notruf","x":[1e309]}"#, "1e309"),
        (ELEMENT, r#"{"battery":1e400}"#, "1e400"),
        (ELEMENT, r#"{"battery":10,"x":{"y":-2e308}}"#, "-2e308"),
        (ELEMENT, r#"{"battery":10,"x":1.8e308}"#, "1.8e308"),
    ] {
        let body = f.c.body("Zimmer-1", data);
        // serde_json stops at the number's last digit.
        let at = column_of(&body, number) + number.len() - 1;
        f.expect(path, body.as_bytes(), 400, &out_of_range(at))
            .await;
        count += 1;
    }
    // In range as JSON, out of 0..=100: 422.
    for battery in [
        "1e3",
        "-1e-9",
        "-1",
        "100.0000001",
        "101",
        "1E3",
        "123456789012345678901234567890",
        "-0.5",
    ] {
        for (path, data) in [
            (
                DISPLAY,
                format!(r#"{{"event":"Notruf","battery":{battery}}}"#),
            ),
            (ELEMENT, format!(r#"{{"battery":{battery}}}"#)),
        ] {
            f.expect(path, f.c.body("Zimmer-1", &data).as_bytes(), 422, &between)
                .await;
            count += 1;
        }
    }
    f.assert_unchanged("numbers out of range").await;

    // In range: stored as the number it is (-0 is 0).
    for (battery, shown) in [
        ("-0", json!(0)),
        ("-0.0", json!(0)),
        ("0.0", json!(0)),
        ("1e2", json!(100)),
        ("1E2", json!(100)),
        ("100.0", json!(100)),
        ("1e-400", json!(0)),
        ("0.5", json!(0.5)),
        ("99.99999999999999999", json!(100)),
        ("2.5e1", json!(25)),
    ] {
        let response = f
            .server
            .element(&f.c, "Batterie-1", &format!(r#"{{"battery":{battery}}}"#))
            .await;
        assert_eq!(response.status, 200, "{battery}: {}", response.text);
        let stored = response.data()["battery"].as_f64();
        assert_eq!(stored, shown.as_f64(), "{battery}: {}", response.text);
        assert!(
            !raw_member(&response.raw_data(), "battery").starts_with('-'),
            "{battery} shown negative: {}",
            response.text
        );
        count += 1;
    }
    tried("number_spellings_for_battery", count);
}

// ---------------------------------------------------------------------------
// NUL, control characters, invalid UTF-8, surrogates
// ---------------------------------------------------------------------------

/// NUL and other control characters: escaped (`\u0000`) in a text field, a
/// 422 for that field; raw in a string, 400 (JSON forbids it); in an unknown
/// key, ignored. Invalid UTF-8 anywhere is 400.
#[tokio::test]
async fn nul_control_characters_and_invalid_utf8() {
    let f = Fixture::new().await;
    let control = |key: &str| invalid(key, &format!("{key} darf keine Steuerzeichen enthalten."));
    let mut count = 0;
    for escape in [
        r"\u0000", r"\n", r"\t", r"\r", r"\u001f", r"\u007f", r"\u0085", r"\u009f", r"\b",
    ] {
        let text = format!("A{escape}1");
        let display: Vec<(String, String, &str)> = vec![
            (text.clone(), r#"{"event":"Notruf"}"#.into(), "address"),
            (text.clone(), r#"{"closed":true}"#.into(), "address"),
            (
                "Zimmer-1".into(),
                format!(r#"{{"event":"Not{escape}ruf"}}"#),
                "data.event",
            ),
            (
                "Zimmer-1".into(),
                format!(r#"{{"event":"Notruf","position":"{text}"}}"#),
                "data.position",
            ),
            (
                "Zimmer-1".into(),
                format!(r#"{{"event":"Notruf","section":"{text}"}}"#),
                "data.section",
            ),
            (
                "Zimmer-1".into(),
                format!(r#"{{"event":"Notruf","attribute":"{text}"}}"#),
                "data.attribute",
            ),
            (
                "Zimmer-1".into(),
                format!(r#"{{"event":"Notruf","code":"{text}"}}"#),
                "data.code",
            ),
        ];
        for (target, data, key) in display {
            // The target goes into the envelope as JSON text with the escape.
            let target_json = if target.contains('\\') {
                format!("\"{target}\"")
            } else {
                json_string(&target)
            };
            let target_value: String = serde_json::from_str(&target_json).expect("a JSON string");
            let body = format!(
                r#"{{"target":{target_json},"consumer":"{}","hash":"{}","data":{data}}}"#,
                f.c.id,
                f.c.sign(&target_value, &data)
            );
            f.expect(DISPLAY, body.as_bytes(), 422, &control(key)).await;
            count += 1;
        }
        let element: Vec<(String, &str)> = vec![
            (
                format!(
                    r#"{{"target":"A{escape}1","consumer":"{}","hash":"ab","data":{{"battery":1}}}}"#,
                    f.c.id
                ),
                "address",
            ),
            (
                f.c.body("Zimmer-1", &format!(r#"{{"position":"{text}"}}"#)),
                "data.position",
            ),
            (
                f.c.multi_body(&format!(r#"[{{"target":"{text}"}}]"#)),
                "data.0.address",
            ),
            (
                f.c.multi_body(&format!(r#"[{{"target":"Zimmer-1","position":"{text}"}}]"#)),
                "data.0.position",
            ),
        ];
        for (body, key) in element {
            f.expect(ELEMENT, body.as_bytes(), 422, &control(key)).await;
            count += 1;
        }
    }
    // A blank target of control characters only is still "missing" when it
    // is whitespace; NUL is not whitespace.
    f.expect(
        DISPLAY,
        f.c.body("\t\n", r#"{"event":"Notruf"}"#).as_bytes(),
        422,
        &invalid("address", "address muss ausgefüllt werden."),
    )
    .await;
    count += 1;

    // Raw control bytes inside a string: not JSON.
    for byte in [0x00u8, 0x01, 0x0a, 0x1f] {
        let mut body =
            f.c.body("Zimmer-1", r#"{"event":"Notruf","position":"aXb"}"#)
                .into_bytes();
        let x = body.iter().position(|b| *b == b'X').expect("X");
        body[x] = byte;
        f.expect(DISPLAY, &body, 400, &raw_control_character(x + 1))
            .await;
        count += 1;
    }
    // A raw NUL outside strings.
    let mut body = f.c.body("Zimmer-1", r#"{"closed":true}"#).into_bytes();
    body.push(0);
    let at = body.len();
    f.expect(DISPLAY, &body, 400, &trailing(at)).await;
    let mut body = f.c.body("Zimmer-1", r#"{"closed":true}"#).into_bytes();
    body.insert(1, 0);
    f.expect(DISPLAY, &body, 400, &not_json(2)).await;
    count += 2;

    // Invalid UTF-8, in every place and every shape.
    let valid =
        f.c.body("Zimmer-1", r#"{"event":"Notruf","position":"aXb"}"#);
    let x = valid.find('X').expect("X");
    for bad in [
        &[0xffu8][..],
        &[0xfe],
        &[0xc3],                   // a lead byte without its continuation
        &[0xc3, 0x28],             // a lead byte and no continuation byte
        &[0x80],                   // a lone continuation byte
        &[0xc0, 0x80],             // overlong NUL
        &[0xe0, 0x80, 0x80],       // overlong
        &[0xed, 0xa0, 0x80],       // a surrogate, UTF-8 encoded (CESU-8)
        &[0xf4, 0x90, 0x80, 0x80], // beyond U+10FFFF
        &[0xe4],                   // Latin-1 "ä"
    ] {
        for path in [DISPLAY, ELEMENT] {
            let mut body = valid.as_bytes()[..x].to_vec();
            body.extend_from_slice(bad);
            body.extend_from_slice(&valid.as_bytes()[x + 1..]);
            f.expect(path, &body, 400, &not_utf8()).await;
            // At the very start, in a key, and after the object.
            let mut start = bad.to_vec();
            start.extend_from_slice(valid.as_bytes());
            f.expect(path, &start, 400, &not_utf8()).await;
            let mut end = valid.as_bytes().to_vec();
            end.extend_from_slice(bad);
            f.expect(path, &end, 400, &not_utf8()).await;
            count += 3;
        }
    }
    // UTF-8 is checked after the content type: 415 wins.
    let response = f
        .server
        .request(
            Method::POST,
            DISPLAY,
            Some("text/plain"),
            &[],
            vec![0xffu8, 0xfe],
        )
        .await;
    assert_eq!(response.status, 415);
    assert_eq!(response.text, unsupported_media_type());
    count += 1;
    f.assert_unchanged("NUL, control characters and invalid UTF-8")
        .await;

    // In an unknown key of data, anything a JSON string may hold is ignored.
    let response = f
        .server
        .display(
            &f.c,
            "Zimmer-6",
            r#"{"event":"WC","note":"a\u0000b\nc","\u0000":1}"#,
        )
        .await;
    response.expect_status(201);
    count += 1;
    tried("nul_control_characters_and_invalid_utf8", count);
}

/// Lone surrogate escapes (`\ud800`, `\udc00`, a high one followed by no
/// low one) are 400 wherever they are; a proper pair is one character.
#[tokio::test]
async fn lone_surrogates_are_400_and_pairs_pass() {
    let f = Fixture::new().await;
    let mut count = 0;
    for lone in [
        r"\ud800",
        r"\udbff",
        r"\udc00",
        r"\udfff",
        r"\ud800\u0041",
        r"\ud800\ud800",
        r"\ud83d x",
    ] {
        for (path, data) in [
            (
                DISPLAY,
                format!(r#"{{"event":"Notruf","position":"a{lone}"}}"#),
            ),
            (DISPLAY, format!(r#"{{"event":"Notruf","x":["{lone}"]}}"#)),
            (DISPLAY, format!(r#"{{"event":"Notruf","{lone}":1}}"#)),
            (ELEMENT, format!(r#"{{"position":"{lone}"}}"#)),
        ] {
            let body = f.c.body("Zimmer-1", &data);
            let response = f.server.post(path, body.clone()).await;
            assert_eq!(response.status, 400, "{data}: {}", response.text);
            // serde_json stops a few bytes into the escape; the column is
            // inside it.
            let start = column_of(&body, lone);
            let text = response.json()["messages"][0]["errors"]
                .as_str()
                .expect("errors")
                .to_string();
            let column: usize = text
                .split("Spalte ")
                .nth(1)
                .and_then(|rest| rest.split(')').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("no column in {text}"));
            assert!(
                (start..start + lone.len() + 1).contains(&column),
                "{data}: column {column} not in the escape at {start}: {text}"
            );
            assert_eq!(response.text, bad_escape(column), "{data}");
            count += 1;
        }
        // In the target too.
        let body = format!(
            r#"{{"target":"A{lone}","consumer":"{}","hash":"ab","data":{{"event":"Notruf"}}}}"#,
            f.c.id
        );
        let response = f.server.post(DISPLAY, body).await;
        assert_eq!(response.status, 400, "{lone}: {}", response.text);
        assert_eq!(response.json()["messages"][0]["code"], "malformed_request");
        count += 1;
    }
    f.assert_unchanged("lone surrogates").await;

    // A pair is fine, escaped or raw, and is signed as sent.
    for position in [r"\ud83d\ude00", "😀", r"\uD83D\uDE00"] {
        let data = format!(r#"{{"event":"Anwesenheit","position":"{position}"}}"#);
        let response = f.server.display(&f.c, "Emoji-1", &data).await;
        assert!(response.status < 300, "{position}: {}", response.text);
        assert_eq!(response.data()["position"], "😀");
        count += 1;
    }
    tried("lone_surrogates_are_400_and_pairs_pass", count);
}

// ---------------------------------------------------------------------------
// Multi form limits, unknown keys
// ---------------------------------------------------------------------------

/// The multi form takes 1 to 100 items: 0, 101 and 1,000 are 422 and write
/// nothing (not even the first 100); exactly 100 are written.
#[tokio::test]
async fn multi_form_takes_1_to_100_items() {
    let f = Fixture::new().await;
    let items = |n: usize| {
        let items: Vec<String> = (0..n)
            .map(|i| format!(r#"{{"target":"M-{i:04}","battery":{}}}"#, i % 101))
            .collect();
        format!("[{}]", items.join(","))
    };
    let too_many = invalid("data", "data darf maximal 100 Elemente haben.");
    let mut count = 0;
    for (n, expected) in [
        (0, invalid("data", "data muss mindestens 1 Element haben.")),
        (101, too_many.clone()),
        (102, too_many.clone()),
        (1000, too_many.clone()),
    ] {
        f.expect(
            ELEMENT,
            f.c.multi_body(&items(n)).as_bytes(),
            422,
            &expected,
        )
        .await;
        count += 1;
    }
    // 101 items with an error in one of them: the count is the error.
    let mut bad = items(101);
    bad = bad.replacen(r#""battery":5}"#, r#""battery":"x"}"#, 1);
    f.expect(ELEMENT, f.c.multi_body(&bad).as_bytes(), 422, &too_many)
        .await;
    count += 1;
    f.assert_unchanged("too many items").await;

    let response = f.server.element_multi(&f.c, &items(100)).await;
    response.expect_status(200);
    let written = response.data();
    assert_eq!(written.as_array().map(Vec::len), Some(100));
    assert_eq!(written[99]["address"], "M-0099");
    let state = state_of(&f.server, &f.c).await;
    let elements = state["elements"].as_array().expect("elements");
    assert_eq!(elements.len(), 102, "two before, a hundred new");
    count += 1;
    tried("multi_form_takes_1_to_100_items", count);
}

/// Unknown keys in `data` (and in multi items) are ignored but signed: sent
/// without being signed they are an invalid hash. Unknown top-level keys are
/// ignored and not signed (the signing string has target, consumer, data).
#[tokio::test]
async fn unknown_keys_are_ignored_but_signed() {
    let f = Fixture::new().await;
    let mut count = 0;
    // Signed with the unknown keys: accepted, and they change nothing else.
    let response = f
        .server
        .display(
            &f.c,
            "Zimmer-1",
            r#"{"event":"Notruf","priority":1,"Event":"WC","nested":{"event":"Flucht"},"closed":false}"#,
        )
        .await;
    response.expect_status(200);
    assert_eq!(response.data()["id"], f.before["calls"][0]["id"]);
    count += 1;
    let response = f
        .server
        .element_multi(
            &f.c,
            r#"[{"target":"Zimmer-2","battery":21,"level":99,"target2":"Zimmer-1"}]"#,
        )
        .await;
    response.expect_status(200);
    assert_eq!(response.data()[0]["battery"], 21);
    count += 1;
    let state = state_of(&f.server, &f.c).await;
    assert_eq!(state["calls"], f.before["calls"], "no call added or closed");
    let zimmer_1 = |state: &Value| {
        state["elements"]
            .as_array()
            .expect("elements")
            .iter()
            .find(|e| e["address"] == "Zimmer-1")
            .cloned()
            .expect("Zimmer-1")
    };
    assert_eq!(zimmer_1(&state), zimmer_1(&f.before));

    // Not signed: invalid hash (the sandbox explains it in `debug`).
    for (path, target, signed, sent) in [
        (
            DISPLAY,
            Some("Zimmer-1"),
            r#"{"closed":true}"#,
            r#"{"closed":true,"x":1}"#,
        ),
        (
            ELEMENT,
            Some("Zimmer-1"),
            r#"{"battery":1}"#,
            r#"{"battery":1,"x":null}"#,
        ),
        (
            ELEMENT,
            None,
            r#"[{"target":"Zimmer-1","battery":1}]"#,
            r#"[{"target":"Zimmer-1","battery":1,"x":""}]"#,
        ),
    ] {
        let hash = f.c.sign(target.unwrap_or(""), signed);
        let response = f
            .server
            .post(path, envelope(target, &f.c.id, &hash, sent))
            .await;
        assert_eq!(response.status, 400, "{sent}: {}", response.text);
        let body = response.json();
        assert_eq!(body["messages"][0]["code"], "invalid_hash");
        assert_eq!(
            body["debug"]["string"],
            signing_string(target.unwrap_or(""), &f.c.id, sent)
        );
        count += 1;
    }
    // Unknown top-level keys: ignored, not signed.
    for extra in [
        r#""extra":1"#,
        r#""Target":"Zimmer-2""#,
        r#""signature":"x","x":{"y":[]}"#,
        r#""TARGET":null"#,
    ] {
        let data = r#"{"battery":33}"#;
        let body = format!(
            r#"{{{extra},"target":"Zimmer-1","consumer":"{}","hash":"{}","data":{data}}}"#,
            f.c.id,
            f.c.sign("Zimmer-1", data)
        );
        let response = f.server.post(ELEMENT, body).await;
        assert_eq!(response.status, 200, "{extra}: {}", response.text);
        assert_eq!(response.data()["address"], "Zimmer-1");
        count += 1;
    }
    // "Target" is not "target": still missing.
    let data = r#"{"event":"Notruf"}"#;
    let body = format!(
        r#"{{"Target":"Zimmer-1","consumer":"{}","hash":"{}","data":{data}}}"#,
        f.c.id,
        f.c.sign("Zimmer-1", data)
    );
    f.expect(
        DISPLAY,
        body.as_bytes(),
        422,
        &invalid("address", "address muss ausgefüllt werden."),
    )
    .await;
    count += 1;
    tried("unknown_keys_are_ignored_but_signed", count);
}

// ---------------------------------------------------------------------------
// Content types, methods, paths
// ---------------------------------------------------------------------------

/// Anything but `application/json` (with parameters, any case) is 415 before
/// the body is looked at: no header, text/plain, application/json-seq,
/// multipart (even with the JSON as its part), two Content-Type headers.
#[tokio::test]
async fn wrong_content_types_are_415() {
    let f = Fixture::new().await;
    let signed = f.c.body("Zimmer-1", r#"{"closed":true}"#);
    let multipart = format!(
        "--x\r\nContent-Disposition: form-data; name=\"body\"\r\nContent-Type: application/json\r\n\r\n{signed}\r\n--x--\r\n"
    );
    let seq = format!("\u{1e}{signed}\n");
    let mut count = 0;
    let cases: Vec<(Option<&str>, String)> = vec![
        (None, signed.clone()),
        (Some(""), signed.clone()),
        (Some("text/plain"), signed.clone()),
        (Some("text/plain; charset=utf-8"), signed.clone()),
        (Some("text/json"), signed.clone()),
        (Some("application/json-seq"), seq.clone()),
        (Some("application/json-seq"), signed.clone()),
        (Some("multipart/form-data; boundary=x"), multipart.clone()),
        (Some("multipart/mixed; boundary=x"), multipart.clone()),
        (
            Some("application/x-www-form-urlencoded"),
            format!("body={signed}"),
        ),
        (Some("application/jsonp"), signed.clone()),
        (Some("application/vnd.api+json"), signed.clone()),
        (Some("application/problem+json"), signed.clone()),
        (Some("application/*"), signed.clone()),
        (Some("*/*"), signed.clone()),
        (Some("json"), signed.clone()),
        (Some("application/json, text/plain"), signed.clone()),
        (Some("application/json text/plain"), signed.clone()),
        (Some("application/octet-stream"), signed.clone()),
    ];
    for (content_type, body) in &cases {
        for path in [DISPLAY, ELEMENT] {
            let response = f
                .server
                .request(Method::POST, path, *content_type, &[], body.clone())
                .await;
            assert_eq!(
                response.status, 415,
                "{path} {content_type:?}: {}",
                response.text
            );
            assert_eq!(response.text, unsupported_media_type(), "{content_type:?}");
            count += 1;
        }
    }
    // Two Content-Type headers (even two JSON ones) leave the type open.
    for (first, second) in [
        ("application/json", "text/plain"),
        ("text/plain", "application/json"),
        ("application/json", "application/json"),
    ] {
        let request = format!(
            "POST {DISPLAY} HTTP/1.1\r\nHost: x\r\nContent-Type: {first}\r\nContent-Type: {second}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{signed}",
            signed.len()
        );
        let response = f.server.raw(request.as_bytes(), false);
        assert_eq!(
            response.status, 415,
            "{first} + {second}: {}",
            response.text
        );
        assert_eq!(response.text, unsupported_media_type());
        count += 1;
    }
    f.assert_unchanged("wrong content types").await;

    // The charset parameter is ignored: the body is read as UTF-8.
    let response = f
        .server
        .request(
            Method::POST,
            DISPLAY,
            Some("application/json; charset=ISO-8859-1"),
            &[],
            f.c.body("Zimmer-3", r#"{"event":"Störung"}"#),
        )
        .await;
    response.expect_status(201);
    count += 1;
    tried("wrong_content_types_are_415", count);
}

/// Every path with every method it does not serve: 405 with `Allow` and the
/// documented body (HEAD: the same status and headers, no body). Signed
/// bodies sent with the wrong method write nothing.
#[tokio::test]
async fn wrong_methods_are_405_with_allow_on_every_path() {
    let f = Fixture::new().await;
    let signed = f.c.body("Zimmer-1", r#"{"closed":true}"#);
    let methods = [
        "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE", "PURGE",
    ];
    let paths = [
        (DISPLAY, "POST"),
        (ELEMENT, "POST"),
        (CALL_TYPES, "GET"),
        (SANDBOX_CONSUMERS, "POST"),
        (SANDBOX_STATE, "GET"),
        ("/", "GET"),
    ];
    let mut count = 0;
    for (path, allow) in paths {
        for method in methods.iter().copied().filter(|m| *m != allow) {
            let method = Method::from_bytes(method.as_bytes()).expect("method");
            let response = f
                .server
                .request(
                    method.clone(),
                    path,
                    Some("application/json"),
                    &[],
                    signed.clone(),
                )
                .await;
            assert_eq!(response.status, 405, "{method} {path}: {}", response.text);
            assert_eq!(response.header("allow"), Some(allow), "{method} {path}");
            if method == Method::HEAD {
                assert_eq!(response.text, "", "HEAD {path} has no body");
            } else {
                assert_eq!(response.text, method_not_allowed(allow), "{method} {path}");
                assert_eq!(response.header("content-type"), Some("application/json"));
            }
            count += 1;
        }
    }
    f.assert_unchanged("wrong methods").await;

    // In production the sandbox paths do not exist, for any method.
    let production = Server::production(Seed::new());
    for path in [SANDBOX_CONSUMERS, SANDBOX_STATE, "/"] {
        for method in methods {
            let method = Method::from_bytes(method.as_bytes()).expect("method");
            let response = production
                .request(method.clone(), path, Some("application/json"), &[], "{}")
                .await;
            assert_eq!(response.status, 404, "{method} {path}: {}", response.text);
            if method != Method::HEAD {
                assert_eq!(response.text, not_found(), "{method} {path}");
            }
            count += 1;
        }
    }
    tried("wrong_methods_are_405_with_allow_on_every_path", count);
}

/// Paths match byte for byte (sent raw, so no client normalises them): a
/// trailing slash, doubled slashes, dot segments (plain and percent-encoded),
/// percent-encoded letters, other cases, suffixes and very long paths are
/// 404 and write nothing. Query strings do not change the path; on the
/// display path only `include` is read (first value wins).
#[tokio::test]
async fn path_tricks_are_404_and_queries_are_ignored() {
    let f = Fixture::new().await;
    let open = f.c.body("Pfad-1", r#"{"event":"Notruf"}"#);
    let element = f.c.body("Pfad-1", r#"{"battery":1}"#);
    let long = format!("/api/v1/display/{}", "a".repeat(60_000));
    let tricks = [
        "/api/v1/display/",
        "/api/v1/display//",
        "//api/v1/display",
        "/api/v1//display",
        "/api//v1/display",
        "/api/v1/display/../display",
        "/api/v1/x/../display",
        "/api/v1/./display",
        "/./api/v1/display",
        "/api/v1/display/.",
        "/api/v1/%2e%2e/v1/display",
        "/api/v1/display/%2e%2e/display",
        "/api/v1/%2E%2E/v1/display",
        "/api/v1/%64isplay",
        "/api/v1/display%2F",
        "/api%2Fv1%2Fdisplay",
        "/api/v1/display%00",
        "/api/v1/display%20",
        "/api/v1/display;x=1",
        "/api/v1/display.json",
        "/api/v1/displays",
        "/api/v1/display/call-types/../../display",
        "/API/V1/DISPLAY",
        "/api/v1/Display",
        "/Api/v1/display",
        "/api/V1/display",
        "/api/v2/display",
        "/api/v1",
        "/api/v1/",
        "/api",
        // `/display` is the display page (GET); a trailing slash is no path of ours.
        "/display/",
        "/api/v1/element/",
        "/api/v1//element",
        "/api/v1/Element",
        "/api/v1/element/../element",
        "/api/v1/%65lement",
        long.as_str(),
    ];
    let mut count = 0;
    for path in tricks {
        for body in [&open, &element] {
            let response =
                f.server
                    .raw_request("POST", path, Some("application/json"), body.as_bytes());
            let shown: String = path.chars().take(80).collect();
            assert_eq!(response.status, 404, "{shown}: {}", response.text);
            assert_eq!(response.text, not_found(), "{shown}");
            count += 1;
        }
    }
    // Beyond 64 KiB the HTTP layer refuses the request line itself (hyper:
    // 414 without a body) before the service sees it.
    let longer = format!("/api/v1/display/{}", "a".repeat(70_000));
    let response = f
        .server
        .raw_request("POST", &longer, Some("application/json"), open.as_bytes());
    assert_eq!(response.status, 414, "{}", response.text);
    count += 1;
    f.assert_unchanged("path tricks").await;

    // Queries: ignored, except `include` on the display path.
    for (query, status, with_type) in [
        ("?", 201, false),
        ("?x=1", 200, false),
        ("?include=type&include=nonsense", 200, true),
        ("?include=%74ype", 200, true),
        ("?INCLUDE=type", 200, false),
        ("?consumer=x&hash=y&target=Zimmer-1", 200, false),
        (&format!("?x={}", "q".repeat(8_000)), 200, false),
    ] {
        let response = f.server.raw_request(
            "POST",
            &format!("{DISPLAY}{query}"),
            Some("application/json"),
            open.as_bytes(),
        );
        assert_eq!(response.status, status, "{query}: {}", response.text);
        let call = response.data();
        assert_eq!(call["address"], "Pfad-1", "{query}");
        assert_eq!(
            call.get("type").is_some(),
            with_type,
            "{query}: {}",
            response.text
        );
        count += 1;
    }
    for query in [
        "?include=nonsense&include=type",
        "?include=",
        "?include=type,x",
    ] {
        let response = f.server.raw_request(
            "POST",
            &format!("{DISPLAY}{query}"),
            Some("application/json"),
            open.as_bytes(),
        );
        assert_eq!(response.status, 422, "{query}: {}", response.text);
        assert_eq!(
            response.text,
            invalid("include", "Der gewählte Wert für include ist ungültig."),
            "{query}"
        );
        count += 1;
    }
    for query in ["?include=type", "?include=nonsense", "?x=1"] {
        let response = f.server.raw_request(
            "POST",
            &format!("{ELEMENT}{query}"),
            Some("application/json"),
            element.as_bytes(),
        );
        assert_eq!(response.status, 200, "{query}: {}", response.text);
        count += 1;
    }
    tried("path_tricks_are_404_and_queries_are_ignored", count);
}

/// A body that ends before its `Content-Length` (the client gave up) is a
/// 400, not a 413 and not a partial request.
#[tokio::test]
async fn a_body_cut_off_on_the_wire_is_400() {
    let f = Fixture::new().await;
    let body = f.c.body("Zimmer-1", r#"{"closed":true}"#);
    let mut count = 0;
    for (path, sent) in [
        (DISPLAY, 0),
        (DISPLAY, body.len() / 2),
        (ELEMENT, body.len() - 1),
    ] {
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
            body.len(),
            &body[..sent]
        );
        let response = f.server.raw(request.as_bytes(), true);
        assert_eq!(
            response.status, 400,
            "{path} after {sent} bytes: {}",
            response.text
        );
        assert_eq!(
            response.text,
            malformed("Der Anfragekörper konnte nicht vollständig gelesen werden."),
        );
        count += 1;
    }
    f.assert_unchanged("bodies cut off on the wire").await;
    tried("a_body_cut_off_on_the_wire_is_400", count);
}

// ---------------------------------------------------------------------------
// Production mode
// ---------------------------------------------------------------------------

const CENTRAL: &str = "11111111-2222-4333-8444-555555555555";
const ROOM: &str = "00:11:22:33:44:55";

/// The same refusals in production, where every consumer shares the data:
/// the registered element and the open call are untouched afterwards.
#[tokio::test]
async fn production_refuses_hostile_input_and_keeps_its_data() {
    let server = Server::production(
        Seed::new()
            .consumer(CENTRAL, &["central-secret"], false)
            .element(ROOM, "Z101", "Zimmer 101"),
    );
    let c = Consumer::new(CENTRAL, "central-secret");
    let open = server
        .display(
            &c,
            ROOM,
            r#"{"event":"Notruf","battery":50,"position":"Fenster"}"#,
        )
        .await;
    open.expect_status(201);
    let call = open.data();
    let read_element = || async {
        let response = server.element(&c, ROOM, "{}").await;
        response.expect_status(200);
        response.data()
    };
    let element_before = read_element().await;

    let mut count = 0;
    let signed = |data: &str| c.body(ROOM, data);
    let cases: Vec<Refusal<'_>> = vec![
        (
            DISPLAY,
            Some("application/json"),
            b"not json".to_vec(),
            400,
            not_json(2),
        ),
        (
            DISPLAY,
            Some("application/json"),
            signed(r#"{"closed":true}"#).as_bytes()[..20].to_vec(),
            400,
            incomplete(20),
        ),
        (
            ELEMENT,
            Some("application/json"),
            format!(r#"{{"data":{}{}}}"#, "[".repeat(10_000), "]".repeat(10_000)).into_bytes(),
            400,
            too_deep(8 + 128),
        ),
        (
            DISPLAY,
            Some("application/json"),
            signed(r#"{"closed":true,"closed":true}"#).into_bytes(),
            400,
            duplicate(
                "closed",
                column_of(
                    &signed(r#"{"closed":true,"closed":true}"#),
                    r#","closed":true}"#,
                ) + 8,
            ),
        ),
        (
            DISPLAY,
            Some("application/json"),
            signed(r#"{"event":"Notruf","closed":"true"}"#).into_bytes(),
            422,
            invalid("data.closed", "data.closed muss wahr oder falsch sein."),
        ),
        (
            ELEMENT,
            Some("application/json"),
            signed(r#"{"battery":-0.1}"#).into_bytes(),
            422,
            invalid(
                "data.battery",
                "data.battery muss zwischen 0 und 100 liegen.",
            ),
        ),
        (
            ELEMENT,
            Some("application/json"),
            signed(r#"{"position":"a\u0000"}"#).into_bytes(),
            422,
            invalid(
                "data.position",
                "data.position darf keine Steuerzeichen enthalten.",
            ),
        ),
        (
            DISPLAY,
            Some("application/json"),
            signed(r#"{"closed":true,"x":"\udc00"}"#).into_bytes(),
            400,
            bad_escape(column_of(&signed(r#"{"closed":true,"x":"\udc00"}"#), r"\udc00") + 5),
        ),
        (
            DISPLAY,
            Some("text/plain"),
            signed(r#"{"closed":true}"#).into_bytes(),
            415,
            unsupported_media_type(),
        ),
        (
            DISPLAY,
            None,
            signed(r#"{"closed":true}"#).into_bytes(),
            415,
            unsupported_media_type(),
        ),
        (
            ELEMENT,
            Some("application/json"),
            c.multi_body(&format!(
                "[{}]",
                vec![format!(r#"{{"target":"{ROOM}","battery":1}}"#); 101].join(",")
            ))
            .into_bytes(),
            422,
            invalid("data", "data darf maximal 100 Elemente haben."),
        ),
    ];
    for (path, content_type, body, status, expected) in cases {
        let response = server
            .request(Method::POST, path, content_type, &[], body)
            .await;
        assert_eq!(response.status, status, "{path}: {}", response.text);
        assert_eq!(response.text, expected, "{path}");
        count += 1;
    }
    for (method, path) in [
        (Method::PUT, DISPLAY),
        (Method::DELETE, ELEMENT),
        (Method::PATCH, DISPLAY),
    ] {
        let response = server
            .request(
                method.clone(),
                path,
                Some("application/json"),
                &[],
                signed(r#"{"closed":true}"#),
            )
            .await;
        assert_eq!(response.status, 405, "{method} {path}");
        count += 1;
    }
    for path in [
        "/api/v1/display/",
        "/api/v1/display/../display",
        "/api/v1/%64isplay",
    ] {
        let response = server.raw_request(
            "POST",
            path,
            Some("application/json"),
            signed(r#"{"closed":true}"#).as_bytes(),
        );
        assert_eq!(response.status, 404, "{path}");
        assert_eq!(response.text, not_found());
        count += 1;
    }
    // Nothing changed: the element as it was, the call still the open one.
    assert_eq!(read_element().await, element_before);
    let close = server.display(&c, ROOM, r#"{"closed":true}"#).await;
    close.expect_status(200);
    let closed = close.data();
    assert_eq!(closed.as_array().map(Vec::len), Some(1), "{closed}");
    assert_eq!(closed[0]["id"], call["id"]);
    tried("production_refuses_hostile_input_and_keeps_its_data", count);
}
