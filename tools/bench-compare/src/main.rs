//! bench-compare: libbroadcast (through its C ABI) against the hand-written C limit, NumPy and
//! PyTorch, in one run, measurements interleaved (library, limit, NumPy, PyTorch, then the next
//! round in another order), printing a table of times and ratios.
//!
//! Usage: `cargo run --release -p bench-compare -- [options]` (or `make bench`)
//!   --smoke           a few seconds: S2, S2.lt, S2.and, L2, E1, R2, F1, M3, M6, H1-H4 and three
//!                     sweep sizes, one round, three repetitions (CI): verifies every case's
//!                     results and runs every measurement once, and prints what it checked,
//!                     not timings (one short round on a shared machine measures nothing)
//!   --rounds N        interleaved rounds (default 5); medians over rounds are reported
//!   --reps N          samples per measurement (default 5)
//!   --warm-ms MS      warm-up per measurement, at least (default 150; the last-level cache of
//!                     this machine takes tens of calls to settle after inputs are made)
//!   --threads N       threads for the library and the limit (default 2)
//!   --stream-mib N    the library streams every result of N MiB and more, whatever the cache
//!                     (the former rule; default: its own policy); for trying thresholds
//!   --streaming MODE  the library's streaming policy on the timing thread: auto (default),
//!                     always or never
//!   --cases LIST      comma-separated, e.g. S1,S8,L1 (default: all)
//!   --sweep LIST      sweep sizes in elements, e.g. 1e3,1e5 (default: 1e3 ... 1e8); "none" skips
//!   --exprs LIST      fused expressions, e.g. E1 (default: E1,E2); "none" skips
//!   --chains LIST     chains, e.g. H1,H3 (default: H1-H4): H1 a*b+c and H2 (a*b+c)*s-d call by
//!                     call and fused, H3 ((a-b)**2).mean(0) and H4 where(m,a,0).sum() call by
//!                     call and fused (bc_expr_reduce); "none" skips
//!   --no-concurrent   leave out the concurrent callers (CC: one caller, two callers with a pool
//!                     of one thread, two callers with the whole pool)
//!   --reductions LIST reduction and math cases, e.g. R1,F1,M1 (default: R1,R2,F1,F2,M1-M6);
//!                     "none" skips
//!   --no-limit / --no-numpy / --no-torch   leave a peer out (NumPy and PyTorch are measured
//!                     when `$PYTHON` (default `python3`) imports them; /work/torchenv/bin/python
//!                     has both on the development machine)
//!   --markdown FILE   also write the tables (with date and machine) to FILE
//!   --csv FILE        every measurement of every round, for scripts/perf_plot.py
//!   --skip-verify     do not check the library's results before timing
//!   --skip-alloc-check  do not count allocations
mod chains;
mod exprs;
mod lib_side;
mod peers;
mod pin;
mod reductions;

use broadcast::engine::{kernels, parallel, storage, stream};
use lib_side::{Case, Kind, CASES};
use peers::Peer;
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

// ---------------------------------------------------------------------------------------------
// Heap accounting for the allocation check (off while timing).

struct Counting;
static COUNTING: AtomicBool = AtomicBool::new(false);
static HEAP_ALLOCS: AtomicU64 = AtomicU64::new(0);
static HEAP_BYTES: AtomicU64 = AtomicU64::new(0);

fn count(size: usize) {
    if COUNTING.load(Ordering::Relaxed) {
        HEAP_ALLOCS.fetch_add(1, Ordering::Relaxed);
        HEAP_BYTES.fetch_add(size as u64, Ordering::Relaxed);
    }
}

// SAFETY: forwards to the system allocator unchanged; counting has no effect on the memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

// ---------------------------------------------------------------------------------------------
// The best peers of ../shared/bench/BASELINE.md, as (peer, peer ms, limit ms) for the allocating
// and the out=/in-place variants, 2 threads or best thread count. That machine differs from this
// one, so they are compared as ratios to the limit measured there.

