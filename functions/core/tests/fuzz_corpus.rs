//! Replays the inputs of the pure fuzz targets on the stable toolchain: every
//! file of `fuzz/corpus/<target>` (the minimised corpus `scripts/fuzz`
//! keeps), `fuzz/seeds/<target>` and `fuzz/regressions/<target>` (inputs of
//! fixed findings) goes through the very checks of the fuzz target
//! (`fuzz/src/pure.rs`, included here), so `cargo test --workspace` guards
//! them without nightly or cargo-fuzz.

// `pub` there: the fuzz crate's targets call these checks.
#[allow(unreachable_pub)]
#[path = "../../../fuzz/src/pure.rs"]
mod pure;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

/// Every input file of a target, sorted.
fn inputs(target: &str) -> Vec<PathBuf> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut files = Vec::new();
    for kind in ["corpus", "seeds", "regressions"] {
        let Ok(entries) = std::fs::read_dir(fuzz.join(kind).join(target)) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("readable folder").path();
            if path.is_file() {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Runs `check` on every input of `target`; names each failing file.
fn replay(target: &str, check: fn(&[u8])) {
    let files = inputs(target);
    assert!(!files.is_empty(), "no inputs for the fuzz target {target}");
    let mut failed = Vec::new();
    for path in &files {
        let bytes = std::fs::read(path).expect("readable input");
        if catch_unwind(AssertUnwindSafe(|| check(&bytes))).is_err() {
            failed.push(path.display().to_string());
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} inputs of {target} fail (see the panics above): {failed:#?}",
        failed.len(),
        files.len()
    );
}

#[test]
fn envelope_inputs_pass() {
    replay("envelope", pure::check_envelope);
}

#[test]
fn compaction_inputs_pass() {
    replay("compaction", pure::check_compaction);
}

#[test]
fn signature_inputs_pass() {
    replay("signature", pure::check_signature);
}
