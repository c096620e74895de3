//! The interface document, docs/openapi.yaml: it parses, every reference
//! resolves, every example matches its schema, every signed example's hash
//! is right (recomputed here from the secret the example names), the signed
//! examples are accepted by a production server seeded with
//! examples/seed.json, and the server serves the document at
//! `/api/v1/openapi.json`. (That the document is valid OpenAPI 3.1 is
//! checked by openapi-spec-validator in scripts/schemathesis; that every
//! response conforms, by the harness on every request of the suite.)

use blackbox_tests::openapi::{self, pointer_segment};
use blackbox_tests::*;

/// An alarm server's response (DECISIONS §16).
const ALARM_RESPONSE: &str = "/api/v1/response";

/// Every `(pointer, value)` of the document whose key is `key`.
fn find_all<'v>(
    value: &'v Value,
    pointer: String,
    key: &str,
    found: &mut Vec<(String, &'v Value)>,
) {
    match value {
        Value::Object(object) => {
            for (name, child) in object {
                let child_pointer = format!("{pointer}/{}", pointer_segment(name));
                if name == key {
                    found.push((child_pointer.clone(), child));
                }
                find_all(child, child_pointer, key, found);
            }
        }
        Value::Array(items) => {
            for (index, child) in items.iter().enumerate() {
                find_all(child, format!("{pointer}/{index}"), key, found);
            }
        }
        _ => {}
    }
}

fn root() -> &'static Value {
    openapi::document().root()
}

/// The request examples: (pointer of the example, the example object, the
/// pointer of the schema it is for).
fn request_examples() -> Vec<(String, &'static Value, String)> {
    let mut found = Vec::new();
    for (path, item) in root()["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("path item") {
            let Some(content) = operation["requestBody"]["content"].as_object() else {
                continue;
            };
            for (media, body) in content {
                let base = format!(
                    "/paths/{}/{method}/requestBody/content/{}",
                    pointer_segment(path),
                    pointer_segment(media)
                );
                for (name, example) in body["examples"].as_object().into_iter().flatten() {
                    found.push((
                        format!("{base}/examples/{name}"),
                        example,
                        format!("{base}/schema"),
                    ));
                }
            }
        }
    }
    found
}

/// `data` as the signed `data_json`: compact, in the document's order.
fn data_json(data: &Value) -> String {
    serde_json::to_string(data).expect("JSON")
}

/// A YAML value with the keys of its mappings in the order of the document
/// (a `serde_json::Value` here sorts them).
enum Ordered {
    Map(Vec<(String, Ordered)>),
    List(Vec<Ordered>),
    Scalar,
}

