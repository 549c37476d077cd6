//! The reference model of the library's type and shape rules, written once for every test: the
//! fuzzer (`fuzz/api_program.rs`), the property tests (`tests/property.rs`), the oracle tests and
//! bench-compare all ask it. It states the contract of `docs/semantics.md` plainly (tables and
//! loops, no engine code): the ten element types and their categories, PyTorch's type promotion
//! (`promote_types`, `result_type` with 0-d operands, `can_cast`), broadcasting of shapes (with
//! PyTorch's messages), and the layout (strides) a new result gets.
use broadcast::ffi::*;
use std::fmt::Display;

// ---------------------------------------------------------------------------------------------
// element types
// ---------------------------------------------------------------------------------------------

pub const BOOL: i32 = BC_DTYPE_BOOL;
pub const U8: i32 = BC_DTYPE_UINT8;
pub const I8: i32 = BC_DTYPE_INT8;
pub const I16: i32 = BC_DTYPE_INT16;
pub const I32: i32 = BC_DTYPE_INT32;
pub const I64: i32 = BC_DTYPE_INT64;
pub const F16: i32 = BC_DTYPE_FLOAT16;
pub const BF16: i32 = BC_DTYPE_BFLOAT16;
pub const F32: i32 = BC_DTYPE_FLOAT32;
pub const F64: i32 = BC_DTYPE_FLOAT64;

/// Every element type, in code order.
pub const ALL_DTYPES: [i32; BC_DTYPE_COUNT as usize] =
    [BOOL, U8, I8, I16, I32, I64, F16, BF16, F32, F64];

/// Whether `dt` is the code of an element type.
pub fn valid_dtype(dt: i32) -> bool {
    (0..BC_DTYPE_COUNT).contains(&dt)
}

/// Bytes per element.
pub fn itemsize(code: i32) -> usize {
    match code {
        BOOL | U8 | I8 => 1,
        I16 | F16 | BF16 => 2,
        I32 | F32 => 4,
        I64 | F64 => 8,
        _ => panic!("bad dtype {code}"),
    }
}

pub fn is_float(code: i32) -> bool {
    matches!(code, F16 | BF16 | F32 | F64)
}

pub fn is_int(code: i32) -> bool {
    matches!(code, U8 | I8 | I16 | I32 | I64)
}

/// 0 bool, 1 integer, 2 floating
pub fn category(d: i32) -> u8 {
    match d {
        BOOL => 0,
        U8 | I8 | I16 | I32 | I64 => 1,
        _ => 2,
    }
}

// ---------------------------------------------------------------------------------------------
// promotion
// ---------------------------------------------------------------------------------------------

/// PyTorch's `promote_types`: promotion of two dtypes of equal standing (the lattice).
pub fn promote(a: i32, b: i32) -> i32 {
    if a == b {
        return a;
    }
    if a == BOOL {
        return b;
    }
    if b == BOOL {
        return a;
    }
    let (ca, cb) = (category(a), category(b));
    if ca != cb {
        return if ca > cb { a } else { b };
    }
    if ca == 1 {
        // integers: widest signed; uint8 with int8 needs int16
        if a == U8 || b == U8 {
            let o = if a == U8 { b } else { a };
            return if o == I8 { I16 } else { o };
        }
        return a.max(b); // I8 < I16 < I32 < I64 in code order
    }
    // floats
    if (a == F16 && b == BF16) || (a == BF16 && b == F16) {
        return F32;
    }
    let rank = |d: i32| match d {
        F16 | BF16 => 0,
        F32 => 1,
        _ => 2,
    };
    if rank(a) >= rank(b) {
        a
    } else {
        b
    }
}

/// PyTorch 2.x `result_type(a, b)` of two tensors (`a0`, `b0`: the operand is 0-d): a 0-d operand
/// beside a dimensioned one only raises the category.
pub fn result_type(a: i32, a0: bool, b: i32, b0: bool) -> i32 {
    if a0 == b0 {
        return promote(a, b);
    }
    let (dim, zero) = if a0 { (b, a) } else { (a, b) };
    if category(zero) > category(dim) {
        promote(dim, zero)
    } else {
        dim
    }
}

