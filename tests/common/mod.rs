//! Shared helpers for the integration tests: safe wrappers over the exported C ABI.
//!
//! Everything here goes through `broadcast::ffi::bc_*` only (the functions a C caller sees); no
//! engine internals are used. `T` owns one `bc_tensor` handle and frees it on drop.
#![allow(dead_code, unused_unsafe)]

use broadcast::ffi::*;
use std::ffi::{c_char, c_void, CStr};
use std::path::PathBuf;
use std::ptr;
use std::sync::{Mutex, MutexGuard};

pub mod ops_table;
pub mod raw;
pub use ops_table::NAMED_OPS;

// ---------------------------------------------------------------------------------------------
// dtypes
// ---------------------------------------------------------------------------------------------

/// The ten dtypes, by C code, with the names the library and the oracle use.
pub const DTYPES: [(&str, i32); 10] = [
    ("bool", BC_DTYPE_BOOL),
    ("uint8", BC_DTYPE_UINT8),
    ("int8", BC_DTYPE_INT8),
    ("int16", BC_DTYPE_INT16),
    ("int32", BC_DTYPE_INT32),
    ("int64", BC_DTYPE_INT64),
    ("float16", BC_DTYPE_FLOAT16),
    ("bfloat16", BC_DTYPE_BFLOAT16),
    ("float32", BC_DTYPE_FLOAT32),
    ("float64", BC_DTYPE_FLOAT64),
];

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

/// The operations of `bc_binary*`, by code (`BC_OP_*`), named as in `torch`.
pub fn op_name(op: i32) -> &'static str {
    NAMED_OPS[op as usize].name
}

pub fn op_code(name: &str) -> i32 {
    NAMED_OPS
        .iter()
        .find(|op| op.name == name)
        .unwrap_or_else(|| panic!("unknown op {name:?}"))
        .code
}

pub fn dtype_code(name: &str) -> i32 {
    DTYPES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, c)| *c)
        .unwrap_or_else(|| panic!("unknown dtype name {name:?}"))
}

/// Our own name table (used to describe cases; the library's own `bc_dtype_name` is checked
/// against it in `lib_dtype_name`).
pub fn dtype_str(code: i32) -> &'static str {
    DTYPES
        .iter()
        .find(|(_, c)| *c == code)
        .map(|(n, _)| *n)
        .unwrap_or("unknown")
}

/// `bc_dtype_name` as a Rust string.
pub fn lib_dtype_name(code: i32) -> String {
    unsafe {
        let p = bc_dtype_name(code);
        assert!(!p.is_null(), "bc_dtype_name({code}) returned NULL");
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// 0 bool, 1 integer, 2 floating
pub fn category(d: i32) -> u8 {
    match d {
        BOOL => 0,
        U8 | I8 | I16 | I32 | I64 => 1,
        _ => 2,
    }
}

/// Promotion of two dtypes of equal standing (the lattice).
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

/// `result_type(a, b)`: a 0-d operand beside a dimensioned one only raises the category.
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

// ---------------------------------------------------------------------------------------------
// 16-bit float bit conversions (round to nearest, ties to even)
// ---------------------------------------------------------------------------------------------

pub fn f32_to_f16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 0xff {
        // inf or NaN (keep NaN quiet and non-zero)
        return sign
            | 0x7c00
            | if man != 0 {
                0x200 | (man >> 13) as u16
            } else {
                0
            };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let mut r = m >> shift;
        let rem = m & ((1u32 << shift) - 1);
        if rem > half || (rem == half && (r & 1) == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let mut r = ((e as u32) << 10) | (man >> 13);
    let rem = man & 0x1fff;
    if rem > 0x1000 || (rem == 0x1000 && (r & 1) == 1) {
        r += 1; // a carry into the exponent is right, up to infinity
    }
    sign | r as u16
}

pub fn f16_bits_to_f32(h: u16) -> f32 {
    let neg = h & 0x8000 != 0;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    let v = if exp == 0 {
        man as f32 * (1.0 / 16_777_216.0) // man * 2^-24, exact
    } else if exp == 0x1f {
        f32::from_bits(0x7f80_0000 | (man << 13))
    } else {
        f32::from_bits(((exp + 112) << 23) | (man << 13))
    };
    if neg {
        -v
    } else {
        v
    }
}

pub fn f32_to_bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) as u16) | 0x40;
    }
    let lsb = (b >> 16) & 1;
    (b.wrapping_add(0x7fff + lsb) >> 16) as u16
}

pub fn bf16_bits_to_f32(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

/// Round an f64 to the nearest value of a floating dtype the way C casts do (float16/bfloat16 go
/// through float32, as PyTorch's `c10::Half(double)` does).
pub fn round_to(dtype: i32, v: f64) -> f64 {
    match dtype {
        F64 => v,
        F32 => v as f32 as f64,
        F16 => f16_bits_to_f32(f32_to_f16_bits(v as f32)) as f64,
        BF16 => bf16_bits_to_f32(f32_to_bf16_bits(v as f32)) as f64,
        _ => panic!("round_to on non-float dtype {dtype}"),
    }
}

// ---------------------------------------------------------------------------------------------
// element values
// ---------------------------------------------------------------------------------------------

/// One element: bools, integers (exact) and floats (the exact value, which every dtype we have
/// can represent in an f64).
#[derive(Clone, Copy, Debug)]
pub enum V {
    B(bool),
    I(i64),
    F(f64),
}

impl V {
    pub fn as_f64(self) -> f64 {
        match self {
            V::B(b) => b as i64 as f64,
            V::I(i) => i as f64,
            V::F(f) => f,
        }
    }
}

impl std::fmt::Display for V {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            V::B(b) => write!(f, "{b}"),
            V::I(i) => write!(f, "{i}"),
            V::F(x) => write!(f, "{x:?}"),
        }
    }
}

