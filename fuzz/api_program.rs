//! A fuzz program over the C API: bytes are read as a sequence of API calls (create, wrap caller
//! memory, free, views, binary operations out of place / in place / into `out`, queries, shape
//! functions, switches, deliberate panics, invalid handles), each executed through
//! `broadcast::ffi::*` and checked against a plain reference model of the library: the status of
//! every call, the out-handle (NULL on failure), the thread's last error, the metadata and values
//! of every live tensor, the bytes of the caller's wrapped memory, release callbacks (exactly once,
//! after the last view), warnings, and the number of live handles.
//!
//! Shared by `tests/fuzz_api.rs` (stable: corpus replay + random programs for a bounded time) and
//! `fuzz/fuzz_targets/api.rs` (cargo-fuzz, nightly). Any input is a valid program: missing bytes
//! read as 0 and the program ends when the input does.
//!
//! The model is deliberately naive (element-by-element, every address enumerated): it states the
//! contract of `docs/semantics.md` and the header, not the engine's algorithms.
#![allow(clippy::too_many_arguments, clippy::type_complexity)]
#![allow(dead_code)]

use broadcast::ffi::*;
use half::{bf16, f16};
use std::ffi::{c_char, c_void, CStr};
use std::fmt::Write as _;
use std::ptr;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
// The element types, promotion, broadcasting and result layout: the one reference model, shared
// with the property tests.
use testkit::model::*;

#[path = "api_dlpack.rs"]
mod dlpack;
#[path = "api_expr.rs"]
mod expr;
#[path = "api_expr_out.rs"]
mod expr_out;
#[path = "api_info.rs"]
mod info;
#[path = "api_named.rs"]
mod named;
#[path = "api_plan.rs"]
mod plan;
#[path = "api_plan_more.rs"]
mod plan_more;
#[path = "api_reduce.rs"]
mod reduce;
#[path = "api_reshape.rs"]
mod reshape;
#[path = "api_scalar.rs"]
mod scalar;
#[path = "api_stats.rs"]
mod stats;
#[path = "api_ternary.rs"]
mod ternary;
#[path = "api_ternary_ops.rs"]
mod ternary_ops;
#[path = "api_unary.rs"]
mod unary;
#[path = "api_views.rs"]
mod views;
#[path = "api_where.rs"]
mod where_;

// ---------------------------------------------------------------------------------------------
// Knobs
// ---------------------------------------------------------------------------------------------

/// Number of handle slots a program works with.
const NSLOTS: usize = 8;
/// Caller buffers for `bc_tensor_wrap`, each `BUF_BYTES` long, 8-byte aligned.
const NBUFS: usize = 3;
const BUF_BYTES: usize = 256;
/// Calls whose allocations the model predicts between these sizes are not made: big enough to be
/// slow, small enough that they might succeed. Requests at or above `SURE_FAIL_BYTES` exceed any
/// 47/48-bit address space and must fail with `BC_ERR_ALLOC` everywhere.
const MAX_ALLOC_BYTES: u128 = 1 << 19;
const SURE_FAIL_BYTES: u128 = 1 << 50;
/// Tensors whose values are checked element by element.
const MAX_CHECK_ELEMS: u128 = 1 << 14;
/// The engine's exact overlap analysis enumerates views up to this many elements and assumes
/// overlap beyond (documented in src/engine/overlap.rs); the model follows the same limit.
const EXACT_OVERLAP_LIMIT: u128 = 1 << 20;
/// Steps per program.
const MAX_STEPS: usize = 400;

#[derive(Debug, Clone, Copy, Default)]
pub struct Config {
    /// Print every call (for minimising a failure).
    pub verbose: bool,
}

#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub steps: usize,
    pub calls: usize,
    pub ok_calls: usize,
    pub skipped: usize,
    /// (opcode, status) pairs seen: a cheap coverage signal for keeping corpus entries.
    pub coverage: std::collections::BTreeSet<(u8, i32)>,
    /// Checked calls per API family: (calls, of which `BC_OK`).
    pub families: std::collections::BTreeMap<&'static str, (usize, usize)>,
}

impl Stats {
    /// Adds another run's counts to these.
    pub fn merge(&mut self, other: &Stats) {
        self.steps += other.steps;
        self.calls += other.calls;
        self.ok_calls += other.ok_calls;
        self.skipped += other.skipped;
        self.coverage.extend(other.coverage.iter().copied());
        for (name, (calls, ok)) in &other.families {
            let e = self.families.entry(name).or_default();
            e.0 += calls;
            e.1 += ok;
        }
    }

    /// One line per family: `name calls (ok BC_OK)`.
    pub fn family_report(&self) -> String {
        self.families
            .iter()
            .map(|(name, (calls, ok))| format!("  {name:<16} {calls:>9} calls ({ok} BC_OK)\n"))
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// dtypes and element values (the reference arithmetic)
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum Num {
    B(bool),
    U8(u8),
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    H(f16),
    BH(bf16),
    F(f32),
    D(f64),
}

impl Num {
    fn decode(dt: i32, b: &[u8]) -> Num {
        match dt {
            BOOL => Num::B(b[0] != 0),
            U8 => Num::U8(b[0]),
            I8 => Num::I8(b[0] as i8),
            I16 => Num::I16(i16::from_ne_bytes([b[0], b[1]])),
            I32 => Num::I32(i32::from_ne_bytes(b[..4].try_into().unwrap())),
            I64 => Num::I64(i64::from_ne_bytes(b[..8].try_into().unwrap())),
            F16 => Num::H(f16::from_bits(u16::from_ne_bytes([b[0], b[1]]))),
            BF16 => Num::BH(bf16::from_bits(u16::from_ne_bytes([b[0], b[1]]))),
            F32 => Num::F(f32::from_ne_bytes(b[..4].try_into().unwrap())),
            _ => Num::D(f64::from_ne_bytes(b[..8].try_into().unwrap())),
        }
    }

    fn encode(self) -> Vec<u8> {
        match self {
            Num::B(v) => vec![v as u8],
            Num::U8(v) => vec![v],
            Num::I8(v) => vec![v as u8],
            Num::I16(v) => v.to_ne_bytes().to_vec(),
            Num::I32(v) => v.to_ne_bytes().to_vec(),
            Num::I64(v) => v.to_ne_bytes().to_vec(),
            Num::H(v) => v.to_bits().to_ne_bytes().to_vec(),
            Num::BH(v) => v.to_bits().to_ne_bytes().to_vec(),
            Num::F(v) => v.to_ne_bytes().to_vec(),
            Num::D(v) => v.to_ne_bytes().to_vec(),
        }
    }

    fn dtype(self) -> i32 {
        match self {
            Num::B(_) => BOOL,
            Num::U8(_) => U8,
            Num::I8(_) => I8,
            Num::I16(_) => I16,
            Num::I32(_) => I32,
            Num::I64(_) => I64,
            Num::H(_) => F16,
            Num::BH(_) => BF16,
            Num::F(_) => F32,
            Num::D(_) => F64,
        }
    }

    /// C-style conversion of a double (PyTorch's `static_cast`; 16-bit floats via float32).
    fn from_f64(dt: i32, v: f64) -> Num {
        match dt {
            BOOL => Num::B(v != 0.0),
            U8 => Num::U8(v as i64 as u8),
            I8 => Num::I8(v as i64 as i8),
            I16 => Num::I16(v as i64 as i16),
            I32 => Num::I32(v as i64 as i32),
            I64 => Num::I64(v as i64),
            F16 => Num::H(f16::from_f32(v as f32)),
            BF16 => Num::BH(bf16::from_f32(v as f32)),
            F32 => Num::F(v as f32),
            _ => Num::D(v),
        }
    }

    fn from_i64(dt: i32, v: i64) -> Num {
        match dt {
            BOOL => Num::B(v != 0),
            U8 => Num::U8(v as u8),
            I8 => Num::I8(v as i8),
            I16 => Num::I16(v as i16),
            I32 => Num::I32(v as i32),
            I64 => Num::I64(v),
            F16 => Num::H(f16::from_f32(v as f32)),
            BF16 => Num::BH(bf16::from_f32(v as f32)),
            F32 => Num::F(v as f32),
            _ => Num::D(v as f64),
        }
    }

    fn to_f64(self) -> f64 {
        match self {
            Num::H(v) => v.to_f64(),
            Num::BH(v) => v.to_f64(),
            Num::F(v) => v as f64,
            Num::D(v) => v,
            other => other.to_i64() as f64,
        }
    }

    fn to_i64(self) -> i64 {
        match self {
            Num::B(v) => v as i64,
            Num::U8(v) => v as i64,
            Num::I8(v) => v as i64,
            Num::I16(v) => v as i64,
            Num::I32(v) => v as i64,
            Num::I64(v) => v,
            Num::H(v) => v.to_f32() as i64,
            Num::BH(v) => v.to_f32() as i64,
            Num::F(v) => v as i64,
            Num::D(v) => v as i64,
        }
    }

    fn cast(self, dt: i32) -> Num {
        if is_float(self.dtype()) {
            Num::from_f64(dt, self.to_f64())
        } else {
            Num::from_i64(dt, self.to_i64())
        }
    }

    /// `self op other`, both of one type: integers wrap, bool add/mul are or/and, 16-bit floats
    /// compute in float32 and round once.
    fn apply(self, op: i32, o: Num) -> Num {
        macro_rules! int {
            ($a:expr, $b:expr, $v:path) => {
                $v(match op {
                    BC_OP_ADD => $a.wrapping_add($b),
                    BC_OP_SUB => $a.wrapping_sub($b),
                    BC_OP_MUL => $a.wrapping_mul($b),
                    _ => $a.checked_div($b).unwrap_or(0),
                })
            };
        }
        let f32op = |a: f32, b: f32| match op {
            BC_OP_ADD => a + b,
            BC_OP_SUB => a - b,
            BC_OP_MUL => a * b,
            _ => a / b,
        };
        match (self, o) {
            (Num::B(a), Num::B(b)) => Num::B(match op {
                BC_OP_ADD => a | b,
                BC_OP_SUB => a ^ b,
                _ => a & b,
            }),
            (Num::U8(a), Num::U8(b)) => int!(a, b, Num::U8),
            (Num::I8(a), Num::I8(b)) => int!(a, b, Num::I8),
            (Num::I16(a), Num::I16(b)) => int!(a, b, Num::I16),
            (Num::I32(a), Num::I32(b)) => int!(a, b, Num::I32),
            (Num::I64(a), Num::I64(b)) => int!(a, b, Num::I64),
            (Num::H(a), Num::H(b)) => Num::H(f16::from_f32(f32op(a.to_f32(), b.to_f32()))),
            (Num::BH(a), Num::BH(b)) => Num::BH(bf16::from_f32(f32op(a.to_f32(), b.to_f32()))),
            (Num::F(a), Num::F(b)) => Num::F(f32op(a, b)),
            (Num::D(a), Num::D(b)) => Num::D(match op {
                BC_OP_ADD => a + b,
                BC_OP_SUB => a - b,
                BC_OP_MUL => a * b,
                _ => a / b,
            }),
            (a, b) => panic!("model: apply on mixed types {a:?} {b:?}"),
        }
    }

    fn is_nan(self) -> bool {
        self.to_f64().is_nan() && is_float(self.dtype())
    }
}

/// Two encoded elements of `dt` are the same value (bit-exact; any NaN equals any NaN).
fn same_bits(dt: i32, a: &[u8], b: &[u8]) -> bool {
    a == b || (is_float(dt) && Num::decode(dt, a).is_nan() && Num::decode(dt, b).is_nan())
}

// ---------------------------------------------------------------------------------------------
// Process-wide hooks: release callbacks and warnings
// ---------------------------------------------------------------------------------------------

const MAX_TOKENS: usize = 4096;
static RELEASES: [AtomicU32; MAX_TOKENS] = [const { AtomicU32::new(0) }; MAX_TOKENS];
static WARNINGS: [AtomicUsize; 4] = [const { AtomicUsize::new(0) }; 4];

const WARN_CHANGE: usize = 0;
const WARN_FALLBACK: usize = 1;
const WARN_FALLBACK_INPLACE: usize = 2;
const WARN_OTHER: usize = 3;

unsafe extern "C" fn on_release(user_data: *mut c_void) {
    RELEASES[user_data as usize % MAX_TOKENS].fetch_add(1, Ordering::SeqCst);
}

unsafe extern "C" fn on_warning(_user: *mut c_void, msg: *const c_char) {
    // SAFETY: the library passes a NUL-terminated message valid during the call.
    let text = unsafe { CStr::from_ptr(msg) }.to_string_lossy();
    let kind = if text.starts_with("self and other do not have the same shape") {
        WARN_CHANGE
    } else if text.starts_with("self and other not broadcastable") {
        WARN_FALLBACK
    } else if text.starts_with("other is not broadcastable to self") {
        WARN_FALLBACK_INPLACE
    } else {
        WARN_OTHER
    };
    WARNINGS[kind].fetch_add(1, Ordering::SeqCst);
}

/// Programs touch process-wide state (switches, the warning handler, live-handle count), so
/// they run one at a time.
fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------------------------
// The input
// ---------------------------------------------------------------------------------------------

struct Input<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Input<'_> {
    fn done(&self) -> bool {
        self.pos >= self.data.len()
    }
    fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }
    fn below(&mut self, n: usize) -> usize {
        self.u8() as usize % n
    }
    fn flag(&mut self) -> bool {
        self.u8() & 1 == 1
    }
    fn dtype(&mut self) -> i32 {
        let b = self.u8();
        if b < 250 {
            (b % 10) as i32
        } else {
            [-1, 10, 127, i32::MIN, i32::MAX, 11][(b - 250) as usize]
        }
    }
    fn ndim(&mut self) -> usize {
        [0, 1, 1, 2, 2, 2, 3, 3, 4, 1, 2, 3, 5, 0, 1, 2][self.below(16)]
    }
    /// A dimension size: mostly tiny, sometimes 0, rarely huge or negative.
    fn size(&mut self) -> i64 {
        let b = self.u8();
        match b {
            0..=49 => 1,
            50..=129 => 2,
            130..=179 => 3,
            180..=209 => 0,
            210..=239 => 4 + (b % 4) as i64,
            _ => [
                -1,
                -3,
                1 << 20,
                1 << 31,
                1 << 40,
                1 << 59,
                1 << 62,
                i64::MAX,
                i64::MIN,
                1 << 32,
                16,
                1 << 45,
                -(1 << 40),
                100,
                i64::MAX - 1,
                1 << 61,
            ][(b - 240) as usize],
        }
    }
    fn shape(&mut self) -> Vec<i64> {
        let n = self.ndim();
        (0..n).map(|_| self.size()).collect()
    }
    /// A small signed integer (dims, starts, stops, steps), rarely extreme.
    fn int(&mut self) -> i64 {
        let b = self.u8();
        if b < 232 {
            (b % 11) as i64 - 5
        } else {
            [
                i64::MAX,
                i64::MIN,
                i64::MAX - 1,
                1 << 62,
                -(1 << 62),
                100,
                -100,
                1 << 32,
                i64::MIN + 1,
                64,
                -64,
                1 << 40,
                7,
                -7,
                8,
                1,
                2,
                3,
                -1,
                0,
                1 << 20,
                -(1 << 20),
                9,
                10,
            ][(b - 232) as usize]
        }
    }
    fn stride(&mut self) -> i64 {
        let b = self.u8();
        if b < 220 {
            (b % 9) as i64
        } else {
            [
                -1,
                1 << 40,
                1 << 62,
                i64::MAX,
                1 << 61,
                0,
                -(1 << 62),
                16,
                32,
                1 << 20,
                12,
                24,
                i64::MIN,
                5,
                3,
                2,
                1,
                0,
                1 << 59,
                40,
                100,
                1 << 50,
                7,
                64,
                1,
                2,
                4,
                8,
                1 << 33,
                -2,
                6,
                9,
                10,
                11,
                13,
                14,
            ][(b - 220) as usize]
        }
    }
    fn offset(&mut self) -> i64 {
        let b = self.u8();
        if b < 224 {
            (b % 12) as i64
        } else {
            [
                -1,
                1 << 40,
                i64::MAX,
                1 << 62,
                i64::MIN,
                1 << 61,
                (1 << 62) + 1,
                1 << 59,
                64,
                200,
                255,
                256,
                31,
                32,
                33,
                -100,
                1 << 20,
                i64::MAX / 2,
                i64::MAX / 8,
                i64::MAX / 8 + 1,
                16,
                17,
                100,
                128,
                (1 << 61) - 1,
                1 << 32,
                12,
                13,
                14,
                15,
                18,
                20,
            ][(b - 224) as usize]
        }
    }
    fn value(&mut self) -> f64 {
        [
            0.0,
            1.0,
            -1.0,
            2.5,
            -3.75,
            0.1,
            1e10,
            -1e-3,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.0,
            65504.0,
            1e40,
            255.0,
            256.0,
            -129.0,
            3.0e9,
            1e300,
            5e-324,
            7.0,
            -2.0,
            0.5,
            1.0 / 3.0,
            100.0,
            -65536.0,
            9.2e18,
            -9.3e18,
            2.0,
            3.0,
            4.0,
            -0.5,
        ][self.below(32)]
    }
}