impl<'de> serde::Deserialize<'de> for Ordered {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Ordered;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any YAML value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Ordered, A::Error> {
                let mut entries = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, Ordered>()? {
                    entries.push((key, value));
                }
                Ok(Ordered::Map(entries))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Ordered, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Ordered::List(items))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Ordered, E> {
                Ok(Ordered::Scalar)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Ordered, E> {
                Ok(Ordered::Scalar)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Ordered, E> {
                Ok(Ordered::Scalar)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Ordered, E> {
                Ok(Ordered::Scalar)
            }
            fn visit_str<E>(self, _: &str) -> Result<Ordered, E> {
                Ok(Ordered::Scalar)
            }
            fn visit_unit<E>(self) -> Result<Ordered, E> {
                Ok(Ordered::Scalar)
            }
            fn visit_none<E>(self) -> Result<Ordered, E> {
                Ok(Ordered::Scalar)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl Ordered {
    /// The value at a JSON pointer.
    fn at(&self, pointer: &str) -> &Ordered {
        pointer.split('/').skip(1).fold(self, |node, segment| {
            let segment = segment.replace("~1", "/").replace("~0", "~");
            match node {
                Ordered::Map(entries) => entries
                    .iter()
                    .find(|(key, _)| *key == segment)
                    .map(|(_, value)| value)
                    .unwrap_or_else(|| panic!("no {segment} in {pointer}")),
                Ordered::List(items) => &items[segment.parse::<usize>().expect("an index")],
                Ordered::Scalar => panic!("{pointer} goes through a scalar"),
            }
        })
    }

    /// Panics unless every mapping's keys are in sorted order.
    fn assert_sorted(&self, at: &str) {
        match self {
            Ordered::Map(entries) => {
                let keys: Vec<&String> = entries.iter().map(|(key, _)| key).collect();
                let mut sorted = keys.clone();
                sorted.sort();
                assert_eq!(
                    keys, sorted,
                    "{at}: keys of a signed example's data must be sorted"
                );
                entries
                    .iter()
                    .for_each(|(_, value)| value.assert_sorted(at));
            }
            Ordered::List(items) => items.iter().for_each(|item| item.assert_sorted(at)),
            Ordered::Scalar => {}
        }
    }
}

/// Keys in sorted order at every level (checked in the YAML text's order),
/// ASCII text, whole numbers: then any JSON serialiser (sorting or keeping
/// order, escaping non-ASCII or not, writing `80` or `80.0`) gives the
/// `data_json` that was signed.
fn assert_reproducible(data: &Value, at: &str) {
    match data {
        Value::Object(object) => {
            for (key, value) in object {
                assert!(key.is_ascii(), "{at}: key {key:?} is not ASCII");
                assert_reproducible(value, at);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| assert_reproducible(item, at)),
        Value::String(text) => {
            assert!(
                text.is_ascii() && !text.contains('/'),
                "{at}: {text:?} would be escaped differently by some serialisers"
            );
        }
        Value::Number(number) => assert!(number.is_i64(), "{at}: {number} is not a whole number"),
        Value::Bool(_) | Value::Null => {}
    }
}

#[test]
fn the_document_parses_and_every_reference_resolves() {
    let reparsed = openapi::parse(openapi::SOURCE);
    assert_eq!(reparsed["openapi"], "3.1.0");
    let mut references = Vec::new();
    find_all(root(), String::new(), "$ref", &mut references);
    assert!(references.len() > 50, "{} references", references.len());
    for (at, reference) in references {
        let reference = reference
            .as_str()
            .unwrap_or_else(|| panic!("{at}: $ref is no string"));
        let pointer = reference
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("{at}: {reference} is not a local reference"));
        assert!(
            root().pointer(pointer).is_some(),
            "{at}: {reference} resolves to nothing"
        );
    }
    // Every operation answers in JSON or HTML and documents its errors.
    for (path, item) in root()["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("path item") {
            let responses = operation["responses"].as_object().expect("responses");
            assert!(
                !responses.is_empty(),
                "{method} {path} documents no response"
            );
            assert!(
                operation["operationId"].is_string(),
                "{method} {path} has no operationId"
            );
        }
    }
}

#[test]
fn every_signed_example_verifies_with_its_secret() {
    let ordered: Ordered = serde_saphyr::from_str(openapi::SOURCE).expect("YAML");
    let mut checked = 0;
    for (at, example, _) in request_examples() {
        let Some(secret) = example["x-secret"].as_str() else {
            continue;
        };
        let body = &example["value"];
        let consumer = body["consumer"].as_str().expect("consumer");
        let data = &body["data"];
        assert_reproducible(data, &at);
        ordered.at(&format!("{at}/value/data")).assert_sorted(&at);
        // The multi form of the element family has no top-level target.
        let target = body["target"].as_str().unwrap_or("");
        let mut string = format!("{target}.{consumer}.{}", data_json(data));
        if let Some(signed_at) = body.get("signed_at") {
            string.push_str(&format!(
                ".{}",
                signed_at.as_i64().expect("integer signed_at")
            ));
        }
        assert_eq!(
            body["hash"].as_str(),
            Some(hmac_sha256_hex(secret, &string).as_str()),
            "{at}: the hash of {string:?} with the secret {secret:?}"
        );
        // Where the example shows its signing string, it is this one.
        if let Some(description) = example["description"].as_str()
            && description.contains("Signing string")
        {
            assert!(
                description.contains(&format!("`{string}`")),
                "{at}: the description shows another signing string than {string:?}"
            );
        }
        checked += 1;
    }
    assert!(checked >= 7, "{checked} signed examples");

    // The proof of the sandbox state example: HMAC of the consumer id.
    let parameters = &root()["paths"]["/api/v1/sandbox/state"]["get"]["parameters"];
    let parameter = |name: &str| {
        parameters
            .as_array()
            .expect("parameters")
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("parameter {name}"))
    };
    let hash = parameter("hash");
    let consumer = parameter("consumer")["example"]
        .as_str()
        .expect("consumer example");
    assert_eq!(
        hash["example"].as_str(),
        Some(hmac_sha256_hex(hash["x-secret"].as_str().expect("x-secret"), consumer).as_str()),
        "the state proof example"
    );

    // Every `debug` and mismatch example: `expected` is the HMAC of `string`.
    let mut debugs = Vec::new();
    find_all(root(), String::new(), "debug", &mut debugs);
    let debugs: Vec<_> = debugs
        .into_iter()
        .filter(|(_, debug)| debug["secret"].is_string())
        .collect();
    assert!(!debugs.is_empty(), "an invalid_hash example with debug");
    for (at, debug) in debugs {
        let string = debug["string"].as_str().expect("string");
        let expected = hmac_sha256_hex(debug["secret"].as_str().expect("secret"), string);
        assert_eq!(
            debug["hash"]["expected"].as_str(),
            Some(expected.as_str()),
            "{at}"
        );
        assert_ne!(
            debug["hash"]["provided"].as_str(),
            Some(expected.as_str()),
            "{at}"
        );
    }

    // The worked example of the signing rule (also in the README).
    let rule = root()["components"]["securitySchemes"]["signedBody"]["description"]
        .as_str()
        .expect("the signing rule");
    let printf = rule
        .split("printf '%s' '")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .expect("a printf line in the signing rule");
    let shown = rule
        .split("# ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the hash after the printf line");
    assert_eq!(
        hmac_sha256_hex("my-secret", printf),
        shown,
        "the signing rule's example"
    );
}

#[test]
fn every_example_matches_its_schema() {
    let document = openapi::document();
    let mut checked = 0;
    let mut check = |at: &str, value: &Value, schema: &str| {
        let errors = document.schema_errors(schema, value);
        assert!(
            errors.is_empty(),
            "{at} does not match {schema}: {errors:#?}"
        );
        checked += 1;
    };
    for (at, example, schema) in request_examples() {
        check(&at, &example["value"], &schema);
    }
    // Response examples (`examples` and `example` of each media type).
    let mut contents = Vec::new();
    find_all(root(), String::new(), "content", &mut contents);
    for (at, content) in contents {
        for (media, body) in content.as_object().into_iter().flatten() {
            let base = format!("{at}/{}", pointer_segment(media));
            if body.get("schema").is_none() {
                continue;
            }
            let schema = format!("{base}/schema");
            if let Some(example) = body.get("example") {
                check(&format!("{base}/example"), example, &schema);
            }
            for (name, example) in body["examples"].as_object().into_iter().flatten() {
                check(
                    &format!("{base}/examples/{name}"),
                    &example["value"],
                    &schema,
                );
            }
        }
    }
    assert!(checked >= 20, "{checked} examples checked");
}

#[tokio::test]
async fn the_server_serves_the_document_as_json() {
    let server = Server::sandbox();
    let response = server.get("/api/v1/openapi.json").await;
    response.expect_status(200);
    assert_eq!(response.header("content-type"), Some("application/json"));
    let served = response.json();
    let source = openapi::parse(openapi::SOURCE);
    if let Some(at) = first_difference(&served, &source, String::new()) {
        panic!(
            "the served document differs from docs/openapi.yaml at {at:?} \
             (rebuild the server: cargo build --workspace --bins)"
        );
    }
}

/// The pointer of the first place where `a` and `b` differ, if any.
fn first_difference(a: &Value, b: &Value, at: String) -> Option<String> {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            keys.into_iter()
                .find_map(|key| match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => {
                        first_difference(x, y, format!("{at}/{}", pointer_segment(key)))
                    }
                    _ => Some(format!("{at}/{}", pointer_segment(key))),
                })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(index, (x, y))| first_difference(x, y, format!("{at}/{index}"))),
        _ if a == b => None,
        _ => Some(at),
    }
}