pub fn fmt_vals(v: &[V]) -> String {
    let parts: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// Exact equality (NaN equals NaN; 0.0 and -0.0 are told apart).
pub fn same_value(a: V, b: V) -> bool {
    match (a, b) {
        (V::B(x), V::B(y)) => x == y,
        (V::I(x), V::I(y)) => x == y,
        (V::F(x), V::F(y)) => (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits(),
        _ => false,
    }
}

/// Position of a float value on the dtype's ordered integer line (for ulp distances).
fn ordered(dtype: i32, v: f64) -> i64 {
    let (bits, signbit, width): (u64, u64, u32) = match dtype {
        F64 => (v.to_bits(), 1u64 << 63, 64),
        F32 => ((v as f32).to_bits() as u64, 1u64 << 31, 32),
        F16 => (f32_to_f16_bits(v as f32) as u64, 1u64 << 15, 16),
        BF16 => (f32_to_bf16_bits(v as f32) as u64, 1u64 << 15, 16),
        _ => panic!("ordered on non-float"),
    };
    let _ = width;
    let mag = (bits & (signbit - 1)) as i64;
    if bits & signbit != 0 {
        -mag
    } else {
        mag
    }
}

/// Distance in units in the last place of `dtype` between two float values (0 when equal,
/// i64::MAX when one is NaN and the other is not).
pub fn ulp_distance(dtype: i32, a: f64, b: f64) -> i64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            i64::MAX
        };
    }
    if a == b {
        return 0;
    }
    let d = ordered(dtype, a) as i128 - ordered(dtype, b) as i128;
    d.unsigned_abs().min(i64::MAX as u128) as i64
}

/// Values equal exactly, or within `ulps` for floats.
pub fn close_value(dtype: i32, a: V, b: V, ulps: i64) -> bool {
    if same_value(a, b) {
        return true;
    }
    match (a, b) {
        (V::F(x), V::F(y)) if ulps > 0 && is_float(dtype) => ulp_distance(dtype, x, y) <= ulps,
        _ => false,
    }
}

/// Encode values as the raw bytes of `dtype` (native endian). Integers wrap into the dtype;
/// floats round to nearest even.
pub fn encode(dtype: i32, vals: &[V]) -> Vec<u8> {
    let mut out = Vec::with_capacity(vals.len() * itemsize(dtype));
    for &v in vals {
        match dtype {
            BOOL => out.push(match v {
                V::B(b) => b as u8,
                V::I(i) => (i != 0) as u8,
                V::F(f) => (f != 0.0) as u8,
            }),
            U8 | I8 | I16 | I32 | I64 => {
                let i: i64 = match v {
                    V::B(b) => b as i64,
                    V::I(i) => i,
                    V::F(f) => f as i64,
                };
                match dtype {
                    U8 => out.push(i as u8),
                    I8 => out.push(i as i8 as u8),
                    I16 => out.extend_from_slice(&(i as i16).to_ne_bytes()),
                    I32 => out.extend_from_slice(&(i as i32).to_ne_bytes()),
                    _ => out.extend_from_slice(&i.to_ne_bytes()),
                }
            }
            F16 => out.extend_from_slice(&f32_to_f16_bits(v.as_f64() as f32).to_ne_bytes()),
            BF16 => out.extend_from_slice(&f32_to_bf16_bits(v.as_f64() as f32).to_ne_bytes()),
            F32 => out.extend_from_slice(&(v.as_f64() as f32).to_ne_bytes()),
            F64 => out.extend_from_slice(&v.as_f64().to_ne_bytes()),
            _ => panic!("bad dtype {dtype}"),
        }
    }
    out
}

/// Decode raw bytes of `dtype` into values (our own conversion, no library call).
pub fn decode(dtype: i32, bytes: &[u8]) -> Vec<V> {
    let n = itemsize(dtype);
    assert!(bytes.len() % n == 0);
    bytes
        .chunks_exact(n)
        .map(|c| match dtype {
            BOOL => V::B(c[0] != 0),
            U8 => V::I(c[0] as i64),
            I8 => V::I(c[0] as i8 as i64),
            I16 => V::I(i16::from_ne_bytes([c[0], c[1]]) as i64),
            I32 => V::I(i32::from_ne_bytes(c.try_into().unwrap()) as i64),
            I64 => V::I(i64::from_ne_bytes(c.try_into().unwrap())),
            F16 => V::F(f16_bits_to_f32(u16::from_ne_bytes([c[0], c[1]])) as f64),
            BF16 => V::F(bf16_bits_to_f32(u16::from_ne_bytes([c[0], c[1]])) as f64),
            F32 => V::F(f32::from_ne_bytes(c.try_into().unwrap()) as f64),
            F64 => V::F(f64::from_ne_bytes(c.try_into().unwrap())),
            _ => panic!("bad dtype {dtype}"),
        })
        .collect()
}

/// Raw bit pattern of a bool byte, to check that the library only ever writes 0 or 1.
pub fn bool_bytes_ok(bytes: &[u8]) -> bool {
    bytes.iter().all(|&b| b <= 1)
}

/// A JSON value (as the oracle writes it: numbers, bools, and `"nan"`, `"inf"`, `"-inf"`) as an
/// element of `dtype`.
pub fn json_value(dtype: i32, v: &serde_json::Value) -> V {
    match dtype {
        BOOL => V::B(
            v.as_bool()
                .unwrap_or_else(|| panic!("expected a bool, got {v}")),
        ),
        U8 | I8 | I16 | I32 | I64 => V::I(
            v.as_i64()
                .unwrap_or_else(|| panic!("expected an integer, got {v}")),
        ),
        _ => V::F(round_to(
            dtype,
            v.as_f64()
                .or_else(|| match v.as_str()? {
                    "nan" => Some(f64::NAN),
                    "inf" => Some(f64::INFINITY),
                    "-inf" => Some(f64::NEG_INFINITY),
                    _ => None,
                })
                .unwrap_or_else(|| panic!("expected a number, got {v}")),
        )),
    }
}

pub fn json_values(dtype: i32, v: &serde_json::Value) -> Vec<V> {
    v.as_array()
        .unwrap_or_else(|| panic!("expected an array, got {v}"))
        .iter()
        .map(|x| json_value(dtype, x))
        .collect()
}