// ---------------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug, PartialOrd, Ord)]
enum Space {
    Owned(usize),
    Buf(usize),
}

#[derive(Clone)]
struct Mem {
    bytes: Vec<u8>,
    known: Vec<bool>,
}

struct StorageM {
    space: Space,
    /// Byte offset of the storage in its space.
    base: usize,
    nbytes: usize,
    /// Live handles viewing this storage.
    refs: usize,
    token: Option<usize>,
}

#[derive(Clone, Debug)]
struct TM {
    dtype: i32,
    shape: Vec<usize>,
    strides: Vec<i64>,
    offset: usize,
    st: usize,
}

impl TM {
    fn numel(&self) -> u128 {
        numel_of(&self.shape)
    }
    fn ndim(&self) -> usize {
        self.shape.len()
    }
}

/// Broadcast two shapes, `None` when they do not (the model's rule; the message is not needed).
fn broadcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    broadcast_shapes(a, b).ok()
}

/// Outcome of an allocation the model predicts.
enum Alloc {
    Fine,
    /// Too big to make in a fuzz run, too small to fail for sure: the call is not made.
    Skip,
    Fail(i32),
}

fn predict_alloc(numel: u128, item: usize) -> Alloc {
    if numel > isize::MAX as u128 {
        return Alloc::Fail(BC_ERR_OVERFLOW);
    }
    let bytes = numel * item as u128;
    // The storage is allocated with 64-byte alignment: sizes whose rounding overflows isize
    // are refused as overflow too.
    if bytes > (isize::MAX as u128) - 63 {
        return Alloc::Fail(BC_ERR_OVERFLOW);
    }
    if bytes >= SURE_FAIL_BYTES {
        Alloc::Fail(BC_ERR_ALLOC)
    } else if bytes > MAX_ALLOC_BYTES {
        Alloc::Skip
    } else {
        Alloc::Fine
    }
}

/// The outcome of a call's allocations, in order: `Err(Skip)` when one is too big to make in a
/// fuzz run, `Ok(Err(status))` for the first that fails for sure, else `Ok(Ok(()))`.
fn predict_allocs(allocs: &[(u128, usize)]) -> Result<Result<(), i32>, Skip> {
    for &(n, size) in allocs {
        match predict_alloc(n, size) {
            Alloc::Fine => {}
            Alloc::Skip => return Err(Skip),
            Alloc::Fail(s) => return Ok(Err(s)),
        }
    }
    Ok(Ok(()))
}

/// A handle argument as the program chose it.
#[derive(Clone, Copy, Debug)]
enum Arg {
    Live(usize),
    Dead(usize),
    Null,
    Stray(usize),
}

/// Why a call was not made.
struct Skip;

type Expect<T> = Result<T, i32>;

struct Runner<'a> {
    inp: Input<'a>,
    cfg: Config,
    log: String,
    slots: Vec<Option<(usize, TM)>>,
    dead: Vec<usize>,
    storages: Vec<StorageM>,
    owned: Vec<Option<Mem>>,
    arena: Vec<Vec<u64>>,
    mirror: Vec<Mem>,
    next_token: usize,
    expected_releases: Vec<u32>,
    expected_warnings: [usize; 4],
    legacy: bool,
    warn: bool,
    base_live: usize,
    stats: Stats,
    stray_target: Box<[u64; 4]>,
    step: usize,
    /// The family of the step being run (an index into `FAMILIES`).
    family: u8,
}

/// Runs one program. `Err` carries a description of the first mismatch and the calls so far.
pub fn run(data: &[u8], cfg: Config) -> Result<Stats, String> {
    let _g = exclusive();
    // A clean process-wide state for every program.
    assert_eq!(bc_set_legacy_fallback(false), BC_OK);
    assert_eq!(bc_set_broadcast_warning(false), BC_OK);
    assert_eq!(bc_set_parallel_threshold(0), BC_OK);
    assert_eq!(bc_set_num_threads(0), BC_OK);
    assert_eq!(
        bc_set_warning_handler(Some(on_warning), ptr::null_mut()),
        BC_OK
    );
    for r in RELEASES.iter() {
        r.store(0, Ordering::SeqCst);
    }
    for w in WARNINGS.iter() {
        w.store(0, Ordering::SeqCst);
    }
    bc_last_error_clear();
    let mut r = Runner {
        inp: Input { data, pos: 0 },
        cfg,
        log: String::new(),
        slots: vec![None; NSLOTS],
        dead: Vec::new(),
        storages: Vec::new(),
        owned: Vec::new(),
        arena: (0..NBUFS)
            .map(|b| {
                (0..BUF_BYTES / 8)
                    .map(|i| (0x0101_0101_0101_0101u64).wrapping_mul((b * 31 + i) as u64 % 7 + 1))
                    .collect()
            })
            .collect(),
        mirror: Vec::new(),
        next_token: 0,
        expected_releases: Vec::new(),
        expected_warnings: [0; 4],
        legacy: false,
        warn: false,
        base_live: bc_tensor_live_count(),
        stats: Stats::default(),
        stray_target: Box::new([0; 4]),
        step: 0,
        family: 0,
    };
    r.mirror = r
        .arena
        .iter()
        .map(|b| Mem {
            bytes: b.iter().flat_map(|w| w.to_ne_bytes()).collect(),
            known: vec![true; BUF_BYTES],
        })
        .collect();
    let result = r.execute();
    // Always leave nothing behind, even after a mismatch.
    for s in 0..NSLOTS {
        if let Some((h, _)) = r.slots[s].take() {
            bc_tensor_free(h as *mut bc_tensor);
        }
    }
    assert_eq!(bc_set_legacy_fallback(false), BC_OK);
    assert_eq!(bc_set_broadcast_warning(false), BC_OK);
    assert_eq!(bc_set_parallel_threshold(0), BC_OK);
    assert_eq!(bc_set_num_threads(0), BC_OK);
    assert_eq!(bc_set_warning_handler(None, ptr::null_mut()), BC_OK);
    match result {
        Ok(()) => Ok(r.stats),
        Err(e) => Err(format!(
            "{e}\n--- calls (step: call) ---\n{}",
            tail(&r.log, 60)
        )),
    }
}

fn tail(log: &str, lines: usize) -> String {
    let all: Vec<&str> = log.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

fn last_message() -> String {
    // SAFETY: (NULL, 0) asks for the length; then a buffer of that size + 1.
    unsafe {
        let n = bc_last_error_message(ptr::null_mut(), 0);
        let mut buf = vec![0u8; n + 1];
        bc_last_error_message(buf.as_mut_ptr() as *mut c_char, buf.len());
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }
}

/// The operation a step's first byte selects. Bytes below 216 select as `byte % 36` in the
/// first 36 entries (the decoding the corpus was first recorded with); each of the 40 others has
/// its own entry in `LATER`. Changing an entry changes the programs that use that byte: rewrite
/// the `regress-*` entries so they keep decoding as recorded (fuzz/README.md).
const FAMILY_TABLE: [u8; 256] = {
    const FIRST: [u8; 36] = [
        0, 0, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 10, 10, 11, 12, 12, 12, 12, 13, 13, 13, 14, 14,
        14, 15, 16, 17, 18, 19, 12, 13, 0, 5,
    ];
    const LATER: [u8; 40] = [
        20, 20, 20, 21, 21, 22, 22, 22, 23, 23, 23, 24, 25, 25, 26, 27, 27, 27, 28, 28, 29, 29, 30,
        31, 31, 31, 32, 32, 33, 34, 34, 35, 35, 36, 37, 38, 38, 38, 38, 38,
    ];
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = if b < 216 {
            FIRST[b % 36]
        } else {
            LATER[b - 216]
        };
        b += 1;
    }
    t
};

/// The family each operation's calls are counted under.
const FAMILIES: [&str; 38 + MORE.len()] = [
    "create",
    "wrap",
    "free",
    "free_invalid",
    "copy",
    "view",
    "view",
    "view",
    "view",
    "view",
    "view",
    "view",
    "binary",
    "binary_inplace",
    "binary_out",
    "query",
    "shape",
    "switch",
    "poke",
    "panic",
    "unary",
    "unary_inplace",
    "unary_out",
    "scalar",
    "scalar_inplace",
    "where",
    "where_out",
    "reduce",
    "all_any",
    "clamp",
    "clamp_inplace",
    "expr",
    "view",
    "format",
    "plan",
    "binary",
    "binary_inplace",
    "binary_out",
    "lerp",
    "addcmul",
    "addcdiv",
    "clamp_scalar",
    "stats",
    "reshape",
    "sum_to_size",
    "dlpack",
    "plan_more",
    "expr_out",
    "info",
];

