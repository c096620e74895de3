//! Every response the harness receives is checked against the interface
//! document, `docs/openapi.yaml`: the operation of the request's path and
//! method (or the document's `x-other-requests` for unknown paths and other
//! methods), the status among its responses, the required headers and their
//! schemas, the content type, and the body against the JSON Schema of that
//! response. A mismatch panics with the request, the response and every
//! schema error, so the document cannot drift from what the service answers.
//!
//! The document is read with a YAML parser of its own and validated with the
//! `jsonschema` crate: nothing of the service is linked (see `lib.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use jsonschema::{Draft, Registry, Validator};
use serde_json::{Value, json};

use crate::Response;

/// The document, as the service's source tree has it.
pub const SOURCE: &str = include_str!("../../docs/openapi.yaml");

/// The URI the document is registered under, so that `$ref`s resolve in it.
const BASE_URI: &str = "https://nurse-call.invalid/openapi.json";

/// The parsed document and the compiled schemas, built once per test process.
pub struct Document {
    root: &'static Value,
    registry: Registry<'static>,
    /// JSON pointer of a schema → its compiled validator.
    validators: Mutex<HashMap<String, Arc<Validator>>>,
}

/// The document of this process.
pub fn document() -> &'static Document {
    static DOCUMENT: OnceLock<Document> = OnceLock::new();
    DOCUMENT.get_or_init(|| {
        let root: &'static Value = Box::leak(Box::new(parse(SOURCE)));
        let registry = Registry::new()
            .draft(Draft::Draft202012)
            .add(BASE_URI, root)
            .and_then(|builder| builder.prepare())
            .unwrap_or_else(|e| panic!("docs/openapi.yaml cannot be registered: {e}"));
        Document {
            root,
            registry,
            validators: Mutex::new(HashMap::new()),
        }
    })
}

/// Parses the YAML document into JSON values.
pub fn parse(yaml: &str) -> Value {
    serde_saphyr::from_str(yaml).unwrap_or_else(|e| panic!("docs/openapi.yaml is not YAML: {e}"))
}

/// `~` and `/` escaped for a JSON pointer segment (RFC 6901).
pub fn pointer_segment(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// Where a response is documented: the responses object, and its pointer.
struct Documented<'d> {
    responses: &'d Value,
    pointer: String,
    /// What the request was, in words, for messages.
    what: String,
}

