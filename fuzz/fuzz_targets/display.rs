//! `display`: whole requests, see `nurse_call_fuzz::endpoint::run_display`.
#![no_main]

use nurse_call_fuzz::endpoint::{Scenario, decode, run_display};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Some(scenario) = decode::<Scenario>(data) {
        run_display(&scenario);
    }
});
