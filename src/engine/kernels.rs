//! Inner loops. A kernel sees only pointers, strides and a count, never shapes: the plan has
//! already reduced the work to runs along one dimension. Contiguous runs, and runs where one
//! input is a repeated scalar (stride 0), get loops the compiler vectorizes.
//!
//! On x86-64 the binary loops exist twice: for the baseline instruction set (SSE2, what the
//! library is compiled for) and as `#[target_feature(enable = "avx2,f16c")]` clones chosen at run
//! time when the CPU has AVX2 and F16C (every AVX2 CPU has F16C). Built by Rust 1.89 or later,
//! a third clone with 512-bit vectors replaces the AVX2 one on CPUs with AVX-512 F, BW, DQ and VL.
//! Every clone computes each element with the same scalar operation (IEEE arithmetic is exactly
//! rounded and nothing is fused or reassociated), so results are bit-identical whichever runs.
//! Functions that no vector instruction computes (integer division, powers, `fmod`) have the
//! baseline loop alone ([`ElemFn::CLONES`]): their clones were no faster, only larger.
//!
//! float16 and bfloat16 compute each operation in float32 and round once. For the operations
//! written that way (most; see [`ElemFn::WIDENS`]) a run is done a block at a time: the operands
//! widened to float32 (F16C, or integer shifts for bfloat16, on the AVX2 path; see
//! [`super::convert`]), the block computed with the operation's float32 function, the results
//! rounded back: the same bits as element by element, without a call into the `half` crate per
//! element. When both operands are contiguous or broadcast along the run and the result is 16-bit,
//! the three steps go eight (with AVX-512 F, sixteen) elements at a time in registers
//! ([`HalfConv::map`]), over the whole run when the result is contiguous too.
//!
//! When the executor marks a computation as streaming (work that cannot stay in the cache, see
//! [`super::stream`]), contiguous results are written with non-temporal stores: whole cache
//! lines go to memory without first being read for ownership, which saves a third of the memory
//! traffic of `c = a + b`. Values are computed exactly as in the normal path, into a small block
//! in L1, then streamed out.
use super::binary_ops::{BinaryOp, ElemFn, Visit};
use super::convert::{self, HalfConv, Operand};
use super::dtype::DType;
use super::elem::Elem;
use crate::with_elem;
use std::mem::size_of;

/// A tile of `rows` runs of `len` elements, as the executor hands it to a kernel: run `r` of
/// operand `k` starts `r * row_strides[k]` bytes after `ptrs[k]`, its elements `strides[k]` bytes
/// apart; operand 0 is the written one, and `stream` says whether its stores should bypass the
/// cache (the executor fences them after the last tile).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tile<const N: usize> {
    pub ptrs: [*mut u8; N],
    pub strides: [isize; N],
    pub row_strides: [isize; N],
    pub rows: usize,
    pub len: usize,
    pub stream: bool,
}

impl<const N: usize> Tile<N> {
    /// One run, not streamed.
    pub(crate) fn run(ptrs: [*mut u8; N], strides: [isize; N], len: usize) -> Tile<N> {
        Tile {
            ptrs,
            strides,
            row_strides: [0; N],
            rows: 1,
            len,
            stream: false,
        }
    }

    /// Calls `kernel(ptrs, strides, len)` for each run, for kernels that take one run at a time.
    #[inline(always)]
    pub(crate) fn for_each_run(&self, kernel: impl Fn([*mut u8; N], [isize; N], usize)) {
        for row in 0..self.rows {
            let ptrs = std::array::from_fn(|k| {
                self.ptrs[k].wrapping_offset(row as isize * self.row_strides[k])
            });
            kernel(ptrs, self.strides, self.len);
        }
    }
}

/// The row count and row strides of a [`Tile`] of binary runs, for the kernels that take it whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rows {
    pub rows: usize,
    pub strides: [isize; 3],
}

/// Makes this thread's non-temporal stores visible before anything it stores afterwards (an
/// `sfence`); the executor calls it before reporting a streamed range done.
#[inline]
pub(crate) fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: sfence has no preconditions (SSE, part of x86-64).
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

/// The widest vector code path this CPU runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimdLevel {
    /// The baseline the library is compiled for (SSE2 on x86-64).
    Baseline,
    /// 256-bit AVX2 clones (with F16C for float16); the 512-bit clones instead on a CPU with
    /// AVX-512 F, BW, DQ and VL when the compiler has them (Rust 1.89, `cfg(bc_avx512)`).
    Avx2,
}

/// Which clones [`binary_run`] uses on this machine.
pub fn simd_level() -> SimdLevel {
    if has_avx2() {
        SimdLevel::Avx2
    } else {
        SimdLevel::Baseline
    }
}

/// Width in bits of the vectors the binary kernels use on this machine, for reports: 512 (the
/// AVX-512 clone, behind the AVX2 level), 256 (AVX2) or 128 (the baseline).
pub fn vector_bits() -> usize {
    match simd_level() {
        #[cfg(bc_avx512)]
        SimdLevel::Avx2 if has_avx512() => 512,
        SimdLevel::Avx2 => 256,
        SimdLevel::Baseline => 128,
    }
}

/// Whether the AVX-512 clone of the binary kernels runs here (the AVX2 level then uses it).
#[cfg(bc_avx512)]
#[inline(always)]
fn has_avx512() -> bool {
    std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx512bw")
        && std::is_x86_feature_detected!("avx512dq")
        && std::is_x86_feature_detected!("avx512vl")
}

/// Whether the AVX2 clones run here.
#[inline(always)]
fn has_avx2() -> bool {
    convert::has_avx2_f16c()
}

/// `out[i] = a[i] op b[i]` over every run of `tile` (a tile of several rows goes whole to the
/// kernels, which transpose a transposed input in registers). `dtype` is the inputs' type (the
/// computation type); the output's is the operation's result for it (see
/// [`super::binary_ops::BinaryFn`]). Nothing is computed when `op` has no kernel for `dtype`
/// (the engine refuses such calls before any kernel runs).
///
/// # Safety
/// Each pointer must be valid for every run of the tile at its type and strides. `out` may equal `a` or
/// `b` exactly (same pointer and stride, same element size); any other overlap must have been
/// refused.
pub(crate) unsafe fn binary_run(op: BinaryOp, dtype: DType, tile: &Tile<3>) {
    let run = Run(&tile.ptrs, &tile.strides, tile.len, tile.stream);
    let done = match tile.rows {
        1 => op.visit(dtype, run),
        rows => op.visit(
            dtype,
            RunRows(
                run,
                Rows {
                    rows,
                    strides: tile.row_strides,
                },
            ),
        ),
    };
    debug_assert!(done.is_some(), "{op:?} has no kernel for {dtype:?}");
}

/// One kernel call (pointers, strides, count, streaming), for [`BinaryOp::visit`]: built only by
/// [`binary_run`], whose caller guarantees the pointers.
/// (By reference: the arrays then go on to the kernel as they came, without a copy.)
struct Run<'a>(&'a [*mut u8; 3], &'a [isize; 3], usize, bool);

impl Visit for Run<'_> {
    type Output = ();
    #[inline(always)]
    fn visit<T: Elem, F: ElemFn<T>>(self) {
        let Run(ptrs, strides, n, stream) = self;
        // SAFETY: a `Run` is only built from binary_run's contract.
        unsafe { dispatch::<T, F>(*ptrs, *strides, n, stream) }
    }
}

/// A [`Run`] over a whole tile of rows: every row is valid (binary_run's contract).
struct RunRows<'a>(Run<'a>, Rows);

impl Visit for RunRows<'_> {
    type Output = ();
    #[inline(always)]
    fn visit<T: Elem, F: ElemFn<T>>(self) {
        let RunRows(Run(ptrs, strides, n, stream), rows) = self;
        // SAFETY: a `RunRows` is only built from binary_run's contract.
        unsafe { dispatch_rows::<T, F>(*ptrs, *strides, rows, n, stream) }
    }
}

/// [`Run`] on a chosen code path: built only by [`binary_run_with`], whose caller guarantees the
/// pointers and that the CPU has the level.
struct RunOn<'a>(Run<'a>, SimdLevel);