/// The families operation 38 picks from with its next byte (`MORE_SLOTS[byte % 16]`), numbered
/// from 38 for the counts and the coverage. Slots beyond the first of each family give more
/// steps to those whose calls are often skipped or refused (the planners, `expr_eval_out`,
/// `lerp`, the reductions); a family added later takes one of those slots, which changes the
/// programs that use it: rewrite the `regress-*` entries as for `FAMILY_TABLE`.
const MORE_SLOTS: [u8; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 8, 9, 0, 4, 8, 10];

/// The names of those families.
const MORE: [&str; 11] = [
    "lerp",
    "addcmul",
    "addcdiv",
    "clamp_scalar",
    "stats",
    "reshape",
    "sum_to_size",
    "dlpack",
    "plan_more",
    "expr_out",
    "info",
];

impl Runner<'_> {
    fn execute(&mut self) -> Result<(), String> {
        while !self.inp.done() && self.step < MAX_STEPS {
            self.step += 1;
            self.stats.steps += 1;
            let byte = self.inp.u8();
            let op = FAMILY_TABLE[byte as usize];
            self.family = op;
            let outcome = match op {
                0 => self.op_create(),
                1 => self.op_wrap(),
                2 => self.op_free(),
                3 => self.op_free_invalid(),
                4 => self.op_copy(),
                5 => self.op_expand(),
                6 => self.op_expand_as(),
                7 => self.op_permute(),
                8 => self.op_transpose(),
                9 => self.op_slice(),
                10 => self.op_as_strided(),
                11 => self.op_broadcast_tensors(),
                12 => self.op_binary(false),
                13 => self.op_inplace(false),
                14 => self.op_out(false),
                15 => self.op_query(),
                16 => self.op_shapes(),
                17 => self.op_switch(),
                18 => self.op_poke(),
                19 => self.op_panic(),
                20 => self.op_unary(),
                21 => self.op_unary_inplace(),
                22 => self.op_unary_out(),
                23 => self.op_scalar(),
                24 => self.op_scalar_inplace(),
                25 => self.op_where(),
                26 => self.op_where_out(),
                27 => self.op_reduce(),
                28 => self.op_all_any(),
                29 => self.op_clamp(),
                30 => self.op_clamp_inplace(),
                31 => self.op_expr(),
                32 => self.op_squeeze(),
                33 => self.op_format(),
                34 => self.op_plan(),
                35 => self.op_binary(true),
                36 => self.op_inplace(true),
                37 => self.op_out(true),
                _ => {
                    let slot = self.inp.below(MORE_SLOTS.len());
                    let k = MORE_SLOTS[slot] as usize;
                    self.family = 38 + k as u8;
                    match k {
                        0 => self.op_lerp(),
                        1 => self.op_addc(false),
                        2 => self.op_addc(true),
                        3 => self.op_clamp_more(),
                        4 => self.op_stats(),
                        5 => self.op_reshape(),
                        6 => self.op_sum_to_size(),
                        7 => self.op_dlpack(),
                        8 => self.op_plan_more(),
                        9 => self.op_expr_out(),
                        _ => self.op_info(),
                    }
                }
            };
            match outcome {
                Ok(Ok(())) => {}
                Ok(Err(Skip)) => {
                    self.stats.skipped += 1;
                    continue;
                }
                Err(e) => return Err(format!("step {} (op {op}): {e}", self.step)),
            }
            self.check_world()
                .map_err(|e| format!("step {} (op {op}) after the call: {e}", self.step))?;
        }
        // Free everything through the API and check that every release ran exactly once.
        for s in 0..NSLOTS {
            self.free_slot(s);
        }
        self.check_world()
            .map_err(|e| format!("at the end, all freed: {e}"))?;
        Ok(())
    }

    fn note(&mut self, text: String) {
        if self.cfg.verbose {
            eprintln!("{:4}: {text}", self.step);
        }
        let _ = writeln!(self.log, "{:4}: {text}", self.step);
    }

    // ---- handles -------------------------------------------------------------------------

    fn arg(&mut self) -> Arg {
        let b = self.inp.u8();
        match b {
            0..=234 => {
                let start = b as usize % NSLOTS;
                (0..NSLOTS)
                    .map(|k| (start + k) % NSLOTS)
                    .find(|&s| self.slots[s].is_some())
                    .map_or(Arg::Null, Arg::Live)
            }
            235..=244 => match self.dead.len() {
                0 => Arg::Null,
                n => Arg::Dead(self.dead[n - 1 - (b as usize % n.min(8))]),
            },
            245..=249 => Arg::Null,
            _ => Arg::Stray(match b {
                250 => self.stray_target.as_ptr() as usize,
                251 => usize::MAX,
                252 => &self.inp as *const _ as usize,
                253 => 0xdead_beef_0000,
                254 => (1usize << 63) | 5,
                _ => self.arena[0].as_ptr() as usize,
            }),
        }
    }

    fn raw(&self, a: Arg) -> *mut bc_tensor {
        match a {
            Arg::Live(s) => self.slots[s].as_ref().expect("live slot").0 as *mut bc_tensor,
            Arg::Dead(h) | Arg::Stray(h) => h as *mut bc_tensor,
            Arg::Null => ptr::null_mut(),
        }
    }

    fn resolve(&self, a: Arg) -> Expect<TM> {
        match a {
            Arg::Live(s) => Ok(self.slots[s].as_ref().expect("live slot").1.clone()),
            Arg::Null => Err(BC_ERR_NULL_ARG),
            Arg::Dead(_) | Arg::Stray(_) => Err(BC_ERR_INVALID_HANDLE),
        }
    }

    fn describe(&self, a: Arg) -> String {
        match a {
            Arg::Live(s) => {
                let t = &self.slots[s].as_ref().unwrap().1;
                format!(
                    "#{s}<{} {:?} st{:?} off{} s{}>",
                    t.dtype, t.shape, t.strides, t.offset, t.st
                )
            }
            Arg::Dead(h) => format!("dead({h:#x})"),
            Arg::Null => "NULL".into(),
            Arg::Stray(h) => format!("stray({h:#x})"),
        }
    }

    /// Removes a live handle from its slot through the API (a valid free).
    fn free_slot(&mut self, s: usize) {
        if let Some((h, t)) = self.slots[s].take() {
            bc_tensor_free(h as *mut bc_tensor);
            self.dead.push(h);
            self.drop_ref(t.st);
        }
    }

    fn drop_ref(&mut self, st: usize) {
        let s = &mut self.storages[st];
        s.refs -= 1;
        if s.refs == 0 {
            if let Some(tok) = s.token {
                self.expected_releases[tok] += 1;
            }
            if let Space::Owned(o) = s.space {
                self.owned[o] = None;
            }
        }
    }

    /// Puts a new handle (from a successful call) in slot `dst`, freeing what was there.
    fn install(&mut self, dst: usize, h: *mut bc_tensor, t: TM) -> Result<(), String> {
        self.install_all(vec![(dst, h, t)])
    }

    /// Installs several new handles: each holds its storage before any old handle in the
    /// destination slots lets go of its own (those may be the very inputs of the call).
    fn install_all(&mut self, new: Vec<(usize, *mut bc_tensor, TM)>) -> Result<(), String> {
        for (_, _, t) in &new {
            self.storages[t.st].refs += 1;
        }
        for (dst, h, t) in new {
            self.free_slot(dst);
            self.slots[dst] = Some((h as usize, t));
            self.check_tensor(dst)?;
        }
        Ok(())
    }

    fn new_owned(&mut self, nbytes: usize, init: Option<Vec<u8>>) -> usize {
        let o = self.owned.len();
        self.owned.push(Some(match init {
            Some(bytes) => Mem {
                known: vec![true; bytes.len()],
                bytes,
            },
            None => Mem {
                bytes: vec![0; nbytes],
                known: vec![false; nbytes],
            },
        }));
        self.storages.push(StorageM {
            space: Space::Owned(o),
            base: 0,
            nbytes,
            refs: 0,
            token: None,
        });
        self.storages.len() - 1
    }

    /// A new row-major tensor with `values` (None: unspecified elements).
    fn new_tensor(&mut self, dtype: i32, shape: &[usize], values: Option<Vec<Option<Num>>>) -> TM {
        self.new_tensor_strided(dtype, shape, contiguous_strides(shape), values)
    }

    /// A new tensor laid out densely with `strides`, with `values` in row-major order.
    fn new_tensor_strided(
        &mut self,
        dtype: i32,
        shape: &[usize],
        strides: Vec<i64>,
        values: Option<Vec<Option<Num>>>,
    ) -> TM {
        let n = numel_of(shape) as usize;
        let nbytes = n * itemsize(dtype);
        let st = self.new_owned(nbytes, None);
        let t = TM {
            dtype,
            shape: shape.to_vec(),
            strides,
            offset: 0,
            st,
        };
        if let Some(vals) = values {
            for (i, v) in vals.into_iter().enumerate() {
                self.write_at(&t, i, v);
            }
        }
        t
    }

    // ---- model memory --------------------------------------------------------------------

    /// Absolute byte address (space, byte) of the element at `idx`.
    fn addr(&self, t: &TM, idx: &[usize]) -> (Space, i128) {
        let s = &self.storages[t.st];
        let mut e = t.offset as i128;
        for (&i, &st) in idx.iter().zip(&t.strides) {
            e += i as i128 * st as i128;
        }
        (s.space, s.base as i128 + e * itemsize(t.dtype) as i128)
    }

    fn mem(&self, sp: Space) -> &Mem {
        match sp {
            Space::Owned(o) => self.owned[o].as_ref().expect("model: freed storage read"),
            Space::Buf(b) => &self.mirror[b],
        }
    }

    fn mem_mut(&mut self, sp: Space) -> &mut Mem {
        match sp {
            Space::Owned(o) => self.owned[o]
                .as_mut()
                .expect("model: freed storage written"),
            Space::Buf(b) => &mut self.mirror[b],
        }
    }

    fn read(&self, t: &TM, idx: &[usize]) -> Option<Num> {
        let (sp, a) = self.addr(t, idx);
        let m = self.mem(sp);
        let a = a as usize;
        let n = itemsize(t.dtype);
        if m.known[a..a + n].iter().all(|&k| k) {
            Some(Num::decode(t.dtype, &m.bytes[a..a + n]))
        } else {
            None
        }
    }

    fn write_idx(&mut self, t: &TM, idx: &[usize], v: Option<Num>) {
        let (sp, a) = self.addr(t, idx);
        let n = itemsize(t.dtype);
        let a = a as usize;
        let m = self.mem_mut(sp);
        match v {
            Some(v) => {
                let v = if v.dtype() == t.dtype {
                    v
                } else {
                    v.cast(t.dtype)
                };
                let bytes = v.encode();
                m.bytes[a..a + n].copy_from_slice(&bytes);
                m.known[a..a + n].fill(true);
            }
            None => m.known[a..a + n].fill(false),
        }
    }

    fn write_at(&mut self, t: &TM, flat: usize, v: Option<Num>) {
        let idx = unflatten(flat, &t.shape);
        self.write_idx(t, &idx, v);
    }

    /// Element values of `t`, row-major.
    fn values(&self, t: &TM) -> Vec<Option<Num>> {
        indices(&t.shape).iter().map(|i| self.read(t, i)).collect()
    }

    // ---- overlap (docs/semantics.md, section 8) ----------------------------------------------

    fn element_spans(&self, t: &TM) -> Vec<(Space, i128, i128)> {
        let n = itemsize(t.dtype) as i128;
        indices(&t.shape)
            .iter()
            .map(|i| {
                let (sp, a) = self.addr(t, i);
                (sp, a, a + n)
            })
            .collect()
    }

    fn internal_overlap(&self, t: &TM) -> bool {
        // No elements, so no two share a location (docs/semantics.md, section 8; PyTorch agrees: an
        // empty tensor is contiguous, which settles `has_internal_overlap` before strides are
        // looked at).
        if t.numel() == 0 {
            return false;
        }
        if t.shape
            .iter()
            .zip(&t.strides)
            .any(|(&n, &s)| n > 1 && s == 0)
        {
            return true;
        }
        if t.numel() > EXACT_OVERLAP_LIMIT {
            // The engine's cheap sufficient test, then "assume overlap".
            let mut dims: Vec<(u128, u128)> = t
                .shape
                .iter()
                .zip(&t.strides)
                .filter(|(&n, _)| n > 1)
                .map(|(&n, &s)| (n as u128, s as u128))
                .collect();
            dims.sort_by_key(|&(_, s)| s);
            let mut reach = 0u128;
            for (n, s) in dims {
                if s <= reach {
                    return true;
                }
                reach += (n - 1) * s;
            }
            return false;
        }
        let mut addrs: Vec<(Space, i128)> = self
            .element_spans(t)
            .into_iter()
            .map(|(sp, a, _)| (sp, a))
            .collect();
        addrs.sort();
        addrs.windows(2).any(|w| w[0] == w[1])
    }

    /// First and one-past-last byte a view touches.
    fn byte_range(&self, t: &TM) -> Option<(Space, i128, i128)> {
        if t.numel() == 0 {
            return None;
        }
        let lo = self.addr(t, &vec![0; t.ndim()]);
        let last: Vec<usize> = t.shape.iter().map(|&n| n - 1).collect();
        let hi = self.addr(t, &last);
        Some((lo.0, lo.1, hi.1 + itemsize(t.dtype) as i128))
    }

    fn partial_overlap(&self, dest: &TM, input: &TM) -> bool {
        let (Some(d), Some(i)) = (self.byte_range(dest), self.byte_range(input)) else {
            return false;
        };
        if d.0 != i.0 || d.2 <= i.1 || i.2 <= d.1 {
            return false;
        }
        let same_view = d.1 == i.1
            && dest.shape == input.shape
            && dest.strides == input.strides
            && itemsize(dest.dtype) == itemsize(input.dtype);
        if same_view {
            return false;
        }
        if dest.numel() > EXACT_OVERLAP_LIMIT || input.numel() > EXACT_OVERLAP_LIMIT {
            return true;
        }
        let ds = self.element_spans(dest);
        let is = self.element_spans(input);
        // Small views: compare every pair of byte intervals.
        let mut is_sorted: Vec<(i128, i128)> = is.iter().map(|&(_, a, b)| (a, b)).collect();
        is_sorted.sort();
        ds.iter().any(|&(_, a, b)| {
            let k = is_sorted.partition_point(|&(s, _)| s < b);
            is_sorted[..k].iter().any(|&(s, e)| s < b && a < e)
        })
    }

    // ---- checks --------------------------------------------------------------------------

    /// A call's status against the model's; on failure also the thread's last error.
    fn check_status(&mut self, what: &str, got: i32, expected: i32) -> Result<(), String> {
        self.stats.calls += 1;
        self.stats.coverage.insert((self.family, got));
        let family = self
            .stats
            .families
            .entry(FAMILIES[self.family as usize])
            .or_default();
        family.0 += 1;
        if got == BC_OK {
            self.stats.ok_calls += 1;
            family.1 += 1;
        }
        if got != expected {
            let msg = if got != BC_OK {
                last_message()
            } else {
                String::new()
            };
            return Err(format!(
                "{what}: status {got} (library: {msg:?}), model expects {expected}"
            ));
        }
        if got != BC_OK {
            let last = bc_last_error_status();
            if last != got {
                return Err(format!(
                    "{what}: returned {got} but last error status is {last}"
                ));
            }
            if last_message().is_empty() {
                return Err(format!("{what}: failed with {got} but left no message"));
            }
        }
        Ok(())
    }

    /// Metadata and values of the tensor in `slot` against the model.
    fn check_tensor(&self, slot: usize) -> Result<(), String> {
        let (h, t) = self.slots[slot].as_ref().unwrap();
        let h = *h as *const bc_tensor;
        let ctx = |m: &str| format!("slot {slot} {:?} {:?}: {m}", t.shape, t.strides);
        if !bc_tensor_is_live(h) {
            return Err(ctx("handle not live"));
        }
        let (mut dt, mut nd, mut numel, mut off, mut contig) = (0i32, 0usize, 0i64, 0i64, false);
        let mut shape = [0i64; BC_MAX_NDIM];
        let mut strides = [0i64; BC_MAX_NDIM];
        // SAFETY: valid out-pointers and buffers of BC_MAX_NDIM entries.
        let sts = unsafe {
            [
                bc_tensor_dtype(h, &mut dt),
                bc_tensor_ndim(h, &mut nd),
                bc_tensor_numel(h, &mut numel),
                bc_tensor_offset(h, &mut off),
                bc_tensor_is_contiguous(h, &mut contig),
                bc_tensor_shape(h, shape.as_mut_ptr(), BC_MAX_NDIM),
                bc_tensor_strides(h, strides.as_mut_ptr(), BC_MAX_NDIM),
            ]
        };
        if sts.iter().any(|&s| s != BC_OK) {
            return Err(ctx(&format!("queries failed: {sts:?} {}", last_message())));
        }
        let want_shape: Vec<i64> = t.shape.iter().map(|&s| s as i64).collect();
        if dt != t.dtype
            || nd != t.ndim()
            || shape[..nd] != want_shape[..]
            || strides[..nd] != t.strides[..]
            || off as u128 != t.offset as u128
            || numel as u128 != t.numel()
        {
            return Err(ctx(&format!(
                "metadata: library dtype {dt} shape {:?} strides {:?} offset {off} numel {numel}; model dtype {} offset {}",
                &shape[..nd],
                &strides[..nd],
                t.dtype,
                t.offset
            )));
        }
        let model_contig = t.numel() == 0 || {
            let mut expected = 1i128;
            let mut ok = true;
            for (&n, &s) in t.shape.iter().zip(&t.strides).rev() {
                if n != 1 {
                    if s as i128 != expected {
                        ok = false;
                        break;
                    }
                    expected *= n as i128;
                }
            }
            ok
        };
        if contig != model_contig {
            return Err(ctx(&format!(
                "is_contiguous {contig}, model {model_contig}"
            )));
        }
        if t.numel() <= MAX_CHECK_ELEMS {
            self.check_values(h, t).map_err(|e| ctx(&e))?;
        }
        Ok(())
    }

    fn check_values(&self, h: *const bc_tensor, t: &TM) -> Result<(), String> {
        let n = t.numel() as usize;
        let size = itemsize(t.dtype);
        let mut buf = vec![0xA5u8; n * size + 16];
        // SAFETY: buf holds n * size bytes plus a canary.
        let st = unsafe { bc_tensor_copy_to(h, buf.as_mut_ptr().cast(), n * size) };
        if st != BC_OK {
            return Err(format!("copy_to failed: {st} {}", last_message()));
        }
        if buf[n * size..].iter().any(|&b| b != 0xA5) {
            return Err("copy_to wrote past the bytes it was given".into());
        }
        for (i, v) in self.values(t).into_iter().enumerate() {
            let Some(v) = v else { continue };
            let want = v.cast(t.dtype).encode(); // copying normalises (bool bytes to 0/1)
            let got = &buf[i * size..(i + 1) * size];
            if !same_bits(t.dtype, got, &want) {
                return Err(format!(
                    "element {i}: library {:?}, model {:?}",
                    Num::decode(t.dtype, got),
                    Num::decode(t.dtype, &want)
                ));
            }
        }
        Ok(())
    }

    /// Everything the model knows, after every step: every live tensor, the caller's buffers,
    /// release callbacks, warnings, the live-handle count.
    fn check_world(&self) -> Result<(), String> {
        for s in 0..NSLOTS {
            if self.slots[s].is_some() {
                self.check_tensor(s)?;
            }
        }
        for (b, (real, mirror)) in self.arena.iter().zip(&self.mirror).enumerate() {
            let bytes: Vec<u8> = real.iter().flat_map(|w| w.to_ne_bytes()).collect();
            for i in 0..BUF_BYTES {
                if mirror.known[i] && bytes[i] != mirror.bytes[i] {
                    // NaN payloads may differ: compare as any element type that could be there.
                    let nan_ok = [F16, BF16, F32, F64].iter().any(|&dt| {
                        let sz = itemsize(dt);
                        let a = i / sz * sz;
                        a + sz <= BUF_BYTES
                            && Num::decode(dt, &bytes[a..a + sz]).is_nan()
                            && Num::decode(dt, &mirror.bytes[a..a + sz]).is_nan()
                    });
                    if !nan_ok {
                        return Err(format!(
                            "caller buffer {b} byte {i}: memory {:#04x}, model {:#04x}",
                            bytes[i], mirror.bytes[i]
                        ));
                    }
                }
            }
        }
        for (tok, &want) in self.expected_releases.iter().enumerate() {
            let got = RELEASES[tok].load(Ordering::SeqCst);
            if got != want {
                return Err(format!(
                    "release callback {tok} ran {got} times, model expects {want}"
                ));
            }
        }
        for (k, counter) in WARNINGS.iter().enumerate() {
            let got = counter.load(Ordering::SeqCst);
            if got != self.expected_warnings[k] {
                return Err(format!(
                    "warning kind {k}: {got} emitted, model expects {}",
                    self.expected_warnings[k]
                ));
            }
        }
        let live = self.slots.iter().filter(|s| s.is_some()).count();
        let count = bc_tensor_live_count();
        if count != self.base_live + live {
            return Err(format!(
                "live handles: library {count}, model {}",
                self.base_live + live
            ));
        }
        Ok(())
    }

    /// Checks the status of a call that makes a new handle, and installs it on success.
    fn finish_new(
        &mut self,
        what: &str,
        st: i32,
        out: *mut bc_tensor,
        expected: Expect<TM>,
        dst: usize,
    ) -> Result<(), String> {
        let exp_status = match &expected {
            Ok(_) => BC_OK,
            Err(s) => *s,
        };
        self.check_status(what, st, exp_status)?;
        match expected {
            Ok(t) => {
                if out.is_null() {
                    return Err(format!("{what}: BC_OK but *out is NULL"));
                }
                self.install(dst, out, t)
            }
            Err(_) => {
                if !out.is_null() {
                    return Err(format!("{what}: failed but *out = {out:p}"));
                }
                Ok(())
            }
        }
    }

    // ---- operations ----------------------------------------------------------------------

    fn dims_in(shape: &[i64]) -> Expect<Vec<usize>> {
        if shape.len() > BC_MAX_NDIM {
            return Err(BC_ERR_INVALID_ARG);
        }
        shape
            .iter()
            .map(|&d| usize::try_from(d).map_err(|_| BC_ERR_INVALID_ARG))
            .collect()
    }

    fn op_create(&mut self) -> Result<Result<(), Skip>, String> {
        let kind = self.inp.below(5);
        let dtype = self.inp.dtype();
        let shape = self.inp.shape();
        let dst = self.inp.below(NSLOTS);
        let value = self.inp.value();
        let null_out = self.inp.u8() == 255;
        let dims = Self::dims_in(&shape);
        let mut data: Vec<u8> = Vec::new();
        let mut nbytes_arg = 0usize;
        // The model's answer, in the library's order of checks.
        let expected: Expect<TM> = (|| {
            if null_out {
                return Err(BC_ERR_NULL_ARG);
            }
            let dims = dims.clone()?;
            if !valid_dtype(dtype) {
                return Err(BC_ERR_INVALID_ARG);
            }
            let numel = checked_numel(&dims)?;
            let _ = numel;
            Ok(TM {
                dtype,
                shape: dims,
                strides: vec![],
                offset: 0,
                st: 0,
            })
        })();
        // Allocation and (for from_data) the byte count.
        let expected = match expected {
            Ok(t) => {
                let numel = t.numel();
                if kind == 4 {
                    // from_data: byte count checked (with overflow) before allocating.
                    let bytes = numel * itemsize(dtype) as u128;
                    if bytes > isize::MAX as u128 {
                        Err(BC_ERR_OVERFLOW)
                    } else if bytes > 4096 {
                        return Ok(Err(Skip)); // the program does not carry that much data
                    } else {
                        let wrong = self.inp.u8() == 7;
                        nbytes_arg = if wrong {
                            bytes as usize + 1
                        } else {
                            bytes as usize
                        };
                        data = (0..nbytes_arg).map(|_| self.inp.u8()).collect();
                        if wrong {
                            Err(BC_ERR_INVALID_ARG)
                        } else {
                            Ok(t)
                        }
                    }
                } else {
                    match predict_alloc(numel, itemsize(dtype)) {
                        Alloc::Skip => return Ok(Err(Skip)),
                        Alloc::Fail(s) => Err(s),
                        Alloc::Fine => Ok(t),
                    }
                }
            }
            Err(s) => {
                if kind == 4 && !null_out && dims.is_ok() {
                    // A byte count that matches nothing: the status comes from the shape/dtype.
                    nbytes_arg = 3;
                    data = vec![1, 2, 3];
                }
                Err(s)
            }
        };
        // Model values.
        let expected = match expected {
            Ok(t) => {
                let n = t.numel() as usize;
                let vals: Option<Vec<Option<Num>>> = match kind {
                    0 => None,
                    1 => Some(vec![Some(Num::from_i64(dtype, 0)); n]),
                    2 => Some(vec![Some(Num::from_f64(dtype, 1.0)); n]),
                    3 => Some(vec![Some(Num::from_f64(dtype, value)); n]),
                    _ => Some(
                        data.chunks_exact(itemsize(dtype))
                            .map(|c| Some(Num::decode(dtype, c)))
                            .collect(),
                    ),
                };
                Ok(self.new_tensor(dtype, &t.shape, vals))
            }
            Err(s) => Err(s),
        };
        let names = ["empty", "zeros", "ones", "full", "from_data"];
        self.note(format!(
            "{}({dtype}, {shape:?}{}) -> #{dst}",
            names[kind],
            if kind == 3 {
                format!(", {value}")
            } else {
                String::new()
            }
        ));
        let mut out: *mut bc_tensor = 0x55 as *mut bc_tensor;
        let outp: *mut *mut bc_tensor = if null_out { ptr::null_mut() } else { &mut out };
        // SAFETY: shape and data are valid for their lengths; outp is NULL or valid.
        let st = unsafe {
            match kind {
                0 => bc_tensor_empty(dtype, shape.as_ptr(), shape.len(), outp),
                1 => bc_tensor_zeros(dtype, shape.as_ptr(), shape.len(), outp),
                2 => bc_tensor_ones(dtype, shape.as_ptr(), shape.len(), outp),
                3 => bc_tensor_full(dtype, shape.as_ptr(), shape.len(), value, outp),
                _ => bc_tensor_from_data(
                    dtype,
                    shape.as_ptr(),
                    shape.len(),
                    if data.is_empty() {
                        ptr::null()
                    } else {
                        data.as_ptr().cast()
                    },
                    nbytes_arg,
                    outp,
                ),
            }
        };
        if null_out {
            return self.check_status("create", st, BC_ERR_NULL_ARG).map(Ok);
        }
        self.finish_new(names[kind], st, out, expected, dst).map(Ok)
    }

    /// View bounds (`as_strided` and `wrap`): every element inside `nbytes` of storage.
    fn view_bounds(
        dtype: i32,
        nbytes: usize,
        shape: &[usize],
        strides: &[i64],
        offset: usize,
    ) -> Expect<()> {
        if strides.iter().any(|&s| s < 0) {
            return Err(BC_ERR_INVALID_ARG);
        }
        checked_numel(shape)?;
        if numel_of(shape) == 0 {
            return Ok(());
        }
        let mut last = offset as u128;
        for (&n, &s) in shape.iter().zip(strides) {
            last += (n as u128 - 1) * s as u128;
            if last > usize::MAX as u128 {
                return Err(BC_ERR_OVERFLOW);
            }
        }
        let end = (last + 1) * itemsize(dtype) as u128;
        if end > usize::MAX as u128 {
            return Err(BC_ERR_OVERFLOW);
        }
        if end > nbytes as u128 {
            return Err(BC_ERR_INVALID_ARG);
        }
        Ok(())
    }

    fn op_wrap(&mut self) -> Result<Result<(), Skip>, String> {
        let buf = self.inp.below(NBUFS);
        let start = self.inp.below(BUF_BYTES);
        let dtype = self.inp.dtype();
        let shape = self.inp.shape();
        let explicit = self.inp.flag();
        let strides: Vec<i64> = (0..shape.len()).map(|_| self.inp.stride()).collect();
        let offset = self.inp.offset();
        let with_release = self.inp.u8() < 200;
        let null_data = self.inp.u8() == 3;
        let dst = self.inp.below(NSLOTS);
        let len_choice = self.inp.below(4);
        let avail = BUF_BYTES - start;
        let nbytes = if null_data {
            0
        } else {
            match len_choice {
                0 => avail,
                1 => avail / 2,
                2 => avail.min(16),
                _ => 0,
            }
        };
        let data_addr = self.arena[buf].as_ptr() as usize + start;
        let token = self.next_token;
        let expected: Expect<TM> = (|| {
            if !valid_dtype(dtype) {
                return Err(BC_ERR_INVALID_ARG);
            }
            let dims = Self::dims_in(&shape)?;
            if offset < 0 {
                return Err(BC_ERR_INVALID_ARG);
            }
            let strides = if explicit {
                strides.clone()
            } else {
                contiguous_strides(&dims)
            };
            // Alignment (item sizes are powers of two) matters only when there are bytes to read.
            if nbytes > 0 && data_addr & (itemsize(dtype) - 1) != 0 {
                return Err(BC_ERR_INVALID_ARG);
            }
            Self::view_bounds(dtype, nbytes, &dims, &strides, offset as usize)?;
            Ok(TM {
                dtype,
                shape: dims,
                strides,
                offset: offset as usize,
                st: 0,
            })
        })();
        let expected = match expected {
            Ok(mut t) => {
                self.storages.push(StorageM {
                    space: Space::Buf(buf),
                    base: start,
                    nbytes,
                    refs: 0,
                    token: with_release.then_some(token),
                });
                if with_release {
                    self.next_token += 1;
                    self.expected_releases.push(0);
                }
                t.st = self.storages.len() - 1;
                Ok(t)
            }
            Err(s) => Err(s),
        };
        self.note(format!(
            "wrap(buf{buf}+{start}, {nbytes}B, {dtype}, {shape:?}, {}, off {offset}, release {with_release}) -> #{dst}",
            if explicit { format!("{strides:?}") } else { "NULL".into() }
        ));
        let mut out: *mut bc_tensor = ptr::null_mut();
        let data: *mut c_void = if null_data {
            ptr::null_mut()
        } else {
            data_addr as *mut c_void
        };
        // SAFETY: data is valid for nbytes bytes (inside the arena, which outlives every
        // tensor); shape/strides valid for their lengths.
        let st = unsafe {
            bc_tensor_wrap(
                dtype,
                data,
                nbytes,
                shape.as_ptr(),
                if explicit {
                    strides.as_ptr()
                } else {
                    ptr::null()
                },
                shape.len(),
                offset,
                if with_release { Some(on_release) } else { None },
                token as *mut c_void,
                &mut out,
            )
        };
        self.finish_new("wrap", st, out, expected, dst).map(Ok)
    }

    fn op_free(&mut self) -> Result<Result<(), Skip>, String> {
        let s = self.inp.below(NSLOTS);
        if self.slots[s].is_none() {
            return Ok(Err(Skip));
        }
        self.note(format!("free(#{s})"));
        bc_last_error_clear();
        self.free_slot(s);
        let st = bc_last_error_status();
        self.check_status("free", st, BC_OK).map(Ok)
    }

    fn op_free_invalid(&mut self) -> Result<Result<(), Skip>, String> {
        let a = self.arg();
        if let Arg::Live(_) = a {
            return Ok(Err(Skip));
        }
        self.note(format!("free({})", self.describe(a)));
        bc_last_error_clear();
        bc_tensor_free(self.raw(a));
        let st = bc_last_error_status();
        let expected = match a {
            Arg::Null => BC_OK, // a no-op that records nothing
            _ => BC_ERR_INVALID_HANDLE,
        };
        self.check_status("free invalid", st, expected).map(Ok)
    }

    /// The out-pointer flavour: usually valid, rarely NULL.
    fn out_flag(&mut self) -> bool {
        self.inp.u8() == 255
    }

    fn call_new(
        &mut self,
        what: &str,
        null_out: bool,
        dst: usize,
        expected: Expect<TM>,
        f: impl FnOnce(*mut *mut bc_tensor) -> i32,
    ) -> Result<Result<(), Skip>, String> {
        let mut out: *mut bc_tensor = 0x55 as *mut bc_tensor;
        if null_out {
            let st = f(ptr::null_mut());
            return self.check_status(what, st, BC_ERR_NULL_ARG).map(Ok);
        }
        let st = f(&mut out);
        self.finish_new(what, st, out, expected, dst).map(Ok)
    }

    fn op_copy(&mut self) -> Result<Result<(), Skip>, String> {
        let kind = self.inp.below(3);
        let a = self.arg();
        let dtype = if kind == 2 { self.inp.dtype() } else { 0 };
        let dst = self.inp.below(NSLOTS);
        let null_out = self.out_flag();
        let src = self.resolve(a);
        let expected: Expect<(i32, TM)> = (|| {
            let t = src.clone()?;
            let dt = if kind == 2 { dtype } else { t.dtype };
            if !valid_dtype(dt) {
                return Err(BC_ERR_INVALID_ARG);
            }
            Ok((dt, t))
        })();
        let expected = match expected {
            Ok((dt, t)) => match predict_alloc(t.numel(), itemsize(dt)) {
                Alloc::Skip => return Ok(Err(Skip)),
                Alloc::Fail(s) => Err(s),
                Alloc::Fine if null_out => Err(BC_ERR_NULL_ARG),
                Alloc::Fine => {
                    let vals = self
                        .values(&t)
                        .into_iter()
                        .map(|v| v.map(|v| v.cast(dt)))
                        .collect();
                    Ok(self.new_tensor(dt, &t.shape, Some(vals)))
                }
            },
            Err(s) => Err(s),
        };
        let names = ["clone", "contiguous", "to_dtype"];
        self.note(format!(
            "{}({}, {dtype}) -> #{dst}",
            names[kind],
            self.describe(a)
        ));
        let h = self.raw(a);
        // SAFETY: out is NULL or valid.
        self.call_new(names[kind], null_out, dst, expected, |o| unsafe {
            match kind {
                0 => bc_tensor_clone(h, o),
                1 => bc_tensor_contiguous(h, o),
                _ => bc_tensor_to_dtype(h, dtype, o),
            }
        })
    }

    /// `expand(sizes)` geometry (PyTorch's `inferExpandGeometry`).
    fn expand_geometry(t: &TM, sizes: &[i64]) -> Expect<(Vec<usize>, Vec<i64>)> {
        let nd = sizes.len();
        if nd < t.ndim() {
            return Err(BC_ERR_SHAPE);
        }
        let mut shape = vec![0usize; nd];
        let mut strides = vec![0i64; nd];
        for i in (0..nd).rev() {
            let off = nd - 1 - i;
            let existing = t.ndim().checked_sub(off + 1);
            let (size, mut stride) = match existing {
                Some(d) => (t.shape[d] as i64, t.strides[d]),
                None if i + 1 < nd => (1, (shape[i + 1] as i64).saturating_mul(strides[i + 1])),
                None => (1, 1),
            };
            let mut target = sizes[i];
            if target == -1 {
                if existing.is_none() {
                    return Err(BC_ERR_SHAPE);
                }
                target = size;
            }
            if size != target {
                if size != 1 {
                    return Err(BC_ERR_SHAPE);
                }
                stride = 0;
            }
            if target < 0 {
                return Err(BC_ERR_SHAPE);
            }
            shape[i] = target as usize;
            strides[i] = stride;
        }
        checked_numel(&shape)?;
        Ok((shape, strides))
    }

    fn op_expand(&mut self) -> Result<Result<(), Skip>, String> {
        let a = self.arg();
        let variant = self.inp.flag();
        let dst = self.inp.below(NSLOTS);
        let null_out = self.out_flag();
        let src = self.resolve(a);
        // Sizes: usually the tensor's shape with some entries changed.
        let sizes: Vec<i64> = {
            let base: Vec<i64> = match &src {
                Ok(t) => t.shape.iter().map(|&s| s as i64).collect(),
                Err(_) => vec![],
            };
            let lead = self.inp.below(3);
            let drop_dims = self.inp.u8() == 9;
            let mut v: Vec<i64> = (0..lead).map(|_| self.inp.size()).collect();
            v.extend(base.iter().map(|&s| {
                let b = self.inp.u8();
                match b {
                    0..=99 => s,
                    100..=159 => -1,
                    160..=219 => self.inp.size(),
                    _ => self.inp.int(),
                }
            }));
            if drop_dims && !v.is_empty() {
                v.remove(0);
            }
            v
        };
        let expected: Expect<TM> = (|| {
            let t = src.clone()?;
            let (shape, strides) = Self::expand_geometry(&t, &sizes)?;
            Ok(TM {
                shape,
                strides,
                ..t
            })
        })();
        let expected = if null_out {
            Err(BC_ERR_NULL_ARG)
        } else {
            expected
        };
        self.note(format!(
            "{}({}, {sizes:?}) -> #{dst}",
            if variant { "broadcast_to" } else { "expand" },
            self.describe(a)
        ));
        let h = self.raw(a);
        // SAFETY: sizes valid for its length; out NULL or valid.
        self.call_new("expand", null_out, dst, expected, |o| unsafe {
            if variant {
                bc_tensor_broadcast_to(h, sizes.as_ptr(), sizes.len(), o)
            } else {
                bc_tensor_expand(h, sizes.as_ptr(), sizes.len(), o)
            }
        })
    }

    fn op_expand_as(&mut self) -> Result<Result<(), Skip>, String> {
        let a = self.arg();
        let b = self.arg();
        let dst = self.inp.below(NSLOTS);
        let null_out = self.out_flag();
        let expected: Expect<TM> = (|| {
            if null_out {
                return Err(BC_ERR_NULL_ARG);
            }
            let t = self.resolve(a)?;
            let o = self.resolve(b)?;
            let sizes: Vec<i64> = o.shape.iter().map(|&s| s as i64).collect();
            let (shape, strides) = Self::expand_geometry(&t, &sizes)?;
            Ok(TM {
                shape,
                strides,
                ..t
            })
        })();
        self.note(format!(
            "expand_as({}, {}) -> #{dst}",
            self.describe(a),
            self.describe(b)
        ));
        let (ha, hb) = (self.raw(a), self.raw(b));
        // SAFETY: out NULL or valid.
        self.call_new("expand_as", null_out, dst, expected, |o| unsafe {
            bc_tensor_expand_as(ha, hb, o)
        })
    }

    fn wrap_dim(d: i64, nd: usize) -> Expect<usize> {
        let n = nd as i64;
        let w = if d < 0 {
            d.checked_add(n).unwrap_or(-1)
        } else {
            d
        };
        if (0..n).contains(&w) {
            Ok(w as usize)
        } else {
            Err(BC_ERR_INVALID_ARG)
        }
    }

    fn op_permute(&mut self) -> Result<Result<(), Skip>, String> {
        let a = self.arg();
        let dst = self.inp.below(NSLOTS);
        let null_out = self.out_flag();
        let src = self.resolve(a);
        let nd = src.as_ref().map_or(2, |t| t.ndim());
        // Usually a permutation, sometimes not.
        let mut dims: Vec<i64> = (0..nd as i64).collect();
        for i in (1..dims.len()).rev() {
            let j = self.inp.below(i + 1);
            dims.swap(i, j);
        }
        match self.inp.u8() {
            0..=199 => {}
            200..=219 => dims.iter_mut().for_each(|d| *d -= nd as i64), // negative form
            220..=234 if !dims.is_empty() => dims[0] = self.inp.int(),
            235..=244 => dims.push(0),
            _ => {
                dims.pop();
            }
        }
        let expected: Expect<TM> = (|| {
            if null_out {
                return Err(BC_ERR_NULL_ARG);
            }
            let t = src.clone()?;
            if dims.len() != t.ndim() {
                return Err(BC_ERR_INVALID_ARG);
            }
            let mut seen = vec![false; t.ndim()];
            let (mut shape, mut strides) = (vec![], vec![]);
            for &d in &dims {
                let d = Self::wrap_dim(d, t.ndim())?;
                if seen[d] {
                    return Err(BC_ERR_INVALID_ARG);
                }
                seen[d] = true;
                shape.push(t.shape[d]);
                strides.push(t.strides[d]);
            }
            Ok(TM {
                shape,
                strides,
                ..t
            })
        })();
        self.note(format!("permute({}, {dims:?}) -> #{dst}", self.describe(a)));
        let h = self.raw(a);
        // SAFETY: dims valid for its length; out NULL or valid.
        self.call_new("permute", null_out, dst, expected, |o| unsafe {
            bc_tensor_permute(h, dims.as_ptr(), dims.len(), o)
        })
    }

    fn op_transpose(&mut self) -> Result<Result<(), Skip>, String> {
        let a = self.arg();
        let (d0, d1) = (self.inp.int(), self.inp.int());
        let dst = self.inp.below(NSLOTS);
        let null_out = self.out_flag();
        let expected: Expect<TM> = (|| {
            if null_out {
                return Err(BC_ERR_NULL_ARG);
            }
            let t = self.resolve(a)?;
            // A 0-d tensor takes dims 0 and -1 (PyTorch) and comes back unchanged.
            let nd = t.ndim().max(1);
            let (x, y) = (Self::wrap_dim(d0, nd)?, Self::wrap_dim(d1, nd)?);
            let mut t = t;
            if t.ndim() > 0 {
                t.shape.swap(x, y);
                t.strides.swap(x, y);
            }
            Ok(t)
        })();
        self.note(format!(
            "transpose({}, {d0}, {d1}) -> #{dst}",
            self.describe(a)
        ));
        let h = self.raw(a);
        // SAFETY: out NULL or valid.
        self.call_new("transpose", null_out, dst, expected, |o| unsafe {
            bc_tensor_transpose(h, d0, d1, o)
        })
    }

    fn op_slice(&mut self) -> Result<Result<(), Skip>, String> {
        let a = self.arg();
        // Mostly a valid dimension (either form), sometimes anything.
        let nd = self.resolve(a).map_or(1, |t| t.ndim().max(1)) as i64;
        let dim = match self.inp.u8() {
            b @ 0..=159 => b as i64 % nd,
            b @ 160..=219 => b as i64 % nd - nd,
            _ => self.inp.int(),
        };
        let (start, stop) = (self.inp.int(), self.inp.int());
        let step = match self.inp.u8() {
            b @ 0..=149 => 1 + (b % 3) as i64,
            b @ 150..=199 => {
                [i64::MAX, i64::MAX - 1, i64::MAX / 2 + 1, 1 << 62, 1 << 32][b as usize % 5]
            }
            _ => self.inp.int(),
        };
        let dst = self.inp.below(NSLOTS);
        let null_out = self.out_flag();
        let expected: Expect<TM> = (|| {
            if null_out {
                return Err(BC_ERR_NULL_ARG);
            }
            let t = self.resolve(a)?;
            let d = Self::wrap_dim(dim, t.ndim())?;
            if step < 1 {
                return Err(BC_ERR_INVALID_ARG);
            }
            let len = t.shape[d] as i128;
            let clamp = |i: i64| {
                let i = i as i128;
                if i < 0 {
                    (i + len).max(0)
                } else {
                    i.min(len)
                }
            };
            let (s0, s1) = (clamp(start), clamp(stop));
            let count = if s1 > s0 {
                (s1 - s0 - 1) / step as i128 + 1
            } else {
                0
            };
            let mut out = t.clone();
            if count > 0 {
                // An empty view's offset is not bounded by its storage, so the new offset may
                // not fit: an offset int64 cannot hold is an overflow error.
                let off = t.offset as i128 + s0 * t.strides[d] as i128;
                if off > i64::MAX as i128 {
                    return Err(BC_ERR_OVERFLOW);
                }
                out.offset = off as usize;
            }
            out.shape[d] = count as usize;
            // A dimension of two or more elements gets stride * step (which then fits, as it
            // spans memory the view covered); with fewer the stride is never used and is kept.
            if count > 1 {
                let st = t.strides[d] as i128 * step as i128;
                if st > i64::MAX as i128 {
                    return Err(BC_ERR_OVERFLOW);
                }
                out.strides[d] = st as i64;
            }
            Ok(out)
        })();
        self.note(format!(
            "slice({}, dim {dim}, {start}:{stop}:{step}) -> #{dst}",
            self.describe(a)
        ));
        let h = self.raw(a);
        // SAFETY: out NULL or valid.
        self.call_new("slice", null_out, dst, expected, |o| unsafe {
            bc_tensor_slice(h, dim, start, stop, step, o)
        })
    }

    fn op_as_strided(&mut self) -> Result<Result<(), Skip>, String> {
        let a = self.arg();
        let shape = self.inp.shape();
        let strides: Vec<i64> = (0..shape.len()).map(|_| self.inp.stride()).collect();
        let offset = self.inp.offset();
        let dst = self.inp.below(NSLOTS);
        let null_out = self.out_flag();
        let expected: Expect<TM> = (|| {
            if null_out {
                return Err(BC_ERR_NULL_ARG);
            }
            let dims = Self::dims_in(&shape)?;
            if offset < 0 {
                return Err(BC_ERR_INVALID_ARG);
            }
            let t = self.resolve(a)?;
            let nbytes = self.storages[t.st].nbytes;
            Self::view_bounds(t.dtype, nbytes, &dims, &strides, offset as usize)?;
            Ok(TM {
                shape: dims,
                strides: strides.clone(),
                offset: offset as usize,
                ..t
            })
        })();
        self.note(format!(
            "as_strided({}, {shape:?}, {strides:?}, off {offset}) -> #{dst}",
            self.describe(a)
        ));
        let h = self.raw(a);
        // SAFETY: shape/strides valid for their lengths; out NULL or valid.
        self.call_new("as_strided", null_out, dst, expected, |o| unsafe {
            bc_tensor_as_strided(h, shape.as_ptr(), strides.as_ptr(), shape.len(), offset, o)
        })
    }

    fn op_broadcast_tensors(&mut self) -> Result<Result<(), Skip>, String> {
        let n = self.inp.below(4);
        let args: Vec<Arg> = (0..n).map(|_| self.arg()).collect();
        let dsts: Vec<usize> = (0..n).map(|_| self.inp.below(NSLOTS)).collect();
        let mut distinct = dsts.clone();
        distinct.sort();
        distinct.dedup();
        if distinct.len() != dsts.len() {
            return Ok(Err(Skip));
        }
        let expected: Expect<Vec<TM>> = (|| {
            let ts: Vec<TM> = args
                .iter()
                .map(|&a| self.resolve(a))
                .collect::<Result<_, _>>()?;
            // PyTorch's broadcast_shapes: the model's rule folded from the left.
            let common = ts
                .iter()
                .try_fold(Vec::new(), |acc: Vec<usize>, t| broadcast(&acc, &t.shape))
                .ok_or(BC_ERR_SHAPE)?;
            let sizes: Vec<i64> = common.iter().map(|&s| s as i64).collect();
            ts.iter()
                .map(|t| {
                    let (shape, strides) = Self::expand_geometry(t, &sizes)?;
                    Ok(TM {
                        shape,
                        strides,
                        ..t.clone()
                    })
                })
                .collect()
        })();
        let names: Vec<String> = args.iter().map(|&a| self.describe(a)).collect();
        self.note(format!("broadcast_tensors({names:?}) -> {dsts:?}"));
        let ins: Vec<*const bc_tensor> = args.iter().map(|&a| self.raw(a) as *const _).collect();
        let mut outs = vec![0x55 as *mut bc_tensor; n];
        // SAFETY: ins/outs valid for n entries.
        let st = unsafe { bc_tensor_broadcast_tensors(ins.as_ptr(), n, outs.as_mut_ptr()) };
        let exp_st = expected.as_ref().map_or_else(|&s| s, |_| BC_OK);
        self.check_status("broadcast_tensors", st, exp_st)?;
        match expected {
            Ok(ts) => {
                // Install in an order that frees a destination slot only after every input
                // was read (the model's copies are already taken).
                if outs.iter().any(|o| o.is_null()) {
                    return Err("broadcast_tensors: BC_OK with a NULL out".into());
                }
                let new = ts
                    .into_iter()
                    .enumerate()
                    .map(|(k, t)| (dsts[k], outs[k], t))
                    .collect();
                self.install_all(new)?;
            }
            Err(_) => {
                if outs.iter().any(|o| !o.is_null()) {
                    return Err(format!("broadcast_tensors failed but outs = {outs:?}"));
                }
            }
        }
        Ok(Ok(()))
    }

    /// The contract's operation, on the model: checks in the library's order, then the values.
    /// `dest`: None for out of place; Some((t, is_inplace)). `number`: which operand (0 or 1), if
    /// any, is a number (a 0-d bool, int64 or float64 holding its value exactly).
    fn model_binary(
        &self,
        op_code: i32,
        a: &TM,
        b: &TM,
        dest: Option<(&TM, bool)>,
        number: Option<usize>,
    ) -> Result<Expect<(Vec<usize>, i32, Vec<Option<Num>>, [usize; 3])>, Skip> {
        let mut warnings = [0usize; 3];
        // Defined for the types.
        if op_code == BC_OP_SUB && (a.dtype == BOOL || b.dtype == BOOL) {
            return Ok(Err(BC_ERR_DTYPE));
        }
        let inplace = matches!(dest, Some((_, true)));
        // Overlapping writes (before shapes, as PyTorch's TensorIterator does).
        if let Some((d, _)) = dest {
            if self.internal_overlap(d) {
                return Ok(Err(BC_ERR_OVERLAP));
            }
            let inputs: Vec<&TM> = if inplace { vec![b] } else { vec![a, b] };
            if inputs.iter().any(|i| self.partial_overlap(d, i)) {
                return Ok(Err(BC_ERR_OVERLAP));
            }
        }
        // Shapes, with the legacy fallback.
        let mut fallback = false;
        let shape: Vec<usize> = if inplace {
            let s = &a.shape;
            if inplace_shape(s, &b.shape).is_ok() {
                if self.warn && a.shape != b.shape && a.numel() == b.numel() {
                    warnings[WARN_CHANGE] += 1;
                }
                s.clone()
            } else if self.legacy && a.numel() == b.numel() {
                fallback = true;
                warnings[WARN_FALLBACK_INPLACE] += 1;
                s.clone()
            } else {
                return Ok(Err(BC_ERR_SHAPE));
            }
        } else {
            match broadcast(&a.shape, &b.shape) {
                Some(s) => {
                    if self.warn && a.shape != b.shape && a.numel() == b.numel() {
                        warnings[WARN_CHANGE] += 1;
                    }
                    s
                }
                None if self.legacy && a.numel() == b.numel() => {
                    fallback = true;
                    warnings[WARN_FALLBACK] += 1;
                    a.shape.clone()
                }
                None => return Ok(Err(BC_ERR_SHAPE)),
            }
        };
        if let Some((d, false)) = dest {
            if d.shape != shape {
                return Ok(Err(BC_ERR_SHAPE));
            }
        }
        // Allocations the library makes: a row-major copy of `b` under the fallback when it is
        // not contiguous, the result (out of place) or a temporary (when the destination type is
        // not the computation type), converted copies of inputs of another type.
        let b_ndim = if fallback { a.ndim() } else { b.ndim() };
        // A number ranks below 0-d tensors and raises only the category, a floating one counting
        // as float32 (docs/semantics.md, section 6).
        let as_number = |dt: i32| if dt == F64 { F32 } else { dt };
        let promoted = match number {
            Some(0) => result_type(as_number(a.dtype), true, b.dtype, false),
            Some(_) => result_type(a.dtype, false, as_number(b.dtype), true),
            None => result_type(a.dtype, a.ndim() == 0, b.dtype, b_ndim == 0),
        };
        let ct = compute_type(op_code, promoted);
        if fallback && !self.contiguous(b) {
            if let Err(s) = predict_allocs(&[(b.numel(), itemsize(b.dtype))])? {
                return Ok(Err(s));
            }
        }
        let mut allocs: Vec<(u128, usize)> = Vec::new();
        let rt = binary_result(op_code, ct);
        match dest {
            None => allocs.push((numel_of(&shape), itemsize(rt))),
            Some((d, _)) => {
                if !can_cast(rt, d.dtype) {
                    return Ok(Err(BC_ERR_DTYPE));
                }
                if d.dtype != rt {
                    allocs.push((d.numel(), itemsize(rt)));
                }
            }
        }
        // An empty result needs no element of any input, so no input is converted.
        if numel_of(&shape) > 0 {
            for t in [a, b] {
                if t.dtype != ct {
                    allocs.push((t.numel(), itemsize(ct)));
                }
            }
        }
        // The library refuses any of these too large to exist before it makes the first (as its
        // planner counts them all first), so an overflow comes before an allocation that fails.
        if allocs
            .iter()
            .any(|&(n, size)| matches!(predict_alloc(n, size), Alloc::Fail(BC_ERR_OVERFLOW)))
        {
            return Ok(Err(BC_ERR_OVERFLOW));
        }
        if let Err(s) = predict_allocs(&allocs)? {
            return Ok(Err(s));
        }
        if numel_of(&shape) > MAX_CHECK_ELEMS {
            return Err(Skip);
        }
        // Values: element by element, from a snapshot of the inputs.
        let out_shape = shape.clone();
        let nd = out_shape.len();
        let pick = |t: &TM, idx: &[usize]| -> Vec<usize> {
            let lead = nd - t.ndim();
            (0..t.ndim())
                .map(|k| if t.shape[k] == 1 { 0 } else { idx[lead + k] })
                .collect()
        };
        let b_flat = if fallback { Some(self.values(b)) } else { None };
        let dest_dtype = dest.map_or(rt, |d| d.0.dtype);
        // PyTorch's mul and div in float16/bfloat16 read a one-element second operand of another
        // type straight into float32, not rounded to the computation type first
        // (docs/semantics.md section 11).
        let f32_scalar = matches!(op_code, BC_OP_MUL | BC_OP_DIV)
            && matches!(ct, F16 | BF16)
            && a.dtype == ct
            && b.dtype != ct
            && b.numel() == 1;
        let values = indices(&out_shape)
            .iter()
            .enumerate()
            .map(|(k, idx)| {
                let x = self.read(a, &pick(a, idx))?;
                let y = match &b_flat {
                    Some(flat) => flat[k]?,
                    None => self.read(b, &pick(b, idx))?,
                };
                let v = match y.cast(F32) {
                    Num::F(s) if f32_scalar => {
                        let x = x.to_f64() as f32; // exact: `a` has the computation type
                        let r = if op_code == BC_OP_MUL { x * s } else { x / s };
                        Num::from_f64(ct, r as f64)
                    }
                    _ => binary_value(op_code, x.cast(ct), y.cast(ct)),
                };
                Some(v.cast(dest_dtype))
            })
            .collect();
        Ok(Ok((out_shape, ct, values, warnings)))
    }

    /// A binary code: from `BC_OP_COUNT` (None for a valid one the model does not compute), or
    /// one of the four arithmetic ones.
    fn binary_code(&mut self, every_code: bool) -> Option<i32> {
        if !every_code {
            return Some(self.op_code());
        }
        let op = self.any_op_code();
        let unmodelled = (0..BC_OP_COUNT).contains(&op) && !binary_modelled(op);
        (!unmodelled).then_some(op)
    }

    fn contiguous(&self, t: &TM) -> bool {
        if t.numel() == 0 {
            return true;
        }
        let mut expected = 1i128;
        for (&n, &s) in t.shape.iter().zip(&t.strides).rev() {
            if n != 1 {
                if s as i128 != expected {
                    return false;
                }
                expected *= n as i128;
            }
        }
        true
    }

    /// One of the four arithmetic operations (`BC_OP_ADD` to `BC_OP_DIV`), or a code that is no
    /// operation (the decoding the corpus was recorded with).
    fn op_code(&mut self) -> i32 {
        let b = self.inp.u8();
        let past_last = BC_OP_COUNT;
        if b < 250 {
            (b % 4) as i32
        } else {
            [past_last, -1, 100, i32::MIN, i32::MAX, past_last + 1][(b - 250) as usize]
        }
    }

    /// `every_code`: the code is drawn from `BC_OP_COUNT` (those the model does not compute are
    /// skipped), else one of the four arithmetic ones.
    fn op_binary(&mut self, every_code: bool) -> Result<Result<(), Skip>, String> {
        let Some(op) = self.binary_code(every_code) else {
            return Ok(Err(Skip));
        };
        let a = self.arg();
        let b = self.arg();
        let dst = self.inp.below(NSLOTS);
        let null_out = self.out_flag();
        let via_named = self.inp.flag();
        let mut warnings = [0; 3];
        let expected: Expect<TM> = match (|| -> Result<Expect<_>, Skip> {
            if null_out {
                return Ok(Err(BC_ERR_NULL_ARG));
            }
            if !(0..BC_OP_COUNT).contains(&op) {
                return Ok(Err(BC_ERR_INVALID_ARG));
            }
            let ta = match self.resolve(a) {
                Ok(t) => t,
                Err(s) => return Ok(Err(s)),
            };
            let tb = match self.resolve(b) {
                Ok(t) => t,
                Err(s) => return Ok(Err(s)),
            };
            self.model_binary(op, &ta, &tb, None, None)
        })() {
            Err(Skip) => return Ok(Err(Skip)),
            Ok(Err(s)) => Err(s),
            Ok(Ok((shape, ct, values, w))) => {
                warnings = w;
                let (ta, tb) = (self.resolve(a).unwrap(), self.resolve(b).unwrap());
                // Under the fallback `b` is read as a row-major tensor of `a`'s shape.
                let b_geometry = if broadcast(&ta.shape, &tb.shape).is_some() {
                    (tb.shape.clone(), tb.strides.clone())
                } else {
                    (ta.shape.clone(), contiguous_strides(&ta.shape))
                };
                let strides = result_layout(
                    &shape,
                    &[
                        (ta.shape.clone(), ta.strides.clone(), ta.dtype != ct),
                        (b_geometry.0, b_geometry.1, tb.dtype != ct),
                    ],
                );
                let rt = binary_result(op, ct);
                Ok(self.new_tensor_strided(rt, &shape, strides, Some(values)))
            }
        };
        self.note(format!(
            "binary(op {op}, {}, {}) -> #{dst}",
            self.describe(a),
            self.describe(b)
        ));
        let (ha, hb) = (self.raw(a), self.raw(b));
        let named = via_named && (0..BC_OP_COUNT).contains(&op);
        let ok = expected.is_ok();
        // SAFETY: out NULL or valid.
        let r = self.call_new("binary", null_out, dst, expected, |o| unsafe {
            if named {
                named::named_binary(op).0(ha, hb, o)
            } else {
                bc_binary(op, ha, hb, o)
            }
        });
        if ok {
            for (e, w) in self.expected_warnings.iter_mut().zip(warnings) {
                *e += w;
            }
        }
        r
    }

    fn op_inplace(&mut self, every_code: bool) -> Result<Result<(), Skip>, String> {
        let Some(op) = self.binary_code(every_code) else {
            return Ok(Err(Skip));
        };
        let a = self.arg();
        let b = self.arg();
        let via_named = self.inp.flag();
        self.op_write(op, a, b, None, via_named)
    }

    fn op_out(&mut self, every_code: bool) -> Result<Result<(), Skip>, String> {
        let Some(op) = self.binary_code(every_code) else {
            return Ok(Err(Skip));
        };
        let a = self.arg();
        let b = self.arg();
        let out = self.arg();
        let via_named = self.inp.flag();
        self.op_write(op, a, b, Some(out), via_named)
    }

    /// In place (`out` None: `a op= b`) or into `out`.
    fn op_write(
        &mut self,
        op: i32,
        a: Arg,
        b: Arg,
        out: Option<Arg>,
        via_named: bool,
    ) -> Result<Result<(), Skip>, String> {
        let model = (|| -> Result<Expect<_>, Skip> {
            if !(0..BC_OP_COUNT).contains(&op) {
                return Ok(Err(BC_ERR_INVALID_ARG));
            }
            let ta = match self.resolve(a) {
                Ok(t) => t,
                Err(s) => return Ok(Err(s)),
            };
            let tb = match self.resolve(b) {
                Ok(t) => t,
                Err(s) => return Ok(Err(s)),
            };
            let d = match out {
                None => ta.clone(),
                Some(o) => match self.resolve(o) {
                    Ok(t) => t,
                    Err(s) => return Ok(Err(s)),
                },
            };
            Ok(self
                .model_binary(op, &ta, &tb, Some((&d, out.is_none())), None)?
                .map(|r| (d, r)))
        })();
        let expected = match model {
            Err(Skip) => return Ok(Err(Skip)),
            Ok(e) => e,
        };
        let what = if out.is_some() { "out" } else { "inplace" };
        self.note(format!(
            "{what}(op {op}, {}, {}{})",
            self.describe(a),
            self.describe(b),
            out.map_or(String::new(), |o| format!(", out {}", self.describe(o)))
        ));
        let (ha, hb) = (self.raw(a), self.raw(b));
        let named = via_named && (0..BC_OP_COUNT).contains(&op);
        let st = match out {
            None if named => named::named_binary(op).1(ha, hb),
            None => bc_binary_inplace(op, ha, hb),
            Some(o) => {
                let ho = self.raw(o);
                if named {
                    named::named_binary(op).2(ha, hb, ho)
                } else {
                    bc_binary_out(op, ha, hb, ho)
                }
            }
        };
        let exp_st = expected.as_ref().map_or_else(|&s| s, |_| BC_OK);
        self.check_status(what, st, exp_st)?;
        if let Ok((d, (_, _, values, w))) = expected {
            for (e, w) in self.expected_warnings.iter_mut().zip(w) {
                *e += w;
            }
            for (i, v) in values.into_iter().enumerate() {
                self.write_at(&d, i, v);
            }
        }
        Ok(Ok(()))
    }

    fn op_query(&mut self) -> Result<Result<(), Skip>, String> {
        let a = self.arg();
        let cap_choice = self.inp.below(4);
        let bytes_choice = self.inp.below(5);
        let t = self.resolve(a);
        self.note(format!("queries({})", self.describe(a)));
        let h = self.raw(a);
        let handle_status = t.as_ref().map_or_else(|&s| s, |_| BC_OK);
        // Scalar queries with a NULL out-pointer: NULL_ARG before the handle is looked at.
        // SAFETY: NULL out-pointers are refused before any write.
        let st = unsafe { bc_tensor_ndim(h, ptr::null_mut()) };
        self.check_status("ndim(NULL out)", st, BC_ERR_NULL_ARG)?;
        let mut v = 0i64;
        // SAFETY: valid out-pointer.
        let st = unsafe { bc_tensor_numel(h, &mut v) };
        self.check_status("numel", st, handle_status)?;
        // shape/strides with various capacities.
        let nd = t.as_ref().map_or(0, |t| t.ndim());
        let cap = match cap_choice {
            0 => nd,
            1 => nd + 3,
            2 => nd.saturating_sub(1),
            _ => 0,
        };
        let mut buf = vec![-7i64; cap + 2];
        let bufp = if cap == 0 && cap_choice == 3 {
            ptr::null_mut()
        } else {
            buf.as_mut_ptr()
        };
        let want = match &t {
            Err(s) => *s,
            Ok(t) if cap < t.ndim() => BC_ERR_BUFFER_TOO_SMALL,
            Ok(_) => BC_OK,
        };
        // SAFETY: buf holds cap + 2 entries (or is NULL with cap 0).
        let st = unsafe { bc_tensor_shape(h, bufp, cap) };
        self.check_status("shape", st, want)?;
        // SAFETY: as above.
        let st = unsafe { bc_tensor_strides(h, bufp, cap) };
        self.check_status("strides", st, want)?;
        if buf[cap..].iter().any(|&x| x != -7) {
            return Err("shape/strides wrote past the capacity".into());
        }
        // copy_to with too little, exactly enough, or more room.
        let (need, too_big) = match &t {
            Ok(t) => {
                let bytes = t.numel() * itemsize(t.dtype) as u128;
                (
                    bytes,
                    t.numel() > isize::MAX as u128 || bytes > isize::MAX as u128,
                )
            }
            Err(_) => (0, false),
        };
        if too_big {
            // The byte count overflows: refused before the buffer is looked at.
            let mut small = vec![0xEEu8; 16];
            // SAFETY: 16 bytes.
            let st = unsafe { bc_tensor_copy_to(h, small.as_mut_ptr().cast(), 16) };
            self.check_status("copy_to overflow", st, BC_ERR_OVERFLOW)?;
            if small.iter().any(|&x| x != 0xEE) {
                return Err("copy_to wrote although it failed".into());
            }
            return Ok(Ok(()));
        }
        if need > MAX_ALLOC_BYTES {
            // Only ask with a small buffer: BUFFER_TOO_SMALL, nothing written.
            let mut small = vec![0xEEu8; 64];
            // SAFETY: 64 bytes.
            let st = unsafe { bc_tensor_copy_to(h, small.as_mut_ptr().cast(), 64) };
            self.check_status("copy_to small", st, BC_ERR_BUFFER_TOO_SMALL)?;
            if small.iter().any(|&x| x != 0xEE) {
                return Err("copy_to wrote although the buffer was too small".into());
            }
            return Ok(Ok(()));
        }
        let need = need as usize;
        let given = match bytes_choice {
            0 => need,
            1 => need + 5,
            2 => need.saturating_sub(1),
            3 => 0,
            _ => need / 2,
        };
        let mut bytes = vec![0xEEu8; given + 8];
        let bp = if given == 0 && bytes_choice == 3 {
            ptr::null_mut()
        } else {
            bytes.as_mut_ptr()
        };
        let want = match &t {
            Err(s) => *s,
            Ok(_) if given < need => BC_ERR_BUFFER_TOO_SMALL,
            Ok(_) => BC_OK,
        };
        // SAFETY: bytes holds given + 8 bytes (or NULL with 0).
        let st = unsafe { bc_tensor_copy_to(h, bp.cast(), given) };
        self.check_status("copy_to", st, want)?;
        let written = if st == BC_OK { need } else { 0 };
        if bytes[written..].iter().any(|&x| x != 0xEE) {
            return Err("copy_to wrote outside the bytes it had to write".into());
        }
        Ok(Ok(()))
    }

    fn op_shapes(&mut self) -> Result<Result<(), Skip>, String> {
        let n = self.inp.below(4);
        let shapes: Vec<Vec<i64>> = (0..n.max(2)).map(|_| self.inp.shape()).collect();
        let cap_choice = self.inp.below(3);
        self.note(format!("shapes({shapes:?})"));
        let dims: Vec<Expect<Vec<usize>>> = shapes.iter().map(|s| Self::dims_in(s)).collect();
        // Two shapes.
        let (a, b) = (&shapes[0], &shapes[1]);
        let max_nd = a.len().max(b.len());
        let cap = match cap_choice {
            0 => max_nd,
            1 => max_nd + 2,
            _ => max_nd.saturating_sub(1),
        };
        let mut out = vec![-9i64; cap + 1];
        let mut nd = 12345usize;
        let want: Expect<Vec<usize>> = (|| {
            let (x, y) = (dims[0].clone()?, dims[1].clone()?);
            let s = broadcast(&x, &y).ok_or(BC_ERR_SHAPE)?;
            if cap < s.len() {
                return Err(BC_ERR_BUFFER_TOO_SMALL);
            }
            Ok(s)
        })();
        // SAFETY: arrays valid for their lengths; out holds cap + 1.
        let st = unsafe {
            bc_shape_broadcast(
                a.as_ptr(),
                a.len(),
                b.as_ptr(),
                b.len(),
                out.as_mut_ptr(),
                cap,
                &mut nd,
            )
        };
        self.check_status(
            "shape_broadcast",
            st,
            want.as_ref().map_or_else(|&s| s, |_| BC_OK),
        )?;
        if dims[0].is_ok() && dims[1].is_ok() && nd != max_nd {
            return Err(format!(
                "shape_broadcast: *out_ndim {nd}, expected {max_nd}"
            ));
        }
        if let Ok(s) = &want {
            let got: Vec<usize> = out[..s.len()].iter().map(|&x| x as usize).collect();
            if &got != s {
                return Err(format!("shape_broadcast: {got:?}, model {s:?}"));
            }
        }
        if out[cap] != -9 {
            return Err("shape_broadcast wrote past its capacity".into());
        }
        // is_broadcastable.
        let mut yes = false;
        let want_b: Expect<bool> =
            (|| Ok(broadcast(&dims[0].clone()?, &dims[1].clone()?).is_some()))();
        // SAFETY: valid pointers.
        let st = unsafe {
            bc_shape_is_broadcastable(a.as_ptr(), a.len(), b.as_ptr(), b.len(), &mut yes)
        };
        self.check_status("is_broadcastable", st, want_b.map_or_else(|s| s, |_| BC_OK))?;
        if let Ok(w) = want_b {
            if yes != w {
                return Err(format!("is_broadcastable: {yes}, model {w}"));
            }
        }
        // n shapes (PyTorch's broadcast_shapes).
        let k = n;
        let ptrs: Vec<*const i64> = shapes[..k].iter().map(|s| s.as_ptr()).collect();
        let lens: Vec<usize> = shapes[..k].iter().map(|s| s.len()).collect();
        let mut out_n = vec![-9i64; 8];
        let mut nd_n = 0usize;
        // PyTorch's loop, on the sizes as given: shape by shape, each from its last size, an
        // equal size passes, a common 1 takes the size unless it is negative (an invalid
        // argument), a 1 passes, anything else is a mismatch.
        let want_n: Expect<Vec<usize>> = (|| {
            let nd = shapes[..k].iter().map(|s| s.len()).max().unwrap_or(0);
            let mut common = vec![1i64; nd];
            for s in &shapes[..k] {
                for back in 1..=s.len() {
                    let (size, slot) = (s[s.len() - back], &mut common[nd - back]);
                    if size == *slot {
                        continue;
                    }
                    if *slot == 1 {
                        if size < 0 {
                            return Err(BC_ERR_INVALID_ARG);
                        }
                        *slot = size;
                    } else if size != 1 {
                        return Err(BC_ERR_SHAPE);
                    }
                }
            }
            Ok(common.iter().map(|&n| n as usize).collect())
        })();
        // SAFETY: arrays valid for k entries; out_n holds 8 (every shape has at most 5 dims).
        let st = unsafe {
            bc_shape_broadcast_n(
                ptrs.as_ptr(),
                lens.as_ptr(),
                k,
                out_n.as_mut_ptr(),
                7,
                &mut nd_n,
            )
        };
        self.check_status(
            "shape_broadcast_n",
            st,
            want_n.as_ref().map_or_else(|&s| s, |_| BC_OK),
        )?;
        if let Ok(s) = &want_n {
            let got: Vec<usize> = out_n[..nd_n].iter().map(|&x| x as usize).collect();
            if &got != s {
                return Err(format!("shape_broadcast_n: {got:?}, model {s:?}"));
            }
        }
        Ok(Ok(()))
    }

    fn op_switch(&mut self) -> Result<Result<(), Skip>, String> {
        let which = self.inp.below(4);
        let v = self.inp.u8();
        match which {
            0 => {
                self.legacy = v & 1 == 1;
                assert_eq!(bc_set_legacy_fallback(self.legacy), BC_OK);
                self.note(format!("legacy_fallback({})", self.legacy));
            }
            1 => {
                self.warn = v & 1 == 1;
                assert_eq!(bc_set_broadcast_warning(self.warn), BC_OK);
                self.note(format!("broadcast_warning({})", self.warn));
            }
            2 => {
                let th = [0usize, 1, 2, 7][v as usize % 4];
                assert_eq!(bc_set_parallel_threshold(th), BC_OK);
                self.note(format!("parallel_threshold({th})"));
            }
            _ => {
                let n = [0usize, 1, 2, 3][v as usize % 4];
                assert_eq!(bc_set_num_threads(n), BC_OK);
                self.note(format!("num_threads({n})"));
            }
        }
        if bc_get_legacy_fallback() != self.legacy || bc_get_broadcast_warning() != self.warn {
            return Err("switch getters disagree with the setters".into());
        }
        Ok(Ok(()))
    }

    /// The caller writes into its own wrapped memory: every view over it sees the change.
    fn op_poke(&mut self) -> Result<Result<(), Skip>, String> {
        let buf = self.inp.below(NBUFS);
        let at = self.inp.below(BUF_BYTES);
        let n = 1 + self.inp.below(16);
        let bytes: Vec<u8> = (0..n).map(|_| self.inp.u8()).collect();
        self.note(format!("poke(buf{buf}+{at}, {bytes:?})"));
        let real = self.arena[buf].as_mut_ptr() as *mut u8;
        for (k, &v) in bytes.iter().enumerate() {
            let i = at + k;
            if i >= BUF_BYTES {
                break;
            }
            // SAFETY: inside the buffer.
            unsafe { real.add(i).write(v) };
            self.mirror[buf].bytes[i] = v;
            self.mirror[buf].known[i] = true;
        }
        Ok(Ok(()))
    }

    fn op_panic(&mut self) -> Result<Result<(), Skip>, String> {
        self.note("debug_panic()".into());
        let st = bc_debug_panic();
        self.check_status("debug_panic", st, BC_ERR_INTERNAL)?;
        Ok(Ok(()))
    }
}

