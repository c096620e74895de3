//! Fuzz targets of the nurse-call service (`cargo +nightly fuzz`, see
//! `scripts/fuzz`). [`pure`] holds the checks of the targets that call one
//! function (`envelope`, `compaction`, `signature`); the stable test
//! `functions/core/tests/fuzz_corpus.rs` replays the kept corpora through
//! them. [`endpoint`] drives whole requests through the router on the
//! embedded store.

pub mod endpoint;
pub mod pure;
