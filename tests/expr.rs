//! Fused expressions through the C ABI, against the separate calls they
//! stand for: `bc_expr_eval` / `bc_expr_eval_out` must give exactly what `bc_binary`,
//! `bc_where` and 0-d constants give step by step (the same bits, or the same status and
//! message, and the same warnings), on random programs over every operation and dtype; the
//! single pass must really be single (no intermediate tensors); and a caller's `out` follows the
//! separate calls' overlap rules.

use broadcast::engine::storage;
use broadcast::engine::stream::{self, Streaming};
use broadcast::ffi::*;
use std::ffi::{c_char, c_void, CStr};
use std::ptr;
use std::sync::Mutex;
use testkit::*;

/// The switches and the warning handler are process-wide: tests that depend on them take turns.
static SETTINGS: Mutex<()> = Mutex::new(());

fn settings() -> std::sync::MutexGuard<'static, ()> {
    SETTINGS.lock().unwrap_or_else(|e| e.into_inner())
}

fn input(i: i32) -> bc_expr_step {
    bc_expr_step {
        kind: BC_EXPR_INPUT,
        arg: i,
        int_value: 0,
        float_value: 0.0,
    }
}

fn op(code: i32) -> bc_expr_step {
    bc_expr_step {
        kind: BC_EXPR_OP,
        arg: code,
        int_value: 0,
        float_value: 0.0,
    }
}

fn constant(dtype: i32, int_value: i64, float_value: f64) -> bc_expr_step {
    bc_expr_step {
        kind: BC_EXPR_CONST,
        arg: dtype,
        int_value,
        float_value,
    }
}

fn unary_step(code: i32) -> bc_expr_step {
    bc_expr_step {
        kind: BC_EXPR_UNARY,
        arg: code,
        int_value: 0,
        float_value: 0.0,
    }
}

/// A ternary step; its `value` (addcmul, addcdiv) in `float_value`, or in `int_value` when
/// `float_value` is +0.0.
fn ternary_step(code: i32, int_value: i64, float_value: f64) -> bc_expr_step {
    bc_expr_step {
        kind: BC_EXPR_TERNARY,
        arg: code,
        int_value,
        float_value,
    }
}

/// A ternary step's `value` as the separate call takes it, as `BC_EXPR_TERNARY` documents.
fn ternary_value(s: &bc_expr_step) -> bc_scalar {
    match s.float_value.to_bits() {
        0 => bc_scalar_int(s.int_value),
        _ => bc_scalar_float(s.float_value),
    }
}

fn where_step() -> bc_expr_step {
    bc_expr_step {
        kind: BC_EXPR_WHERE,
        arg: 0,
        int_value: 0,
        float_value: 0.0,
    }
}

fn handles(inputs: &[&T]) -> Vec<*const bc_tensor> {
    inputs.iter().map(|t| t.ptr()).collect()
}

fn eval(steps: &[bc_expr_step], inputs: &[&T]) -> Result<T, Err> {
    let h = handles(inputs);
    let mut out: *mut bc_tensor = std::ptr::dangling_mut();
    // SAFETY: both arrays hold their lengths; out is valid for one write.
    let s = unsafe { bc_expr_eval(steps.as_ptr(), steps.len(), h.as_ptr(), h.len(), &mut out) };
    if s == BC_OK {
        Ok(T(out))
    } else {
        assert!(out.is_null(), "bc_expr_eval failed but left *out set");
        Err(Err {
            status: s,
            msg: last_error(),
        })
    }
}

fn eval_out(steps: &[bc_expr_step], inputs: &[&T], out: &T) -> Result<(), Err> {
    let h = handles(inputs);
    // SAFETY: both arrays hold their lengths.
    check(unsafe {
        bc_expr_eval_out(
            steps.as_ptr(),
            steps.len(),
            h.as_ptr(),
            h.len(),
            out.mut_ptr(),
        )
    })
}

/// The constant of a step as `bc_expr_step` documents it: a 0-d tensor of its dtype (floats as
/// `bc_tensor_full` makes them, integers by a wrapping cast, bool non-zero).
fn constant_tensor(s: &bc_expr_step) -> T {
    let bytes: Vec<u8> = match s.arg {
        BOOL => vec![(s.int_value != 0) as u8],
        U8 => vec![s.int_value as u8],
        I8 => vec![s.int_value as i8 as u8],
        I16 => (s.int_value as i16).to_le_bytes().to_vec(),
        I32 => (s.int_value as i32).to_le_bytes().to_vec(),
        I64 => s.int_value.to_le_bytes().to_vec(),
        _ => return T::full(s.arg, &[], s.float_value).expect("a floating constant"),
    };
    T::from_bytes(s.arg, &[], &bytes).expect("an integer constant")
}

/// What the separate calls give: each operation a call, the last one into `out` when given.
fn reference(steps: &[bc_expr_step], inputs: &[&T], out: Option<&T>) -> Result<Option<T>, Err> {
    enum Val<'a> {
        In(&'a T),
        Made(T),
    }
    let get = |v: &Val| -> *const bc_tensor {
        match v {
            Val::In(t) => t.ptr(),
            Val::Made(t) => t.ptr(),
        }
    };
    let mut stack: Vec<Val> = Vec::new();
    for (k, s) in steps.iter().enumerate() {
        let into = if k + 1 == steps.len() { out } else { None };
        match s.kind {
            BC_EXPR_INPUT => stack.push(Val::In(inputs[s.arg as usize])),
            BC_EXPR_CONST => stack.push(Val::Made(constant_tensor(s))),
            BC_EXPR_UNARY => {
                let x = stack.pop().unwrap();
                match into {
                    Some(o) => check(bc_unary_out(s.arg, get(&x), o.mut_ptr()))?,
                    None => {
                        let mut t: *mut bc_tensor = ptr::null_mut();
                        // SAFETY: `t` is valid for one write.
                        check(unsafe { bc_unary(s.arg, get(&x), &mut t) })?;
                        stack.push(Val::Made(T(t)));
                    }
                }
            }
            BC_EXPR_TERNARY => {
                let (c, b, x) = (
                    stack.pop().unwrap(),
                    stack.pop().unwrap(),
                    stack.pop().unwrap(),
                );
                let (x, b, c, v) = (get(&x), get(&b), get(&c), ternary_value(s));
                let o = into.map_or(ptr::null_mut(), |o| o.mut_ptr());
                let mut t: *mut bc_tensor = ptr::null_mut();
                // SAFETY: `t` is valid for one write.
                let status = unsafe {
                    match (s.arg, into.is_some()) {
                        (BC_TERNARY_LERP, false) => bc_lerp(x, b, c, &mut t),
                        (BC_TERNARY_LERP, true) => bc_lerp_out(x, b, c, o),
                        (BC_TERNARY_ADDCMUL, false) => bc_addcmul(x, b, c, v, &mut t),
                        (BC_TERNARY_ADDCMUL, true) => bc_addcmul_out(x, b, c, v, o),
                        (BC_TERNARY_ADDCDIV, false) => bc_addcdiv(x, b, c, v, &mut t),
                        (BC_TERNARY_ADDCDIV, true) => bc_addcdiv_out(x, b, c, v, o),
                        (BC_TERNARY_CLAMP, false) => bc_clamp(x, b, c, &mut t),
                        (BC_TERNARY_CLAMP, true) => bc_clamp_out(x, b, c, o),
                        (code, _) => panic!("no ternary operation {code}"),
                    }
                };
                check(status)?;
                if into.is_none() {
                    stack.push(Val::Made(T(t)));
                }
            }
            BC_EXPR_OP => {
                let (b, a) = (stack.pop().unwrap(), stack.pop().unwrap());
                match into {
                    Some(o) => check(bc_binary_out(s.arg, get(&a), get(&b), o.mut_ptr()))?,
                    None => {
                        let mut t: *mut bc_tensor = ptr::null_mut();
                        // SAFETY: `t` is valid for one write.
                        check(unsafe { bc_binary(s.arg, get(&a), get(&b), &mut t) })?;
                        stack.push(Val::Made(T(t)));
                    }
                }
            }
            _ => {
                let (b, a, c) = (
                    stack.pop().unwrap(),
                    stack.pop().unwrap(),
                    stack.pop().unwrap(),
                );
                match into {
                    Some(o) => check(bc_where_out(get(&c), get(&a), get(&b), o.mut_ptr()))?,
                    None => {
                        let mut t: *mut bc_tensor = ptr::null_mut();
                        // SAFETY: as above.
                        check(unsafe { bc_where(get(&c), get(&a), get(&b), &mut t) })?;
                        stack.push(Val::Made(T(t)));
                    }
                }
            }
        }
    }
    Ok(match (out, stack.pop()) {
        (None, Some(Val::Made(t))) => Some(t),
        _ => None,
    })
}