/// The comparisons and logical operations give bool, the others their computation type (the
/// operation table's `bool_result`).
fn binary_result(op: i32, ct: i32) -> i32 {
    if testkit::NAMED_OPS[op as usize].bool_result {
        BOOL
    } else {
        ct
    }
}

/// The operations whose values the model computes (docs/semantics.md, sections 6 and 11).
fn binary_modelled(op: i32) -> bool {
    matches!(
        op,
        BC_OP_ADD
            | BC_OP_SUB
            | BC_OP_MUL
            | BC_OP_DIV
            | BC_OP_EQ
            | BC_OP_NE
            | BC_OP_LT
            | BC_OP_LE
            | BC_OP_GT
            | BC_OP_GE
            | BC_OP_MAXIMUM
            | BC_OP_MINIMUM
            | BC_OP_LOGICAL_AND
            | BC_OP_LOGICAL_OR
            | BC_OP_LOGICAL_XOR
    )
}

/// `x op y`, both of the computation type: comparisons unordered and unequal for NaN, logical
/// operations on truth values (NaN is true), `maximum`/`minimum` NaN when either is (else C++'s
/// `std::max`/`std::min`: a tie keeps the first), bools or/and.
fn binary_value(op: i32, x: Num, y: Num) -> Num {
    let dt = x.dtype();
    let truth = |v: Num| v.is_nan() || v.to_f64() != 0.0;
    match op {
        BC_OP_ADD | BC_OP_SUB | BC_OP_MUL | BC_OP_DIV => x.apply(op, y),
        BC_OP_LOGICAL_AND => Num::B(truth(x) && truth(y)),
        BC_OP_LOGICAL_OR => Num::B(truth(x) || truth(y)),
        BC_OP_LOGICAL_XOR => Num::B(truth(x) != truth(y)),
        BC_OP_MAXIMUM | BC_OP_MINIMUM => {
            let max = op == BC_OP_MAXIMUM;
            if is_float(dt) {
                let (a, b) = (x.to_f64(), y.to_f64());
                let r = if a.is_nan() || b.is_nan() {
                    f64::NAN
                } else if (max && a < b) || (!max && b < a) {
                    b
                } else {
                    a
                };
                Num::from_f64(dt, r)
            } else {
                let (a, b) = (x.to_i64(), y.to_i64());
                Num::from_i64(dt, if max { a.max(b) } else { a.min(b) })
            }
        }
        _ => {
            let ord = if is_float(dt) {
                x.to_f64().partial_cmp(&y.to_f64())
            } else {
                Some(x.to_i64().cmp(&y.to_i64()))
            };
            use std::cmp::Ordering::*;
            Num::B(match op {
                BC_OP_EQ => ord == Some(Equal),
                BC_OP_NE => ord != Some(Equal),
                BC_OP_LT => ord == Some(Less),
                BC_OP_LE => matches!(ord, Some(Less | Equal)),
                BC_OP_GT => ord == Some(Greater),
                _ => matches!(ord, Some(Greater | Equal)),
            })
        }
    }
}

fn unflatten(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        idx[d] = flat % shape[d];
        flat /= shape[d];
    }
    idx
}

/// A simple deterministic generator for random programs (no dependency).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    pub fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A random program of 32..1024 bytes.
    pub fn program(&mut self) -> Vec<u8> {
        let len = 32 + (self.next() % 992) as usize;
        (0..len).map(|_| self.next() as u8).collect()
    }
    /// A copy of `base` with a few bytes changed, inserted or removed.
    pub fn mutate(&mut self, base: &[u8]) -> Vec<u8> {
        let mut v = base.to_vec();
        for _ in 0..1 + self.next() % 8 {
            let pos = if v.is_empty() {
                0
            } else {
                (self.next() as usize) % v.len()
            };
            match self.next() % 4 {
                0 if !v.is_empty() => v[pos] = self.next() as u8,
                1 => v.insert(pos, self.next() as u8),
                2 if !v.is_empty() => {
                    v.remove(pos);
                }
                _ => v.extend((0..self.next() % 32).map(|_| self.next() as u8)),
            }
        }
        v
    }
}