pub fn json_shape(v: &serde_json::Value) -> Vec<i64> {
    v.as_array()
        .unwrap_or_else(|| panic!("expected a shape array, got {v}"))
        .iter()
        .map(|x| {
            x.as_i64()
                .unwrap_or_else(|| panic!("expected an integer size, got {x}"))
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// errors
// ---------------------------------------------------------------------------------------------

/// `bc_last_error_message` as a Rust string (checks the length protocol on the way).
pub fn last_error() -> String {
    unsafe {
        let n = bc_last_error_message(ptr::null_mut(), 0);
        let mut buf = vec![0u8; n + 1];
        let m = bc_last_error_message(buf.as_mut_ptr() as *mut c_char, buf.len());
        assert_eq!(m, n, "bc_last_error_message returned different lengths");
        assert_eq!(buf[n], 0, "bc_last_error_message did not NUL-terminate");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }
}

pub fn status_name(s: i32) -> String {
    unsafe {
        let p = bc_status_str(s);
        if p.is_null() {
            return format!("status {s} (bc_status_str gave NULL)");
        }
        format!("{} ({s})", CStr::from_ptr(p).to_string_lossy())
    }
}

/// A failed call: the status and the message left behind.
#[derive(Clone, Debug, PartialEq)]
pub struct Err {
    pub status: i32,
    pub msg: String,
}

impl std::fmt::Display for Err {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "error {}: {:?}", status_name(self.status), self.msg)
    }
}

pub fn check(status: i32) -> Result<(), Err> {
    if status == BC_OK {
        Ok(())
    } else {
        Err(Err {
            status,
            msg: last_error(),
        })
    }
}

// ---------------------------------------------------------------------------------------------
// tensors
// ---------------------------------------------------------------------------------------------

/// An owned tensor handle; freed with `bc_tensor_free` on drop.
#[derive(Debug)]
pub struct T(pub *mut bc_tensor);

impl Drop for T {
    fn drop(&mut self) {
        bc_tensor_free(self.0)
    }
}

fn shape_ptr(shape: &[i64]) -> *const i64 {
    if shape.is_empty() {
        ptr::null()
    } else {
        shape.as_ptr()
    }
}

/// Turn a constructor's (status, out) into a Result, checking the out-pointer convention.
fn take(status: i32, out: *mut bc_tensor, what: &str) -> Result<T, Err> {
    if status == BC_OK {
        assert!(!out.is_null(), "{what}: returned BC_OK but left *out NULL");
        Ok(T(out))
    } else {
        let e = Err {
            status,
            msg: last_error(),
        };
        assert!(
            out.is_null(),
            "{what}: failed ({e}) but did not set *out to NULL"
        );
        Err(e)
    }
}

impl T {
    pub fn ptr(&self) -> *const bc_tensor {
        self.0
    }

    pub fn mut_ptr(&self) -> *mut bc_tensor {
        self.0
    }

    pub fn zeros(dtype: i32, shape: &[i64]) -> Result<T, Err> {
        let mut out: *mut bc_tensor = std::ptr::dangling_mut(); // non-NULL garbage: must be reset on failure
        let s = unsafe { bc_tensor_zeros(dtype, shape_ptr(shape), shape.len(), &mut out) };
        take(s, out, "bc_tensor_zeros")
    }

    pub fn ones(dtype: i32, shape: &[i64]) -> Result<T, Err> {
        let mut out: *mut bc_tensor = std::ptr::dangling_mut();
        let s = unsafe { bc_tensor_ones(dtype, shape_ptr(shape), shape.len(), &mut out) };
        take(s, out, "bc_tensor_ones")
    }

    pub fn full(dtype: i32, shape: &[i64], value: f64) -> Result<T, Err> {
        let mut out: *mut bc_tensor = std::ptr::dangling_mut();
        let s = unsafe { bc_tensor_full(dtype, shape_ptr(shape), shape.len(), value, &mut out) };
        take(s, out, "bc_tensor_full")
    }

    /// Copying constructor from row-major bytes.
    pub fn from_bytes(dtype: i32, shape: &[i64], bytes: &[u8]) -> Result<T, Err> {
        let mut out: *mut bc_tensor = std::ptr::dangling_mut();
        let data = if bytes.is_empty() {
            ptr::null()
        } else {
            bytes.as_ptr() as *const c_void
        };
        let s = unsafe {
            bc_tensor_from_data(
                dtype,
                shape_ptr(shape),
                shape.len(),
                data,
                bytes.len(),
                &mut out,
            )
        };
        take(s, out, "bc_tensor_from_data")
    }

    pub fn from_values(dtype: i32, shape: &[i64], vals: &[V]) -> Result<T, Err> {
        T::from_bytes(dtype, shape, &encode(dtype, vals))
    }

    /// float32 tensor of the given shape holding `start, start+1, ...` in row-major order.
    pub fn arange_f32(shape: &[i64], start: f64) -> T {
        let n: i64 = shape.iter().product();
        let vals: Vec<V> = (0..n).map(|i| V::F(start + i as f64)).collect();
        T::from_values(F32, shape, &vals).unwrap_or_else(|e| panic!("from_data {shape:?}: {e}"))
    }

    /// Zero-copy view of caller memory (no release callback).
    ///
    /// # Safety
    /// `buf` must outlive every tensor (and view) created from this one.
    pub unsafe fn wrap(
        dtype: i32,
        buf: *mut u8,
        nbytes: usize,
        shape: &[i64],
        strides: Option<&[i64]>,
        offset: i64,
    ) -> Result<T, Err> {
        let mut out: *mut bc_tensor = std::ptr::dangling_mut();
        let st = match strides {
            Some(s) => {
                assert_eq!(s.len(), shape.len());
                shape_ptr(s)
            }
            None => ptr::null(),
        };
        let s = bc_tensor_wrap(
            dtype,
            buf as *mut c_void,
            nbytes,
            shape_ptr(shape),
            st,
            shape.len(),
            offset,
            None,
            ptr::null_mut(),
            &mut out,
        );
        take(s, out, "bc_tensor_wrap")
    }

    pub fn dtype(&self) -> i32 {
        let mut d = -1;
        check(unsafe { bc_tensor_dtype(self.0, &mut d) }).expect("bc_tensor_dtype");
        d
    }

    pub fn ndim(&self) -> usize {
        let mut n = 0usize;
        check(unsafe { bc_tensor_ndim(self.0, &mut n) }).expect("bc_tensor_ndim");
        n
    }

    pub fn shape(&self) -> Vec<i64> {
        let n = self.ndim();
        let mut v = vec![0i64; n];
        let p = if n == 0 {
            ptr::null_mut()
        } else {
            v.as_mut_ptr()
        };
        check(unsafe { bc_tensor_shape(self.0, p, n) }).expect("bc_tensor_shape");
        v
    }

    pub fn strides(&self) -> Vec<i64> {
        let n = self.ndim();
        let mut v = vec![0i64; n];
        let p = if n == 0 {
            ptr::null_mut()
        } else {
            v.as_mut_ptr()
        };
        check(unsafe { bc_tensor_strides(self.0, p, n) }).expect("bc_tensor_strides");
        v
    }

    pub fn offset(&self) -> i64 {
        let mut o = -1;
        check(unsafe { bc_tensor_offset(self.0, &mut o) }).expect("bc_tensor_offset");
        o
    }

    pub fn numel(&self) -> i64 {
        let mut n = -1;
        check(unsafe { bc_tensor_numel(self.0, &mut n) }).expect("bc_tensor_numel");
        n
    }

    /// Row-major copy of the elements as raw bytes (bc_tensor_copy_to).
    pub fn bytes(&self) -> Vec<u8> {
        let n = self.numel() as usize * itemsize(self.dtype());
        let mut buf = vec![0u8; n];
        let p = if n == 0 {
            ptr::null_mut()
        } else {
            buf.as_mut_ptr() as *mut c_void
        };
        check(unsafe { bc_tensor_copy_to(self.0, p, n) }).expect("bc_tensor_copy_to");
        buf
    }

    /// Row-major elements. float16/bfloat16 are read through `bc_tensor_to_dtype(float32)`
    /// (exact: every 16-bit float is a float32).
    pub fn values(&self) -> Vec<V> {
        let d = self.dtype();
        match d {
            F16 | BF16 => {
                let t = self.to_dtype(F32).expect("bc_tensor_to_dtype(float32)");
                decode(F32, &t.bytes())
            }
            _ => decode(d, &self.bytes()),
        }
    }

    /// Row-major elements as f64 (bools as 0/1, integers converted).
    pub fn to_f64(&self) -> Vec<f64> {
        self.values().into_iter().map(|v| v.as_f64()).collect()
    }

    pub fn to_dtype(&self, dtype: i32) -> Result<T, Err> {
        let mut out: *mut bc_tensor = std::ptr::dangling_mut();
        let s = unsafe { bc_tensor_to_dtype(self.0, dtype, &mut out) };
        take(s, out, "bc_tensor_to_dtype")
    }

    pub fn expand(&self, sizes: &[i64]) -> Result<T, Err> {
        let mut out: *mut bc_tensor = std::ptr::dangling_mut();
        let s = unsafe { bc_tensor_expand(self.0, shape_ptr(sizes), sizes.len(), &mut out) };
        take(s, out, "bc_tensor_expand")
    }

    pub fn broadcast_to(&self, sizes: &[i64]) -> Result<T, Err> {
        let mut out: *mut bc_tensor = std::ptr::dangling_mut();
        let s = unsafe { bc_tensor_broadcast_to(self.0, shape_ptr(sizes), sizes.len(), &mut out) };
        take(s, out, "bc_tensor_broadcast_to")
    }

    pub fn slice(&self, dim: i64, start: i64, stop: i64, step: i64) -> Result<T, Err> {
        let mut out: *mut bc_tensor = std::ptr::dangling_mut();
        let s = unsafe { bc_tensor_slice(self.0, dim, start, stop, step, &mut out) };
        take(s, out, "bc_tensor_slice")
    }

    pub fn as_strided(&self, shape: &[i64], strides: &[i64], offset: i64) -> Result<T, Err> {
        assert_eq!(shape.len(), strides.len());
        let mut out: *mut bc_tensor = std::ptr::dangling_mut();
        let s = unsafe {
            bc_tensor_as_strided(
                self.0,
                shape_ptr(shape),
                shape_ptr(strides),
                shape.len(),
                offset,
                &mut out,
            )
        };
        take(s, out, "bc_tensor_as_strided")
    }
}

// ---------------------------------------------------------------------------------------------
// operations
// ---------------------------------------------------------------------------------------------

pub fn binary(op: i32, a: &T, b: &T) -> Result<T, Err> {
    let mut out: *mut bc_tensor = std::ptr::dangling_mut();
    let s = unsafe { bc_binary(op, a.ptr(), b.ptr(), &mut out) };
    take(s, out, "bc_binary")
}

pub fn binary_inplace(op: i32, this: &T, other: &T) -> Result<(), Err> {
    check(unsafe { bc_binary_inplace(op, this.mut_ptr(), other.ptr()) })
}

pub fn binary_out(op: i32, a: &T, b: &T, out: &T) -> Result<(), Err> {
    check(unsafe { bc_binary_out(op, a.ptr(), b.ptr(), out.mut_ptr()) })
}

pub fn unary(op: i32, x: &T) -> Result<T, Err> {
    let mut out: *mut bc_tensor = std::ptr::dangling_mut();
    let s = unsafe { bc_unary(op, x.ptr(), &mut out) };
    take(s, out, "bc_unary")
}

pub fn unary_inplace(op: i32, x: &T) -> Result<(), Err> {
    check(bc_unary_inplace(op, x.mut_ptr()))
}

pub fn unary_out(op: i32, x: &T, out: &T) -> Result<(), Err> {
    check(bc_unary_out(op, x.ptr(), out.mut_ptr()))
}

pub fn where_new(cond: &T, a: &T, b: &T) -> Result<T, Err> {
    let mut out: *mut bc_tensor = std::ptr::dangling_mut();
    let s = unsafe { bc_where(cond.ptr(), a.ptr(), b.ptr(), &mut out) };
    take(s, out, "bc_where")
}

pub fn where_out(cond: &T, a: &T, b: &T, out: &T) -> Result<(), Err> {
    check(unsafe { bc_where_out(cond.ptr(), a.ptr(), b.ptr(), out.mut_ptr()) })
}

pub fn add(a: &T, b: &T) -> Result<T, Err> {
    let mut out: *mut bc_tensor = std::ptr::dangling_mut();
    let s = unsafe { bc_add(a.ptr(), b.ptr(), &mut out) };
    take(s, out, "bc_add")
}

pub fn add_inplace(this: &T, other: &T) -> Result<(), Err> {
    check(unsafe { bc_add_inplace(this.mut_ptr(), other.ptr()) })
}

pub fn add_out(a: &T, b: &T, out: &T) -> Result<(), Err> {
    check(unsafe { bc_add_out(a.ptr(), b.ptr(), out.mut_ptr()) })
}

// ---------------------------------------------------------------------------------------------
// reductions
// ---------------------------------------------------------------------------------------------

pub const REDUCE_NAMES: [&str; 5] = ["sum", "mean", "prod", "amax", "amin"];

pub fn reduce_code(name: &str) -> i32 {
    REDUCE_NAMES
        .iter()
        .position(|n| *n == name)
        .unwrap_or_else(|| panic!("unknown reduction {name:?}")) as i32
}

/// `dims`: `None` passes `(NULL, 0)`; `Some(&[])` passes a non-NULL pointer with length 0.
pub fn reduce(op: i32, t: &T, dims: Option<&[i64]>, keepdim: bool) -> Result<T, Err> {
    let mut out: *mut bc_tensor = std::ptr::dangling_mut();
    let (p, n) = match dims {
        None => (ptr::null(), 0),
        Some(d) => (d.as_ptr(), d.len()),
    };
    let s = unsafe { bc_reduce(op, t.ptr(), p, n, keepdim, &mut out) };
    take(s, out, "bc_reduce")
}

/// The named function for `op` (`bc_sum`, ...), same arguments.
pub fn reduce_named(op: i32, t: &T, dims: Option<&[i64]>, keepdim: bool) -> Result<T, Err> {
    let f = [bc_sum, bc_mean, bc_prod, bc_amax, bc_amin][op as usize];
    let mut out: *mut bc_tensor = std::ptr::dangling_mut();
    let (p, n) = match dims {
        None => (ptr::null(), 0),
        Some(d) => (d.as_ptr(), d.len()),
    };
    let s = unsafe { f(t.ptr(), p, n, keepdim, &mut out) };
    take(s, out, "bc_<reduction>")
}

pub fn sum_to_size(t: &T, size: &[i64]) -> Result<T, Err> {
    let mut out: *mut bc_tensor = std::ptr::dangling_mut();
    let s = unsafe { bc_tensor_sum_to_size(t.ptr(), size.as_ptr(), size.len(), &mut out) };
    take(s, out, "bc_tensor_sum_to_size")
}

pub fn binary_sum_to(op: i32, a: &T, b: &T, size: &[i64]) -> Result<T, Err> {
    let mut out: *mut bc_tensor = std::ptr::dangling_mut();
    let s = unsafe { bc_binary_sum_to(op, a.ptr(), b.ptr(), size.as_ptr(), size.len(), &mut out) };
    take(s, out, "bc_binary_sum_to")
}

/// `bc_shape_broadcast` (also checks `*out_ndim`).
pub fn shape_broadcast(a: &[i64], b: &[i64]) -> Result<Vec<i64>, Err> {
    let cap = a.len().max(b.len());
    let mut out = vec![-7i64; cap + 1];
    let mut nd = usize::MAX;
    let s = unsafe {
        bc_shape_broadcast(
            shape_ptr(a),
            a.len(),
            shape_ptr(b),
            b.len(),
            out.as_mut_ptr(),
            cap + 1,
            &mut nd,
        )
    };
    check(s)?;
    assert_eq!(
        nd, cap,
        "bc_shape_broadcast({a:?}, {b:?}): *out_ndim = {nd}, expected {cap}"
    );
    out.truncate(nd);
    Ok(out)
}

pub fn shape_is_broadcastable(a: &[i64], b: &[i64]) -> Result<bool, Err> {
    let mut r = false;
    check(unsafe {
        bc_shape_is_broadcastable(shape_ptr(a), a.len(), shape_ptr(b), b.len(), &mut r)
    })?;
    Ok(r)
}

pub fn shape_broadcast_n(shapes: &[Vec<i64>]) -> Result<Vec<i64>, Err> {
    let ptrs: Vec<*const i64> = shapes.iter().map(|s| shape_ptr(s)).collect();
    let ndims: Vec<usize> = shapes.iter().map(|s| s.len()).collect();
    let cap = ndims.iter().copied().max().unwrap_or(0);
    let mut out = vec![-7i64; cap + 1];
    let mut nd = usize::MAX;
    let s = unsafe {
        bc_shape_broadcast_n(
            ptrs.as_ptr(),
            ndims.as_ptr(),
            shapes.len(),
            out.as_mut_ptr(),
            cap + 1,
            &mut nd,
        )
    };
    check(s)?;
    assert!(nd <= cap, "bc_shape_broadcast_n: *out_ndim = {nd} > {cap}");
    out.truncate(nd);
    Ok(out)
}

pub fn broadcast_tensors(ins: &[&T]) -> Result<Vec<T>, Err> {
    let ptrs: Vec<*const bc_tensor> = ins.iter().map(|t| t.ptr()).collect();
    let mut outs: Vec<*mut bc_tensor> = vec![ptr::null_mut(); ins.len()];
    let s = unsafe { bc_tensor_broadcast_tensors(ptrs.as_ptr(), ins.len(), outs.as_mut_ptr()) };
    if s == BC_OK {
        assert!(
            outs.iter().all(|p| !p.is_null()),
            "bc_tensor_broadcast_tensors: BC_OK but a NULL handle"
        );
        Ok(outs.into_iter().map(T).collect())
    } else {
        let e = Err {
            status: s,
            msg: last_error(),
        };
        assert!(
            outs.iter().all(|p| p.is_null()),
            "bc_tensor_broadcast_tensors failed ({e}) but wrote handles"
        );
        Err(e)
    }
}

// ---------------------------------------------------------------------------------------------
// settings and warnings (process-global: serialize with `settings_lock`)
// ---------------------------------------------------------------------------------------------

static SETTINGS: Mutex<()> = Mutex::new(());
static WARNINGS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Holds the process-wide lock for settings/warnings; on creation and on drop restores the
/// defaults (both switches off, default warning handler).
pub struct SettingsGuard {
    _g: MutexGuard<'static, ()>,
}

pub fn settings_lock() -> SettingsGuard {
    let g = SETTINGS.lock().unwrap_or_else(|e| e.into_inner());
    reset_settings();
    SettingsGuard { _g: g }
}

impl Drop for SettingsGuard {
    fn drop(&mut self) {
        reset_settings();
    }
}

fn reset_settings() {
    assert_eq!(bc_set_legacy_fallback(false), BC_OK);
    assert_eq!(bc_set_broadcast_warning(false), BC_OK);
    assert_eq!(bc_set_warning_handler(None, ptr::null_mut()), BC_OK);
}

/// What the collecting handler is registered with as user data (checked on every call).
static USER_DATA_MARK: u8 = 0xA5;

fn user_data_mark() -> *mut c_void {
    &USER_DATA_MARK as *const u8 as *mut c_void
}

unsafe extern "C" fn collect_warning(user: *mut c_void, msg: *const c_char) {
    let mut s = if msg.is_null() {
        "<NULL warning message>".to_string()
    } else {
        CStr::from_ptr(msg).to_string_lossy().into_owned()
    };
    if user != user_data_mark() {
        s = format!(
            "<handler called with user_data {user:p}, registered {:p}> {s}",
            user_data_mark()
        );
    }
    // never panic across the C boundary
    let mut w = WARNINGS.lock().unwrap_or_else(|e| e.into_inner());
    w.push(s);
}

/// Install the collecting warning handler (call with the settings lock held).
pub fn install_warning_collector() {
    assert_eq!(
        bc_set_warning_handler(Some(collect_warning), user_data_mark()),
        BC_OK
    );
    take_warnings();
}

/// The warnings collected since the last call.
pub fn take_warnings() -> Vec<String> {
    std::mem::take(&mut *WARNINGS.lock().unwrap_or_else(|e| e.into_inner()))
}

pub fn set_switches(fallback: bool, warn: bool) {
    assert_eq!(bc_set_legacy_fallback(fallback), BC_OK);
    assert_eq!(bc_set_broadcast_warning(warn), BC_OK);
    assert_eq!(bc_get_legacy_fallback(), fallback);
    assert_eq!(bc_get_broadcast_warning(), warn);
}

/// Restores the library's threading defaults when dropped (also on panic).
pub struct ThreadingGuard;

impl Drop for ThreadingGuard {
    fn drop(&mut self) {
        assert_eq!(bc_set_num_threads(0), BC_OK);
        assert_eq!(bc_set_parallel_threshold(0), BC_OK);
    }
}

// ---------------------------------------------------------------------------------------------
// oracle files
// ---------------------------------------------------------------------------------------------

pub fn oracle_dir() -> PathBuf {
    let p = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/pytorch"));
    assert!(
        p.is_dir(),
        "conformance data folder {} is missing: these tests fail rather than skip without it",
        p.display()
    );
    p
}

pub fn read_jsonl(name: &str) -> Vec<serde_json::Value> {
    let path = oracle_dir().join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read oracle file {}: {e}", path.display()));
    let rows: Vec<serde_json::Value> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("{}:{}: bad JSON: {e}", name, i + 1))
        })
        .collect();
    assert!(!rows.is_empty(), "oracle file {} is empty", path.display());
    rows
}

