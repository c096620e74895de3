//! `GET /api/v1/openapi.json` serves `src/http/handlers/openapi.json`, a
//! checked-in copy of `docs/openapi.yaml` as JSON. It is checked in rather
//! than converted by a build script because a YAML parser in every build of
//! the core would add about a minute to a newcomer's first
//! `cargo run -p local-server`. This test keeps the copy honest: it fails
//! when the two differ and says how to regenerate the copy.

use std::fs;
use std::path::{Path, PathBuf};

use nurse_call_core::OPENAPI_DOCUMENT;
use serde_json::Value;

/// Set to regenerate the JSON from the YAML instead of failing.
const UPDATE: &str = "UPDATE_OPENAPI_JSON";

fn path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

fn yaml_document() -> Value {
    let source = path("../../docs/openapi.yaml");
    let yaml = fs::read_to_string(&source)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", source.display()));
    serde_saphyr::from_str(&yaml)
        .unwrap_or_else(|e| panic!("{} is not valid YAML: {e}", source.display()))
}

/// The checked-in file's layout: keys sorted, two-space indent (a readable
/// diff), a final newline. Sorted here, because whether `serde_json` keeps
/// insertion order depends on the features other crates of a build turn on.
fn layout(document: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&map[k])))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    serde_json::to_string_pretty(&sorted(document)).expect("a JSON value serialises") + "\n"
}

#[test]
fn the_served_document_is_docs_openapi_yaml() {
    let wanted = yaml_document();
    let served: Value =
        serde_json::from_str(OPENAPI_DOCUMENT).expect("the served document is JSON");
    // Equal as values (object equality ignores key order); the text is
    // rewritten only when asked.
    if served == wanted && std::env::var_os(UPDATE).is_none() {
        return;
    }
    let copy = path("src/http/handlers/openapi.json");
    if std::env::var_os(UPDATE).is_some() {
        fs::write(&copy, layout(&wanted))
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", copy.display()));
        eprintln!("{} regenerated from docs/openapi.yaml", copy.display());
        return;
    }
    panic!(
        "{} is not docs/openapi.yaml. Regenerate it and commit both:\n  \
         {UPDATE}=1 cargo test -p nurse-call-core --test openapi_json",
        copy.display()
    );
}
