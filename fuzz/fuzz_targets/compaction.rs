//! `compaction`: see `nurse_call_fuzz::pure::check_compaction`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    nurse_call_fuzz::pure::check_compaction(data);
});
