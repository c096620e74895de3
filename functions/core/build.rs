//! Converts the interface document `docs/openapi.yaml` to JSON once, at build
//! time, for `GET /api/v1/openapi.json` (`http::handlers::openapi`): the
//! service never parses YAML at run time, and what it serves is always the
//! document of the code it was built from.

use std::path::Path;

fn main() {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let source = Path::new(&manifest_dir).join("../../docs/openapi.yaml");
    println!("cargo::rerun-if-changed={}", source.display());
    let yaml = std::fs::read_to_string(&source)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", source.display()));
    let document: serde_json::Value = serde_saphyr::from_str(&yaml)
        .unwrap_or_else(|e| panic!("{} is not valid YAML: {e}", source.display()));
    let json = serde_json::to_string(&document).expect("a JSON value serialises");
    let out_dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(Path::new(&out_dir).join("openapi.json"), json).expect("OUT_DIR is writable");
}
