//! `sandbox_consumers`: whole requests, see `nurse_call_fuzz::endpoint::run_sandbox_consumers`.
#![no_main]

use nurse_call_fuzz::endpoint::{Scenario, decode, run_sandbox_consumers};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Some(scenario) = decode::<Scenario>(data) {
        run_sandbox_consumers(&scenario);
    }
});