/// PyTorch's `result_type` over several operands: `tensors` as (dtype, is 0-d), `numbers` by the
/// dtype of their value (bool, int64, or float64; a float number counts as float32). Tensors with
/// dimensions promote together, then the 0-d tensors, then the numbers, each group only raising
/// the category (`combine_categories`).
pub fn result_type_n(tensors: &[(i32, bool)], numbers: &[i32]) -> i32 {
    let combine = |higher: Option<i32>, lower: Option<i32>| match (higher, lower) {
        (Some(h), Some(l)) => Some(if category(h) >= category(l) {
            h
        } else {
            promote(h, l)
        }),
        (h, None) => h,
        (None, l) => l,
    };
    let group = |zero_d: bool| {
        tensors
            .iter()
            .filter(|t| t.1 == zero_d)
            .map(|t| t.0)
            .reduce(promote)
    };
    let nums = numbers
        .iter()
        .map(|&d| if d == F64 { F32 } else { d })
        .reduce(promote);
    combine(combine(group(false), group(true)), nums).expect("at least one operand")
}

/// The type binary operation `op` computes in when the operands' result type is `rt`: the
/// operation table's `computes_floating` operations (true division, `atan2`) give float32 for
/// integer and bool operands.
pub fn compute_type(op: i32, rt: i32) -> i32 {
    if crate::NAMED_OPS[op as usize].computes_floating && category(rt) < 2 {
        F32
    } else {
        rt
    }
}

/// PyTorch's `can_cast(from, to)`, the rule for writing a result into an existing tensor (in place,
/// `out=`): no floating to integral, no non-bool to bool, that is no higher category.
pub fn can_cast(from: i32, to: i32) -> bool {
    category(from) <= category(to)
}

// ---------------------------------------------------------------------------------------------
// shapes
// ---------------------------------------------------------------------------------------------

/// Broadcast two shapes (docs/semantics.md, sections 1-2; sizes as `i64` or `usize`); the error is
/// PyTorch's message (walk from the right, first mismatch).
pub fn broadcast_shapes<D: Copy + PartialEq + Display + From<u8>>(
    a: &[D],
    b: &[D],
) -> Result<Vec<D>, String> {
    let one = D::from(1);
    let n = a.len().max(b.len());
    let mut out = vec![one; n];
    for i in (0..n).rev() {
        let o = n - 1 - i;
        let x = if o < a.len() { a[a.len() - 1 - o] } else { one };
        let y = if o < b.len() { b[b.len() - 1 - o] } else { one };
        out[i] = if x == y || y == one {
            x
        } else if x == one {
            y
        } else {
            return Err(format!(
                "The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton dimension {i}"
            ));
        };
    }
    Ok(out)
}

