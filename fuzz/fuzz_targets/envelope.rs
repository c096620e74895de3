//! `envelope`: see `nurse_call_fuzz::pure::check_envelope`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    nurse_call_fuzz::pure::check_envelope(data);
});
