//! The C-API fuzzer on stable Rust. Bytes are programs of API calls (decoded by
//! `fuzz/api_program.rs`, shared with the cargo-fuzz target) checked call by call against a
//! plain reference model (its type and shape rules are the test kit's, `testkit/src/model.rs`,
//! which the property tests use too).
//!
//! * `corpus_replays_clean`: every file in `fuzz/corpus/api/` (seeds, and every failure ever
//!   found, kept as regressions) runs without a mismatch.
//! * `random_programs`: fresh random programs and mutations of corpus entries for
//!   `BC_FUZZ_SECONDS` seconds (default 5; CI sets 20), from seed `BC_FUZZ_SEED` (default: the
//!   clock; printed). Before each program runs it is written to
//!   `<target>/tmp/fuzz_api_current.bin`, so a crash that kills the process leaves its input
//!   behind; a mismatch is saved to `<target>/tmp/fuzz_api_failures/` and printed in hex.
//!   `BC_FUZZ_SAVE_CORPUS=1` adds programs that reach a new (operation, status) pair to the
//!   corpus.
//! * `BC_FUZZ_REPLAY=<file>` replays one input verbosely (to minimise a failure).
#[path = "../fuzz/api_program.rs"]
mod api_program;

use api_program::{run, Config, Rng, Stats};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/api")
}

fn corpus() -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(corpus_dir())
        .expect("fuzz/corpus/api exists")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let data = std::fs::read(&p).expect("read corpus file");
            (p, data)
        })
        .collect()
}

fn config() -> Config {
    Config { verbose: false }
}

fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn corpus_replays_clean() {
    let entries = corpus();
    assert!(!entries.is_empty(), "fuzz/corpus/api is empty");
    let mut total = Stats::default();
    for (path, data) in &entries {
        match run(data, config()) {
            Ok(stats) => total.merge(&stats),
            Err(e) => panic!("{}:\n{e}", path.display()),
        }
    }
    println!(
        "{} corpus programs, {} checked calls; per family:\n{}",
        entries.len(),
        total.calls,
        total.family_report()
    );
}

#[test]
fn replay_one() {
    let Ok(path) = std::env::var("BC_FUZZ_REPLAY") else {
        return;
    };
    let data = std::fs::read(&path).expect("read BC_FUZZ_REPLAY");
    let cfg = Config { verbose: true };
    if let Err(e) = run(&data, cfg) {
        panic!("{path}:\n{e}");
    }
}

#[test]
fn random_programs() {
    let seconds: f64 = std::env::var("BC_FUZZ_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5.0);
    let seed: u64 = std::env::var("BC_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    let save = std::env::var("BC_FUZZ_SAVE_CORPUS").is_ok_and(|v| v == "1");
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let current = tmp.join("fuzz_api_current.bin");
    println!(
        "fuzz_api: seed {seed}, {seconds} s (BC_FUZZ_SEED={seed} to repeat); current input in {}",
        current.display()
    );
    let mut rng = Rng::new(seed);
    let base: Vec<Vec<u8>> = corpus().into_iter().map(|(_, d)| d).collect();
    let mut coverage = std::collections::BTreeSet::new();
    for d in &base {
        if let Ok(s) = run(d, config()) {
            coverage.extend(s.coverage);
        }
    }
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let (mut programs, mut saved) = (0u64, 0);
    let mut total = Stats::default();
    while Instant::now() < deadline {
        let data = if !base.is_empty() && rng.next() % 2 == 0 {
            let pick = &base[(rng.next() % base.len() as u64) as usize];
            rng.mutate(pick)
        } else {
            rng.program()
        };
        std::fs::write(&current, &data).expect("write the current input");
        programs += 1;
        match run(&data, config()) {
            Ok(stats) => {
                total.merge(&stats);
                let before = coverage.len();
                coverage.extend(stats.coverage);
                if save && coverage.len() > before {
                    let name = format!("cov-{:016x}", rng.next());
                    std::fs::write(corpus_dir().join(name), &data).expect("save corpus entry");
                    saved += 1;
                }
            }
            Err(e) => {
                let dir = tmp.join("fuzz_api_failures");
                std::fs::create_dir_all(&dir).expect("create failure dir");
                let file = dir.join(format!("fail-{seed}-{programs}"));
                std::fs::write(&file, &data).expect("save failing input");
                panic!(
                    "mismatch in program {programs} (seed {seed}); input saved to {}\n\
                     replay: BC_FUZZ_REPLAY={} cargo test --test fuzz_api replay_one -- --nocapture\n\
                     hex: {}\n{e}",
                    file.display(),
                    file.display(),
                    hex(&data)
                );
            }
        }
    }
    println!(
        "fuzz_api: {programs} programs, {} checked calls ({} BC_OK), {} steps skipped, {} \
         (operation, status) pairs reached, {saved} new corpus entries",
        total.calls,
        total.ok_calls,
        total.skipped,
        coverage.len()
    );
    println!(
        "fuzz_api: checked calls per family:\n{}",
        total.family_report()
    );
    let pairs: Vec<String> = coverage
        .iter()
        .map(|(op, st)| format!("{op}:{st}"))
        .collect();
    println!("fuzz_api: (operation:status) reached: {}", pairs.join(" "));
    assert!(programs > 0, "no program ran");
}
