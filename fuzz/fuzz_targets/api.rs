//! libFuzzer entry point: every input is a program of C-API calls (see `../api_program.rs`),
//! checked call by call against the reference model (with the test kit's rules, `testkit/`). A mismatch panics, which libFuzzer
//! reports as a crash and saves under `fuzz/artifacts/api/`; add such an input to
//! `fuzz/corpus/api/` (replayed by `tests/fuzz_api.rs` in CI) once the bug is fixed.
//!
//! Run (nightly): `cargo +nightly fuzz run api -- -max_total_time=300`
#![no_main]

#[path = "../api_program.rs"]
mod api_program;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let cfg = api_program::Config { verbose: false };
    if let Err(e) = api_program::run(data, cfg) {
        panic!("{e}");
    }
});
