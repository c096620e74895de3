//! `sandbox_state`: whole requests, see `nurse_call_fuzz::endpoint::run_sandbox_state`.
#![no_main]

use nurse_call_fuzz::endpoint::{Scenario, decode, run_sandbox_state};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Some(scenario) = decode::<Scenario>(data) {
        run_sandbox_state(&scenario);
    }
});