impl Visit for RunOn<'_> {
    type Output = ();
    fn visit<T: Elem, F: ElemFn<T>>(self) {
        let RunOn(Run(ptrs, strides, n, stream), level) = self;
        // SAFETY: a `RunOn` is only built from binary_run_with's contract.
        unsafe {
            match level {
                SimdLevel::Baseline => binary_base::<T, F>(*ptrs, *strides, n, stream),
                SimdLevel::Avx2 => binary_wide::<T, F>(*ptrs, *strides, n, stream),
            }
        }
    }
}

/// `binary_run` over `rows.rows` runs (a tile): with AVX2, a transposed input is transposed in
/// registers a block at a time; otherwise run by run.
#[inline(never)]
unsafe fn dispatch_rows<T: Elem, F: ElemFn<T>>(
    ptrs: [*mut u8; 3],
    strides: [isize; 3],
    rows: Rows,
    n: usize,
    stream: bool,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if F::CLONES && has_avx2() {
            // SAFETY: the CPU has AVX2 and F16C; the rest is the caller's contract.
            return unsafe { avx2::binary_rows::<T, F>(ptrs, strides, rows, n, stream) };
        }
    }
    for r in 0..rows.rows {
        let p = std::array::from_fn(|k| ptrs[k].wrapping_offset(r as isize * rows.strides[k]));
        // SAFETY: the caller's contract, row by row.
        unsafe { binary_base::<T, F>(p, strides, n, stream) };
    }
}

/// One run of a kernel: pointers, byte strides, count, streaming.
type KernelFn = unsafe fn([*mut u8; 3], [isize; 3], usize, bool);

/// The kernel [`binary_run`] calls for one operation and type, chosen once: for a caller that
/// runs it over many short runs (the fast path's rows, the fused pass), so that each run is one
/// call of the code path this CPU runs, without the dispatch over operations and types and the
/// CPU tests (a tenth of a 1,024-element run's time). It takes one run at a time, and the caller
/// says per run whether the result streams.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BinaryKernel(KernelFn);

/// The kernel for `op` on inputs of `dtype`; `None` when `op` has none for it.
pub(crate) fn binary_kernel(op: BinaryOp, dtype: DType) -> Option<BinaryKernel> {
    struct Choose;
    impl Visit for Choose {
        type Output = BinaryKernel;
        fn visit<T: Elem, F: ElemFn<T>>(self) -> BinaryKernel {
            BinaryKernel(best::<T, F>())
        }
    }
    op.visit(dtype, Choose)
}

impl BinaryKernel {
    /// One run, streaming the result when `stream` (see [`Tile::stream`]).
    ///
    /// # Safety
    /// As [`binary_run`], for the operation and type the kernel was chosen for.
    #[inline]
    pub(crate) unsafe fn run(
        self,
        ptrs: [*mut u8; 3],
        strides: [isize; 3],
        n: usize,
        stream: bool,
    ) {
        // SAFETY: the caller's contract.
        unsafe { (self.0)(ptrs, strides, n, stream) }
    }
}

/// `binary_run` on a chosen code path (tests compare the paths bit for bit).
///
/// # Safety
/// As [`binary_run`]; `level` must be supported by this CPU (see [`simd_level`]).
pub unsafe fn binary_run_with(
    level: SimdLevel,
    stream: bool,
    op: BinaryOp,
    dtype: DType,
    ptrs: [*mut u8; 3],
    strides: [isize; 3],
    n: usize,
) {
    let done = op.visit(dtype, RunOn(Run(&ptrs, &strides, n, stream), level));
    debug_assert!(done.is_some(), "{op:?} has no kernel for {dtype:?}");
}

/// The clone of `F`'s kernel on `T` for the best code path this CPU has (the baseline where it
/// has no clones: [`ElemFn::CLONES`]).
fn best<T: Elem, F: ElemFn<T>>() -> KernelFn {
    #[cfg(target_arch = "x86_64")]
    {
        if F::CLONES && has_avx2() {
            return avx2::widest::<T, F>();
        }
    }
    binary_base::<T, F>
}

/// One run on the best code path this CPU has. Not inlined into [`binary_run`]: its dispatch
/// over every operation and type stays small, so a call touches few lines of code.
#[inline(never)]
unsafe fn dispatch<T: Elem, F: ElemFn<T>>(
    ptrs: [*mut u8; 3],
    strides: [isize; 3],
    n: usize,
    stream: bool,
) {
    // SAFETY: `best` chose a clone this CPU runs; the rest is the caller's contract.
    unsafe { best::<T, F>()(ptrs, strides, n, stream) }
}

/// The AVX2 path where it exists, else the baseline (for [`binary_run_with`]).
unsafe fn binary_wide<T: Elem, F: ElemFn<T>>(
    ptrs: [*mut u8; 3],
    strides: [isize; 3],
    n: usize,
    stream: bool,
) {
    #[cfg(target_arch = "x86_64")]
    if F::CLONES {
        // SAFETY: binary_run_with's caller guarantees the CPU has AVX2 and F16C.
        return unsafe { avx2::binary::<T, F>(ptrs, strides, n, stream) };
    }
    // SAFETY: the caller's contract.
    unsafe { binary_base::<T, F>(ptrs, strides, n, stream) }
}