/// In-place shape rule of docs/semantics.md, section 4: `other` (shape `o`) must broadcast to
/// `self`'s shape `s` without changing it; the error is PyTorch's message.
pub fn inplace_shape<D: Copy + PartialEq + Display + From<u8>>(
    s: &[D],
    o: &[D],
) -> Result<(), String> {
    let one = D::from(1);
    if o.len() <= s.len() {
        let lead = s.len() - o.len();
        for i in (lead..s.len()).rev() {
            let os = o[i - lead];
            if os != s[i] && os != one {
                return Err(format!(
                    "The expanded size of the tensor ({}) must match the existing size ({os}) at non-singleton dimension {i}.",
                    s[i]
                ));
            }
        }
        return Ok(());
    }
    let r = broadcast_shapes(s, o)?;
    let list = |v: &[D]| {
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    Err(format!(
        "output with shape [{}] doesn't match the broadcast shape [{}]",
        list(s),
        list(&r)
    ))
}

/// The number of elements, saturating (any shape, however large).
pub fn numel_of(shape: &[usize]) -> u128 {
    shape
        .iter()
        .fold(1u128, |acc, &s| acc.saturating_mul(s as u128))
}

/// The number of elements must fit in `isize`; a 0 anywhere makes 0 whatever the other sizes
/// and their order (`[2^62, 2^62, 0]` is as valid as `[0, 2^62, 2^62]`).
pub fn checked_numel(shape: &[usize]) -> Result<usize, i32> {
    if shape.contains(&0) {
        return Ok(0);
    }
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .filter(|&n| n <= isize::MAX as usize)
        .ok_or(BC_ERR_OVERFLOW)
}

// ---------------------------------------------------------------------------------------------
// layout of a new result
// ---------------------------------------------------------------------------------------------

/// Row-major strides with size-0/1 dimensions counting as 1 (PyTorch's rule).
pub fn contiguous_strides(shape: &[usize]) -> Vec<i64> {
    let mut out = vec![0i64; shape.len()];
    let mut acc: i64 = 1;
    for i in (0..shape.len()).rev() {
        out[i] = acc;
        acc = acc.saturating_mul(shape[i].max(1) as i64);
    }
    out
}

/// The strides PyTorch 2.x gives a new result of `shape` computed from `inputs` (shape, strides,
/// converted to the computation type first): TensorIterator's rule, stated plainly for the model.
pub fn result_layout(shape: &[usize], inputs: &[(Vec<usize>, Vec<i64>, bool)]) -> Vec<i64> {
    // `.to(dtype)` keeps a dense layout (an empty one whatever its strides) and makes any other
    // dense in its own order.
    let own: Vec<Vec<i64>> = inputs
        .iter()
        .map(|(s, st, converted)| {
            if *converted && !dense_layout(s, st) {
                dense_in_order(s, &dim_order(s, std::slice::from_ref(st)), false)
            } else {
                st.clone()
            }
        })
        .collect();
    if inputs.iter().all(|(s, _, _)| s == shape) {
        let row_major = contiguous_strides(shape);
        let contiguous = |st: &Vec<i64>| {
            numel_of(shape) == 0 || (0..shape.len()).all(|d| shape[d] == 1 || st[d] == row_major[d])
        };
        if own.iter().all(contiguous) {
            return row_major;
        }
        let channels_last = |st: &Vec<i64>| {
            shape.len() == 4 && {
                let order = [1, 3, 2, 0];
                let want = dense_in_order(shape, &order, true);
                order.iter().all(|&d| shape[d] == 1 || st[d] == want[d])
            }
        };
        if own.iter().all(channels_last) {
            return dense_in_order(shape, &[1, 3, 2, 0], true);
        }
        if own
            .iter()
            .all(|st| dense_layout(shape, st) && *st == own[0])
        {
            return own.last().unwrap().clone();
        }
    }
    let nd = shape.len();
    let iter: Vec<Vec<i64>> = inputs
        .iter()
        .zip(&own)
        .map(|((s, _, _), st)| {
            (0..nd)
                .map(|d| match (d + s.len()).checked_sub(nd) {
                    Some(i) if s[i] != 1 || shape[d] == 1 => st[i],
                    _ => 0,
                })
                .collect()
        })
        .collect();
    let order = dim_order(shape, &iter);
    if order.iter().copied().eq((0..nd).rev()) {
        contiguous_strides(shape)
    } else {
        dense_in_order(shape, &order, true)
    }
}

/// TensorIterator's dimension order, fastest first: insertion sort from reversed row-major
/// order; two dimensions compare by the first operand with non-zero strides on both that differ,
/// or, equal, whose size on the first is larger; otherwise they are left as they are.
pub fn dim_order(shape: &[usize], strides: &[Vec<i64>]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..shape.len()).rev().collect();
    let after = |x: usize, y: usize| -> Option<bool> {
        strides.iter().find_map(|st| {
            let (sx, sy) = (st[x], st[y]);
            if sx == 0 || sy == 0 {
                None
            } else if sx != sy {
                Some(sx > sy)
            } else {
                (shape[x] > shape[y]).then_some(true)
            }
        })
    };
    for i in 1..order.len() {
        let mut j = i;
        for k in (0..i).rev() {
            match after(order[k], order[j]) {
                Some(true) => {
                    order.swap(k, j);
                    j = k;
                }
                Some(false) => break,
                None => {}
            }
        }
    }
    order
}

/// Dense strides with the dimensions of `order` fastest first; `zero_sizes` multiplies by sizes
/// of 0 too (TensorIterator), else they count as 1 (a converted copy).
pub fn dense_in_order(shape: &[usize], order: &[usize], zero_sizes: bool) -> Vec<i64> {
    let mut out = vec![0i64; shape.len()];
    let mut next = 1i64;
    for &d in order {
        out[d] = next;
        if shape[d] > 1 || (zero_sizes && shape[d] == 0) {
            next = next.saturating_mul(shape[d] as i64);
        }
    }
    out
}

/// Whether the dimensions of size 2 or more, sorted by stride, are dense; a tensor with no
/// elements always is (PyTorch counts every empty tensor as contiguous, so `.to(dtype)` keeps its
/// strides).
pub fn dense_layout(shape: &[usize], strides: &[i64]) -> bool {
    if shape.contains(&0) {
        return true;
    }
    let mut big: Vec<(i64, usize)> = (0..shape.len())
        .filter(|&d| shape[d] >= 2)
        .map(|d| (strides[d], shape[d]))
        .collect();
    big.sort();
    let mut expected = 1i64;
    for (s, n) in big {
        if s != expected {
            return false;
        }
        expected = expected.saturating_mul(n as i64);
    }
    true
}

/// All multi-indices of `shape`, row-major.
pub fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let n = numel_of(shape) as usize; // callers only ask for small shapes (or empty ones)
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0usize; shape.len()];
    for _ in 0..n {
        out.push(idx.clone());
        for d in (0..shape.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}