impl Document {
    /// The parsed document.
    pub fn root(&self) -> &'static Value {
        self.root
    }

    /// The value at `pointer`, following `$ref`s (local ones, `#/…`).
    /// Returns the value and the pointer it was found at.
    pub fn resolve<'d>(&'d self, pointer: &str) -> (&'d Value, String) {
        let mut pointer = pointer.to_string();
        loop {
            let value = self
                .root
                .pointer(&pointer)
                .unwrap_or_else(|| panic!("docs/openapi.yaml has nothing at {pointer}"));
            match value.get("$ref").and_then(Value::as_str) {
                Some(reference) => {
                    pointer = reference
                        .strip_prefix('#')
                        .unwrap_or_else(|| panic!("only local references: {reference}"))
                        .to_string();
                }
                None => return (value, pointer),
            }
        }
    }

    /// The compiled schema at `pointer`.
    pub fn validator(&self, pointer: &str) -> Arc<Validator> {
        let mut validators = self.validators.lock().expect("validator cache");
        if let Some(validator) = validators.get(pointer) {
            return Arc::clone(validator);
        }
        let wrapper = json!({ "$ref": format!("{BASE_URI}#{}", uri_fragment(pointer)) });
        let validator = jsonschema::options()
            .with_draft(Draft::Draft202012)
            .with_registry(&self.registry)
            .build(&wrapper)
            .unwrap_or_else(|e| panic!("the schema at {pointer} does not compile: {e}"));
        let validator = Arc::new(validator);
        validators.insert(pointer.to_string(), Arc::clone(&validator));
        validator
    }

    /// The errors of `instance` against the schema at `pointer`, one line each.
    pub fn schema_errors(&self, pointer: &str, instance: &Value) -> Vec<String> {
        self.validator(pointer)
            .iter_errors(instance)
            .map(|error| format!("at {:?}: {error}", error.instance_path().as_str()))
            .collect()
    }

    /// The responses object for `method` on `path`: the operation's, else the
    /// document's answers to another method or an unknown path.
    fn documented(&self, method: &str, path: &str) -> Documented<'_> {
        let paths = &self.root["paths"];
        let operation = method.to_ascii_lowercase();
        // The path itself, else a template of the document it fills
        // (`/api/v1/staff/calls/{id}/responses`).
        let (path, item) = match paths.get(path) {
            Some(item) => (path.to_string(), Some(item)),
            None => paths
                .as_object()
                .and_then(|paths| paths.iter().find(|(template, _)| fills(template, path)))
                .map_or((path.to_string(), None), |(template, item)| {
                    (template.clone(), Some(item))
                }),
        };
        let path = path.as_str();
        match item {
            Some(item) if item.get(&operation).is_some() => Documented {
                responses: &item[&operation]["responses"],
                pointer: format!("/paths/{}/{operation}/responses", pointer_segment(path)),
                what: format!("operation {method} {path}"),
            },
            Some(_) => Documented {
                responses: &self.root["x-other-requests"]["otherMethod"]["responses"],
                pointer: "/x-other-requests/otherMethod/responses".into(),
                what: format!("{method} on {path}, a method the path does not list"),
            },
            None => Documented {
                responses: &self.root["x-other-requests"]["unknownPath"]["responses"],
                pointer: "/x-other-requests/unknownPath/responses".into(),
                what: format!("{method} {path}, a path the document does not have"),
            },
        }
    }

    /// Checks `response` to `method target` (target: path and query, as sent).
    pub fn check(&self, method: &str, target: &str, response: &Response) {
        let path = target.split(['?', '#']).next().unwrap_or_default();
        let documented = self.documented(method, path);
        let fail = |problem: String| -> ! {
            mismatch(method, target, &documented.what, response, &problem)
        };

        // The status among the operation's responses, else among those any
        // request may get before it reaches one (a body too large or cut off).
        let status = response.status.to_string();
        let range = format!("{}XX", response.status / 100);
        let any_request = "/x-other-requests/anyRequest/responses";
        let found = [status.as_str(), range.as_str(), "default"]
            .into_iter()
            .find(|key| documented.responses.get(*key).is_some())
            .map(|key| format!("{}/{}", documented.pointer, pointer_segment(key)))
            .or_else(|| {
                let pointer = format!("{any_request}/{status}");
                self.root.pointer(&pointer).map(|_| pointer)
            });
        let Some(found) = found else {
            let listed: Vec<&String> = documented
                .responses
                .as_object()
                .map(|o| o.keys().collect())
                .unwrap_or_default();
            fail(format!(
                "status {status} is not documented (documented: {listed:?}, and for any request {:?})",
                self.root
                    .pointer(any_request)
                    .and_then(Value::as_object)
                    .map(|o| o.keys().collect::<Vec<_>>())
                    .unwrap_or_default()
            ))
        };
        let (spec, spec_pointer) = self.resolve(&found);

        // Headers: every required one present, every present one valid.
        if let Some(headers) = spec.get("headers").and_then(Value::as_object) {
            for name in headers.keys() {
                let header_pointer = format!("{spec_pointer}/headers/{}", pointer_segment(name));
                let (header, header_pointer) = self.resolve(&header_pointer);
                let value = response.header(name);
                match value {
                    None if header["required"] == true => {
                        fail(format!("the required header {name} is missing"))
                    }
                    None => {}
                    Some(value) if header.get("schema").is_some() => {
                        let errors =
                            self.schema_errors(&format!("{header_pointer}/schema"), &json!(value));
                        if !errors.is_empty() {
                            fail(format!("header {name}: {}", errors.join("; ")))
                        }
                    }
                    Some(_) => {}
                }
            }
        }

        // A HEAD answer has the headers of its GET and no body.
        if method.eq_ignore_ascii_case("HEAD") {
            return;
        }
        let Some(content) = spec.get("content").and_then(Value::as_object) else {
            if !response.text.is_empty() {
                fail("the document gives this response no body, but it has one".into())
            }
            return;
        };
        let content_type = response.header("content-type").unwrap_or_default();
        let essence = content_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        let Some(media) = content.get(&essence) else {
            let listed: Vec<&String> = content.keys().collect();
            fail(format!(
                "content type {content_type:?} is not documented (documented: {listed:?})"
            ))
        };
        if media.get("schema").is_none() {
            return;
        }
        // JSON and the JSON-based types (`application/manifest+json`, RFC
        // 6839's `+json` suffix) are read as JSON, as schemathesis does.
        let instance = if essence == "application/json" || essence.ends_with("+json") {
            serde_json::from_str::<Value>(&response.text)
                .unwrap_or_else(|e| fail(format!("the body is not JSON: {e}")))
        } else {
            Value::String(response.text.clone())
        };
        let schema_pointer = format!(
            "{spec_pointer}/content/{}/schema",
            pointer_segment(&essence)
        );
        let errors = self.schema_errors(&schema_pointer, &instance);
        if !errors.is_empty() {
            fail(format!(
                "the body does not match the schema at {schema_pointer}:\n    {}",
                errors.join("\n    ")
            ))
        }
    }
}