/// The baseline clone.
#[inline(never)]
unsafe fn binary_base<T: Elem, F: ElemFn<T>>(
    ptrs: [*mut u8; 3],
    strides: [isize; 3],
    n: usize,
    stream: bool,
) {
    // SAFETY: the caller's contract.
    unsafe { binary_body::<T, F, BaseLines>(ptrs, strides, n, stream) }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{binary_body, Elem, ElemFn, LineStore};
    use std::arch::x86_64::*;

    /// The AVX2 clone: the same body, compiled with 256-bit vectors; on a CPU with AVX-512 (F, BW,
    /// DQ, VL) the same body compiled with 512-bit vectors instead, when the compiler has them.
    ///
    /// # Safety
    /// The CPU must have AVX2 and F16C; otherwise as `binary_run`.
    #[target_feature(enable = "avx2,f16c")]
    #[inline]
    pub(super) unsafe fn binary<T: Elem, F: ElemFn<T>>(
        ptrs: [*mut u8; 3],
        strides: [isize; 3],
        n: usize,
        stream: bool,
    ) {
        #[cfg(bc_avx512)]
        if super::has_avx512() {
            // SAFETY: the CPU has the features; the rest is the caller's contract.
            return unsafe { binary512::<T, F>(ptrs, strides, n, stream) };
        }
        // SAFETY: the caller's contract.
        unsafe { binary256::<T, F>(ptrs, strides, n, stream) }
    }

    /// The clone [`binary`] runs on this CPU. The CPU must have AVX2 and F16C for the pointer to
    /// be called.
    pub(super) fn widest<T: Elem, F: ElemFn<T>>() -> super::KernelFn {
        #[cfg(bc_avx512)]
        if super::has_avx512() {
            return binary512::<T, F>;
        }
        binary256::<T, F>
    }

    /// The 256-bit clone.
    ///
    /// # Safety
    /// As [`binary`].
    #[target_feature(enable = "avx2,f16c")]
    #[inline(never)]
    unsafe fn binary256<T: Elem, F: ElemFn<T>>(
        ptrs: [*mut u8; 3],
        strides: [isize; 3],
        n: usize,
        stream: bool,
    ) {
        // SAFETY: the caller's contract.
        unsafe { binary_body::<T, F, Avx2Lines>(ptrs, strides, n, stream) }
    }

    /// The AVX-512 clone (built by Rust 1.89 and later: `cfg(bc_avx512)`).
    ///
    /// # Safety
    /// The CPU must have AVX-512 F, BW, DQ and VL, AVX2 and F16C; otherwise as `binary_run`.
    #[cfg(bc_avx512)]
    #[clippy::msrv = "1.89"]
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,f16c")]
    #[inline(never)]
    unsafe fn binary512<T: Elem, F: ElemFn<T>>(
        ptrs: [*mut u8; 3],
        strides: [isize; 3],
        n: usize,
        stream: bool,
    ) {
        // SAFETY: the caller's contract.
        unsafe { binary_body::<T, F, Avx2Lines>(ptrs, strides, n, stream) }
    }

    /// A tile of `rows.rows` runs. When one input is transposed (contiguous along the rows,
    /// strided along the runs), the output contiguous along the runs and the other input
    /// contiguous or broadcast along them, blocks of one cache line square are transposed in
    /// registers: every line of every operand is then read or written whole, once.
    ///
    /// # Safety
    /// The CPU must have AVX2 and F16C; each row as `binary_run`.
    #[target_feature(enable = "avx2,f16c")]
    pub(super) unsafe fn binary_rows<T: Elem, F: ElemFn<T>>(
        ptrs: [*mut u8; 3],
        strides: [isize; 3],
        rows: super::Rows,
        n: usize,
        stream: bool,
    ) {
        let size = std::mem::size_of::<T>() as isize;
        let [so, sa, sb] = strides;
        let rs = rows.strides;
        // Which input is transposed: its row stride is one element, its run stride is not.
        let transposed = |s: isize, r: isize| r == size && s != size && s != 0;
        let other_ok = |s: isize| s == size || s == 0;
        let which = if transposed(sa, rs[1]) && other_ok(sb) {
            Some(1)
        } else if transposed(sb, rs[2]) && other_ok(sa) {
            Some(2)
        } else {
            None
        };
        let line = 64 / size as usize;
        // The output must have the inputs' element size too (a line of it per line of theirs).
        let same_size = std::mem::size_of::<F::Out>() as isize == size;
        let fast = same_size && so == size && (size == 4 || size == 8) && which.is_some();
        let (rb, cb) = if fast {
            (rows.rows / line * line, n / line * line)
        } else {
            (0, 0)
        };
        // SAFETY (this block): every pointer formed addresses an element of the tile, which the
        // caller guarantees valid; the blocks cover rows [0, rb) x columns [0, cb); the runs
        // below cover the rest.
        unsafe {
            if rb > 0 && cb > 0 {
                if which == Some(1) {
                    transposed_block::<T, F, true>(ptrs, strides, rs, rb, cb, stream);
                } else {
                    transposed_block::<T, F, false>(ptrs, strides, rs, rb, cb, stream);
                }
            }
            let at = |r: usize, c: usize| -> [*mut u8; 3] {
                std::array::from_fn(|k| {
                    ptrs[k].wrapping_offset(r as isize * rs[k] + c as isize * strides[k])
                })
            };
            // The rest run by run, through the clone above (not inlined again: once per
            // operation and type is enough code).
            for r in 0..rows.rows {
                if r < rb {
                    if cb < n {
                        binary::<T, F>(at(r, cb), strides, n - cb, stream);
                    }
                } else {
                    binary::<T, F>(at(r, 0), strides, n, stream);
                }
            }
        }
    }

    /// Rows `[0, rb)` x columns `[0, cb)` (multiples of a line) of a tile whose input `A_T ? a :
    /// b` is transposed, in squares of one cache line.
    #[inline(always)]
    unsafe fn transposed_block<T: Elem, F: ElemFn<T>, const A_T: bool>(
        ptrs: [*mut u8; 3],
        strides: [isize; 3],
        rs: [isize; 3],
        rb: usize,
        cb: usize,
        stream: bool,
    ) {
        let size = std::mem::size_of::<T>();
        let line = 64 / size;
        let (x, xs) = if A_T {
            (ptrs[1], strides[1])
        } else {
            (ptrs[2], strides[2])
        };
        let (y, ys, yrs) = if A_T {
            (ptrs[2], strides[2], rs[2])
        } else {
            (ptrs[1], strides[1], rs[1])
        };
        let f = F::call;
        let mut sq = std::mem::MaybeUninit::<[super::Block; 4]>::uninit(); // line x line of T
        let sq = sq.as_mut_ptr() as *mut T;
        let mut out_line = std::mem::MaybeUninit::<super::Block>::uninit();
        let ol = out_line.as_mut_ptr() as *mut F::Out; // as large as T (binary_rows checks)
                                                       // SAFETY (this block): see binary_rows; `sq` holds line * line elements (1 KiB for
                                                       // 4-byte, 512 B for 8-byte types), `ol` one line.
        unsafe {
            let mut c0 = 0;
            while c0 < cb {
                let mut r0 = 0;
                while r0 < rb {
                    // Line i of the square: x's rows r0.. at column c0 + i (contiguous).
                    let src = |i: usize| {
                        x.offset((c0 + i) as isize * xs + (r0 * size) as isize) as *const u8
                    };
                    if size == 4 {
                        square16(src, sq as *mut u8);
                    } else {
                        square8(src, sq as *mut u8);
                    }
                    // sq[j * line + i] = x[row r0 + j][column c0 + i].
                    for j in 0..line {
                        let yrow = y.offset((r0 + j) as isize * yrs + c0 as isize * ys);
                        let t = sq.add(j * line);
                        if ys == 0 {
                            let yv = (yrow as *const T).read();
                            for i in 0..line {
                                let xv = t.add(i).read();
                                ol.add(i).write(if A_T { f(xv, yv) } else { f(yv, xv) });
                            }
                        } else {
                            let yr = yrow as *const T;
                            for i in 0..line {
                                let (xv, yv) = (t.add(i).read(), yr.add(i).read());
                                ol.add(i).write(if A_T { f(xv, yv) } else { f(yv, xv) });
                            }
                        }
                        let o = ptrs[0].offset((r0 + j) as isize * rs[0] + (c0 * size) as isize);
                        if stream && (o as usize) % 64 == 0 {
                            for k in 0..2 {
                                let v = _mm256_load_si256(
                                    (ol as *const u8).add(32 * k) as *const __m256i
                                );
                                _mm256_stream_si256(o.add(32 * k) as *mut __m256i, v);
                            }
                        } else {
                            std::ptr::copy_nonoverlapping(ol as *const u8, o, 64);
                        }
                    }
                    r0 += line;
                }
                c0 += line;
            }
        }
    }

    /// Transposes a 16 x 16 square of 4-byte elements: `dst[j * 16 + i] = src(i)[j]`, where
    /// `src(i)` points at 16 contiguous elements.
    #[inline(always)]
    unsafe fn square16(src: impl Fn(usize) -> *const u8, dst: *mut u8) {
        // SAFETY: the caller: each src(i) valid for 64 bytes, dst for 1 KiB.
        unsafe {
            for ib in [0usize, 8] {
                for jb in [0usize, 8] {
                    let mut r: [__m256; 8] = std::array::from_fn(|k| {
                        _mm256_loadu_ps((src(ib + k) as *const f32).add(jb))
                    });
                    tr8x8(&mut r);
                    // r[m] = [src(ib+0)[jb+m], ..., src(ib+7)[jb+m]] = dst row jb+m, columns ib..
                    for (m, v) in r.iter().enumerate() {
                        _mm256_storeu_ps((dst as *mut f32).add((jb + m) * 16 + ib), *v);
                    }
                }
            }
        }
    }

    /// Transposes an 8 x 8 square of 8-byte elements: `dst[j * 8 + i] = src(i)[j]`.
    #[inline(always)]
    unsafe fn square8(src: impl Fn(usize) -> *const u8, dst: *mut u8) {
        // SAFETY: the caller: each src(i) valid for 64 bytes, dst for 512 bytes.
        unsafe {
            for ib in [0usize, 4] {
                for jb in [0usize, 4] {
                    let r: [__m256d; 4] = std::array::from_fn(|k| {
                        _mm256_loadu_pd((src(ib + k) as *const f64).add(jb))
                    });
                    let t0 = _mm256_unpacklo_pd(r[0], r[1]);
                    let t1 = _mm256_unpackhi_pd(r[0], r[1]);
                    let t2 = _mm256_unpacklo_pd(r[2], r[3]);
                    let t3 = _mm256_unpackhi_pd(r[2], r[3]);
                    let o = [
                        _mm256_permute2f128_pd(t0, t2, 0x20),
                        _mm256_permute2f128_pd(t1, t3, 0x20),
                        _mm256_permute2f128_pd(t0, t2, 0x31),
                        _mm256_permute2f128_pd(t1, t3, 0x31),
                    ];
                    for (m, v) in o.iter().enumerate() {
                        _mm256_storeu_pd((dst as *mut f64).add((jb + m) * 8 + ib), *v);
                    }
                }
            }
        }
    }

    /// In-register transpose of eight rows of eight 4-byte lanes.
    #[inline(always)]
    fn tr8x8(r: &mut [__m256; 8]) {
        // SAFETY: AVX shuffles on registers; the enclosing functions enable AVX2.
        unsafe {
            let t0 = _mm256_unpacklo_ps(r[0], r[1]);
            let t1 = _mm256_unpackhi_ps(r[0], r[1]);
            let t2 = _mm256_unpacklo_ps(r[2], r[3]);
            let t3 = _mm256_unpackhi_ps(r[2], r[3]);
            let t4 = _mm256_unpacklo_ps(r[4], r[5]);
            let t5 = _mm256_unpackhi_ps(r[4], r[5]);
            let t6 = _mm256_unpacklo_ps(r[6], r[7]);
            let t7 = _mm256_unpackhi_ps(r[6], r[7]);
            let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
            let s1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
            let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
            let s3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
            let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
            let s5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
            let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
            let s7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
            r[0] = _mm256_permute2f128_ps::<0x20>(s0, s4);
            r[1] = _mm256_permute2f128_ps::<0x20>(s1, s5);
            r[2] = _mm256_permute2f128_ps::<0x20>(s2, s6);
            r[3] = _mm256_permute2f128_ps::<0x20>(s3, s7);
            r[4] = _mm256_permute2f128_ps::<0x31>(s0, s4);
            r[5] = _mm256_permute2f128_ps::<0x31>(s1, s5);
            r[6] = _mm256_permute2f128_ps::<0x31>(s2, s6);
            r[7] = _mm256_permute2f128_ps::<0x31>(s3, s7);
        }
    }

    pub(super) struct Avx2Lines;
    impl LineStore for Avx2Lines {
        type Conv = super::convert::Avx2F16c;
        #[inline(always)]
        unsafe fn stream_block(dst: *mut u8, src: *const u8) {
            // SAFETY: the trait's contract: dst 64-byte aligned, both valid for BLOCK bytes, src
            // 64-byte aligned; only called from AVX2 clones.
            unsafe {
                for k in 0..super::BLOCK / 32 {
                    let v = _mm256_load_si256(src.add(32 * k) as *const __m256i);
                    _mm256_stream_si256(dst.add(32 * k) as *mut __m256i, v);
                }
            }
        }
    }
}

