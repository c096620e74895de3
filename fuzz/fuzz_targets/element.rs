//! `element`: whole requests, see `nurse_call_fuzz::endpoint::run_element`.
#![no_main]

use nurse_call_fuzz::endpoint::{Scenario, decode, run_element};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Some(scenario) = decode::<Scenario>(data) {
        run_element(&scenario);
    }
});