/// The requests of `x-other-requests.anyRequest`: every method on a known
/// path, an unknown one, and one of another method.
const ANY_REQUEST: [(&str, &str); 4] = [
    ("GET", CALL_TYPES),
    ("GET", "/api/v1/openapi.json"),
    ("POST", SANDBOX_CONSUMERS),
    ("PUT", "/no/such/path"),
];

/// What any request may be answered before its path is looked at
/// (`x-other-requests.anyRequest`): a body over 256 KiB is 413 on every
/// path, with every method (DECISIONS §3, step 1). The harness validates
/// each answer against that part of the document.
#[tokio::test]
async fn a_body_too_large_is_413_on_any_path() {
    let server = Server::sandbox();
    let large = vec![b'a'; 256 * 1024 + 1];
    for (method, path) in ANY_REQUEST {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let response = server
            .request(
                method.clone(),
                path,
                Some("application/json"),
                &[],
                large.clone(),
            )
            .await;
        assert_eq!(response.status, 413, "{method} {path}: {}", response.text);
        assert_eq!(response.json()["messages"][0]["code"], "payload_too_large");
    }
}

/// A body cut off before its `Content-Length` is 400 on every path
/// (`x-other-requests.anyRequest`).
#[tokio::test]
async fn a_body_cut_off_is_400_on_any_path() {
    let server = Server::sandbox();
    for (method, path) in ANY_REQUEST {
        let cut_off = format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nConnection: close\r\n\r\nabc"
        );
        let response = server.raw(cut_off.as_bytes(), true);
        assert_eq!(response.status, 400, "{method} {path}: {}", response.text);
        assert_eq!(response.json()["messages"][0]["code"], "malformed_request");
    }
}

