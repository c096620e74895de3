//! `signature`: see `nurse_call_fuzz::pure::check_signature`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    nurse_call_fuzz::pure::check_signature(data);
});