/// Same dtype, shape, layout and bytes (every bit: the same kernels run on the same types).
fn same(got: &T, want: &T) -> Result<(), String> {
    if got.dtype() != want.dtype() || got.shape() != want.shape() {
        return Err(format!(
            "{} {:?} instead of {} {:?}",
            dtype_str(got.dtype()),
            got.shape(),
            dtype_str(want.dtype()),
            want.shape()
        ));
    }
    if got.strides() != want.strides() {
        return Err(format!(
            "strides {:?} instead of {:?}",
            got.strides(),
            want.strides()
        ));
    }
    let (g, w) = (got.bytes(), want.bytes());
    if g != w {
        let size = itemsize(got.dtype());
        let i = (0..g.len()).find(|&i| g[i] != w[i]).unwrap() / size;
        let (gv, wv) = (got.values(), want.values());
        return Err(format!(
            "element {i} of {}: {} instead of {}",
            gv.len(),
            gv[i],
            wv[i]
        ));
    }
    Ok(())
}

/// As [`same`], but a NaN may be any NaN: the rule of every fused call.
fn same_any_nan(got: &T, want: &T) -> Result<(), String> {
    if got.strides() != want.strides() {
        return Err(format!(
            "strides {:?} instead of {:?}",
            got.strides(),
            want.strides()
        ));
    }
    same_bits_any_nan(got, want)
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<X: Copy>(&mut self, xs: &[X]) -> X {
        xs[self.below(xs.len())]
    }
}

/// Random elements of `dtype`: small integers (so shifts and powers stay meaningful), floats
/// with zeros, negatives, fractions, infinities and NaNs among them.
fn random_tensor(r: &mut Rng, dtype: i32, shape: &[i64]) -> T {
    let n: i64 = shape.iter().product();
    let vals: Vec<V> = (0..n)
        .map(|_| match dtype {
            BOOL => V::B(r.below(2) == 1),
            U8 => V::I(r.below(12) as i64),
            I8 | I16 | I32 | I64 => V::I(r.below(19) as i64 - 9),
            _ => V::F(match r.below(40) {
                0 => f64::NAN,
                1 => f64::INFINITY,
                2 => -0.0,
                3 => 0.0,
                _ => (r.below(2001) as f64 - 1000.0) / 64.0,
            }),
        })
        .collect();
    T::from_values(dtype, shape, &vals).expect("random tensor")
}

/// `random_tensor` without NaNs or infinities: the one-pass tests compare bits exactly, which a
/// NaN result would make depend on operand order (the fused rule is "any NaN").
fn random_finite(r: &mut Rng, dtype: i32, shape: &[i64]) -> T {
    let vals: Vec<V> = random_tensor(r, dtype, shape)
        .values()
        .into_iter()
        .map(|v| match v {
            V::F(f) if !f.is_finite() => V::F(0.5),
            v => v,
        })
        .collect();
    T::from_values(dtype, shape, &vals).expect("random tensor")
}

/// A random expression over `ninputs` inputs, as postfix steps (depth at most `depth`).
fn random_expr(r: &mut Rng, ninputs: usize, depth: usize, steps: &mut Vec<bc_expr_step>) {
    if depth == 0 || r.below(10) < 3 {
        if r.below(5) == 0 {
            let dtype = r.pick(&[BOOL, I32, I64, U8, F16, F32, F64, BF16]);
            let v = r.below(7) as i64 - 2;
            steps.push(constant(dtype, v, v as f64 * 0.75));
        } else {
            steps.push(input(r.below(ninputs) as i32));
        }
        return;
    }
    if r.below(10) == 0 {
        random_expr(r, ninputs, depth - 1, steps);
        steps.push(unary_step(r.below(BC_UNARY_COUNT as usize) as i32));
        return;
    }
    if r.below(10) == 0 {
        // lerp, addcmul, addcdiv or clamp of three sub-expressions; `value` an integer or a
        // float (sometimes beyond an integer type, or NaN).
        for _ in 0..3 {
            random_expr(r, ninputs, depth - 1, steps);
        }
        let (int_value, float_value) = match r.below(6) {
            0 => (r.below(7) as i64 - 3, 0.0),
            1 => (300, 0.0),
            2 => (0, f64::NAN),
            _ => (0, (r.below(13) as f64 - 6.0) * 0.375),
        };
        let code = r.below(BC_TERNARY_COUNT as usize) as i32;
        steps.push(ternary_step(code, int_value, float_value));
        return;
    }
    if r.below(8) == 0 {
        // where(a comparison or an input, a, b)
        if r.below(2) == 0 {
            random_expr(r, ninputs, depth - 1, steps);
            random_expr(r, ninputs, depth - 1, steps);
            steps.push(op(r.pick(&[
                BC_OP_LT,
                BC_OP_GE,
                BC_OP_NE,
                BC_OP_LOGICAL_AND,
            ])));
        } else {
            steps.push(input(r.below(ninputs) as i32));
        }
        random_expr(r, ninputs, depth - 1, steps);
        random_expr(r, ninputs, depth - 1, steps);
        steps.push(where_step());
        return;
    }
    random_expr(r, ninputs, depth - 1, steps);
    random_expr(r, ninputs, depth - 1, steps);
    steps.push(op(r.below(BC_OP_COUNT as usize) as i32));
}

/// Shapes that mostly broadcast together: each dimension of `base` kept or set to 1, and some
/// leading dimensions dropped; now and then an odd size that does not broadcast.
fn random_shape(r: &mut Rng, base: &[i64]) -> Vec<i64> {
    let drop = r.below(base.len() + 1).min(r.below(base.len() + 1));
    base[drop..]
        .iter()
        .map(|&d| match r.below(12) {
            0..=3 => 1,
            4 if d > 1 => d - 1,
            _ => d,
        })
        .collect()
}

/// Random programs over random operands: `bc_expr_eval` and `bc_expr_eval_out` against the
/// separate calls, result for result and error for error; the large cases run through the
/// thread pool and many blocks.
#[test]
fn random_programs_match_separate_calls() {
    let _s = settings();
    let mut r = Rng(0x5EED_1234_ABCD_0001);
    let bases: [&[i64]; 5] = [&[3, 4], &[2, 3, 5], &[7], &[300, 257], &[2, 70, 64]];
    let dtypes = [BOOL, U8, I8, I16, I32, I64, F16, BF16, F32, F64];
    let (mut fused_ok, mut errors, mut one_pass) = (0, 0, 0);
    // Programs with a ternary step: results, and results made in fewer tensors than the calls.
    let (mut ternary_ok, mut ternary_one_pass) = (0, 0);
    for case in 0..2500 {
        let base = bases[if case % 25 == 0 {
            3 + case / 25 % 2
        } else {
            case % 3
        }];
        let ninputs = 1 + r.below(4);
        let common = r.pick(&dtypes);
        let tensors: Vec<T> = (0..ninputs)
            .map(|_| {
                let dtype = if r.below(3) == 0 {
                    r.pick(&dtypes)
                } else {
                    common
                };
                let shape = random_shape(&mut r, base);
                random_tensor(&mut r, dtype, &shape)
            })
            .collect();
        let inputs: Vec<&T> = tensors.iter().collect();
        let mut steps = Vec::new();
        let depth = 1 + r.below(4);
        random_expr(&mut r, ninputs, depth, &mut steps);
        if !steps
            .iter()
            .any(|s| [BC_EXPR_OP, BC_EXPR_WHERE, BC_EXPR_TERNARY].contains(&s.kind))
        {
            steps.extend([input(0), op(BC_OP_ADD)]);
        }
        let what = || format!("case {case}: steps {steps:?}, inputs {}", describe(&inputs));
        let before = storage::stats();
        let want = reference(&steps, &inputs, None).map(|t| t.unwrap());
        let made_by_calls = storage::stats().since(before).allocs;
        let before = storage::stats();
        let got = eval(&steps, &inputs);
        // The single pass makes fewer tensors than the calls (which make one per operation).
        let ternary = steps.iter().any(|s| s.kind == BC_EXPR_TERNARY);
        if got.is_ok() && storage::stats().since(before).allocs < made_by_calls {
            one_pass += 1;
            ternary_one_pass += ternary as usize;
        }
        match (&got, &want) {
            (Ok(g), Ok(w)) => {
                if let Err(e) = same(g, w) {
                    panic!("{}: {e}", what());
                }
                fused_ok += 1;
                ternary_ok += ternary as usize;
                // Into an `out` of the result's shape and type, and of another type.
                for dtype in [w.dtype(), r.pick(&dtypes)] {
                    let (o1, o2) = (
                        T::zeros(dtype, &w.shape()).unwrap(),
                        T::zeros(dtype, &w.shape()).unwrap(),
                    );
                    let want = reference(&steps, &inputs, Some(&o2)).map(|_| ());
                    let got = eval_out(&steps, &inputs, &o1);
                    assert_eq!(got, want, "{} into {}", what(), dtype_str(dtype));
                    if got.is_ok() {
                        if let Err(e) = same(&o1, &o2) {
                            panic!("{} into {}: {e}", what(), dtype_str(dtype));
                        }
                    }
                }
            }
            (Err(g), Err(w)) => {
                assert_eq!(g, w, "{}", what());
                errors += 1;
            }
            _ => panic!(
                "{}: bc_expr_eval {:?}, separate calls {:?}",
                what(),
                got.as_ref().map(|_| ()),
                want.as_ref().map(|_| ())
            ),
        }
    }
    // Both outcomes, and the single pass, are exercised in earnest.
    assert!(
        fused_ok > 800 && errors > 300 && one_pass > 300,
        "{fused_ok} results ({one_pass} in one pass), {errors} errors"
    );
    assert!(
        ternary_ok > 80 && ternary_one_pass > 50,
        "{ternary_ok} results of programs with a ternary step ({ternary_one_pass} in one pass)"
    );
    eprintln!("{fused_ok} results ({one_pass} in one pass), {errors} errors; with a ternary step {ternary_ok} ({ternary_one_pass})");
}