struct BestPeer {
    alloc: (&'static str, f64, f64),
    out: (&'static str, f64, f64),
}

fn baseline_best(case: &str) -> Option<BestPeer> {
    let p = |alloc, out| Some(BestPeer { alloc, out });
    match case {
        "S1" => p(("numpy 1T", 12.1, 7.82), ("Eigen 2T", 6.43, 4.55)),
        "S2" => p(("numpy 1T", 13.2, 5.76), ("torch 2T", 4.39, 3.09)),
        "S3" => p(("numpy 1T", 13.1, 5.48), ("torch 2T", 3.77, 2.81)),
        "S4" => p(("numpy 1T", 8.01, 4.04), ("torch 2T", 2.61, 2.46)),
        "S5" => p(("numpy 1T", 9.94, 5.36), ("torch 2T", 4.29, 2.79)),
        "S6" => p(("torch 2T", 1.25, 0.995), ("torch 2T", 1.11, 0.999)),
        "S7" => p(("torch 2T", 0.101, 0.071), ("torch 2T", 0.092, 0.071)),
        "S8" => p(("torch 2T", 82.3, 16.1), ("torch 2T", 61.1, 11.8)),
        // In place: the target is the limit itself.
        "S9" => p(("limit", 1.0, 1.0), ("limit", 1.0, 1.0)),
        "S10" => p(("numpy 1T", 24.6, 13.4), ("torch 2T", 9.00, 6.90)),
        "S11" => p(("numpy 1T", 13.5, 6.84), ("torch 2T", 3.92, 3.34)),
        "S12" => p(("numpy 1T", 13.7, 6.18), ("torch 2T", 4.49, 3.34)),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------

struct Options {
    rounds: usize,
    reps: usize,
    warm_ms: f64,
    threads: usize,
    stream_mib: Option<usize>,
    streaming: stream::Streaming,
    cases: Vec<Case>,
    sweep: Vec<usize>,
    exprs: Vec<exprs::ECase>,
    chains: Vec<chains::HCase>,
    concurrent: bool,
    reductions: Vec<reductions::RCase>,
    limit: bool,
    numpy: bool,
    torch: bool,
    markdown: Option<String>,
    csv: Option<String>,
    verify: bool,
    alloc_check: bool,
    smoke: bool,
}

const SWEEP: [f64; 11] = [1e3, 3e3, 1e4, 3e4, 1e5, 3e5, 1e6, 3e6, 1e7, 3e7, 1e8];

fn sweep_elems(target: f64) -> usize {
    ((target / 1024.0 + 0.5) as usize).max(1) * 1024
}

fn parse_args() -> Options {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let smoke = args.iter().any(|a| a == "--smoke");
    let mut o = Options {
        rounds: if smoke { 1 } else { 5 },
        reps: if smoke { 3 } else { 5 },
        warm_ms: if smoke { 20.0 } else { 150.0 },
        threads: 2,
        stream_mib: None,
        streaming: stream::Streaming::Auto,
        cases: if smoke {
            ["S2", "S2.lt", "S2.and", "L2"]
                .iter()
                .filter_map(|n| lib_side::find(n))
                .collect()
        } else {
            CASES.to_vec()
        },
        sweep: if smoke {
            vec![sweep_elems(1e3), sweep_elems(1e5), sweep_elems(1e6)]
        } else {
            SWEEP.iter().map(|&t| sweep_elems(t)).collect()
        },
        exprs: if smoke {
            exprs::find("E1").into_iter().collect()
        } else {
            exprs::CASES.to_vec()
        },
        chains: chains::CASES.to_vec(),
        concurrent: true,
        reductions: if smoke {
            ["R2", "F1", "M3", "M6"]
                .iter()
                .filter_map(|n| reductions::find(n))
                .collect()
        } else {
            reductions::CASES.to_vec()
        },
        limit: true,
        numpy: true,
        torch: true,
        markdown: None,
        csv: None,
        verify: true,
        alloc_check: true,
        smoke,
    };
    let mut it = args.iter();
    let usage = |what: &str| -> ! {
        eprintln!("bench-compare: {what} (see the top of tools/bench-compare/src/main.rs)");
        std::process::exit(2)
    };
    while let Some(a) = it.next() {
        let mut value = || it.next().cloned().unwrap_or_else(|| usage("missing value"));
        match a.as_str() {
            "--smoke" => {}
            "--rounds" => o.rounds = value().parse().unwrap_or_else(|_| usage("bad --rounds")),
            "--reps" => o.reps = value().parse().unwrap_or_else(|_| usage("bad --reps")),
            "--warm-ms" => o.warm_ms = value().parse().unwrap_or_else(|_| usage("bad --warm-ms")),
            "--threads" => o.threads = value().parse().unwrap_or_else(|_| usage("bad --threads")),
            "--stream-mib" => {
                o.stream_mib = Some(
                    value()
                        .parse()
                        .unwrap_or_else(|_| usage("bad --stream-mib")),
                )
            }
            "--streaming" => {
                o.streaming = match value().as_str() {
                    "auto" => stream::Streaming::Auto,
                    "always" => stream::Streaming::Always,
                    "never" => stream::Streaming::Never,
                    _ => usage("bad --streaming"),
                }
            }
            "--cases" => {
                o.cases = value()
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(|n| lib_side::find(n).unwrap_or_else(|| usage("unknown case")))
                    .collect()
            }
            "--sweep" => {
                let v = value();
                o.sweep = if v == "none" {
                    Vec::new()
                } else {
                    v.split(',')
                        .map(|s| sweep_elems(s.parse().unwrap_or_else(|_| usage("bad size"))))
                        .collect()
                }
            }
            "--exprs" => {
                let v = value();
                o.exprs = if v == "none" {
                    Vec::new()
                } else {
                    v.split(',')
                        .map(|n| exprs::find(n).unwrap_or_else(|| usage("unknown expression")))
                        .collect()
                }
            }
            "--chains" => {
                let v = value();
                o.chains = if v == "none" {
                    Vec::new()
                } else {
                    v.split(',')
                        .map(|n| chains::find(n).unwrap_or_else(|| usage("unknown chain")))
                        .collect()
                }
            }
            "--no-concurrent" => o.concurrent = false,
            "--reductions" => {
                let v = value();
                o.reductions = if v == "none" {
                    Vec::new()
                } else {
                    v.split(',')
                        .map(|n| reductions::find(n).unwrap_or_else(|| usage("unknown reduction")))
                        .collect()
                }
            }
            "--no-limit" => o.limit = false,
            "--no-numpy" => o.numpy = false,
            "--no-torch" => o.torch = false,
            "--markdown" => o.markdown = Some(value()),
            "--csv" => o.csv = Some(value()),
            "--skip-verify" => o.verify = false,
            "--skip-alloc-check" => o.alloc_check = false,
            "-h" | "--help" => usage("usage"),
            other => usage(&format!("unknown option {other}")),
        }
    }
    o.rounds = o.rounds.max(1);
    o.reps = o.reps.max(1);
    o
}

/// Measurements: (row key, peer) -> one median per round.
#[derive(Default)]
struct Results {
    times: BTreeMap<(String, String), Vec<f64>>,
    variants: BTreeMap<(String, String), String>,
    csv: String,
}

impl Results {
    fn add(&mut self, key: &str, peer: &str, round: usize, ms: f64, variant: &str, bytes: f64) {
        self.times
            .entry((key.to_string(), peer.to_string()))
            .or_default()
            .push(ms);
        self.variants
            .insert((key.to_string(), peer.to_string()), variant.to_string());
        let _ = writeln!(
            self.csv,
            "{peer},{key},{variant},{round},{ms:.6},{bytes:.0}"
        );
    }

    fn median(&self, key: &str, peer: &str) -> Option<f64> {
        let mut v = self
            .times
            .get(&(key.to_string(), peer.to_string()))?
            .clone();
        Some(lib_side::median(&mut v))
    }

    /// Median over rounds of lib/peer in the same round, with the smallest and largest.
    fn ratio(&self, key: &str, peer: &str) -> Option<(f64, f64, f64)> {
        let lib = self.times.get(&(key.to_string(), "lib".to_string()))?;
        let other = self.times.get(&(key.to_string(), peer.to_string()))?;
        let mut r: Vec<f64> = lib.iter().zip(other).map(|(l, p)| l / p).collect();
        if r.is_empty() {
            return None;
        }
        let (lo, hi) = r
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        Some((lib_side::median(&mut r), lo, hi))
    }

    fn variant(&self, key: &str, peer: &str) -> String {
        self.variants
            .get(&(key.to_string(), peer.to_string()))
            .cloned()
            .unwrap_or_default()
    }
}

fn ask(peer: &mut Option<Peer>, cmd: &str) -> Option<peers::Answer> {
    let p = peer.as_mut()?;
    match p.ask(cmd) {
        Ok(a) => Some(a),
        Err(e) => {
            eprintln!("  {e}");
            None
        }
    }
}

fn main() {
    let o = parse_args();
    let started = std::time::Instant::now();
    let load_start = loadavg();
    assert_eq!(
        broadcast::ffi::bc_set_num_threads(o.threads),
        broadcast::ffi::BC_OK
    );
    stream::set_streaming(o.streaming);
    if let Some(mib) = o.stream_mib {
        // At least one byte: 0 is the library's "not yet read from the cache size".
        parallel::set_stream_threshold(mib.saturating_mul(1 << 20).max(1));
        stream::set_effective_cache(1);
    }

    let mut limit = if o.limit {
        match peers::start_limit(o.threads) {
            Ok(p) => Some(p),
            Err(e) => {
                eprintln!("bench-compare: no C limit: {e}");
                None
            }
        }
    } else {
        None
    };
    let (mut numpy, numpy_version) = if o.numpy {
        match peers::start_numpy() {
            Ok((p, v)) => (Some(p), Some(v)),
            Err(e) => {
                eprintln!("bench-compare: no NumPy column: {e}");
                (None, None)
            }
        }
    } else {
        (None, None)
    };
    let (mut torch, torch_version) = if o.torch {
        match peers::start_torch(o.threads) {
            Ok((p, v)) => (Some(p), Some(v)),
            Err(e) => {
                eprintln!("bench-compare: no PyTorch column: {e}");
                (None, None)
            }
        }
    } else {
        (None, None)
    };

    let names: Vec<&str> = o
        .cases
        .iter()
        .map(|c| c.name)
        .chain(o.exprs.iter().map(|e| e.name))
        .chain(o.reductions.iter().map(|r| r.name))
        .chain(o.chains.iter().map(|h| h.name))
        .collect();
    if o.verify {
        let checks = o
            .cases
            .iter()
            .map(lib_side::verify)
            .chain(o.exprs.iter().map(exprs::verify))
            .chain(o.reductions.iter().map(reductions::verify))
            .chain(o.chains.iter().map(chains::verify));
        for check in checks {
            if let Err(e) = check {
                eprintln!("bench-compare: WRONG RESULT: {e}");
                std::process::exit(1);
            }
        }
        eprintln!(
            "verified: the library's results of {} cases ({})",
            names.len(),
            names.join(", ")
        );
    }
    let alloc_report = if o.alloc_check {
        allocation_check(&o.cases, &o.exprs, &o.reductions, &o.chains)
    } else {
        String::new()
    };

    let mut res = Results::default();
    for round in 0..o.rounds {
        eprintln!("round {}/{}", round + 1, o.rounds);
        let mut peers = [
            ("limit", &mut limit),
            ("numpy", &mut numpy),
            ("torch", &mut torch),
        ];
        for c in &o.cases {
            let inp = lib_side::inputs(c);
            let cmd_kind = if c.name.starts_with('L') {
                "lat"
            } else {
                "case"
            };
            let variants: &[(&str, bool)] = if c.kind == Kind::InPlace {
                &[("inplace", true)]
            } else {
                &[("alloc", true), ("out", false)]
            };
            let bytes = lib_side::case_bytes(c);
            for &(v, alloc) in variants {
                let key = format!("{} {v}", c.name);
                let cmd = format!("{cmd_kind} {} {} {} {}", c.name, v, o.reps, o.warm_ms);
                let m = Measurement {
                    key: &key,
                    variant: v,
                    bytes,
                    cmd: &cmd,
                    one_cpu: cmd_kind == "lat",
                    quiet: o.smoke,
                };
                m.run(&mut res, round, &mut peers, || {
                    lib_side::time_case(&inp, alloc, o.reps, o.warm_ms)
                });
            }
        }
        if o.concurrent {
            for (key, callers, pool) in concurrent_rows(o.threads) {
                let m = Measurement {
                    key: &key,
                    variant: "out",
                    bytes: lib_side::case_bytes(&lib_side::CONCURRENT),
                    cmd: "",
                    one_cpu: false,
                    quiet: o.smoke,
                };
                m.run(&mut res, round, &mut [], || {
                    lib_side::time_concurrent(callers, pool, o.threads, o.reps, o.warm_ms)
                });
            }
        }
        for c in &o.exprs {
            let inp = exprs::inputs(c);
            for (v, alloc) in [("alloc", true), ("out", false)] {
                let key = format!("{} {v}", c.name);
                let cmd = format!("expr {} {v} {} {}", c.name, o.reps, o.warm_ms);
                let m = Measurement {
                    key: &key,
                    variant: v,
                    bytes: exprs::bytes(c),
                    cmd: &cmd,
                    one_cpu: false,
                    quiet: o.smoke,
                };
                m.run(&mut res, round, &mut peers, || {
                    exprs::time(&inp, true, alloc, o.reps, o.warm_ms)
                });
                // The library's separate calls, for what one pass saves.
                let key = format!("{} {v} calls", c.name);
                let m = Measurement {
                    key: &key,
                    variant: v,
                    bytes: exprs::bytes(c),
                    cmd: &cmd,
                    one_cpu: false,
                    quiet: o.smoke,
                };
                m.run(&mut res, round, &mut [], || {
                    exprs::time(&inp, false, alloc, o.reps, o.warm_ms)
                });
            }
        }
        for c in &o.reductions {
            let inp = reductions::inputs(c);
            let key = format!("{} alloc", c.name);
            let cmd = format!("red {} alloc {} {}", c.name, o.reps, o.warm_ms);
            let m = Measurement {
                key: &key,
                variant: "alloc",
                bytes: reductions::bytes(c),
                cmd: &cmd,
                one_cpu: false,
                quiet: o.smoke,
            };
            m.run(&mut res, round, &mut peers, || {
                reductions::time(&inp, o.reps, o.warm_ms)
            });
        }
        for c in &o.chains {
            chains::run_round(c, &mut res, round, &mut peers, &o);
        }
        for &elems in &o.sweep {
            let inp = lib_side::sweep_inputs(elems);
            let bytes = (2.0 * elems as f64 + 1024.0) * 4.0;
            let reps = if elems > 30_000_000 {
                o.reps.min(5)
            } else {
                o.reps
            };
            // Below this the library and the limit compute on one thread.
            let one_cpu = elems < 2 * parallel::DEFAULT_THRESHOLD;
            for (v, alloc) in [("alloc", true), ("out", false)] {
                let key = format!("SW {elems} {v}");
                let cmd = format!("sweep {elems} {v} {reps} {}", o.warm_ms);
                let m = Measurement {
                    key: &key,
                    variant: v,
                    bytes,
                    cmd: &cmd,
                    one_cpu,
                    quiet: o.smoke,
                };
                m.run(&mut res, round, &mut peers, || {
                    lib_side::time_sweep(&inp, alloc, reps, o.warm_ms)
                });
            }
            // Allocating again with the cache of freed buffers off: every result a new mapping.
            let key = format!("SW {elems} alloc-nocache");
            let m = Measurement {
                key: &key,
                variant: "alloc-nocache",
                bytes,
                cmd: "",
                one_cpu,
                quiet: o.smoke,
            };
            m.run(&mut res, round, &mut [], || {
                let keep = storage::buffer_cache_limit();
                storage::set_buffer_cache_limit(0);
                let ms = lib_side::time_sweep(&inp, true, reps, o.warm_ms);
                storage::set_buffer_cache_limit(keep);
                ms
            });
        }
    }
    let had_limit = limit.is_some();
    drop(limit);
    drop(numpy);
    drop(torch);

    let tables = report(&o, &res, &alloc_report);
    if o.smoke {
        let peers: Vec<&str> = [
            ("the C limit", had_limit),
            ("NumPy", numpy_version.is_some()),
            ("PyTorch", torch_version.is_some()),
        ]
        .iter()
        .filter(|p| p.1)
        .map(|p| p.0)
        .collect();
        println!(
            "bench-smoke: {}; every measurement ran once with libbroadcast{}{}; \
             timings not judged (one short round, load {} -> {}): `make bench` measures",
            if o.verify {
                format!("{} results verified", names.len())
            } else {
                format!("{} results NOT verified (--skip-verify)", names.len())
            },
            if peers.is_empty() { "" } else { ", " },
            peers.join(", "),
            load_start,
            loadavg()
        );
    } else {
        println!("{tables}");
    }
    eprintln!("bench-compare: {:.1} s", started.elapsed().as_secs_f64());
    if let Some(path) = &o.markdown {
        let head = header(
            &o,
            numpy_version.as_deref(),
            torch_version.as_deref(),
            &load_start,
            &loadavg(),
        );
        let plot = "![Throughput against size: libbroadcast, the C limit and NumPy](docs/perf/sweep.png)\n\n\
                    (Plot: `python3 scripts/perf_plot.py docs/perf/results.csv docs/perf/sweep.png`; \
                    the whole report: `bash scripts/perf_report.sh`.)\n";
        std::fs::write(
            path,
            format!("<!-- generated by bench-compare --markdown -->\n{head}\n{plot}\n{tables}"),
        )
        .unwrap_or_else(|e| eprintln!("bench-compare: writing {path}: {e}"));
    }
    if let Some(path) = &o.csv {
        let csv = format!("peer,key,variant,round,ms,bytes\n{}", res.csv);
        std::fs::write(path, csv)
            .unwrap_or_else(|e| eprintln!("bench-compare: writing {path}: {e}"));
    }
}

/// One row of one round: the library timed in-process, the limit and NumPy asked `cmd`.
struct Measurement<'a> {
    key: &'a str,
    variant: &'a str,
    bytes: f64,
    cmd: &'a str,
    /// Every side computes on one thread: all are measured on one CPU ([`pin`]).
    one_cpu: bool,
    /// Print nothing (--smoke: a single short round's timings would only mislead).
    quiet: bool,
}

impl Measurement<'_> {
    /// Takes the measurements (the library's and each peer's), in an order that rotates from
    /// round to round (so no side always goes first), records them and prints them.
    fn run(
        &self,
        res: &mut Results,
        round: usize,
        peers: &mut [(&'static str, &mut Option<Peer>)],
        lib: impl FnOnce() -> f64,
    ) {
        let tids: Vec<u32> = peers
            .iter()
            .filter_map(|(_, p)| p.as_ref().map(|p| p.pid()))
            .collect();
        let pinned = self.one_cpu.then(|| pin::OneCpu::here(&tids));
        let mut lib = Some(lib);
        let sides = peers.len() + 1;
        for step in 0..sides {
            match (step + round) % sides {
                0 => {
                    let ms = (lib.take().expect("the library goes once"))();
                    res.add(self.key, "lib", round, ms, self.variant, self.bytes);
                }
                k => {
                    let (name, peer) = &mut peers[k - 1];
                    if let Some(a) = ask(peer, self.cmd) {
                        res.add(self.key, name, round, a.ms, &a.variant, self.bytes);
                    }
                }
            }
        }
        drop(pinned);
        let mut line = format!(
            "  {:<20} lib {:>9.4} ms",
            self.key,
            last(res, self.key, "lib")
        );
        for (name, peer) in peers.iter() {
            if peer.is_some() {
                line += &format!("  {name} {:>9.4} ms", last(res, self.key, name));
            }
        }
        if !self.quiet {
            eprintln!("{line}");
        }
    }
}

fn last(res: &Results, key: &str, peer: &str) -> f64 {
    res.times
        .get(&(key.to_string(), peer.to_string()))
        .and_then(|v| v.last().copied())
        .unwrap_or(f64::NAN)
}

fn sh(cmd: &str, args: &[&str]) -> String {
    std::process::Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// The 1-minute load average (other processes compete for the cores during a run).
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".to_string())
}

fn header(
    o: &Options,
    numpy: Option<&str>,
    torch: Option<&str>,
    load_start: &str,
    load_end: &str,
) -> String {
    let lscpu = sh("lscpu", &[]);
    let field = |name: &str| {
        lscpu
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_else(|| "?".to_string())
    };
    let thp =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    format!(
        "Measured {} on {} ({} CPUs{}, L2 {}, L3 {}), transparent huge pages: `{}`; {}, libbroadcast \
         SIMD path {:?} ({}-bit vectors); {} threads for libbroadcast, the limit and PyTorch {}, NumPy {} on one \
         thread. \
         Command: `cargo run --release -p bench-compare --{}` ({} interleaved rounds). \
         1-minute load average {} at the start, {} at the end (other jobs shared the machine).\n",
        sh("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        field("Model name"),
        field("CPU(s)"),
        if field("Hypervisor vendor") != "?" {
            format!(", {} guest", field("Hypervisor vendor"))
        } else {
            String::new()
        },
        field("L2 cache"),
        field("L3 cache"),
        thp.trim(),
        sh("rustc", &["--version"]),
        kernels::simd_level(),
        kernels::vector_bits(),
        o.threads,
        torch.unwrap_or("(absent)"),
        numpy.unwrap_or("(absent)"),
        std::env::args().skip(1).fold(String::new(), |s, a| s + " " + &a),
        o.rounds,
        load_start,
        load_end,
    )
}

fn fmt_ms(ms: Option<f64>) -> String {
    match ms {
        None => "–".to_string(),
        Some(ms) if ms < 0.01 => format!("{:.0} ns", ms * 1e6),
        Some(ms) if ms < 1.0 => format!("{:.3} ms", ms),
        Some(ms) => format!("{:.2} ms", ms),
    }
}

fn report(o: &Options, res: &Results, alloc_report: &str) -> String {
    let mut s = String::new();
    let has = |peer: &str| res.times.keys().any(|(_, p)| p == peer);
    let (has_limit, has_numpy, has_torch) = (has("limit"), has("numpy"), has("torch"));
    // A peer's median, "–" when it was not measured.
    let peer_ms = |key: &str, peer: &str, present: bool| {
        if present {
            fmt_ms(res.median(key, peer))
        } else {
            "–".to_string()
        }
    };
    // How many times the library's speed a peer's is (peer time ÷ lib time, same-round medians).
    let speedup = |key: &str, peer: &str| {
        res.ratio(key, peer)
            .map_or("–".to_string(), |(r, _, _)| format!("{:.2}×", 1.0 / r))
    };
    let suite: Vec<&Case> = o
        .cases
        .iter()
        .filter(|c| c.name.starts_with(['S', 'P']))
        .collect();
    if !suite.is_empty() {
        let _ = writeln!(
            s,
            "### Suite: median ms per call; ratios are medians of same-round ratios [min–max]\n"
        );
        let _ = writeln!(
            s,
            "| case | shapes | variant | libbroadcast | GB/s | C limit (its best variant) | lib ÷ limit | target | best peer in BASELINE ÷ its limit | NumPy | NumPy ÷ lib | PyTorch | PyTorch ÷ lib | met |"
        );
        let _ = writeln!(
            s,
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        );
        for c in &suite {
            let variants: &[&str] = if c.kind == Kind::InPlace {
                &["inplace"]
            } else {
                &["alloc", "out"]
            };
            for v in variants {
                let key = format!("{} {v}", c.name);
                let lib = res.median(&key, "lib");
                let gbs = lib.map_or(String::new(), |ms| {
                    format!("{:.1}", lib_side::case_bytes(c) / (ms * 1e6))
                });
                let lim = res.median(&key, "limit");
                let ratio = res.ratio(&key, "limit");
                let target = if c.name == "S8" { 1.5 } else { 1.25 };
                let best = baseline_best(c.name).map(|b| if *v == "out" { b.out } else { b.alloc });
                let peer_ratio = best.map(|(_, p, l)| p / l);
                // Half precision: faster than PyTorch, measured in this run.
                let torch_bar = c.dtype == lib_side::F16 || c.dtype == lib_side::BF16;
                let peer_ratio = match (peer_ratio, res.ratio(&key, "torch")) {
                    (None, Some((t, _, _))) if torch_bar => ratio.map(|(r, _, _)| r / t),
                    (p, _) => p,
                };
                let met = match ratio {
                    Some((r, _, _)) => {
                        // No BASELINE peer (the further operations): the limit target alone.
                        let fast = match peer_ratio {
                            Some(_) if c.name == "S9" => r <= 1.0,
                            Some(pr) => r < pr,
                            None => true,
                        };
                        match (r <= target, fast) {
                            (true, true) => "yes".to_string(),
                            (false, true) => format!(
                                "no: {:.0}% over the limit target",
                                (r / target - 1.0) * 100.0
                            ),
                            (true, false) => "no: slower than the best peer".to_string(),
                            (false, false) => "no".to_string(),
                        }
                    }
                    None => "–".to_string(),
                };
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} | {} | {} | ≤ {target} | {} | {} | {} | {} | {} | {} |",
                    c.name,
                    c.what,
                    if *v == "inplace" { "in place" } else { v },
                    fmt_ms(lib),
                    gbs,
                    if has_limit {
                        format!("{} ({})", fmt_ms(lim), res.variant(&key, "limit"))
                    } else {
                        "–".to_string()
                    },
                    ratio.map_or("–".to_string(), |(r, lo, hi)| format!(
                        "**{r:.2}** [{lo:.2}–{hi:.2}]"
                    )),
                    match best {
                        Some((name, p, l)) => format!("{name}: {:.2}", p / l),
                        None if torch_bar => "PyTorch, this run".to_string(),
                        None => "–".to_string(),
                    },
                    peer_ms(&key, "numpy", has_numpy),
                    speedup(&key, "numpy"),
                    peer_ms(&key, "torch", has_torch),
                    speedup(&key, "torch"),
                    met
                );
            }
        }
        let _ = writeln!(
            s,
            "\nlimit variants: pre = into a reused buffer, -nt = streaming stores, fresh = allocated per call (4 KiB pages), \
             fresh-thp = allocated per call, 2 MiB aligned + MADV_HUGEPAGE. \"best peer in BASELINE ÷ its limit\": the best \
             peer's time over the limit's on the BASELINE machine (another CPU), the bar for \"faster than the best peer\" \
             (lib ÷ limit below it); for S9 the bar is the limit itself (1.00); for the float16 and bfloat16 cases \
             it is PyTorch measured in this run (lib ÷ PyTorch below 1)."
        );
    }
    let lat: Vec<&Case> = o.cases.iter().filter(|c| c.name.starts_with('L')).collect();
    if !lat.is_empty() {
        let _ = writeln!(
            s,
            "\n### Latency through the C ABI (per call; alloc = `bc_binary` + `bc_tensor_free` of the result)\n"
        );
        let _ = writeln!(s, "| case | shapes | variant | libbroadcast | target | C limit | lib ÷ limit | NumPy | PyTorch | met |");
        let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|");
        for c in &lat {
            for v in ["alloc", "out"] {
                let key = format!("{} {v}", c.name);
                let lib = res.median(&key, "lib");
                // The tiny-call targets: 100 ns allocating, 50 ns into `out`.
                let target = if v == "out" { 50.0 } else { 100.0 };
                let met = lib.map_or("–", |ms| if ms * 1e6 <= target { "yes" } else { "no" });
                let _ = writeln!(
                    s,
                    "| {} | {} | {v} | {} | ≤ {target} ns | {} ({}) | {} | {} | {} | {} |",
                    c.name,
                    c.what,
                    fmt_ms(lib),
                    fmt_ms(res.median(&key, "limit")),
                    res.variant(&key, "limit"),
                    res.ratio(&key, "limit")
                        .map_or("–".to_string(), |(r, _, _)| format!("{r:.1}")),
                    peer_ms(&key, "numpy", has_numpy),
                    peer_ms(&key, "torch", has_torch),
                    met
                );
            }
        }
    }
    if !o.exprs.is_empty() {
        report_exprs(&mut s, o, res);
    }
    if !o.reductions.is_empty() {
        report_reductions(&mut s, o, res);
    }
    if !o.chains.is_empty() {
        chains::report(&mut s, &o.chains, res);
    }
    if !o.sweep.is_empty() {
        let _ = writeln!(
            s,
            "\n### Sweep (n,1024)+(1024,) float32: ns per element (GB/s); lib ÷ limit, target ≤ 1.25\n"
        );
        let _ = writeln!(
            s,
            "| elements | MB moved | lib alloc | limit alloc | ratio | lib alloc, no buffer cache | lib out | limit out | ratio | NumPy alloc | NumPy out | PyTorch alloc | PyTorch out |"
        );
        let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        for &e in &o.sweep {
            let bytes = (2.0 * e as f64 + 1024.0) * 4.0;
            let cell = |key: &str, peer: &str| {
                res.median(key, peer).map_or("–".to_string(), |ms| {
                    format!("{:.3} ({:.0})", ms * 1e6 / e as f64, bytes / (ms * 1e6))
                })
            };
            let ratio = |key: &str| {
                res.ratio(key, "limit")
                    .map_or("–".to_string(), |(r, lo, hi)| {
                        format!("**{r:.2}** [{lo:.2}–{hi:.2}]")
                    })
            };
            let (ka, ko) = (format!("SW {e} alloc"), format!("SW {e} out"));
            let _ = writeln!(
                s,
                "| {} | {:.3} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                e,
                bytes / 1e6,
                cell(&ka, "lib"),
                cell(&ka, "limit"),
                ratio(&ka),
                cell(&format!("SW {e} alloc-nocache"), "lib"),
                cell(&ko, "lib"),
                cell(&ko, "limit"),
                ratio(&ko),
                cell(&ka, "numpy"),
                cell(&ko, "numpy"),
                cell(&ka, "torch"),
                cell(&ko, "torch"),
            );
        }
    }
    if o.concurrent {
        report_concurrent(&mut s, o, res);
    }
    s.push_str(alloc_report);
    s
}

/// The concurrent-callers rows: (key, callers, pool threads).
fn concurrent_rows(threads: usize) -> [(String, usize, usize); 3] {
    [
        ("CC 1 caller".to_string(), 1, threads),
        ("CC 2 callers, pool 1".to_string(), 2, 1),
        ("CC 2 callers".to_string(), 2, threads),
    ]
}

/// Concurrent callers: calls per second in all, against two callers each with one thread.
fn report_concurrent(s: &mut String, o: &Options, res: &Results) {
    let _ = writeln!(
        s,
        "\n### Concurrent callers: {}, each caller into its own `out`; target: two callers with the \
         pool at least as fast in all as two callers with a pool of one thread\n",
        lib_side::CONCURRENT.what
    );
    let _ = writeln!(s, "| callers | pool threads | µs per call (all callers) | calls/s in all | ÷ 2 callers, pool 1 | met |");
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    let base = res.median("CC 2 callers, pool 1", "lib");
    for (key, callers, pool) in concurrent_rows(o.threads) {
        let Some(ms) = res.median(&key, "lib") else {
            continue;
        };
        let ratio = base.map_or(f64::NAN, |b| ms / b);
        let met = if key == "CC 2 callers" {
            if ratio <= 1.0 {
                "yes"
            } else {
                "no"
            }
        } else {
            "–"
        };
        let _ = writeln!(
            s,
            "| {callers} | {pool} | {:.1} | {:.0} | {ratio:.2} | {met} |",
            ms * 1e3,
            1e3 / ms
        );
    }
}

/// The fused expressions: one pass against the separate calls, the limit, NumPy and PyTorch.
fn report_exprs(s: &mut String, o: &Options, res: &Results) {
    let _ = writeln!(
        s,
        "\n### Fused expressions (`bc_expr_eval`), float32: median ms per call; ratios are medians of same-round ratios [min–max]\n"
    );
    let _ = writeln!(
        s,
        "| case | variant | one pass | GB/s | separate calls | calls ÷ one pass | C limit | lib ÷ limit | NumPy | PyTorch (its form) | lib ÷ PyTorch | target | met |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let ratio = |r: Option<(f64, f64, f64)>| {
        r.map_or("–".to_string(), |(r, lo, hi)| {
            format!("**{r:.2}** [{lo:.2}–{hi:.2}]")
        })
    };
    for c in &o.exprs {
        for v in ["alloc", "out"] {
            let key = format!("{} {v}", c.name);
            let calls = format!("{key} calls");
            let lib = res.median(&key, "lib");
            let calls_ms = res.median(&calls, "lib");
            let vs_torch = res.ratio(&key, "torch");
            let met = match (c.beat_torch, vs_torch) {
                (false, _) => "–".to_string(),
                (true, Some((r, _, _))) if r <= 1.0 => "yes".to_string(),
                (true, Some((r, _, _))) => format!("no: {:.0}% over PyTorch", (r - 1.0) * 100.0),
                (true, None) => "– (no PyTorch)".to_string(),
            };
            let _ =
                writeln!(
                s,
                "| {} | {v} | {} | {} | {} | {} | {} ({}) | {} | {} | {} ({}) | {} | {} | {met} |",
                c.name,
                fmt_ms(lib),
                lib.map_or(String::new(), |ms| format!("{:.1}", exprs::bytes(c) / (ms * 1e6))),
                fmt_ms(calls_ms),
                match (lib, calls_ms) {
                    (Some(l), Some(k)) => format!("{:.2}×", k / l),
                    _ => "–".to_string(),
                },
                fmt_ms(res.median(&key, "limit")),
                res.variant(&key, "limit"),
                ratio(res.ratio(&key, "limit")),
                fmt_ms(res.median(&key, "numpy")),
                fmt_ms(res.median(&key, "torch")),
                res.variant(&key, "torch"),
                ratio(vs_torch),
                if c.beat_torch { "≤ PyTorch" } else { "–" },
            );
        }
    }
    let _ = writeln!(s, "\nWhat they compute, and what the peers run:\n");
    for c in &o.exprs {
        let _ = writeln!(s, "- {}: {}. {}", c.name, c.what, c.peers);
    }
}

/// The reductions table, and what the fused form saves against the two calls.
fn report_reductions(s: &mut String, o: &Options, res: &Results) {
    let _ = writeln!(
        s,
        "\n### Reductions and math of (4096,4096) float32: median ms per call (the result allocated and freed); lib ÷ limit, target ≤ 1.5 for R1 and R2, ≤ 1.25 for the memory-bound M3-M5\n"
    );
    let _ = writeln!(
        s,
        "| case | what | libbroadcast | GB/s | C limit | lib ÷ limit | target | NumPy | PyTorch | met |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|");
    for c in &o.reductions {
        let key = format!("{} alloc", c.name);
        let lib = res.median(&key, "lib");
        let ratio = res.ratio(&key, "limit");
        let target = reductions::target(c);
        let met = match (target, ratio) {
            (None, _) => "–",
            (Some(t), Some((r, _, _))) if r <= t => "yes",
            (Some(_), Some(_)) => "no",
            (Some(_), None) => "–",
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {met} |",
            c.name,
            c.what,
            fmt_ms(lib),
            lib.map_or(String::new(), |ms| format!(
                "{:.1}",
                reductions::bytes(c) / (ms * 1e6)
            )),
            fmt_ms(res.median(&key, "limit")),
            ratio.map_or("–".to_string(), |(r, lo, hi)| format!(
                "**{r:.2}** [{lo:.2}–{hi:.2}]"
            )),
            target.map_or("–".to_string(), |t| format!("≤ {t}")),
            fmt_ms(res.median(&key, "numpy")),
            fmt_ms(res.median(&key, "torch")),
        );
    }
    let per = |peer: &str| {
        let (f1, f2) = (res.median("F1 alloc", peer)?, res.median("F2 alloc", peer)?);
        Some(format!("{:.2}×", f2 / f1))
    };
    if let Some(lib) = per("lib") {
        let _ = writeln!(
            s,
            "\nThe fused form against the two calls (F2 time ÷ F1 time): libbroadcast {lib}, C {}, NumPy {}, PyTorch {}. \
             F1 reads the inputs once and writes 4096 elements; F2 also writes and reads back the 64 MiB product.",
            per("limit").unwrap_or("–".into()),
            per("numpy").unwrap_or("–".into()),
            per("torch").unwrap_or("–".into()),
        );
    }
    let _ = writeln!(s, "\nWhat the peers run:\n");
    for c in &o.reductions {
        let _ = writeln!(s, "- {}: {}", c.name, c.peers);
    }
}

/// Views never copy, an operation allocates only its result: element storages and heap bytes
/// counted around single calls.
fn allocation_check(
    cases: &[Case],
    expr_cases: &[exprs::ECase],
    reduction_cases: &[reductions::RCase],
    chain_cases: &[chains::HCase],
) -> String {
    use broadcast::ffi::*;
    let mut s = String::from(
        "\n### Allocation check (element storages from the engine's counters; heap = every global-allocator call)\n\n\
         | call | element storages | element bytes | result bytes | heap allocations | heap bytes |\n|---|---|---|---|---|---|\n",
    );
    let mut row = |what: &str, result_bytes: usize, f: &mut dyn FnMut()| {
        f(); // once untimed, so lazily created state (thread pool, registry slots) is not counted
        let before = storage::stats();
        HEAP_ALLOCS.store(0, Ordering::Relaxed);
        HEAP_BYTES.store(0, Ordering::Relaxed);
        COUNTING.store(true, Ordering::Relaxed);
        f();
        COUNTING.store(false, Ordering::Relaxed);
        let d = storage::stats().since(before);
        let _ = writeln!(
            s,
            "| {what} | {} | {} | {result_bytes} | {} | {} |",
            d.allocs,
            d.bytes,
            HEAP_ALLOCS.load(Ordering::Relaxed),
            HEAP_BYTES.load(Ordering::Relaxed)
        );
    };
    // Views.
    let b = lib_side::from_data(lib_side::F32, &[4096], 2);
    let base = lib_side::from_data(lib_side::F32, &[4096, 4096], 1);
    let shape = [4096i64, 4096];
    row("bc_tensor_expand (4096,) -> (4096,4096)", 0, &mut || {
        let mut t = std::ptr::null_mut();
        // SAFETY: shape valid for 2 reads; t for one write.
        lib_side::check(
            unsafe { bc_tensor_expand(b.0, shape.as_ptr(), 2, &mut t) },
            "expand",
        );
        bc_tensor_free(t);
    });
    row(
        "bc_tensor_broadcast_to (4096,) -> (4096,4096)",
        0,
        &mut || {
            let mut t = std::ptr::null_mut();
            // SAFETY: as above.
            lib_side::check(
                unsafe { bc_tensor_broadcast_to(b.0, shape.as_ptr(), 2, &mut t) },
                "broadcast_to",
            );
            bc_tensor_free(t);
        },
    );
    row("bc_tensor_transpose (4096,4096)", 0, &mut || {
        let mut t = std::ptr::null_mut();
        // SAFETY: t for one write.
        lib_side::check(
            unsafe { bc_tensor_transpose(base.0, 0, 1, &mut t) },
            "transpose",
        );
        bc_tensor_free(t);
    });
    drop((b, base));
    for c in cases {
        let inp = lib_side::inputs(c);
        let out_bytes = lib_side::case_shape(c).iter().product::<i64>() as usize
            * lib_side::itemsize(lib_side::out_dtype(c));
        if c.kind == Kind::InPlace {
            row(&format!("{} in place", c.name), 0, &mut || inp.call(true));
        } else {
            row(
                &format!("{} alloc (+ free)", c.name),
                out_bytes,
                &mut || inp.call(true),
            );
            row(&format!("{} out", c.name), 0, &mut || inp.call(false));
        }
    }
    for c in expr_cases {
        let inp = exprs::inputs(c);
        row(
            &format!("{} one pass (+ free)", c.name),
            1 << 24,
            &mut || inp.fused(true),
        );
        row(
            &format!("{} separate calls (+ frees)", c.name),
            1 << 24,
            &mut || inp.calls(true),
        );
    }
    for c in reduction_cases {
        let inp = reductions::inputs(c);
        row(
            &format!("{} (+ free)", c.name),
            reductions::result_bytes(c),
            &mut || inp.once(),
        );
    }
    for c in chain_cases {
        let inp = chains::inputs(c);
        row(
            &format!("{} one pass (+ free)", c.name),
            chains::result_bytes(c),
            &mut || chains::once(&inp, true),
        );
        row(
            &format!("{} separate calls (+ frees)", c.name),
            chains::result_bytes(c),
            &mut || chains::once(&inp, false),
        );
    }
    let _ = writeln!(
        s,
        "\nElement storages of 4 MiB and more are mapped (2 MiB huge pages) and not seen by the global allocator; \
         smaller ones are counted both as element storage and as heap. Heap bytes beyond an element storage are \
         metadata (the result's `Arc`, shape and strides spill, handle registry growth). Buffer cache limit: {} MiB; \
         streaming stores ({:?}) from {} MiB results {} (the effective cache, measured: {} MiB); threads from {} \
         elements per thread.",
        storage::buffer_cache_limit() >> 20,
        stream::streaming(),
        parallel::stream_threshold() >> 20,
        if stream::streaming_pays() {
            "unless a recent call read the destination (streaming stores measured faster than ordinary ones into cached lines)"
        } else {
            "when a call touches more than the effective cache, unless a recent call read the destination"
        },
        stream::effective_cache() >> 20,
        parallel::threshold()
    );
    s
}