/// Bytes computed into L1 then streamed out at a time: four cache lines.
const BLOCK: usize = 256;

/// What a code path's clone uses beyond its compiler flags: how it streams a computed block to
/// memory, and how it converts float16/bfloat16.
trait LineStore {
    type Conv: HalfConv;

    /// Copies `BLOCK` bytes from `src` to `dst` with non-temporal stores.
    ///
    /// # Safety
    /// `dst` and `src` 64-byte aligned and valid for `BLOCK` bytes.
    unsafe fn stream_block(dst: *mut u8, src: *const u8);
}

struct BaseLines;
impl LineStore for BaseLines {
    type Conv = convert::Scalar;
    #[inline(always)]
    unsafe fn stream_block(dst: *mut u8, src: *const u8) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the trait's contract; SSE2 is part of x86-64.
        unsafe {
            use std::arch::x86_64::{__m128i, _mm_load_si128, _mm_stream_si128};
            for k in 0..BLOCK / 16 {
                let v = _mm_load_si128(src.add(16 * k) as *const __m128i);
                _mm_stream_si128(dst.add(16 * k) as *mut __m128i, v);
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        // SAFETY: the trait's contract.
        unsafe {
            std::ptr::copy_nonoverlapping(src, dst, BLOCK)
        }
    }
}

#[repr(C, align(64))]
struct Block([u8; BLOCK]);

/// `out[i] = f(i)` for `i < n`, with streaming stores for the whole aligned blocks.
///
/// # Safety
/// `out` valid for `n` writes and aligned to `T`; `f(i)` must only read memory that the writes
/// to `out[..i]` do not change (it may read `out[i]` itself).
#[inline(always)]
unsafe fn stream_fill<T: Elem, S: LineStore>(out: *mut T, n: usize, f: impl Fn(usize) -> T) {
    let size = std::mem::size_of::<T>();
    let per = BLOCK / size;
    // SAFETY (this block): indices stay below n; the block buffer holds `per` elements of T and
    // is 64-byte aligned, and `out + i` is 64-byte aligned whenever a block is streamed.
    unsafe {
        let misalign = (out as usize) % 64;
        let head = if misalign == 0 {
            0
        } else {
            ((64 - misalign) / size).min(n)
        };
        for i in 0..head {
            out.add(i).write(f(i));
        }
        let mut i = head;
        let mut buf = std::mem::MaybeUninit::<Block>::uninit();
        let tmp = buf.as_mut_ptr() as *mut T;
        while i + per <= n {
            for j in 0..per {
                tmp.add(j).write(f(i + j));
            }
            S::stream_block(out.add(i) as *mut u8, tmp as *const u8);
            i += per;
        }
        while i < n {
            out.add(i).write(f(i));
            i += 1;
        }
    }
}

/// Elements of a float16/bfloat16 block computed in float32 at a time: two streamed blocks of
/// 16-bit results, one of bools.
const WIDE_BLOCK: usize = 256;

#[repr(C, align(64))]
struct Aligned<T>(T);

/// A run of a float16 (`BF` false) or bfloat16 (`BF` true) operation whose float32 function is
/// `W` (see [`ElemFn::WIDENS`]), [`WIDE_BLOCK`] elements at a time: both operands widened to
/// float32 (an operand broadcast along the run once), `W` computed on the block, the results
/// rounded back to 16 bits (or written as the bools they are). Streaming as [`stream_fill`].
/// A contiguous 16-bit result of contiguous or broadcast operands is one [`HalfConv::map`]
/// instead, streamed from the registers: through L1 blocks, float16 into `out` took 1.3x a C loop.
///
/// # Safety
/// As [`binary_run`], with operands of 16-bit elements and a result of 16-bit elements (when `W`
/// gives float32) or bools.
#[inline(always)]
unsafe fn half_body<W: ElemFn<f32>, S: LineStore, const BF: bool>(
    ptrs: [*mut u8; 3],
    strides: [isize; 3],
    n: usize,
    stream: bool,
) {
    let osize = if W::Out::DTYPE == DType::F32 { 2 } else { 1 };
    let contiguous = strides[0] == osize as isize;
    // SAFETY (this block): the caller's contract; every block lies within the run.
    unsafe {
        // Contiguous operands and result: the whole run in registers, its aligned part streamed
        // from them when the computation streams (the head before a 64-byte boundary not).
        let operand = |k: usize| match strides[k + 1] {
            0 => Some(Operand::Same(convert::widen1::<BF>(
                (ptrs[k + 1] as *const u16).read(),
            ))),
            2 => Some(Operand::Run(ptrs[k + 1] as *const u16)),
            _ => None,
        };
        // The operands are read here only when the result qualifies (bool and strided results
        // go by blocks, which read a broadcast operand themselves).
        let whole = W::Out::DTYPE == DType::F32 && contiguous && (!stream || S::Conv::STREAMS);
        if let Some((Some(a), Some(b))) = whole.then(|| (operand(0), operand(1))) {
            let o = ptrs[0] as *mut u16;
            let head = if stream {
                ((64 - o as usize % 64) % 64 / 2).min(n)
            } else {
                n
            };
            S::Conv::map::<BF>(a, b, o, head, false, to_f32::<W>);
            let (a, b, o) = (a.skip(head), b.skip(head), o.add(head));
            S::Conv::map::<BF>(a, b, o, n - head, true, to_f32::<W>);
            return;
        }
        let mut scratch = WideScratch {
            x: [Aligned([0f32; WIDE_BLOCK]), Aligned([0f32; WIDE_BLOCK])],
            bits: Aligned([0u16; WIDE_BLOCK]),
        };
        let mut r = std::mem::MaybeUninit::<Aligned<[W::Out; WIDE_BLOCK]>>::uninit();
        let r = r.as_mut_ptr() as *mut W::Out;
        // An operand broadcast along the run is widened once.
        for k in 0..2 {
            if strides[k + 1] == 0 {
                let v = convert::widen1::<BF>((ptrs[k + 1] as *const u16).read());
                scratch.x[k].0.fill(v);
            }
        }
        // Streaming: whole blocks from a 64-byte aligned position go out with non-temporal
        // stores; the head before it and the tail after the last whole block normally.
        let stream = stream && contiguous;
        let mut i = 0;
        if stream {
            let misalign = ptrs[0] as usize % 64;
            if misalign != 0 {
                i = ((64 - misalign) / osize).min(n);
                wide_block::<W, S, BF>(&mut scratch, r, ptrs, strides, 0, i, false);
            }
        }
        while i < n {
            let len = WIDE_BLOCK.min(n - i);
            wide_block::<W, S, BF>(
                &mut scratch,
                r,
                ptrs,
                strides,
                i,
                len,
                stream && len == WIDE_BLOCK,
            );
            i += len;
        }
    }
}

/// `W` on float32 operands, its float32 result as such (through float64 and back is the same
/// value).
#[inline(always)]
fn to_f32<W: ElemFn<f32>>(x: f32, y: f32) -> f32 {
    W::call(x, y).to_f64() as f32
}

/// The float32 operands of a [`half_body`] block, and room for 16-bit patterns.
struct WideScratch {
    x: [Aligned<[f32; WIDE_BLOCK]>; 2],
    bits: Aligned<[u16; WIDE_BLOCK]>,
}

/// Elements `i..i + len` of a [`half_body`] run (`len` at most [`WIDE_BLOCK`]), the results
/// computed into `r` (room for a block, 64-byte aligned), streamed out when `streamed` (a whole
/// block at a 64-byte aligned position). Inlined, not a closure: it then has its caller's target
/// features.
///
/// # Safety
/// As [`half_body`].
#[inline(always)]
unsafe fn wide_block<W: ElemFn<f32>, S: LineStore, const BF: bool>(
    sc: &mut WideScratch,
    r: *mut W::Out,
    ptrs: [*mut u8; 3],
    strides: [isize; 3],
    i: usize,
    len: usize,
    streamed: bool,
) {
    let narrow = W::Out::DTYPE == DType::F32;
    debug_assert!(narrow || W::Out::DTYPE == DType::Bool);
    let osize = if narrow { 2 } else { 1 };
    let so = strides[0];
    // SAFETY (this block): indices stay within the block, which lies within the run; the whole
    // block (in registers, each group of eight) is read before any of its results is written, so
    // `out` may be exactly an input.
    unsafe {
        let o = ptrs[0].offset(i as isize * so);
        let operand = |k: usize| match strides[k + 1] {
            0 => Some(Operand::Same(sc.x[k].0[0])),
            2 => Some(Operand::Run(ptrs[k + 1].add(2 * i) as *const u16)),
            _ => None,
        };
        if let (true, Some(a), Some(b)) = (narrow, operand(0), operand(1)) {
            // Widened, computed and narrowed in registers, straight into `out` when it is
            // contiguous and not streamed.
            let direct = so == 2 && !streamed;
            let dst = if direct {
                o as *mut u16
            } else {
                sc.bits.0.as_mut_ptr()
            };
            S::Conv::map::<BF>(a, b, dst, len, false, to_f32::<W>);
            if !direct {
                half_store::<S>(sc.bits.0.as_ptr() as *const u8, o, so, 2, len, streamed);
            }
            return;
        }
        for k in 0..2 {
            let s = strides[k + 1];
            let p = ptrs[k + 1].offset(i as isize * s) as *const u16;
            let x = sc.x[k].0.as_mut_ptr();
            if s == 2 {
                S::Conv::widen::<BF>(p, x, len);
            } else if s != 0 {
                for j in 0..len {
                    let h = (p as *const u8).offset(j as isize * s).cast::<u16>().read();
                    sc.bits.0[j] = h;
                }
                S::Conv::widen::<BF>(sc.bits.0.as_ptr(), x, len);
            }
        }
        let (xa, xb) = (&sc.x[0].0, &sc.x[1].0);
        for j in 0..len {
            r.add(j).write(W::call(xa[j], xb[j]));
        }
        if narrow {
            let rf = r as *const f32;
            if so == 2 && !streamed {
                S::Conv::narrow::<BF>(rf, o as *mut u16, len);
                return;
            }
            S::Conv::narrow::<BF>(rf, sc.bits.0.as_mut_ptr(), len);
        }
        let src = if narrow {
            sc.bits.0.as_ptr() as *const u8
        } else {
            r as *const u8
        };
        half_store::<S>(src, o, so, osize, len, streamed);
    }
}

/// Stores a [`wide_block`]'s `len` results of `osize` bytes from `src` (64-byte aligned) to `o`
/// at stride `so`: streamed when `streamed` (a whole block).
///
/// # Safety
/// As [`wide_block`].
#[inline(always)]
unsafe fn half_store<S: LineStore>(
    src: *const u8,
    o: *mut u8,
    so: isize,
    osize: usize,
    len: usize,
    streamed: bool,
) {
    // SAFETY: the caller's contract.
    unsafe {
        if streamed {
            for k in 0..WIDE_BLOCK * osize / BLOCK {
                S::stream_block(o.add(k * BLOCK), src.add(k * BLOCK));
            }
        } else if so == osize as isize {
            std::ptr::copy_nonoverlapping(src, o, len * osize);
        } else {
            for j in 0..len {
                let d = o.offset(j as isize * so);
                std::ptr::copy_nonoverlapping(src.add(j * osize), d, osize);
            }
        }
    }
}

#[inline(always)]
unsafe fn binary_body<T: Elem, F: ElemFn<T>, S: LineStore>(
    ptrs: [*mut u8; 3],
    strides: [isize; 3],
    n: usize,
    stream: bool,
) {
    if F::WIDENS && matches!(T::DTYPE, DType::F16 | DType::BF16) {
        // SAFETY: the caller's contract; T is 16 bits wide, and F's result is T or bool.
        return unsafe {
            if T::DTYPE == DType::BF16 {
                half_body::<F::F32, S, true>(ptrs, strides, n, stream)
            } else {
                half_body::<F::F32, S, false>(ptrs, strides, n, stream)
            }
        };
    }
    let size = size_of::<T>() as isize;
    let osize = size_of::<F::Out>() as isize;
    let (out, a, b) = (
        ptrs[0] as *mut F::Out,
        ptrs[1] as *const T,
        ptrs[2] as *const T,
    );
    let [so, sa, sb] = strides;
    let f = F::call;
    // SAFETY (all branches): the caller guarantees n elements at these strides; every element is
    // read before the write of the same index, and a streamed block is computed before it is
    // stored, so exact aliasing of out with an input is fine.
    unsafe {
        if so == osize && stream && n * osize as usize >= BLOCK {
            if sa == size && sb == size {
                stream_fill::<F::Out, S>(out, n, |i| f(a.add(i).read(), b.add(i).read()));
            } else if sa == size && sb == 0 {
                let bv = b.read();
                stream_fill::<F::Out, S>(out, n, |i| f(a.add(i).read(), bv));
            } else if sa == 0 && sb == size {
                let av = a.read();
                stream_fill::<F::Out, S>(out, n, |i| f(av, b.add(i).read()));
            } else {
                let (a, b) = (a as *const u8, b as *const u8);
                stream_fill::<F::Out, S>(out, n, |i| {
                    let x = (a.offset(i as isize * sa) as *const T).read();
                    let y = (b.offset(i as isize * sb) as *const T).read();
                    f(x, y)
                });
            }
            return;
        }
        // In place (out is exactly an input, of the same element size): loops that say so, since
        // the general contiguous loops below cannot be vectorized when out overlaps an input.
        let contiguous_out = so == size && osize == size;
        if contiguous_out && std::ptr::eq(out as *const T, a) && sa == size {
            if sb == size {
                for i in 0..n {
                    let p = out.add(i);
                    p.write(f((p as *const T).read(), b.add(i).read()));
                }
                return;
            } else if sb == 0 {
                let bv = b.read();
                for i in 0..n {
                    let p = out.add(i);
                    p.write(f((p as *const T).read(), bv));
                }
                return;
            }
        } else if contiguous_out && std::ptr::eq(out as *const T, b) && sb == size {
            if sa == size {
                for i in 0..n {
                    let p = out.add(i);
                    p.write(f(a.add(i).read(), (p as *const T).read()));
                }
                return;
            } else if sa == 0 {
                let av = a.read();
                for i in 0..n {
                    let p = out.add(i);
                    p.write(f(av, (p as *const T).read()));
                }
                return;
            }
        }
        if so == osize && sa == size && sb == size {
            for i in 0..n {
                out.add(i).write(f(a.add(i).read(), b.add(i).read()));
            }
        } else if so == osize && sa == size && sb == 0 {
            let bv = b.read();
            for i in 0..n {
                out.add(i).write(f(a.add(i).read(), bv));
            }
        } else if so == osize && sa == 0 && sb == size {
            let av = a.read();
            for i in 0..n {
                out.add(i).write(f(av, b.add(i).read()));
            }
        } else if so == osize && sb == size {
            // One strided input (a transposed operand): the plan's blocking keeps its lines in
            // cache from one run to the next.
            let a = a as *const u8;
            for i in 0..n {
                let x = (a.offset(i as isize * sa) as *const T).read();
                out.add(i).write(f(x, b.add(i).read()));
            }
        } else if so == osize && sa == size {
            let b = b as *const u8;
            for i in 0..n {
                let y = (b.offset(i as isize * sb) as *const T).read();
                out.add(i).write(f(a.add(i).read(), y));
            }
        } else {
            let (o, a, b) = (out as *mut u8, a as *const u8, b as *const u8);
            for i in 0..n as isize {
                let x = (a.offset(i * sa) as *const T).read();
                let y = (b.offset(i * sb) as *const T).read();
                (o.offset(i * so) as *mut F::Out).write(f(x, y));
            }
        }
    }
}

/// `out[i] = cond[i] ? a[i] : b[i]` for `n` elements of `size` bytes (1, 2, 4 or 8); `cond` is
/// bool or uint8, and any non-zero byte is true. Pointers in the order out, cond, a, b; strides
/// in bytes.
///
/// # Safety
/// Each pointer valid for `n` elements at its stride; `out` may equal an input exactly, any other
/// overlap must have been refused.
pub unsafe fn where_run(size: usize, ptrs: [*mut u8; 4], strides: [isize; 4], n: usize) {
    // SAFETY: forwarded; only the element size matters to a selection.
    unsafe {
        match size {
            1 => where_typed::<u8>(ptrs, strides, n),
            2 => where_typed::<u16>(ptrs, strides, n),
            4 => where_typed::<u32>(ptrs, strides, n),
            _ => where_typed::<u64>(ptrs, strides, n),
        }
    }
}

#[inline(always)]
unsafe fn where_typed<T: Copy>(ptrs: [*mut u8; 4], strides: [isize; 4], n: usize) {
    let size = size_of::<T>() as isize;
    let [so, sc, sa, sb] = strides;
    // SAFETY: the caller's contract; each element is read before the write of the same index.
    unsafe {
        if so == size && sc == 1 && sa == size && sb == size {
            let (o, c) = (ptrs[0] as *mut T, ptrs[1] as *const u8);
            let (a, b) = (ptrs[2] as *const T, ptrs[3] as *const T);
            for i in 0..n {
                let (x, y) = (a.add(i).read(), b.add(i).read());
                o.add(i).write(if c.add(i).read() != 0 { x } else { y });
            }
        } else {
            let [o, c, a, b] = ptrs;
            for i in 0..n as isize {
                let (x, y) = (
                    (a.offset(i * sa) as *const T).read(),
                    (b.offset(i * sb) as *const T).read(),
                );
                let take_a = c.offset(i * sc).read() != 0;
                (o.offset(i * so) as *mut T).write(if take_a { x } else { y });
            }
        }
    }
}

/// Whether any of `n` elements of `dtype` at `ptr` (stride in bytes) is zero (false for bool).
///
/// # Safety
/// `ptr` must be valid for `n` reads of `dtype` at the stride.
pub unsafe fn any_zero_run(dtype: DType, ptr: *const u8, stride: isize, n: usize) -> bool {
    with_elem!(dtype, T => (0..n as isize).any(|i| {
        // SAFETY: from this function's contract.
        !unsafe { (ptr.offset(i * stride) as *const T).read() }.is_true()
    }))
}

/// `out[i] = cast(src[i])` for `n` elements; strides in bytes.
///
/// # Safety
/// `out` valid for `n` writes of `to`, `src` for `n` reads of `from`, at their strides; the two
/// do not overlap unless they are the same memory with the same type.
pub unsafe fn cast_run(from: DType, to: DType, ptrs: [*mut u8; 2], strides: [isize; 2], n: usize) {
    // SAFETY: forwarded from this function's contract.
    with_elem!(from, S => with_elem!(to, D => unsafe { cast_typed::<S, D>(ptrs, strides, n) }))
}

#[inline(always)]
unsafe fn cast_typed<S: Elem, D: Elem>(ptrs: [*mut u8; 2], strides: [isize; 2], n: usize) {
    let (out, src) = (ptrs[0], ptrs[1] as *const u8);
    let [so, ss] = strides;
    // SAFETY: the caller guarantees n elements at these strides.
    unsafe {
        if so == std::mem::size_of::<D>() as isize && ss == std::mem::size_of::<S>() as isize {
            // Between float32 and the 16-bit floats: vectorised, the same bits (`convert`).
            let (o16, s16) = (out as *mut u16, src as *const u16);
            let (o32, s32) = (out as *mut f32, src as *const f32);
            match (S::DTYPE, D::DTYPE) {
                (DType::F16, DType::F32) => return widen_run::<false>(s16, o32, n),
                (DType::BF16, DType::F32) => return widen_run::<true>(s16, o32, n),
                (DType::F32, DType::F16) => return narrow_run::<false>(s32, o16, n),
                (DType::F32, DType::BF16) => return narrow_run::<true>(s32, o16, n),
                _ => {}
            }
            let (out, src) = (out as *mut D, src as *const S);
            for i in 0..n {
                out.add(i).write(src.add(i).read().cast::<D>());
            }
        } else {
            for i in 0..n as isize {
                let v = (src.offset(i * ss) as *const S).read();
                (out.offset(i * so) as *mut D).write(v.cast::<D>());
            }
        }
    }
}

/// `n` 16-bit floats at `src` widened into `out` (contiguous; they do not overlap).
unsafe fn widen_run<const BF: bool>(src: *const u16, out: *mut f32, n: usize) {
    // SAFETY: the caller's contract.
    let (src, out) = unsafe {
        (
            std::slice::from_raw_parts(src, n),
            std::slice::from_raw_parts_mut(out, n),
        )
    };
    convert::widen_slice::<BF>(src, out, false)
}

/// `n` float32 at `src` rounded into 16-bit floats at `out` (contiguous; they do not overlap).
unsafe fn narrow_run<const BF: bool>(src: *const f32, out: *mut u16, n: usize) {
    // SAFETY: the caller's contract.
    let (src, out) = unsafe {
        (
            std::slice::from_raw_parts(src, n),
            std::slice::from_raw_parts_mut(out, n),
        )
    };
    convert::narrow_slice::<BF>(src, out, false)
}

/// `out[i] = a[i] op s` computed in float32 and rounded once to `dtype`, for `n` elements;
/// strides in bytes. For float16 and bfloat16 with a float32 scalar (see `ops`), where it is
/// exactly PyTorch's loop: widen, operate in float32 (the operation's float32 scalar function),
/// round.
///
/// # Safety
/// `out` valid for `n` writes and `a` for `n` reads of `dtype` at their strides; they are the
/// same memory with the same stride, or do not overlap. `op` has a float32 kernel.
pub unsafe fn f32_scalar_run(
    op: BinaryOp,
    dtype: DType,
    s: f32,
    ptrs: [*mut u8; 2],
    strides: [isize; 2],
    n: usize,
) {
    let done = op.visit(DType::F32, ScalarRun(dtype, s, ptrs, strides, n));
    debug_assert!(done.is_some(), "{op:?} has no float32 kernel");
}

/// One [`f32_scalar_run`] call, for [`BinaryOp::visit`] on float32: built only there.
struct ScalarRun(DType, f32, [*mut u8; 2], [isize; 2], usize);

impl Visit for ScalarRun {
    type Output = ();
    fn visit<T: Elem, F: ElemFn<T>>(self) {
        let ScalarRun(dtype, s, ptrs, strides, n) = self;
        // `T` is float32: the values pass through f64 exactly.
        let s = T::from_f64(s as f64);
        with_elem!(dtype, D => {
            for i in 0..n as isize {
                // SAFETY: from f32_scalar_run's contract.
                unsafe {
                    let x = (ptrs[1].offset(i * strides[1]) as *const D).read().to_f64();
                    let r = F::call(T::from_f64(x), s).to_f64();
                    (ptrs[0].offset(i * strides[0]) as *mut D).write(D::from_f64(r));
                }
            }
        })
    }
}

/// Fills `n` elements at `out` (stride in bytes) with `value` converted to `dtype`.
///
/// # Safety
/// `out` must be valid for `n` writes of `dtype` at the stride.
pub unsafe fn fill_run(dtype: DType, value: f64, out: *mut u8, stride: isize, n: usize) {
    with_elem!(dtype, T => {
        let v = T::from_f64(value);
        for i in 0..n as isize {
            // SAFETY: from this function's contract.
            unsafe { (out.offset(i * stride) as *mut T).write(v) }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic bytes that make valid elements of every dtype (bools are 0 or 1).
    fn bytes(n: usize, seed: u64, dtype: DType) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if dtype == DType::Bool {
                    (x & 1) as u8
                } else if i % 17 == 3 {
                    0 // zeros and special values appear too
                } else {
                    (x >> 24) as u8
                }
            })
            .collect()
    }

    /// Equal bits, or both NaN: a NaN's sign and payload are not specified by Rust (LLVM may
    /// swap the operands of a commutative operation), only that it is a NaN.
    fn same_bits(dtype: DType, x: &[u8], y: &[u8]) -> bool {
        let is_nan = |b: &[u8]| match dtype {
            DType::F16 => half::f16::from_le_bytes([b[0], b[1]]).is_nan(),
            DType::BF16 => half::bf16::from_le_bytes([b[0], b[1]]).is_nan(),
            DType::F32 => f32::from_le_bytes(b.try_into().unwrap()).is_nan(),
            DType::F64 => f64::from_le_bytes(b.try_into().unwrap()).is_nan(),
            _ => false,
        };
        x == y || (is_nan(x) && is_nan(y))
    }

    /// A code path (`None`: the kernel [`binary_kernel`] chooses), streaming or not, and the
    /// operation, its type and the result's element size.
    struct Path(Option<SimdLevel>, bool, BinaryOp, DType, usize);

    impl Path {
        /// The operation on `n` elements of `a` and `b` (byte strides), written contiguously into
        /// a fresh buffer `off` elements past an 8-byte boundary (several alignments); the
        /// result's bytes.
        fn on(&self, a: &[u8], b: &[u8], strides: [isize; 2], n: usize, off: usize) -> Vec<u8> {
            let Path(level, stream, op, dtype, osize) = *self;
            let mut buf = vec![0u64; (n + off) * osize / 8 + 16];
            let out = (buf.as_mut_ptr() as *mut u8).wrapping_add(off * osize);
            // Bytes the operands must hold: the last element read, and its size.
            let reach = |s: isize| (n.max(1) as isize - 1) * s + dtype.size() as isize;
            assert!(reach(strides[0]) <= a.len() as isize && reach(strides[1]) <= b.len() as isize);
            // SAFETY: the buffers cover n elements at these strides (asserted above).
            unsafe {
                let ptrs = [out, a.as_ptr() as *mut u8, b.as_ptr() as *mut u8];
                let strides = [osize as isize, strides[0], strides[1]];
                match level {
                    Some(level) => binary_run_with(level, stream, op, dtype, ptrs, strides, n),
                    None => binary_kernel(op, dtype)
                        .expect("a kernel for an accepted type")
                        .run(ptrs, strides, n, stream),
                }
                std::slice::from_raw_parts(out, n * osize).to_vec()
            }
        }
    }

    fn levels() -> Vec<SimdLevel> {
        match simd_level() {
            SimdLevel::Avx2 => vec![SimdLevel::Baseline, SimdLevel::Avx2],
            SimdLevel::Baseline => vec![SimdLevel::Baseline],
        }
    }

    /// Every code path (baseline / AVX2, and the kernel chosen once; normal / streaming stores),
    /// every dtype and op, and contiguous, broadcast and strided operands at several alignments:
    /// bit-identical results.
    #[test]
    fn every_path_gives_identical_bits() {
        for dtype in DType::ALL {
            let size = dtype.size();
            for &op in BinaryOp::ALL {
                if !op.rule().accepts(dtype) {
                    continue;
                }
                for &(n, sa_el, sb_el, off) in &[
                    (1000usize, 1isize, 1isize, 0usize),
                    (1000, 1, 0, 1),
                    (1000, 0, 1, 3),
                    (517, 3, 1, 5),
                    (517, 1, 2, 0),
                    (300, 2, 0, 7),
                    (7, 1, 1, 0),
                ] {
                    let a = bytes((n * 3 + 8) * size, 1, dtype);
                    let b = bytes((n * 3 + 8) * size, 2, dtype);
                    let mut results: Vec<Vec<u8>> = Vec::new();
                    // The result's element type: bool for comparisons and logical operations.
                    let (odt, osize) = if op.rule().bool_result {
                        (DType::Bool, 1)
                    } else {
                        (dtype, size)
                    };
                    let chosen = levels().into_iter().map(Some).chain([None]);
                    for level in chosen {
                        for stream in [false, true] {
                            let strides = [sa_el * size as isize, sb_el * size as isize];
                            let run = Path(level, stream, op, dtype, osize);
                            results.push(run.on(&a, &b, strides, n, off));
                        }
                    }
                    for (k, r) in results.iter().enumerate().skip(1) {
                        for i in 0..n {
                            assert!(
                                same_bits(
                                    odt,
                                    &r[i * osize..][..osize],
                                    &results[0][i * osize..][..osize]
                                ),
                                "{dtype:?} {op:?} n={n} sa={sa_el} sb={sb_el} path {k} element {i}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// Element `i` of operand `k` read at `strides[k]` elements, computed element by element with
    /// the operation's scalar function: the reference for the kernels' block paths.
    struct Elementwise<'a>([&'a [u8]; 2], [usize; 2], usize);

    impl Visit for Elementwise<'_> {
        type Output = Vec<u8>;
        fn visit<T: Elem, F: ElemFn<T>>(self) -> Vec<u8> {
            let Elementwise(ops, strides, n) = self;
            let read = |k: usize, i: usize| {
                let p = ops[k][i * strides[k] * size_of::<T>()..].as_ptr();
                // SAFETY: the test's buffers hold every element read.
                unsafe { (p as *const T).read_unaligned() }
            };
            let mut out = Vec::new();
            for i in 0..n {
                let r = F::call(read(0, i), read(1, i));
                // SAFETY: `r` is a plain element of `size_of::<F::Out>()` bytes.
                out.extend_from_slice(unsafe {
                    std::slice::from_raw_parts(
                        &r as *const F::Out as *const u8,
                        size_of::<F::Out>(),
                    )
                });
            }
            out
        }
    }

    /// float16 and bfloat16: on every code path, streaming or not, contiguous, broadcast and
    /// strided, every operation gives the bits of its scalar function applied element by element
    /// (blocks in float32 for those that round once), on every pair of special values (zeros of
    /// both signs, subnormals, the extremes, infinities, quiet and signalling NaNs) and on random
    /// values.
    #[test]
    fn half_blocks_match_elementwise() {
        let specials: [(DType, [u16; 16]); 2] = [
            (
                DType::F16,
                [
                    0x0000, 0x8000, 0x0001, 0x03FF, 0x0400, 0x3C00, 0xBC00, 0x7BFF, 0xFBFF, 0x7C00,
                    0xFC00, 0x7E00, 0x7C01, 0x3555, 0x4248, 0xC900,
                ],
            ),
            (
                DType::BF16,
                [
                    0x0000, 0x8000, 0x0001, 0x007F, 0x0080, 0x3F80, 0xBF80, 0x7F7F, 0xFF7F, 0x7F80,
                    0xFF80, 0x7FC0, 0x7F81, 0x3EAB, 0x4049, 0xC2C8,
                ],
            ),
        ];
        for (dtype, special) in specials {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for &x in &special {
                for &y in &special {
                    a.extend_from_slice(&x.to_le_bytes());
                    b.extend_from_slice(&y.to_le_bytes());
                }
            }
            a.extend(bytes(3000, 11, dtype));
            b.extend(bytes(3000, 12, dtype));
            let n = a.len() / 2;
            for &op in BinaryOp::ALL {
                if !op.rule().accepts(dtype) {
                    continue;
                }
                let (odt, osize) = if op.rule().bool_result {
                    (DType::Bool, 1)
                } else {
                    (dtype, 2)
                };
                // (stride of a, stride of b) in elements, and how many elements that covers.
                for (sa, sb, len) in [(1, 1, n), (1, 0, n), (0, 1, n), (2, 1, n / 2)] {
                    let want = op
                        .visit(dtype, Elementwise([&a, &b], [sa, sb], len))
                        .expect("accepted");
                    for level in levels().into_iter().map(Some) {
                        for stream in [false, true] {
                            for off in [0usize, 3] {
                                let run = Path(level, stream, op, dtype, osize);
                                let strides = [2 * sa as isize, 2 * sb as isize];
                                let got = run.on(&a, &b, strides, len, off);
                                for i in 0..len {
                                    let (g, w) =
                                        (&got[i * osize..][..osize], &want[i * osize..][..osize]);
                                    assert!(
                                        same_bits(odt, g, w),
                                        "{dtype:?} {op:?} {level:?} stream={stream} sa={sa} sb={sb} element {i}: {g:?} != {w:?}"
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Conversions between float32 and the 16-bit floats (contiguous: the vectorised ones) give
    /// the bits of the element-by-element cast, for every 16-bit pattern and for float32 values
    /// around every rounding boundary.
    #[test]
    fn half_casts_match_elementwise() {
        for dtype in [DType::F16, DType::BF16] {
            let all: Vec<u16> = (0..=u16::MAX).collect();
            let mut wide = vec![0f32; all.len()];
            // SAFETY: both buffers hold all.len() contiguous elements.
            unsafe {
                cast_run(
                    dtype,
                    DType::F32,
                    [wide.as_mut_ptr() as *mut u8, all.as_ptr() as *mut u8],
                    [4, 2],
                    all.len(),
                )
            };
            let floats: Vec<f32> = all
                .iter()
                .flat_map(|&h| {
                    [0u32, 0x0FFF, 0x1000, 0x1001, 0x7FFF, 0x8000, 0x8001]
                        .map(|lo| f32::from_bits((h as u32) << 16 | lo))
                })
                .collect();
            let mut narrow = vec![0u16; floats.len()];
            // SAFETY: as above.
            unsafe {
                cast_run(
                    DType::F32,
                    dtype,
                    [narrow.as_mut_ptr() as *mut u8, floats.as_ptr() as *mut u8],
                    [2, 4],
                    floats.len(),
                )
            };
            // The reference: the element-by-element cast of the element type.
            fn check<H: Elem>(
                dtype: DType,
                all: &[u16],
                wide: &[f32],
                floats: &[f32],
                narrow: &[u16],
            ) {
                for (h, w) in all.iter().zip(wide) {
                    // SAFETY: H is a 16-bit element type; any pattern is one.
                    let x = unsafe { (h as *const u16 as *const H).read() };
                    let want: f32 = x.cast();
                    assert!(
                        same_bits(DType::F32, &w.to_le_bytes(), &want.to_le_bytes()),
                        "{dtype:?} {h:#06x}"
                    );
                }
                for (x, n) in floats.iter().zip(narrow) {
                    let want: H = x.cast();
                    // SAFETY: as above.
                    let bits = unsafe { (&want as *const H as *const u16).read() };
                    assert!(
                        same_bits(dtype, &n.to_le_bytes(), &bits.to_le_bytes()),
                        "{dtype:?} {:#010x}",
                        x.to_bits()
                    );
                }
            }
            if dtype == DType::F16 {
                check::<half::f16>(dtype, &all, &wide, &floats, &narrow);
            } else {
                check::<half::bf16>(dtype, &all, &wide, &floats, &narrow);
            }
        }
    }

    /// In place (out is exactly a), streaming or not, matches the out-of-place result.
    #[test]
    fn in_place_streaming_matches() {
        let n = 1000;
        let a0: Vec<f32> = (0..n).map(|i| i as f32 * 0.37 - 11.0).collect();
        let b: Vec<f32> = (0..n).map(|i| 1.0 + (i % 13) as f32).collect();
        let expect: Vec<f32> = a0.iter().zip(&b).map(|(x, y)| x / y).collect();
        for level in levels() {
            for stream in [false, true] {
                let mut a = a0.clone();
                let p = a.as_mut_ptr() as *mut u8;
                // SAFETY: out == a exactly, n elements each.
                unsafe {
                    binary_run_with(
                        level,
                        stream,
                        BinaryOp::Div,
                        DType::F32,
                        [p, p, b.as_ptr() as *mut u8],
                        [4, 4, 4],
                        n,
                    )
                };
                assert_eq!(a, expect);
                // And with the result in the second operand (b = a / b), b broadcast or not.
                let mut bb = b.clone();
                let q = bb.as_mut_ptr() as *mut u8;
                // SAFETY: out == b exactly, n elements each.
                unsafe {
                    binary_run_with(
                        level,
                        stream,
                        BinaryOp::Div,
                        DType::F32,
                        [q, a0.as_ptr() as *mut u8, q],
                        [4, 4, 4],
                        n,
                    )
                };
                assert_eq!(bb, expect);
                let mut bb = b.clone();
                let q = bb.as_mut_ptr() as *mut u8;
                let s = [2.5f32];
                // SAFETY: out == b exactly; a is one element read at stride 0.
                unsafe {
                    binary_run_with(
                        level,
                        stream,
                        BinaryOp::Sub,
                        DType::F32,
                        [q, s.as_ptr() as *mut u8, q],
                        [4, 0, 4],
                        n,
                    )
                };
                let want: Vec<f32> = b.iter().map(|y| 2.5 - y).collect();
                assert_eq!(bb, want);
            }
        }
    }

    /// Tiles of several rows (the transposing kernel where it applies) give the bits of the same
    /// rows computed one run at a time on the baseline path.
    #[test]
    fn tiles_of_rows_match_runs() {
        for dtype in [
            DType::F32,
            DType::I32,
            DType::F64,
            DType::I64,
            DType::F16,
            DType::U8,
        ] {
            let size = dtype.size() as isize;
            for &op in BinaryOp::ALL {
                if !op.rule().accepts(dtype) {
                    continue;
                }
                // (rows, cols, a transposed?, other input broadcast along the runs?)
                for &(rows, cols, a_t, bcast) in &[
                    (16usize, 64usize, true, false),
                    (16, 64, false, false),
                    (16, 70, true, true),
                    (13, 37, true, false),
                    (8, 256, false, true),
                ] {
                    // x: the transposed input, stored as (cols, ld) row-major, read as (rows, cols).
                    let ld = rows + 3;
                    let x = bytes(cols * ld * size as usize, 5, dtype);
                    let ylen = if bcast { rows } else { rows * cols };
                    let y = bytes(ylen * size as usize, 6, dtype);
                    let (xs, xrs) = (ld as isize * size, size);
                    let (ys, yrs) = if bcast {
                        (0, size)
                    } else {
                        (size, cols as isize * size)
                    };
                    let (pa, pb) = if a_t {
                        (x.as_ptr(), y.as_ptr())
                    } else {
                        (y.as_ptr(), x.as_ptr())
                    };
                    let strides = if a_t { [size, xs, ys] } else { [size, ys, xs] };
                    let rstr = if a_t {
                        [cols as isize * size, xrs, yrs]
                    } else {
                        [cols as isize * size, yrs, xrs]
                    };
                    let mut want = vec![0u64; rows * cols * size as usize / 8 + 8];
                    let mut got = vec![0u64; rows * cols * size as usize / 8 + 8];
                    for r in 0..rows {
                        let off = |k: usize| r as isize * rstr[k];
                        // SAFETY: each row is valid at these strides.
                        unsafe {
                            binary_run_with(
                                SimdLevel::Baseline,
                                false,
                                op,
                                dtype,
                                [
                                    (want.as_mut_ptr() as *mut u8).offset(off(0)),
                                    (pa as *mut u8).offset(off(1)),
                                    (pb as *mut u8).offset(off(2)),
                                ],
                                strides,
                                cols,
                            )
                        };
                    }
                    for stream in [false, true] {
                        let tile = Tile {
                            ptrs: [got.as_mut_ptr() as *mut u8, pa as *mut u8, pb as *mut u8],
                            strides,
                            row_strides: rstr,
                            rows,
                            len: cols,
                            stream,
                        };
                        // SAFETY: as above, for all rows.
                        unsafe { binary_run(op, dtype, &tile) };
                        store_fence();
                        let n = rows * cols * size as usize;
                        let (w, g) = (
                            // SAFETY: both buffers hold n bytes.
                            unsafe { std::slice::from_raw_parts(want.as_ptr() as *const u8, n) },
                            unsafe { std::slice::from_raw_parts(got.as_ptr() as *const u8, n) },
                        );
                        for e in 0..rows * cols {
                            let sz = size as usize;
                            assert!(
                                same_bits(dtype, &w[e * sz..][..sz], &g[e * sz..][..sz]),
                                "{dtype:?} {op:?} rows={rows} cols={cols} a_t={a_t} bcast={bcast} stream={stream} element {e}"
                            );
                        }
                    }
                }
            }
        }
    }
}