/// Collects failing rows; prints the first few and panics with the count at the end.
pub struct Failures {
    pub file: String,
    pub list: Vec<String>,
    pub checked: usize,
}

impl Failures {
    pub fn new(file: &str) -> Failures {
        Failures {
            file: file.to_string(),
            list: Vec::new(),
            checked: 0,
        }
    }

    pub fn add(&mut self, line: usize, row: &serde_json::Value, what: String) {
        self.list
            .push(format!("{}:{} {}\n    row: {}", self.file, line, what, row));
    }

    pub fn finish(self) {
        println!("{}: checked {} rows", self.file, self.checked);
        if !self.list.is_empty() {
            // BC_ORACLE_SHOW=n prints the first n failures instead of 20
            let show = std::env::var("BC_ORACLE_SHOW")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(20usize);
            for f in self.list.iter().take(show) {
                println!("FAIL {f}");
            }
            if self.list.len() > show {
                println!("... and {} more failures", self.list.len() - show);
            }
            panic!(
                "{}: {} of {} checks failed (first ones printed above)",
                self.file,
                self.list.len(),
                self.checked
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// oracle rows: operands, expected errors, value comparison
// ---------------------------------------------------------------------------------------------

pub fn kind_status(kind: &str) -> i32 {
    match kind {
        "broadcast" | "inplace" | "expand" | "shape" => BC_ERR_SHAPE,
        "dtype" | "unsupported" => BC_ERR_DTYPE,
        "overlap" => BC_ERR_OVERLAP,
        "value" => BC_ERR_VALUE,
        "dim" | "argument" => BC_ERR_INVALID_ARG,
        "empty" => BC_ERR_SHAPE,
        k => panic!("unknown error kind {k:?} in oracle"),
    }
}

/// Check a result against an expected error: status of the kind, and (when `exact`) the text.
pub fn expect_error<X>(got: Result<X, Err>, kind: &str, msg: &str, exact: bool) -> Option<String> {
    let want = kind_status(kind);
    match got {
        Ok(_) => Some(format!(
            "expected {} {:?}, got success",
            status_name(want),
            msg
        )),
        Err(e) => {
            if e.status != want {
                Some(format!(
                    "expected status {} ({:?}), got {e}",
                    status_name(want),
                    msg
                ))
            } else if exact && e.msg != msg {
                Some(format!(
                    "wrong message:\n      expected {:?}\n      got      {:?}",
                    msg, e.msg
                ))
            } else {
                let ls = bc_last_error_status();
                if ls != want {
                    Some(format!(
                        "bc_last_error_status() = {ls} after a failed call with status {want}"
                    ))
                } else {
                    None
                }
            }
        }
    }
}

/// A Rust-owned buffer holding one operand's storage, and a zero-copy view over it.
pub struct Operand {
    pub buf: Vec<u8>,
    pub dtype: i32,
    pub shape: Vec<i64>,
    pub strides: Vec<i64>,
    pub offset: i64,
}

impl Operand {
    pub fn from_json(v: &serde_json::Value) -> Operand {
        let dtype = dtype_code(v["dtype"].as_str().unwrap());
        let storage = json_values(dtype, &v["storage"]);
        Operand {
            buf: encode(dtype, &storage),
            dtype,
            shape: json_shape(&v["shape"]),
            strides: json_shape(&v["strides"]),
            offset: v["offset"].as_i64().unwrap(),
        }
    }

    /// # Safety: the tensor must be dropped before `self`.
    pub unsafe fn view(&mut self) -> Result<T, Err> {
        let n = self.buf.len();
        T::wrap(
            self.dtype,
            self.buf.as_mut_ptr(),
            n,
            &self.shape,
            Some(&self.strides),
            self.offset,
        )
    }

    pub fn storage(&self) -> Vec<V> {
        decode(self.dtype, &self.buf)
    }
}

/// A row's number.
pub fn scalar_of(v: &serde_json::Value) -> bc_scalar {
    let value = &v["value"];
    match v["type"].as_str().unwrap() {
        "bool" => bc_scalar_bool(value.as_bool().unwrap()),
        "int" => bc_scalar_int(value.as_i64().expect("an int within int64")),
        _ => match json_value(F64, value) {
            V::F(f) => bc_scalar_float(f),
            other => panic!("a float, got {other}"),
        },
    }
}

/// A result tensor against a row's `result` (`dtype`, `shape`, `data`): the type (code and the
/// library's name), the shape, the values as `compare` judges them, and bool results holding only
/// 0 and 1 bytes.
pub fn check_result_with(
    t: &T,
    res: &serde_json::Value,
    compare: impl Fn(i32, &[V], &[V]) -> Option<String>,
) -> Option<String> {
    let rd = dtype_code(res["dtype"].as_str().unwrap());
    let rshape = json_shape(&res["shape"]);
    let d = t.dtype();
    let name = lib_dtype_name(d);
    if d != rd || name != res["dtype"].as_str().unwrap() {
        return Some(format!(
            "result dtype {name} (code {d}), expected {}",
            dtype_str(rd)
        ));
    }
    if t.shape() != rshape {
        return Some(format!("result shape {:?}, expected {rshape:?}", t.shape()));
    }
    if let Some(p) = compare(rd, &t.values(), &json_values(rd, &res["data"])) {
        return Some(format!("result data: {p}"));
    }
    if d == BOOL && !bool_bytes_ok(&t.bytes()) {
        return Some("bool result holds bytes other than 0/1".into());
    }
    None
}

pub fn compare_values(dtype: i32, got: &[V], want: &[V], ulps: i64) -> Option<String> {
    compare_values_ties(dtype, got, want, ulps, false)
}

/// As `compare_values`; with `zero_ties`, a zero matches a zero of either sign.
pub fn compare_values_ties(
    dtype: i32,
    got: &[V],
    want: &[V],
    ulps: i64,
    zero_ties: bool,
) -> Option<String> {
    let close = |g: V, w: V| {
        close_value(dtype, g, w, ulps)
            || zero_ties && matches!((g, w), (V::F(x), V::F(y)) if x == 0.0 && y == 0.0)
    };
    if got.len() != want.len() {
        return Some(format!(
            "got {} elements, expected {}",
            got.len(),
            want.len()
        ));
    }
    let bad: Vec<usize> = (0..got.len())
        .filter(|&k| !close(got[k], want[k]))
        .collect();
    if bad.is_empty() {
        None
    } else {
        let k = bad[0];
        Some(format!(
            "{} of {} elements differ (first at {k}: got {}, expected {})\n      got      {}\n      expected {}",
            bad.len(),
            got.len(),
            got[k],
            want[k],
            fmt_vals(got),
            fmt_vals(want)
        ))
    }
}

// ---------------------------------------------------------------------------------------------
// the error bound of tests/data/pytorch/README.md for floating reductions
// ---------------------------------------------------------------------------------------------

/// Unit roundoff of the accumulation the README names for `op` on `dtype`.
pub fn bound_eps(op: &str, dtype: i32) -> f64 {
    match (op, dtype) {
        (_, F64) => 2f64.powi(-53),
        ("prod", F16) => 2f64.powi(-11),
        ("prod", BF16) => 2f64.powi(-8),
        _ => 2f64.powi(-24),
    }
}

/// Machine epsilon and smallest normal of a floating dtype.
pub fn eps_tiny(dtype: i32) -> (f64, f64) {
    match dtype {
        F16 => (2f64.powi(-10), 2f64.powi(-14)),
        BF16 => (2f64.powi(-7), 2f64.powi(-126)),
        F32 => (2f64.powi(-23), 2f64.powi(-126)),
        _ => (2f64.powi(-52), 2f64.powi(-1022)),
    }
}

pub fn max_finite(dtype: i32) -> f64 {
    match dtype {
        F16 => 65504.0,
        BF16 => 3.3895313892515355e38,
        F32 => f32::MAX as f64,
        _ => f64::MAX,
    }
}

/// The README's check of one floating result `r` against the exact `f` (`a`: the sum of |x|, or
/// |f| for products) over `n` elements; `None` when it holds.
pub fn within_bound(op: &str, dtype: i32, r: f64, f: f64, a: f64, n: usize) -> Option<String> {
    let ok = if f.is_nan() {
        r.is_nan()
    } else if r.is_infinite() {
        r == f || (f.abs() > max_finite(dtype) && r.signum() == f.signum())
    } else if f.is_infinite() || r.is_nan() {
        false
    } else {
        let e = bound_eps(op, dtype);
        let k = (n as f64 + 1.0) * e;
        let gamma = k / (1.0 - k);
        let (eps, tiny) = eps_tiny(dtype);
        (r - f).abs() <= gamma * a + r.abs().max(tiny) * eps
    };
    (!ok).then(|| format!("{r:?} is not within the bound of the exact {f:?} (A = {a:?}, n = {n})"))
}

// ---------------------------------------------------------------------------------------------
// plain reference helpers (row-major multi-index arithmetic)
// ---------------------------------------------------------------------------------------------

pub fn numel(shape: &[i64]) -> i64 {
    shape.iter().product()
}

/// Row-major multi-index of flat position `flat` in `shape`.
pub fn unravel(mut flat: i64, shape: &[i64]) -> Vec<i64> {
    let mut idx = vec![0i64; shape.len()];
    for d in (0..shape.len()).rev() {
        idx[d] = flat % shape[d];
        flat /= shape[d];
    }
    idx
}

/// Index into an operand of shape `src` for result multi-index `idx` (broadcasting: aligned to the
/// right, size-1 dims read index 0).
pub fn broadcast_index(idx: &[i64], src: &[i64]) -> Vec<i64> {
    let lead = idx.len() - src.len();
    (0..src.len())
        .map(|d| if src[d] == 1 { 0 } else { idx[lead + d] })
        .collect()
}

pub fn flat_of(idx: &[i64], shape: &[i64]) -> i64 {
    let mut f = 0;
    for d in 0..shape.len() {
        f = f * shape[d] + idx[d];
    }
    f
}

pub fn fmt_shape_torch(s: &[i64]) -> String {
    let p: Vec<String> = s.iter().map(|x| x.to_string()).collect();
    format!("[{}]", p.join(", "))
}

/// Random elements of a floating `dtype` as raw bytes, NaNs of both signs (with payloads) and
/// infinities among them one time in `special`: exact bit patterns, not values passed through
/// conversions that may change a NaN.
pub fn nan_rich_floats(seed: &mut u64, dtype: i32, n: usize, special: u64) -> Vec<u8> {
    let mut next = || {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    };
    let mut out = Vec::with_capacity(n * itemsize(dtype));
    for _ in 0..n {
        let r = next();
        let finite = (r >> 20) as f64 % 2001.0 / 16.0 - 62.5;
        let sign = r >> 63;
        let kind = if r % special == 0 {
            1 + (r >> 8) % 3
        } else {
            0
        };
        match dtype {
            F64 => {
                let bits = match kind {
                    0 => finite.to_bits(),
                    1 => sign << 63 | 0x7FF8_0000_0000_0000,
                    2 => sign << 63 | 0x7FF8_0000_0000_0000 | ((r >> 12) % 0xFFFF),
                    _ => sign << 63 | 0x7FF0_0000_0000_0000,
                };
                out.extend_from_slice(&bits.to_le_bytes());
            }
            F32 => {
                let bits = match kind {
                    0 => (finite as f32).to_bits(),
                    1 => (sign as u32) << 31 | 0x7FC0_0000,
                    2 => (sign as u32) << 31 | 0x7FC0_0000 | ((r >> 12) as u32 % 0xFFFF),
                    _ => (sign as u32) << 31 | 0x7F80_0000,
                };
                out.extend_from_slice(&bits.to_le_bytes());
            }
            F16 | BF16 => {
                let (quiet, inf) = if dtype == F16 {
                    (0x7E00, 0x7C00)
                } else {
                    (0x7FC0, 0x7F80)
                };
                let bits: u16 = match kind {
                    0 if dtype == F16 => half::f16::from_f64(finite).to_bits(),
                    0 => half::bf16::from_f64(finite).to_bits(),
                    1 => (sign as u16) << 15 | quiet,
                    2 => (sign as u16) << 15 | quiet | ((r >> 12) as u16 % 0x3F),
                    _ => (sign as u16) << 15 | inf,
                };
                out.extend_from_slice(&bits.to_le_bytes());
            }
            _ => panic!("nan_rich_floats: {} is not floating", dtype_str(dtype)),
        }
    }
    out
}

/// Floating operations that make or pass on NaNs, for the tests of the fused paths' NaN rule.
pub const NAN_MAKING_OPS: [i32; 10] = [
    BC_OP_ADD,
    BC_OP_SUB,
    BC_OP_MUL,
    BC_OP_DIV,
    BC_OP_MAXIMUM,
    BC_OP_MINIMUM,
    BC_OP_POW,
    BC_OP_FMOD,
    BC_OP_ATAN2,
    BC_OP_HYPOT,
];

/// Whether `got` and `want` hold the same elements bit for bit, except that where both hold a NaN
/// any NaN matches any other (the library's rule for fused results: a NaN's sign and payload
/// depend on the order operands meet in, as in PyTorch's vectorised kernels). `Err` names the
/// first element that differs.
pub fn same_bits_any_nan(got: &T, want: &T) -> Result<(), String> {
    if (got.dtype(), got.shape()) != (want.dtype(), want.shape()) {
        return Err(format!(
            "{} {:?} instead of {} {:?}",
            dtype_str(got.dtype()),
            got.shape(),
            dtype_str(want.dtype()),
            want.shape()
        ));
    }
    let size = itemsize(got.dtype());
    let (gb, wb, gv, wv) = (got.bytes(), want.bytes(), got.values(), want.values());
    for i in 0..gv.len() {
        let both_nan = matches!((&gv[i], &wv[i]), (V::F(g), V::F(w)) if g.is_nan() && w.is_nan());
        if !both_nan && gb[i * size..(i + 1) * size] != wb[i * size..(i + 1) * size] {
            return Err(format!("element {i}: {} instead of {}", gv[i], wv[i]));
        }
    }
    Ok(())
}
