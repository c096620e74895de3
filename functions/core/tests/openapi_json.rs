//! `GET /api/v1/openapi.json` serves `src/http/handlers/openapi.json`, a
//! checked-in copy of `docs/openapi.yaml` as JSON. It is checked in rather
//! than converted by a build script because a YAML parser in every build of
//! the core would add about a minute to a newcomer's first
//! `cargo run -p local-server`. This test keeps the copy honest: it fails
//! when the two differ and says how to regenerate the copy.

use std::fs;
use std::path::{Path, PathBuf};

use nurse_call_core::http::handlers::openapi::DOCUMENT;

/// Set to regenerate the JSON from the YAML instead of failing.
const UPDATE: &str = "UPDATE_OPENAPI_JSON";

fn path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// The YAML as JSON, in the checked-in file's layout: two-space indent (a
/// readable diff), keys sorted, a final newline.
fn json_of_yaml() -> String {
    let source = path("../../docs/openapi.yaml");
    let yaml = fs::read_to_string(&source)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", source.display()));
    let document: serde_json::Value = serde_saphyr::from_str(&yaml)
        .unwrap_or_else(|e| panic!("{} is not valid YAML: {e}", source.display()));
    serde_json::to_string_pretty(&document).expect("a JSON value serialises") + "\n"
}

#[test]
fn the_served_document_is_docs_openapi_yaml() {
    let expected = json_of_yaml();
    if DOCUMENT == expected {
        return;
    }
    let copy = path("src/http/handlers/openapi.json");
    if std::env::var_os(UPDATE).is_some() {
        fs::write(&copy, &expected)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", copy.display()));
        eprintln!("{} regenerated from docs/openapi.yaml", copy.display());
        return;
    }
    let served: serde_json::Value = serde_json::from_str(DOCUMENT).expect("the copy is JSON");
    let wanted: serde_json::Value = serde_json::from_str(&expected).expect("JSON");
    panic!(
        "{} is not docs/openapi.yaml ({}). Regenerate it and commit both:\n  \
         {UPDATE}=1 cargo test -p nurse-call-core --test openapi_json",
        copy.display(),
        if served == wanted {
            "same content, other layout"
        } else {
            "the content differs"
        }
    );
}