/// The signed examples, sent as they are to a production server with the
/// consumer and elements of examples/seed.json: each is accepted (its hash
/// verifies; `signedTime`'s fixed past `signed_at` is then out of range;
/// `closeAt`'s fixed `closed_at` is refused once more than a week old, and
/// accepted dated now; an alarm server's response names a call and staff
/// the seed does not have, so it meets the state check after the hash).
#[tokio::test]
async fn the_signed_examples_are_accepted_by_a_production_server() {
    let seed_file: Value =
        serde_json::from_str(include_str!("../../examples/seed.json")).expect("examples/seed.json");
    let mut seed = Seed::new();
    for consumer in seed_file["consumers"].as_array().expect("consumers") {
        let secrets: Vec<&str> = consumer["secrets"]
            .as_array()
            .expect("secrets")
            .iter()
            .map(|s| s.as_str().expect("secret"))
            .collect();
        seed = seed.consumer(consumer["id"].as_str().expect("id"), &secrets, false);
    }
    for element in seed_file["elements"].as_array().expect("elements") {
        let text = |key: &str| element[key].as_str().expect("element field");
        seed = seed.element(text("address"), text("code"), text("name"));
    }
    let server = Server::production(seed);
    let mut sent = 0;
    for (at, example, _) in request_examples() {
        if example["x-secret"].is_null() {
            continue;
        }
        let path = if at.contains("~1element/") {
            ELEMENT
        } else if at.contains("~1response/") {
            ALARM_RESPONSE
        } else if at.contains("~1heartbeat/") {
            "/api/v1/heartbeat"
        } else {
            DISPLAY
        };
        let body = example["value"].to_string();
        let response = server.post(path, body).await;
        if path == ALARM_RESPONSE {
            // Call 17 and the staff it names are not in this seed: the hash
            // verifies, and the answer is the state check after it (422 of
            // both keys), not the 400 of a signature.
            assert_eq!(
                (response.status, response.text),
                (
                    422,
                    validation_body(&[
                        (
                            "data.staff",
                            &["Der gewählte Wert für data.staff ist ungültig."]
                        ),
                        (
                            "data.call",
                            &["Der gewählte Wert für data.call ist ungültig."]
                        ),
                    ])
                ),
                "{at}"
            );
            sent += 1;
            continue;
        }
        let dated = ["created_at", "closed_at"]
            .into_iter()
            .filter(|key| example["value"]["data"].get(key).is_some())
            .collect::<Vec<_>>();
        if !dated.is_empty() {
            // A fixed day is refused once more than a week past (DECISIONS
            // §5); dated now and signed again, the same request is accepted.
            if response.status == 422 {
                let keys: Vec<String> = dated.iter().map(|key| format!("data.{key}")).collect();
                let errors = response.json()["messages"]["errors"].clone();
                let found: Vec<&String> = errors.as_object().expect("errors").keys().collect();
                assert_eq!(
                    found,
                    keys.iter().collect::<Vec<_>>(),
                    "{at}: {}",
                    response.text
                );
            }
            let mut moved = example["value"].clone();
            for key in &dated {
                moved["data"][*key] = json!(WireClock::berlin().at(0));
            }
            let secret = example["x-secret"].as_str().expect("x-secret");
            let string = format!(
                "{}.{}.{}",
                moved["target"].as_str().unwrap_or(""),
                moved["consumer"].as_str().expect("consumer"),
                data_json(&moved["data"])
            );
            moved["hash"] = json!(hmac_sha256_hex(secret, &string));
            let response = server.post(path, moved.to_string()).await;
            assert!(
                response.status == 200 || response.status == 201,
                "{at} dated now: {} {}",
                response.status,
                response.text
            );
        } else if example["value"].get("signed_at").is_some() {
            response.expect_status(400);
            assert_eq!(
                response.json()["messages"][0]["code"],
                "signed_time_out_of_range",
                "{at}: {}",
                response.text
            );
        } else {
            assert!(
                response.status == 200 || response.status == 201,
                "{at}: {} {}",
                response.status,
                response.text
            );
        }
        sent += 1;
    }
    assert!(sent >= 9, "{sent} examples sent");
}