/// Whether `path` fills the path template `template`: the same segments, a
/// `{name}` segment matching any one non-empty segment.
fn fills(template: &str, path: &str) -> bool {
    if !template.contains('{') {
        return false;
    }
    let (mut template, mut path) = (template.split('/'), path.split('/'));
    loop {
        match (template.next(), path.next()) {
            (None, None) => return true,
            (Some(t), Some(p)) if t.starts_with('{') && t.ends_with('}') && !p.is_empty() => {}
            (Some(t), Some(p)) if t == p => {}
            _ => return false,
        }
    }
}

/// Panics with everything needed to see why a response does not conform.
fn mismatch(method: &str, target: &str, what: &str, response: &Response, problem: &str) -> ! {
    let body: String = response.text.chars().take(2000).collect();
    let target: String = target.chars().take(200).collect();
    panic!(
        "the response does not conform to docs/openapi.yaml\n  request: {method} {target}\n  \
         documented as: {what}\n  problem: {problem}\n  status: {}\n  headers: {:?}\n  body: {body}",
        response.status, response.headers
    )
}

/// `pointer` as a URI fragment: characters outside those RFC 3986 allows in
/// a fragment are percent-encoded.
fn uri_fragment(pointer: &str) -> String {
    let mut fragment = String::with_capacity(pointer.len());
    for byte in pointer.bytes() {
        let allowed = byte.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/?".contains(&byte);
        if allowed {
            fragment.push(char::from(byte));
        } else {
            fragment.push_str(&format!("%{byte:02X}"));
        }
    }
    fragment
}

/// Checks `response` to `method target` against the document (the harness
/// calls this for every response it reads).
pub fn check(method: &str, target: &str, response: &Response) {
    document().check(method, target, response);
}

/// Checks the answer to a request sent as raw bytes: its method and target
/// are read off the request line.
pub fn check_raw(request: &[u8], response: &Response) {
    let line_end = request
        .windows(2)
        .position(|pair| pair == b"\r\n")
        .unwrap_or(request.len());
    let line = String::from_utf8_lossy(&request[..line_end]);
    let mut parts = line.split(' ');
    let method = parts.next().unwrap_or_default();
    let target = parts.next().unwrap_or_default();
    check(method, target, response);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_and_fragments() {
        assert_eq!(pointer_segment("/api/v1/display"), "~1api~1v1~1display");
        assert_eq!(pointer_segment("a~b"), "a~0b");
        assert_eq!(uri_fragment("/paths/~1/get"), "/paths/~1/get");
        assert_eq!(uri_fragment("/a b{}"), "/a%20b%7B%7D");
    }

    #[test]
    fn templates_are_filled_by_one_segment_each() {
        let template = "/api/v1/staff/calls/{id}/responses";
        assert!(fills(template, "/api/v1/staff/calls/17/responses"));
        assert!(fills(template, "/api/v1/staff/calls/x/responses"));
        assert!(!fills(template, "/api/v1/staff/calls//responses"));
        assert!(!fills(template, "/api/v1/staff/calls/1/2/responses"));
        assert!(!fills(template, "/api/v1/staff/calls/1/responses/"));
        assert!(!fills("/api/v1/display", "/api/v1/display"));
    }

    #[test]
    fn schemas_of_the_document_compile_and_decide() {
        let document = document();
        let pointer = "/components/schemas/WireTime";
        assert!(
            document
                .schema_errors(pointer, &json!("2026-11-21 23:05:12"))
                .is_empty()
        );
        assert!(
            !document
                .schema_errors(pointer, &json!("2026-11-21T23:05:12"))
                .is_empty()
        );
    }
}
