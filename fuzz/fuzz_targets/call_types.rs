//! `call_types`: whole requests, see `nurse_call_fuzz::endpoint::run_call_types`.
#![no_main]

use nurse_call_fuzz::endpoint::{Scenario, decode, run_call_types};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Some(scenario) = decode::<Scenario>(data) {
        run_call_types(&scenario);
    }
});