fn describe(inputs: &[&T]) -> String {
    inputs
        .iter()
        .map(|t| format!("{} {:?}", dtype_str(t.dtype()), t.shape()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `a * b + c` makes one tensor, the result (the separate calls make two); a product of two
/// columns added to a matrix is computed once on its own first (two tensors, as the calls); the
/// results are the separate calls'.
#[test]
fn one_pass_makes_only_the_result() {
    // A switch another test turns on sends programs call by call, which these tests tell apart.
    let _s = settings();
    let mut r = Rng(77);
    let a = random_finite(&mut r, F32, &[64, 300]);
    let b = random_finite(&mut r, F32, &[300]);
    let c = random_finite(&mut r, F32, &[64, 1]);
    let steps = [input(0), input(1), op(BC_OP_MUL), input(2), op(BC_OP_ADD)];
    let inputs = [&a, &b, &c];
    let before = storage::stats();
    let got = eval(&steps, &inputs).unwrap();
    assert_eq!(storage::stats().since(before).allocs, 1);
    let before = storage::stats();
    let want = reference(&steps, &inputs, None).unwrap().unwrap();
    assert_eq!(storage::stats().since(before).allocs, 2);
    same(&got, &want).unwrap();

    let steps = [input(2), input(2), op(BC_OP_MUL), input(0), op(BC_OP_SUB)];
    let before = storage::stats();
    let got = eval(&steps, &inputs).unwrap();
    assert_eq!(storage::stats().since(before).allocs, 2);
    same(&got, &reference(&steps, &inputs, None).unwrap().unwrap()).unwrap();

    // A streamed result (this thread's policy: the cache decides it otherwise), in float16 and
    // mixed with float32.
    stream::set_streaming(Streaming::Always);
    let x = random_finite(&mut r, F16, &[1024, 1536]);
    let y = random_finite(&mut r, F16, &[1536]);
    let z = random_finite(&mut r, F32, &[1024, 1]);
    let steps = [
        input(0),
        input(1),
        op(BC_OP_MUL),
        input(1),
        op(BC_OP_SUB),
        input(2),
        op(BC_OP_MAXIMUM),
    ];
    let inputs = [&x, &y, &z];
    let before = stream::streamed_count();
    let got = eval(&steps, &inputs);
    assert!(stream::streamed_count() > before, "streamed");
    stream::set_streaming(Streaming::Auto);
    same(
        &got.unwrap(),
        &reference(&steps, &inputs, None).unwrap().unwrap(),
    )
    .unwrap();
}

/// A new result is laid out as the last separate call lays out its own (docs/semantics.md,
/// section 7): `x.permute(2, 0, 1) * y + z` keeps `x`'s permutation through both operations.
#[test]
fn one_pass_result_takes_the_calls_layout() {
    let mut r = Rng(5);
    let base = random_finite(&mut r, F32, &[16, 24, 40]);
    let mut x = ptr::null_mut();
    check(unsafe { bc_tensor_permute(base.ptr(), [2, 0, 1].as_ptr(), 3, &mut x) }).unwrap();
    let x = T(x);
    let y = random_finite(&mut r, F32, &[40, 1, 1]);
    let z = random_finite(&mut r, F32, &[24]);
    let steps = [input(0), input(1), op(BC_OP_MUL), input(2), op(BC_OP_ADD)];
    let inputs = [&x, &y, &z];
    let before = storage::stats();
    let got = eval(&steps, &inputs).unwrap();
    assert_eq!(storage::stats().since(before).allocs, 1, "not one pass");
    assert_eq!(got.strides(), vec![1, 960, 40]);
    same(&got, &reference(&steps, &inputs, None).unwrap().unwrap()).unwrap();
}

/// `out` may be an input (read before written, element by element); it may partly overlap an
/// input that only an earlier operation reads (the separate calls allow it too, and give the
/// same values); partly overlapping an operand of the last operation is the separate call's
/// overlap error, and `out` is unchanged.
#[test]
fn out_follows_the_separate_calls_overlap_rules() {
    let mut r = Rng(99);
    let (rows, cols) = (100i64, 300i64);
    let x0 = random_tensor(&mut r, F32, &[rows, cols]);
    let a = random_tensor(&mut r, F32, &[cols]);
    let b = random_tensor(&mut r, F32, &[rows, 1]);
    // x = x * a + b, in place.
    let steps = [input(0), input(1), op(BC_OP_MUL), input(2), op(BC_OP_ADD)];
    let want = reference(&steps, &[&x0, &a, &b], None).unwrap().unwrap();
    let x = x0.to_dtype(F32).unwrap(); // a copy
    eval_out(&steps, &[&x, &a, &b], &x).unwrap();
    same(&x, &want).unwrap();

    // One buffer, two overlapping views: `out` is rows 1.., `y` rows 0..rows-1.
    let mut buf = vec![0f32; ((rows + 1) * cols) as usize];
    for (i, v) in buf.iter_mut().enumerate() {
        *v = (i % 97) as f32 * 0.5 - 20.0;
    }
    let bytes = buf.len() * 4;
    let p = buf.as_mut_ptr() as *mut u8;
    // SAFETY: `buf` outlives the views.
    let (y, out) = unsafe {
        (
            T::wrap(F32, p, bytes, &[rows, cols], None, 0).unwrap(),
            T::wrap(F32, p, bytes, &[rows, cols], None, cols).unwrap(),
        )
    };
    // `y` is read by the first operation only: allowed; the values are the separate calls'.
    let want_vals = reference(&steps, &[&y, &a, &b], None).unwrap().unwrap();
    eval_out(&steps, &[&y, &a, &b], &out).unwrap();
    same(&out, &want_vals).unwrap();
    // `y` read by the last operation: the separate call's error, nothing written.
    let steps = [input(1), input(2), op(BC_OP_MUL), input(0), op(BC_OP_ADD)];
    let before = out.bytes();
    let got = eval_out(&steps, &[&y, &a, &b], &out).unwrap_err();
    let scratch = T::zeros(F32, &[rows, cols]).unwrap();
    let ab = binary(BC_OP_MUL, &a, &b).unwrap();
    let want = binary_out(BC_OP_ADD, &ab, &y, &out).unwrap_err();
    drop(scratch);
    assert_eq!(got, want);
    assert_eq!(got.status, BC_ERR_OVERLAP);
    assert_eq!(out.bytes(), before);
}

/// Under the broadcast-warning switch, the same warnings as the separate calls, in order; the
/// legacy fallback is taken where a call takes it.
#[test]
fn switches_apply_as_to_the_separate_calls() {
    let _s = settings();
    static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());
    unsafe extern "C" fn on_warning(_: *mut c_void, msg: *const c_char) {
        // SAFETY: the library passes a NUL-terminated message.
        let m = unsafe { CStr::from_ptr(msg) }
            .to_string_lossy()
            .into_owned();
        SEEN.lock().unwrap().push(m);
    }
    let take = || std::mem::take(&mut *SEEN.lock().unwrap());
    check(bc_set_warning_handler(Some(on_warning), ptr::null_mut())).unwrap();
    check(bc_set_broadcast_warning(true)).unwrap();
    let mut r = Rng(5);
    let a = random_tensor(&mut r, F32, &[4, 1]);
    let b = random_tensor(&mut r, F32, &[1, 4]);
    let c = random_tensor(&mut r, F32, &[4, 4]);
    let d = random_tensor(&mut r, F32, &[16]);
    // a + b warns ((4,1) and (1,4): 4 elements each); then c succeeds, d fails after the warning.
    let steps = [input(0), input(1), op(BC_OP_ADD), input(2), op(BC_OP_MUL)];
    for inputs in [[&a, &b, &c], [&a, &b, &d]] {
        take();
        let got = eval(&steps, &inputs);
        let got_warnings = take();
        let want = reference(&steps, &inputs, None);
        let want_warnings = take();
        assert_eq!(got_warnings, want_warnings);
        assert_eq!(got_warnings.len(), 1);
        match (got, want) {
            (Ok(g), Ok(Some(w))) => same(&g, &w).unwrap(),
            (Err(g), Err(w)) => assert_eq!(g, w),
            (g, w) => panic!("{:?} / {:?}", g.map(|_| ()), w.map(|_| ())),
        }
    }
    check(bc_set_broadcast_warning(false)).unwrap();
    // The legacy fallback: (2,2) and (4,) do not broadcast but have as many elements: computed
    // as 1-D, with its warning; (2,2) and (3,) fail either way.
    check(bc_set_legacy_fallback(true)).unwrap();
    let d = random_tensor(&mut r, F32, &[2, 2]);
    let e = random_tensor(&mut r, F32, &[4]);
    let f = random_tensor(&mut r, F32, &[3]);
    let steps = [input(0), input(1), op(BC_OP_SUB), input(0), op(BC_OP_MUL)];
    let got = eval(&steps, &[&d, &e]);
    let got_warnings = take();
    let want = reference(&steps, &[&d, &e], None);
    let want_warnings = take();
    let refused = eval(&[input(0), input(1), op(BC_OP_ADD)], &[&d, &f]).expect_err("refused");
    check(bc_set_legacy_fallback(false)).unwrap();
    check(bc_set_warning_handler(None, ptr::null_mut())).unwrap();
    assert_eq!(got_warnings, want_warnings);
    assert!(!got_warnings.is_empty());
    same(&got.unwrap(), &want.unwrap().unwrap()).unwrap();
    assert_eq!(refused.status, BC_ERR_SHAPE);
}

/// Malformed programs and arguments: `BC_ERR_INVALID_ARG` naming the step, `BC_ERR_NULL_ARG`,
/// `BC_ERR_INVALID_HANDLE`, checked in that order; `*out` stays NULL.
#[test]
fn malformed_programs_are_refused() {
    let a = T::arange_f32(&[3], 1.0);
    let cases: Vec<(Vec<bc_expr_step>, &str)> = vec![
        (vec![], "needs at least one operation"),
        (vec![input(0)], "needs at least one operation"),
        (
            vec![input(0), op(BC_OP_ADD)],
            "step 1 (add) needs 2 operands, but 1 are waiting",
        ),
        (
            vec![input(0), input(0), input(0), op(BC_OP_ADD)],
            "leaves 2 values",
        ),
        (
            vec![input(1), input(0), op(BC_OP_ADD)],
            "step 0 reads input 1, but 1 input(s)",
        ),
        (
            vec![input(-1), input(0), op(BC_OP_ADD)],
            "step 0: input index -1 is negative",
        ),
        (
            vec![input(0), input(0), op(BC_OP_COUNT)],
            format!("step 2: unknown op code {BC_OP_COUNT}").leak(),
        ),
        (
            vec![input(0), constant(BC_DTYPE_COUNT, 0, 0.0), op(0)],
            format!("step 1: unknown dtype code {BC_DTYPE_COUNT}").leak(),
        ),
        (
            vec![
                input(0),
                bc_expr_step {
                    kind: 99,
                    arg: 0,
                    int_value: 0,
                    float_value: 0.0,
                },
            ],
            "step 1: unknown step kind 99",
        ),
        (
            vec![input(0), input(0), where_step()],
            "step 2 (where) needs 3 operands",
        ),
        (
            [input(0); 17].into_iter().chain([op(0); 16]).collect(),
            "step 16 leaves 17 values waiting",
        ),
        (
            [input(0); 33].into_iter().chain([op(0); 32]).collect(),
            "at most 64 steps; this one has 65",
        ),
    ];
    for (steps, msg) in cases {
        let e = eval(&steps, &[&a]).expect_err("refused");
        assert_eq!(e.status, BC_ERR_INVALID_ARG, "{steps:?}");
        assert!(e.msg.contains(msg), "{:?} does not say {msg:?}", e.msg);
        let e = eval_out(&steps, &[&a], &a).unwrap_err();
        assert_eq!(e.status, BC_ERR_INVALID_ARG, "{steps:?}");
    }
    let steps = [input(0), input(0), op(BC_OP_ADD)];
    let h = [a.ptr()];
    let mut out: *mut bc_tensor = std::ptr::dangling_mut();
    // SAFETY (all): arrays valid for their lengths or NULL as documented.
    unsafe {
        assert_eq!(
            bc_expr_eval(steps.as_ptr(), 3, h.as_ptr(), 1, ptr::null_mut()),
            BC_ERR_NULL_ARG
        );
        assert_eq!(
            bc_expr_eval(ptr::null(), 3, h.as_ptr(), 1, &mut out),
            BC_ERR_NULL_ARG
        );
        assert!(out.is_null());
        assert_eq!(
            bc_expr_eval(steps.as_ptr(), 3, ptr::null(), 1, &mut out),
            BC_ERR_NULL_ARG
        );
        // (NULL, 0) inputs: an empty array, so input 0 is out of range.
        assert_eq!(
            bc_expr_eval(steps.as_ptr(), 3, ptr::null(), 0, &mut out),
            BC_ERR_INVALID_ARG
        );
        let stale = T::arange_f32(&[3], 0.0);
        let dead = stale.ptr();
        drop(stale);
        let h = [dead];
        assert_eq!(
            bc_expr_eval(steps.as_ptr(), 3, h.as_ptr(), 1, &mut out),
            BC_ERR_INVALID_HANDLE
        );
        assert!(out.is_null());
        let h = [a.ptr()];
        assert_eq!(
            bc_expr_eval_out(steps.as_ptr(), 3, h.as_ptr(), 1, dead as *mut _),
            BC_ERR_INVALID_HANDLE
        );
        assert_eq!(
            bc_expr_eval_out(steps.as_ptr(), 3, h.as_ptr(), 1, ptr::null_mut()),
            BC_ERR_NULL_ARG
        );
    }
}

/// Constants take their dtype's value as documented and promote as 0-d tensors: float16 times a
/// float64 constant stays float16 (PyTorch reads that one element in float32: the separate
/// call's rule, kept), an int32 tensor times a float64 constant is float64.
/// A unary step computes what its call computes, in the same pass: `sqrt(a*a + b*b)` in float32
/// is each operation rounded to float32 (Rust's own arithmetic, correctly rounded), into a new
/// tensor (making `b*b`, which is broadcast further and so computed first, and the result, where
/// the calls make four tensors) and into `out` (making only `b*b`);
/// an integer expression under a floating function gives float32.
#[test]
fn unary_steps_compute_as_their_calls() {
    let _g = settings();
    let av: Vec<f32> = (0..12).map(|i| i as f32 * 0.37 - 2.0).collect();
    let bv: Vec<f32> = (0..4).map(|i| i as f32 * 1.9 + 0.1).collect();
    let a = T::from_values(
        F32,
        &[3, 4],
        &av.iter().map(|&x| V::F(x as f64)).collect::<Vec<_>>(),
    )
    .unwrap();
    let b = T::from_values(
        F32,
        &[4],
        &bv.iter().map(|&x| V::F(x as f64)).collect::<Vec<_>>(),
    )
    .unwrap();
    let steps = [
        input(0),
        input(0),
        op(BC_OP_MUL),
        input(1),
        input(1),
        op(BC_OP_MUL),
        op(BC_OP_ADD),
        unary_step(BC_UNARY_SQRT),
    ];
    let want: Vec<V> = (0..12)
        .map(|k| {
            let (x, y) = (av[k], bv[k % 4]);
            V::F((x * x + y * y).sqrt() as f64)
        })
        .collect();
    let before = storage::stats();
    let got = eval(&steps, &[&a, &b]).unwrap();
    assert_eq!(storage::stats().since(before).allocs, 2, "not one pass");
    assert_eq!((got.dtype(), got.shape()), (F32, vec![3, 4]));
    assert!(compare_values(F32, &got.values(), &want, 0).is_none());
    let out = T::zeros(F32, &[3, 4]).unwrap();
    let before = storage::stats();
    eval_out(&steps, &[&a, &b], &out).unwrap();
    assert_eq!(storage::stats().since(before).allocs, 1, "not one pass");
    assert!(compare_values(F32, &out.values(), &want, 0).is_none());
    // int32 + int32, then exp: float32.
    let i = T::full(I32, &[2], 1.0).unwrap();
    let got = eval(
        &[input(0), input(0), op(BC_OP_ADD), unary_step(BC_UNARY_EXP)],
        &[&i],
    )
    .unwrap();
    assert_eq!(got.dtype(), F32);
    assert!(compare_values(F32, &got.values(), &[V::F(2f32.exp() as f64); 2], 1).is_none());
    // Into an int32 `out`, the cast is refused as the call refuses it.
    let o = T::zeros(I32, &[2]).unwrap();
    let e = eval_out(&[input(0), unary_step(BC_UNARY_SQRT)], &[&i], &o).unwrap_err();
    assert_eq!(e.status, BC_ERR_DTYPE);
    assert_eq!(
        e.msg,
        "result type Float can't be cast to the desired output type Int"
    );
    // An unknown unary code is refused before anything runs.
    let e = eval(&[input(0), unary_step(BC_UNARY_COUNT)], &[&i]).unwrap_err();
    assert_eq!(e.status, BC_ERR_INVALID_ARG);
}

/// Ternary steps compute what their calls compute, in the same pass: `clamp(a * s, lo, hi)` in
/// float32 is the product rounded to float32, then held between the bounds (Rust's own
/// arithmetic), making only the result (the calls make four tensors: the constant, the product,
/// the result and the clamp's 0-d `value`) and nothing into `out`. `lerp`, `addcmul` and
/// `addcdiv` (an integer `value` in `int_value`, a float one in `float_value`) give the bits,
/// types and errors of `bc_lerp`, `bc_addcmul`, `bc_addcdiv`; a number weight or bound is a 0-d
/// tensor (`bc_lerp`'s 0-d weight, not `bc_lerp_scalar`'s number).
#[test]
fn ternary_steps_compute_as_their_calls() {
    let _g = settings();
    let av: Vec<f32> = (0..12).map(|i| i as f32 * 0.37 - 2.0).collect();
    let lov: Vec<f32> = (0..4).map(|i| i as f32 * 0.5 - 1.7).collect();
    let hiv: Vec<f32> = (0..3).map(|i| i as f32 * 0.9 + 0.2).collect();
    let f32s = |v: &[f32], shape: &[i64]| {
        let vals: Vec<V> = v.iter().map(|&x| V::F(x as f64)).collect();
        T::from_values(F32, shape, &vals).unwrap()
    };
    let (a, lo, hi) = (f32s(&av, &[3, 4]), f32s(&lov, &[4]), f32s(&hiv, &[3, 1]));
    let s = 1.3f32;
    let steps = [
        input(0),
        constant(F32, 0, s as f64),
        op(BC_OP_MUL),
        input(1),
        input(2),
        ternary_step(BC_TERNARY_CLAMP, 0, 0.0),
    ];
    let want: Vec<V> = (0..12)
        .map(|k| {
            let (v, l, h) = (av[k] * s, lov[k % 4], hiv[k / 4]);
            V::F(if v < l {
                l
            } else if h < v {
                h
            } else {
                v
            } as f64)
        })
        .collect();
    let inputs = [&a, &lo, &hi];
    let before = storage::stats();
    let calls = reference(&steps, &inputs, None).unwrap().unwrap();
    assert_eq!(
        storage::stats().since(before).allocs,
        4,
        "the calls' tensors"
    );
    let before = storage::stats();
    let got = eval(&steps, &inputs).unwrap();
    assert_eq!(storage::stats().since(before).allocs, 1, "not one pass");
    assert_eq!((got.dtype(), got.shape()), (F32, vec![3, 4]));
    assert!(compare_values(F32, &got.values(), &want, 0).is_none());
    same(&got, &calls).unwrap();
    let out = T::zeros(F32, &[3, 4]).unwrap();
    let before = storage::stats();
    eval_out(&steps, &inputs, &out).unwrap();
    assert_eq!(storage::stats().since(before).allocs, 0, "not one pass");
    assert!(compare_values(F32, &out.values(), &want, 0).is_none());
    // In place: a = clamp(a * s, lo, hi).
    let a2 = f32s(&av, &[3, 4]);
    eval_out(&steps, &[&a2, &lo, &hi], &a2).unwrap();
    assert!(compare_values(F32, &a2.values(), &want, 0).is_none());

    // Each operation against its call, over mixed types, into new tensors and into `out`.
    let mut r = Rng(0x7E4A_0001);
    let h16 = random_finite(&mut r, F16, &[2, 3]);
    let x32 = random_finite(&mut r, F32, &[2, 3]);
    let y32 = random_finite(&mut r, F32, &[3]);
    let z64 = random_finite(&mut r, F64, &[2, 1]);
    let i32s = random_finite(&mut r, I32, &[2, 3]);
    let u8s = random_finite(&mut r, U8, &[3]);
    let bools = random_finite(&mut r, BOOL, &[2, 3]);
    let y2 = random_finite(&mut r, F32, &[2]);
    let cases: Vec<(Vec<bc_expr_step>, Vec<&T>)> = vec![
        // lerp with a tensor weight, and with a number weight as a 0-d float64 constant.
        (
            vec![
                input(0),
                input(1),
                input(1),
                ternary_step(BC_TERNARY_LERP, 0, 0.0),
            ],
            vec![&x32, &y32],
        ),
        (
            vec![
                input(0),
                input(0),
                constant(F64, 0, 0.3),
                op(BC_OP_MUL),
                constant(F64, 0, 0.3),
                ternary_step(BC_TERNARY_LERP, 0, 0.0),
            ],
            vec![&h16],
        ),
        // addcmul, addcdiv: integer and float values, promotion over all three.
        (
            vec![
                input(0),
                input(1),
                input(2),
                ternary_step(BC_TERNARY_ADDCMUL, 3, 0.0),
            ],
            vec![&i32s, &u8s, &i32s],
        ),
        (
            vec![
                input(0),
                input(1),
                input(2),
                ternary_step(BC_TERNARY_ADDCMUL, 0, -0.75),
            ],
            vec![&x32, &h16, &z64],
        ),
        (
            vec![
                input(0),
                input(1),
                input(2),
                ternary_step(BC_TERNARY_ADDCDIV, 0, 0.5),
            ],
            vec![&h16, &y32, &x32],
        ),
        (
            vec![
                input(0),
                input(1),
                input(2),
                ternary_step(BC_TERNARY_ADDCDIV, 2, 0.0),
            ],
            vec![&i32s, &x32, &u8s],
        ),
        // clamp of integers by 0-d float64 bounds: float64, as PyTorch promotes 0-d tensors.
        (
            vec![
                input(0),
                constant(F64, 0, -2.5),
                constant(F64, 0, 3.0),
                ternary_step(BC_TERNARY_CLAMP, 0, 0.0),
            ],
            vec![&i32s],
        ),
        // Refused as the calls refuse: lerp of integers, addcdiv of two integer divisors, two
        // bounds on bools, a value an integer result cannot hold, shapes that do not broadcast.
        (
            vec![
                input(0),
                input(0),
                input(0),
                ternary_step(BC_TERNARY_LERP, 0, 0.0),
            ],
            vec![&i32s],
        ),
        (
            vec![
                input(0),
                input(1),
                input(0),
                ternary_step(BC_TERNARY_ADDCDIV, 1, 0.0),
            ],
            vec![&i32s, &u8s],
        ),
        (
            vec![
                input(0),
                input(0),
                input(0),
                ternary_step(BC_TERNARY_CLAMP, 0, 0.0),
            ],
            vec![&bools],
        ),
        (
            vec![
                input(0),
                input(0),
                input(0),
                ternary_step(BC_TERNARY_ADDCMUL, 300, 0.0),
            ],
            vec![&u8s],
        ),
        (
            vec![
                input(0),
                input(1),
                input(0),
                ternary_step(BC_TERNARY_ADDCMUL, 0, 1.5),
            ],
            vec![&x32, &y2],
        ),
    ];
    let mut refused = 0;
    for (steps, inputs) in &cases {
        let what = format!("{steps:?} over {}", describe(inputs));
        let want = reference(steps, inputs, None).map(|t| t.unwrap());
        let got = eval(steps, inputs);
        match (&got, &want) {
            (Ok(g), Ok(w)) => {
                same(g, w).unwrap_or_else(|e| panic!("{what}: {e}"));
                for dtype in [w.dtype(), F64, I64] {
                    let (o1, o2) = (
                        T::zeros(dtype, &w.shape()).unwrap(),
                        T::zeros(dtype, &w.shape()).unwrap(),
                    );
                    let want = reference(steps, inputs, Some(&o2)).map(|_| ());
                    assert_eq!(eval_out(steps, inputs, &o1), want, "{what}");
                    same(&o1, &o2).unwrap_or_else(|e| panic!("{what} into {dtype}: {e}"));
                }
            }
            (Err(g), Err(w)) => {
                assert_eq!(g, w, "{what}");
                refused += 1;
            }
            _ => panic!("{what}: bc_expr_eval {got:?}, the calls {want:?}"),
        }
    }
    assert_eq!(refused, 5, "every refusal case refused");
    // The 0-d float64 bounds of an int32 tensor raise it to float64 (PyTorch's rule for a 0-d
    // tensor of a higher category), where number bounds would give float32.
    assert_eq!(eval(&cases[6].0, &cases[6].1).unwrap().dtype(), F64);
    // The 0-d weight rounds to float16 with float16 tensors; bc_lerp_scalar's number does not.
    let w16 = T::full(F16, &[], 0.3).unwrap();
    let steps = [
        input(0),
        input(1),
        constant(F64, 0, 0.3),
        ternary_step(BC_TERNARY_LERP, 0, 0.0),
    ];
    let got = eval(&steps, &[&h16, &x32.to_dtype(F16).unwrap()]).unwrap();
    let want = reference(
        &[
            input(0),
            input(1),
            input(2),
            ternary_step(BC_TERNARY_LERP, 0, 0.0),
        ],
        &[&h16, &x32.to_dtype(F16).unwrap(), &w16],
        None,
    )
    .unwrap()
    .unwrap();
    same(&got, &want).unwrap();
    // An unknown ternary code is refused before anything runs.
    let e = eval(
        &[
            input(0),
            input(0),
            input(0),
            ternary_step(BC_TERNARY_COUNT, 0, 0.0),
        ],
        &[&x32],
    )
    .unwrap_err();
    assert_eq!(e.status, BC_ERR_INVALID_ARG);
    assert_eq!(e.msg, "step 3: unknown ternary op code 4");
    // Three operands needed.
    let e = eval(
        &[input(0), input(0), ternary_step(BC_TERNARY_CLAMP, 0, 0.0)],
        &[&x32],
    )
    .unwrap_err();
    assert_eq!(e.status, BC_ERR_INVALID_ARG);
    assert_eq!(e.msg, "step 2 (clamp) needs 3 operands, but 2 are waiting");
}

#[test]
fn constants_promote_as_0d_tensors() {
    let h = T::from_values(F16, &[3], &[V::F(5.0), V::F(-1.5), V::F(3.0)]).unwrap();
    let third = constant(F64, 0, 1.0 / 3.0);
    let steps = [input(0), third, op(BC_OP_MUL)];
    let got = eval(&steps, &[&h]).unwrap();
    assert_eq!(got.dtype(), F16);
    same(&got, &reference(&steps, &[&h], None).unwrap().unwrap()).unwrap();
    assert_eq!(got.to_f64()[0], 1.6669921875); // rounded once from float32, as PyTorch
    let i = T::from_values(I32, &[2], &[V::I(7), V::I(-2)]).unwrap();
    let steps = [
        input(0),
        constant(F64, 0, 0.5),
        op(BC_OP_MUL),
        constant(I64, 1 << 40, 0.0),
        op(BC_OP_ADD),
    ];
    let got = eval(&steps, &[&i]).unwrap();
    assert_eq!(got.dtype(), F64);
    assert_eq!(
        got.to_f64(),
        [3.5 + (1u64 << 40) as f64, -1.0 + (1u64 << 40) as f64]
    );
}

/// Programs over floats with NaNs of both signs (with payloads) and infinities among the
/// inputs: `bc_expr_eval` and `bc_expr_eval_out` give the separate calls' bits, except that a NaN
/// may be any NaN (which NaN an operation gives depends on how its operands meet in a loop; the
/// header states the rule). Also the case reported: bfloat16 `x ** x` at negative bases, which
/// `bc_pow` makes NaN.
#[test]
fn nan_results_are_the_separate_calls_any_nan() {
    let _s = settings();
    let mut x = [0u8; 2 * 40];
    for (i, e) in x.chunks_mut(2).enumerate() {
        e.copy_from_slice(
            &half::bf16::from_f32(-0.5 - i as f32 * 0.25)
                .to_bits()
                .to_le_bytes(),
        );
    }
    let x = T::from_bytes(BF16, &[40], &x).unwrap();
    let steps = [input(0), input(0), op(BC_OP_POW)];
    let mut p: *mut bc_tensor = ptr::null_mut();
    check(unsafe { bc_pow(x.ptr(), x.ptr(), &mut p) }).unwrap();
    let p = T(p);
    same_bits_any_nan(&eval(&steps, &[&x]).unwrap(), &p).unwrap();

    let ops = NAN_MAKING_OPS;
    let mut r = Rng(0x4E41_4E5F_B175_0001);
    let bases: [&[i64]; 3] = [&[3, 37], &[2, 5, 40], &[300, 257]];
    let mut with_nan = 0;
    for case in 0..400 {
        let base = bases[if case % 20 == 0 { 2 } else { case % 2 }];
        let dtype = r.pick(&[F32, F64, F16, BF16]);
        let ninputs = 2 + r.below(2);
        let special = r.pick(&[10u64, 100, 3000]);
        let mut seed = r.next() | 1;
        let tensors: Vec<T> = (0..ninputs)
            .map(|_| {
                let shape = random_shape(&mut r, base);
                let n = shape.iter().product::<i64>() as usize;
                T::from_bytes(
                    dtype,
                    &shape,
                    &nan_rich_floats(&mut seed, dtype, n, special),
                )
                .unwrap()
            })
            .collect();
        let inputs: Vec<&T> = tensors.iter().collect();
        // ((x0 op x1) op x2) op x0, or shorter.
        let mut steps = vec![input(0), input(1), op(r.pick(&ops))];
        if ninputs == 3 {
            steps.extend([input(2), op(r.pick(&ops))]);
        }
        if r.below(2) == 0 {
            steps.extend([input(0), op(r.pick(&ops))]);
        }
        let what = || format!("case {case}: steps {steps:?}, inputs {}", describe(&inputs));
        let want = reference(&steps, &inputs, None).map(|t| t.unwrap());
        match (eval(&steps, &inputs), want) {
            (Ok(g), Ok(w)) => {
                same_bits_any_nan(&g, &w).unwrap_or_else(|e| panic!("{}: {e}", what()));
                with_nan +=
                    w.values()
                        .iter()
                        .any(|v| matches!(v, V::F(f) if f.is_nan())) as usize;
                let (o1, o2) = (
                    T::zeros(w.dtype(), &w.shape()).unwrap(),
                    T::zeros(w.dtype(), &w.shape()).unwrap(),
                );
                reference(&steps, &inputs, Some(&o2)).unwrap();
                eval_out(&steps, &inputs, &o1).unwrap();
                same_bits_any_nan(&o1, &o2).unwrap_or_else(|e| panic!("{} into out: {e}", what()));
            }
            (Err(g), Err(w)) => assert_eq!(g, w, "{}", what()),
            (g, w) => panic!("{}: {:?} vs {:?}", what(), g.map(|_| ()), w.map(|_| ())),
        }
    }
    assert!(with_nan > 150, "only {with_nan} results hold a NaN");
}

// ---------------------------------------------------------------------------------------------
// Fused reductions: `bc_expr_reduce` against `bc_expr_eval` then `bc_reduce`.

/// `bc_expr_reduce`; `dims` as `reduce` takes them (`None`: `(NULL, 0)`).
fn expr_reduce(
    steps: &[bc_expr_step],
    inputs: &[&T],
    op: i32,
    dims: Option<&[i64]>,
    keepdim: bool,
) -> Result<T, Err> {
    let h = handles(inputs);
    let (p, n) = match dims {
        None => (ptr::null(), 0),
        Some(d) => (d.as_ptr(), d.len()),
    };
    let mut out: *mut bc_tensor = std::ptr::dangling_mut();
    // SAFETY: every array holds its length; out is valid for one write.
    let s = unsafe {
        bc_expr_reduce(
            steps.as_ptr(),
            steps.len(),
            h.as_ptr(),
            h.len(),
            op,
            p,
            n,
            keepdim,
            &mut out,
        )
    };
    if s == BC_OK {
        Ok(T(out))
    } else {
        assert!(out.is_null(), "bc_expr_reduce failed but left *out set");
        Err(Err {
            status: s,
            msg: last_error(),
        })
    }
}

/// The two calls `bc_expr_reduce` stands for.
fn eval_then_reduce(
    steps: &[bc_expr_step],
    inputs: &[&T],
    op: i32,
    dims: Option<&[i64]>,
    keepdim: bool,
) -> Result<T, Err> {
    reduce(op, &eval(steps, inputs)?, dims, keepdim)
}

/// `bc_plan_expr_reduce` for the inputs' geometries: the plan, or the status and message.
fn plan_expr_reduce(
    steps: &[bc_expr_step],
    inputs: &[&T],
    op: i32,
    dims: Option<&[i64]>,
    keepdim: bool,
) -> Result<bc_plan, Err> {
    let shapes: Vec<Vec<i64>> = inputs.iter().map(|t| t.shape()).collect();
    let strides: Vec<Vec<i64>> = inputs.iter().map(|t| t.strides()).collect();
    let geos: Vec<bc_geometry> = (0..inputs.len())
        .map(|k| bc_geometry {
            dtype: inputs[k].dtype(),
            ndim: shapes[k].len(),
            shape: shapes[k].as_ptr(),
            strides: strides[k].as_ptr(),
        })
        .collect();
    let (p, n) = match dims {
        None => (ptr::null(), 0),
        Some(d) => (d.as_ptr(), d.len()),
    };
    let mut plan = std::mem::MaybeUninit::<bc_plan>::uninit();
    // SAFETY: every array holds its length; plan is valid for one write.
    let s = unsafe {
        bc_plan_expr_reduce(
            steps.as_ptr(),
            steps.len(),
            geos.as_ptr(),
            geos.len(),
            op,
            p,
            n,
            keepdim,
            plan.as_mut_ptr(),
        )
    };
    match s {
        // SAFETY: written on success.
        BC_OK => Ok(unsafe { plan.assume_init() }),
        _ => Err(Err {
            status: s,
            msg: last_error(),
        }),
    }
}

/// `t`, sometimes as a transposed or strided view of a larger tensor holding the same values
/// (so that the value's layout, which the reduction's order follows, is not always row-major).
fn random_layout(r: &mut Rng, t: T) -> T {
    let shape = t.shape();
    let n = shape.len();
    match r.below(4) {
        // The last two dimensions swapped in memory: a transposed copy, viewed back.
        0 if n >= 2 => {
            let mut perm: Vec<usize> = (0..n).collect();
            perm.swap(n - 1, n - 2);
            let tshape: Vec<i64> = perm.iter().map(|&d| shape[d]).collect();
            let vals = t.values();
            let rm = |s: &[i64]| {
                let mut st = vec![1i64; s.len()];
                for d in (0..s.len().saturating_sub(1)).rev() {
                    st[d] = st[d + 1] * s[d + 1];
                }
                st
            };
            let (src_st, dst_st) = (rm(&shape), rm(&tshape));
            let total = vals.len();
            let mut moved = vals.clone();
            for (i, v) in vals.into_iter().enumerate() {
                // Element i of t (row-major in `shape`) goes to its place in the transposed copy.
                let mut rest = i;
                let mut at = 0;
                for (d, &sd) in src_st.iter().enumerate() {
                    let idx = rest as i64 / sd;
                    rest %= sd as usize;
                    let td = perm.iter().position(|&p| p == d).unwrap();
                    at += idx * dst_st[td];
                }
                if total > 0 {
                    moved[at as usize] = v;
                }
            }
            let copy = T::from_values(t.dtype(), &tshape, &moved).unwrap();
            let strides: Vec<i64> = (0..n)
                .map(|d| dst_st[perm.iter().position(|&p| p == d).unwrap()])
                .collect();
            copy.as_strided(&shape, &strides, 0).unwrap()
        }
        // Every other element of a copy twice as long in the last dimension.
        1 if n >= 1 && shape[n - 1] > 0 => {
            let mut wide = shape.clone();
            wide[n - 1] *= 2;
            let vals = t.values();
            let mut spread = Vec::with_capacity(vals.len() * 2);
            for v in vals {
                spread.push(v);
                spread.push(v);
            }
            let copy = T::from_values(t.dtype(), &wide, &spread).unwrap();
            copy.slice(-1, 0, wide[n - 1], 2).unwrap()
        }
        _ => t,
    }
}

/// Random dims for a value of `ndim` dimensions: none (`NULL` or an empty list), some distinct
/// ones (negative now and then), and now and then one out of range or repeated.
fn random_dims(r: &mut Rng, ndim: usize) -> Option<Vec<i64>> {
    match r.below(12) {
        0 => None,
        1 => Some(vec![]),
        2 => Some(vec![ndim as i64 + r.below(2) as i64]),
        3 if ndim > 0 => Some(vec![0, -(ndim as i64)]),
        _ => {
            let m = ndim.max(1);
            let mut dims: Vec<i64> = (0..m as i64).filter(|_| r.below(2) == 0).collect();
            if dims.is_empty() {
                dims.push(r.below(m) as i64);
            }
            for d in &mut dims {
                if r.below(3) == 0 {
                    *d -= m as i64;
                }
            }
            Some(dims)
        }
    }
}

/// Random programs, operands (broadcast, transposed, strided, empty, 0-d), dtypes (floats with
/// NaNs and infinities), reductions, dims and keepdim: `bc_expr_reduce` gives exactly what
/// `bc_expr_eval` then `bc_reduce` give, every bit but a NaN's sign and payload (the fused rule),
/// or the same status and message; `bc_plan_expr_reduce` agrees with the call, and the fused path is taken in earnest.
#[test]
fn fused_reductions_match_eval_then_reduce() {
    let _s = settings();
    let mut r = Rng(0xF05E_D0ED_5EED_0003);
    let bases: [&[i64]; 7] = [
        &[3, 4],
        &[2, 3, 5],
        &[7],
        &[],
        &[2, 0, 3],
        &[300, 257],
        &[2, 70, 64],
    ];
    let dtypes = [BOOL, U8, I8, I16, I32, I64, F16, BF16, F32, F64];
    let (mut ok, mut errors, mut fused) = (0, 0, 0);
    for case in 0..2000 {
        let base = bases[if case % 20 == 0 {
            5 + case / 20 % 2
        } else {
            case % 5
        }];
        let ninputs = 1 + r.below(3);
        let common = r.pick(&dtypes);
        let tensors: Vec<T> = (0..ninputs)
            .map(|_| {
                let dtype = if r.below(4) == 0 {
                    r.pick(&dtypes)
                } else {
                    common
                };
                let shape = random_shape(&mut r, base);
                let t = random_tensor(&mut r, dtype, &shape);
                random_layout(&mut r, t)
            })
            .collect();
        let inputs: Vec<&T> = tensors.iter().collect();
        let mut steps = Vec::new();
        let depth = 1 + r.below(3);
        random_expr(&mut r, ninputs, depth, &mut steps);
        if !steps
            .iter()
            .any(|s| [BC_EXPR_OP, BC_EXPR_WHERE, BC_EXPR_TERNARY, BC_EXPR_UNARY].contains(&s.kind))
        {
            steps.extend([input(0), op(BC_OP_ADD)]);
        }
        let rop = r.below(BC_REDUCE_COUNT as usize) as i32;
        let dims = random_dims(&mut r, base.len());
        let keepdim = r.below(2) == 0;
        let what = || {
            format!(
                "case {case}: steps {steps:?}, inputs {}, reduce {rop} dims {dims:?} keepdim {keepdim}",
                describe(&inputs)
            )
        };
        let want = eval_then_reduce(&steps, &inputs, rop, dims.as_deref(), keepdim);
        let got = expr_reduce(&steps, &inputs, rop, dims.as_deref(), keepdim);
        let plan = plan_expr_reduce(&steps, &inputs, rop, dims.as_deref(), keepdim);
        match (&got, &want) {
            (Ok(g), Ok(w)) => {
                if let Err(e) = same_any_nan(g, w) {
                    panic!("{}: {e}", what());
                }
                let p = plan.unwrap_or_else(|e| panic!("{}: the planner refuses: {e:?}", what()));
                assert_eq!(p.dtype, w.dtype(), "{}", what());
                assert_eq!(&p.shape[..p.ndim], &w.shape()[..], "{}", what());
                if p.flags & BC_PLAN_FUSED != 0 {
                    fused += 1;
                }
                ok += 1;
            }
            (Err(g), Err(w)) => {
                assert_eq!(g, w, "{}", what());
                // The planner gives the call's error, but for what only memory shows (a zero
                // integer divisor).
                if w.status != BC_ERR_VALUE {
                    assert_eq!(plan.as_ref().err(), Some(w), "{}: the planner", what());
                }
                errors += 1;
            }
            _ => panic!(
                "{}: bc_expr_reduce {:?}, the two calls {:?}",
                what(),
                got.as_ref().map(|_| ()),
                want.as_ref().map(|_| ())
            ),
        }
    }
    assert!(
        ok > 700 && errors > 300 && fused > 400,
        "{ok} results ({fused} fused), {errors} errors"
    );
    eprintln!("{ok} results ({fused} fused), {errors} errors");
}

/// The cases the fused path is for, on sizes that take several tiles and threads, with NaNs and
/// infinities among the values: `((a - b)**2).mean(0)` (a column reduction), a masked sum over
/// every dimension (a stream), over the last dimension and over the first of a transposed
/// operand, every reduction; each is the two calls' bits, and makes no tensor but the result.
#[test]
fn fused_reductions_make_only_the_result() {
    // A switch another test turns on sends programs call by call, which these tests tell apart.
    let _s = settings();
    let mut r = Rng(0xF05E_0002);
    let a = random_tensor(&mut r, F32, &[517, 300]);
    let b = random_tensor(&mut r, F32, &[300]);
    let m = random_tensor(&mut r, BOOL, &[517, 300]);
    let z = T::zeros(F32, &[]).unwrap();
    // A transposed float64 operand: the value's layout is column-major.
    let at = random_tensor(&mut r, F64, &[300, 517])
        .as_strided(&[517, 300], &[1, 517], 0)
        .unwrap();
    let square = [
        input(0),
        input(1),
        op(BC_OP_SUB),
        unary_step(BC_UNARY_SQUARE),
    ];
    let masked = [input(2), input(0), input(3), where_step()];
    let scaled = [input(4), constant(F64, 0, 0.5), op(BC_OP_MUL)];
    let inputs = [&a, &b, &m, &z, &at];
    let cases: [(&[bc_expr_step], Option<&[i64]>); 6] = [
        (&square, Some(&[0])),
        (&square, Some(&[-1])),
        (&masked, None),
        (&masked, Some(&[1])),
        (&scaled, Some(&[0])),
        (&scaled, Some(&[1, 0])),
    ];
    for (steps, dims) in cases {
        for rop in 0..BC_REDUCE_COUNT {
            for keepdim in [false, true] {
                let what = format!("{steps:?} reduce {rop} over {dims:?} keepdim {keepdim}");
                let want = eval_then_reduce(steps, &inputs, rop, dims, keepdim).unwrap();
                let before = storage::stats();
                let got = expr_reduce(steps, &inputs, rop, dims, keepdim).unwrap();
                assert_eq!(storage::stats().since(before).allocs, 1, "{what}");
                same_any_nan(&got, &want).unwrap_or_else(|e| panic!("{what}: {e}"));
                let p = plan_expr_reduce(steps, &inputs, rop, dims, keepdim).unwrap();
                assert_ne!(p.flags & BC_PLAN_FUSED, 0, "{what}");
                assert_eq!(p.alloc_bytes, got.bytes().len(), "{what}");
            }
        }
    }
}

/// Float32 or float64 elements with NaNs of several payloads and both signs (quiet and
/// signalling), infinities, signed zeros and fractions.
fn payload_tensor(r: &mut Rng, dtype: i32, shape: &[i64]) -> T {
    let n: i64 = shape.iter().product();
    let mut bytes = Vec::new();
    for _ in 0..n {
        let v = match r.below(24) {
            0 => f64::INFINITY,
            1 => f64::NEG_INFINITY,
            2 => -0.0,
            _ => (r.below(2001) as f64 - 1000.0) / 64.0,
        };
        let payload = r.below(1 << 12) as u64 + 1;
        let sign = r.below(2) as u64;
        let nan = r.below(30) < 2;
        if dtype == F32 {
            let quiet = (r.below(2) as u32) << 22;
            let bits = match nan {
                true => (sign as u32) << 31 | 0x7f80_0000 | quiet | payload as u32,
                false => (v as f32).to_bits(),
            };
            bytes.extend_from_slice(&bits.to_le_bytes());
        } else {
            let quiet = (r.below(2) as u64) << 51;
            let bits = match nan {
                true => sign << 63 | 0x7ff0_0000_0000_0000 | quiet | payload << 20,
                false => v.to_bits(),
            };
            bytes.extend_from_slice(&bits.to_le_bytes());
        }
    }
    T::from_bytes(dtype, shape, &bytes).expect("a float tensor")
}

/// Expressions ending in `where` or `square` (the usual last steps before a reduction), their
/// operands inputs (contiguous, broadcast, 0-d, strided, transposed) or values computed first (a
/// comparison, a difference, a product), reduced as columns and as streams over shapes whose
/// rows end inside a piece: every reduction gives the two calls' bits, but for a NaN's sign and
/// payload (the fused rule); NaNs of both signs with payloads are among the values, so a NaN
/// where the calls give a number, or a number where they give a NaN, is seen.
#[test]
fn fused_reduction_tails_match_the_calls() {
    // A switch another test turns on sends programs call by call, which these tests tell apart.
    let _s = settings();
    let mut r = Rng(0x7A11_5EED_0000_0005);
    for (shape, dtype) in [
        ([37i64, 45i64], F32),
        ([300, 257], F32),
        ([5, 4100], F64),
        ([70, 33], F64),
    ] {
        let [rows, cols] = shape;
        let a = payload_tensor(&mut r, dtype, &shape);
        let b = payload_tensor(&mut r, dtype, &[cols]);
        let c = payload_tensor(&mut r, dtype, &[rows, 1]);
        let m = random_tensor(&mut r, BOOL, &shape);
        let z = T::zeros(dtype, &[]).unwrap();
        // The same shape read transposed and strided.
        let at = payload_tensor(&mut r, dtype, &[cols, rows])
            .as_strided(&shape, &[1, rows], 0)
            .unwrap();
        let wide = payload_tensor(&mut r, dtype, &[rows, 2 * cols]);
        let every_other = wide.slice(1, 0, 2 * cols, 2).unwrap();
        let inputs = [&a, &b, &c, &m, &z, &at, &every_other];
        let programs: [&[bc_expr_step]; 10] = [
            // square of a difference or a product computed first, of inputs in place
            &[
                input(0),
                input(1),
                op(BC_OP_SUB),
                unary_step(BC_UNARY_SQUARE),
            ],
            &[input(0), unary_step(BC_UNARY_SQUARE)],
            &[input(5), unary_step(BC_UNARY_SQUARE)],
            &[
                input(6),
                input(2),
                op(BC_OP_MUL),
                unary_step(BC_UNARY_SQUARE),
            ],
            // where of inputs in place (a 0-d one, a constant, broadcast ones, strided ones)
            &[input(3), input(0), input(4), where_step()],
            &[input(3), input(5), constant(dtype, 0, -2.5), where_step()],
            &[input(3), input(2), input(1), where_step()],
            &[input(3), input(6), input(5), where_step()],
            // where of a computed condition, of inputs in place
            &[
                input(0),
                input(1),
                op(BC_OP_LT),
                input(5),
                input(2),
                where_step(),
            ],
            // where of a computed condition and a computed value
            &[
                input(0),
                input(1),
                op(BC_OP_LT),
                input(0),
                input(1),
                op(BC_OP_SUB),
                input(2),
                where_step(),
            ],
        ];
        for steps in programs {
            for dims in [None, Some(&[0][..]), Some(&[1][..]), Some(&[-1, 0][..])] {
                for rop in 0..BC_REDUCE_COUNT {
                    let what = format!(
                        "{shape:?} {}: {steps:?} reduce {rop} over {dims:?}",
                        dtype_str(dtype)
                    );
                    let want = eval_then_reduce(steps, &inputs, rop, dims, false);
                    let got = expr_reduce(steps, &inputs, rop, dims, false);
                    match (got, want) {
                        (Ok(g), Ok(w)) => {
                            same_any_nan(&g, &w).unwrap_or_else(|e| panic!("{what}: {e}"))
                        }
                        (g, w) => assert_eq!(g.err(), w.err(), "{what}"),
                    }
                    let p = plan_expr_reduce(steps, &inputs, rop, dims, false).unwrap();
                    assert_ne!(p.flags & BC_PLAN_FUSED, 0, "{what}");
                }
            }
        }
    }
}

/// Errors come in the two calls' order: the expression's before the reduction's; the arguments
/// first.
#[test]
fn fused_reduction_errors_are_the_calls() {
    let a = T::ones(I32, &[2, 3]).unwrap();
    let b = T::ones(I32, &[4]).unwrap();
    let add = [input(0), input(0), op(BC_OP_ADD)];
    // The expression's error, even with a reduction that would be refused too.
    let bad = [input(0), input(1), op(BC_OP_ADD)];
    let e = expr_reduce(&bad, &[&a, &b], BC_REDUCE_MEAN, Some(&[7]), false).unwrap_err();
    assert_eq!(
        e,
        eval_then_reduce(&bad, &[&a, &b], BC_REDUCE_MEAN, Some(&[7]), false).unwrap_err()
    );
    assert_eq!(e.status, BC_ERR_SHAPE);
    // The reduction's: a mean of integers, a dim out of range, a repeated dim, amax of nothing.
    for (rop, dims) in [
        (BC_REDUCE_MEAN, vec![0]),
        (BC_REDUCE_SUM, vec![2]),
        (BC_REDUCE_SUM, vec![1, -1]),
    ] {
        let got = expr_reduce(&add, &[&a], rop, Some(&dims), false).unwrap_err();
        let want = eval_then_reduce(&add, &[&a], rop, Some(&dims), false).unwrap_err();
        assert_eq!(got, want);
    }
    let empty = T::ones(F32, &[0, 3]).unwrap();
    let got = expr_reduce(&add, &[&empty], BC_REDUCE_AMAX, Some(&[0]), false).unwrap_err();
    assert_eq!(
        got,
        eval_then_reduce(&add, &[&empty], BC_REDUCE_AMAX, Some(&[0]), false).unwrap_err()
    );
    assert_eq!(got.status, BC_ERR_SHAPE);
    // Arguments: an unknown reduction, dims NULL with a length.
    let e = expr_reduce(&add, &[&a], 99, None, false).unwrap_err();
    assert_eq!(e.status, BC_ERR_INVALID_ARG);
    let h = handles(&[&a]);
    let mut out: *mut bc_tensor = ptr::null_mut();
    // SAFETY: dims NULL with a length is refused before any read.
    let s = unsafe {
        bc_expr_reduce(
            add.as_ptr(),
            add.len(),
            h.as_ptr(),
            1,
            0,
            ptr::null(),
            1,
            false,
            &mut out,
        )
    };
    assert_eq!(s, BC_ERR_NULL_ARG);
    assert!(out.is_null());
}
