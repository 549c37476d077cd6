//! Conversions between the 16-bit floats (float16, bfloat16) and float32, a block at a time.
//!
//! PyTorch computes an operation on float16/bfloat16 in float32 and rounds the result once, so a
//! kernel on these types is three steps: widen the operands, compute in float32, narrow the result.
//! Converting element by element through the `half` crate costs a few nanoseconds each (it checks
//! the CPU on every call and the loop does not vectorise); these convert eight at a time (sixteen
//! in [`HalfConv::map`] on CPUs with AVX-512 F, when the compiler has its intrinsics: `build.rs`
//! sets `cfg(bc_avx512)` from Rust 1.89):
//!
//! - float16: the F16C instructions (`vcvtph2ps`, and `vcvtps2ph` rounding to nearest even), the
//!   very instructions the `half` crate uses one element at a time on such a CPU;
//! - bfloat16: AVX2 integer arithmetic. Widening is a shift; narrowing rounds to nearest even by
//!   adding `0x7FFF` plus the lowest kept bit, and NaNs keep their sign and upper payload with the
//!   quiet bit set. That is exactly the `half` crate's (and c10's) rounding: the AVX-512 BF16
//!   instruction `vcvtneps2bf16` is not used because it flushes subnormal inputs to zero, which
//!   float32 subnormals do not become in PyTorch.
//!
//! Every path gives the bits of the `half` crate's per-element conversions (tests below compare
//! all 65,536 16-bit patterns and a million float32 values, NaN payloads included), so results do
//! not depend on the CPU. [`Scalar`] is the fallback for CPUs without AVX2 and F16C.

/// The conversions of one code path. `BF` selects bfloat16 (else float16). The functions are
/// inlined into the kernels of their path, which enable the instructions they use.
pub(crate) trait HalfConv {
    /// `dst[i] = widen(src[i])` for `i < n` (16-bit patterns to float32).
    ///
    /// # Safety
    /// `src` valid for `n` reads, `dst` for `n` writes, the CPU has the path's instructions.
    unsafe fn widen<const BF: bool>(src: *const u16, dst: *mut f32, n: usize);

    /// `dst[i] = narrow(src[i])` for `i < n` (rounded to nearest even).
    ///
    /// # Safety
    /// As [`HalfConv::widen`].
    unsafe fn narrow<const BF: bool>(src: *const f32, dst: *mut u16, n: usize);

    /// Whether [`HalfConv::map`] can stream its results (non-temporal stores from registers).
    const STREAMS: bool = false;

    /// `dst[i] = narrow(f(a[i], b[i]))` for `i < n`, each operand widened: the three steps at
    /// once, so the float32 values stay in registers on a vector path.
    ///
    /// The vector paths widen a bfloat16 operand without quieting a signaling NaN (quieting every
    /// group made bfloat16 into `out` a fifth slower), and compute a group again from quieted
    /// operands when one of its results is a NaN. For each function of the operation table (IEEE
    /// arithmetic, comparisons, C's `pow`, `fmod`, `atan2`, `hypot`) a signaling NaN operand
    /// gives either a NaN or what the quiet one gives, so the results are the element-by-element
    /// ones.
    ///
    /// With `stream` (passed only where [`HalfConv::STREAMS`]), the whole groups go out with
    /// non-temporal stores, which the caller fences: a streamed run needs no copy through L1.
    ///
    /// # Safety
    /// Each [`Operand::Run`] valid for `n` reads, `dst` for `n` writes, the CPU has the path's
    /// instructions; with `stream`, `dst` is 64-byte aligned.
    #[inline(always)]
    unsafe fn map<const BF: bool>(
        a: Operand,
        b: Operand,
        dst: *mut u16,
        n: usize,
        stream: bool,
        f: impl Fn(f32, f32) -> f32,
    ) {
        let _ = stream;
        for i in 0..n {
            // SAFETY: the caller's contract.
            unsafe {
                dst.add(i)
                    .write(narrow1::<BF>(f(a.get::<BF>(i), b.get::<BF>(i))))
            };
        }
    }
}

/// An operand of [`HalfConv::map`].
#[derive(Clone, Copy)]
pub(crate) enum Operand {
    /// Contiguous 16-bit elements.
    Run(*const u16),
    /// One float32 value for every element (an operand broadcast along the run).
    Same(f32),
}

impl Operand {
    /// The operand from element `i` on.
    ///
    /// # Safety
    /// A run holds element `i` (or ends there).
    #[inline(always)]
    pub(crate) unsafe fn skip(self, i: usize) -> Operand {
        match self {
            // SAFETY: the caller's contract.
            Operand::Run(p) => Operand::Run(unsafe { p.add(i) }),
            same => same,
        }
    }

    /// Element `i`, widened.
    ///
    /// # Safety
    /// A run holds element `i`.
    #[inline(always)]
    unsafe fn get<const BF: bool>(self, i: usize) -> f32 {
        match self {
            // SAFETY: the caller's contract.
            Operand::Run(p) => widen1::<BF>(unsafe { p.add(i).read() }),
            Operand::Same(x) => x,
        }
    }
}

/// One element through the `half` crate: the reference every path matches.
#[inline(always)]
pub(crate) fn widen1<const BF: bool>(h: u16) -> f32 {
    if BF {
        half::bf16::from_bits(h).to_f32()
    } else {
        half::f16::from_bits(h).to_f32()
    }
}

/// See [`widen1`].
#[inline(always)]
pub(crate) fn narrow1<const BF: bool>(x: f32) -> u16 {
    if BF {
        half::bf16::from_f32(x).to_bits()
    } else {
        half::f16::from_f32(x).to_bits()
    }
}

/// Element by element through the `half` crate (any CPU).
pub(crate) struct Scalar;

impl HalfConv for Scalar {
    #[inline(always)]
    unsafe fn widen<const BF: bool>(src: *const u16, dst: *mut f32, n: usize) {
        for i in 0..n {
            // SAFETY: the caller's contract.
            unsafe { dst.add(i).write(widen1::<BF>(src.add(i).read())) };
        }
    }

    #[inline(always)]
    unsafe fn narrow<const BF: bool>(src: *const f32, dst: *mut u16, n: usize) {
        for i in 0..n {
            // SAFETY: the caller's contract.
            unsafe { dst.add(i).write(narrow1::<BF>(src.add(i).read())) };
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) use x86::Avx2F16c;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{HalfConv, Operand, Scalar};
    use std::arch::x86_64::*;

    /// Eight at a time with F16C (float16) and AVX2 (bfloat16); for functions compiled with
    /// `#[target_feature(enable = "avx2,f16c")]` on a CPU that has both.
    pub(crate) struct Avx2F16c;

    #[inline(always)]
    unsafe fn widen8<const BF: bool>(h: __m128i) -> __m256 {
        // SAFETY: register operations of the enabled features.
        unsafe { quiet8::<BF>(bits8::<BF>(h)) }
    }

    /// Eight 16-bit patterns as float32, except that a bfloat16 signaling NaN stays signaling
    /// (a plain shift): [`quiet8`] of this is [`widen8`].
    #[inline(always)]
    unsafe fn bits8<const BF: bool>(h: __m128i) -> __m256 {
        // SAFETY (both): register operations of the enabled features.
        unsafe {
            if BF {
                _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(h)))
            } else {
                _mm256_cvtph_ps(h)
            }
        }
    }

    /// `x` with the quiet bit set in its NaN lanes, as `half` widens a bfloat16 NaN (float16's
    /// `vcvtph2ps` quiets already).
    #[inline(always)]
    unsafe fn quiet8<const BF: bool>(x: __m256) -> __m256 {
        if !BF {
            return x;
        }
        // SAFETY: register operations of the enabled features.
        unsafe {
            let nan = _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x);
            let bit = _mm256_castsi256_ps(_mm256_set1_epi32(0x0040_0000));
            _mm256_or_ps(x, _mm256_and_ps(nan, bit))
        }
    }

    #[inline(always)]
    unsafe fn narrow8<const BF: bool>(x: __m256) -> __m128i {
        // SAFETY (both): register operations of the enabled features.
        unsafe {
            if BF {
                let u = _mm256_castps_si256(x);
                let lsb = _mm256_and_si256(_mm256_srli_epi32::<16>(u), _mm256_set1_epi32(1));
                let rounded = _mm256_srli_epi32::<16>(_mm256_add_epi32(
                    _mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)),
                    lsb,
                ));
                let nan = _mm256_cmpgt_epi32(
                    _mm256_and_si256(u, _mm256_set1_epi32(0x7FFF_FFFF)),
                    _mm256_set1_epi32(0x7F80_0000),
                );
                let quiet = _mm256_or_si256(_mm256_srli_epi32::<16>(u), _mm256_set1_epi32(0x40));
                let r = _mm256_blendv_epi8(rounded, quiet, nan);
                // Every lane holds a 16-bit value: packing with unsigned saturation keeps it.
                _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256::<1>(r))
            } else {
                _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(x)
            }
        }
    }

    /// `h`, which the compiler can no longer trace to the instruction that made it. Stored
    /// directly, a `vcvtps2ph` result gets folded into that instruction's memory form, which
    /// AMD's Zen cores run microcoded: 2-3x slower than converting into a register and storing,
    /// and it made float16 into `out` 2.2x the C limit there.
    #[inline(always)]
    fn register(mut h: __m128i) -> __m128i {
        // SAFETY: an empty instruction sequence that claims to change `h` in its register.
        unsafe {
            std::arch::asm!("/* {0} */", inout(xmm_reg) h, options(pure, nomem, nostack, preserves_flags));
        }
        h
    }

    impl HalfConv for Avx2F16c {
        const STREAMS: bool = true;

        #[inline(always)]
        unsafe fn widen<const BF: bool>(src: *const u16, dst: *mut f32, n: usize) {
            // SAFETY: the caller's contract; the tail goes through a stack block of eight.
            unsafe {
                let mut i = 0;
                while i + 8 <= n {
                    let h = _mm_loadu_si128(src.add(i) as *const __m128i);
                    _mm256_storeu_ps(dst.add(i), widen8::<BF>(h));
                    i += 8;
                }
                if i < n {
                    let mut h = [0u16; 8];
                    let mut f = [0f32; 8];
                    std::ptr::copy_nonoverlapping(src.add(i), h.as_mut_ptr(), n - i);
                    let v = widen8::<BF>(_mm_loadu_si128(h.as_ptr() as *const __m128i));
                    _mm256_storeu_ps(f.as_mut_ptr(), v);
                    std::ptr::copy_nonoverlapping(f.as_ptr(), dst.add(i), n - i);
                }
            }
        }

        #[inline(always)]
        unsafe fn narrow<const BF: bool>(src: *const f32, dst: *mut u16, n: usize) {
            // SAFETY: as above.
            unsafe {
                let mut i = 0;
                while i + 8 <= n {
                    let h = register(narrow8::<BF>(_mm256_loadu_ps(src.add(i))));
                    _mm_storeu_si128(dst.add(i) as *mut __m128i, h);
                    i += 8;
                }
                if i < n {
                    let mut f = [0f32; 8];
                    let mut h = [0u16; 8];
                    std::ptr::copy_nonoverlapping(src.add(i), f.as_mut_ptr(), n - i);
                    let v = narrow8::<BF>(_mm256_loadu_ps(f.as_ptr()));
                    _mm_storeu_si128(h.as_mut_ptr() as *mut __m128i, v);
                    std::ptr::copy_nonoverlapping(h.as_ptr(), dst.add(i), n - i);
                }
            }
        }

        #[inline(always)]
        unsafe fn map<const BF: bool>(
            a: Operand,
            b: Operand,
            dst: *mut u16,
            n: usize,
            stream: bool,
            f: impl Fn(f32, f32) -> f32,
        ) {
            // SAFETY: the caller's contract; sixteen at a time where the CPU has AVX-512, then
            // eight, then the tail element by element (the same bits on every path). The groups
            // stay aligned: each is 16 or 32 bytes.
            unsafe {
                use Operand::{Run, Same};
                #[cfg(bc_avx512)]
                let done = if avx512::available() {
                    avx512::map::<BF>(a, b, dst, n, stream, &f)
                } else {
                    0
                };
                #[cfg(not(bc_avx512))]
                let done = 0;
                let (a, b, dst, n) = (a.skip(done), b.skip(done), dst.add(done), n - done);
                let s = stream;
                let i = match (a, b) {
                    (Run(p), Run(q)) => map8::<BF>(run8::<BF>(p), run8::<BF>(q), dst, n, s, &f),
                    (Run(p), Same(y)) => map8::<BF>(run8::<BF>(p), same8(y), dst, n, s, &f),
                    (Same(x), Run(q)) => map8::<BF>(same8(x), run8::<BF>(q), dst, n, s, &f),
                    (Same(x), Same(y)) => map8::<BF>(same8(x), same8(y), dst, n, s, &f),
                };
                Scalar::map::<BF>(a.skip(i), b.skip(i), dst.add(i), n - i, false, f);
            }
        }
    }

    /// [`Avx2F16c::map`] sixteen at a time, on CPUs with AVX-512 F: the same steps and bits as
    /// the eight-wide path, twice as many elements per instruction.
    #[cfg(bc_avx512)]
    #[clippy::msrv = "1.89"] // compiled only by 1.89 and later (build.rs)
    mod avx512 {
        use super::Operand;
        use std::arch::x86_64::*;

        /// Whether this CPU runs [`map`].
        #[inline(always)]
        pub(super) fn available() -> bool {
            std::is_x86_feature_detected!("avx512f")
        }

        /// Sixteen 16-bit patterns as float32, except that a bfloat16 signaling NaN stays
        /// signaling: [`quiet16`] of this is the `half` crate's widening.
        #[inline(always)]
        unsafe fn bits16<const BF: bool>(h: __m256i) -> __m512 {
            // SAFETY (both): register operations of the enabled features.
            unsafe {
                if BF {
                    _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h)))
                } else {
                    _mm512_cvtph_ps(h)
                }
            }
        }

        /// `x` with the quiet bit set in its NaN lanes (bfloat16; float16's `vcvtph2ps` quiets
        /// already).
        #[inline(always)]
        unsafe fn quiet16<const BF: bool>(x: __m512) -> __m512 {
            if !BF {
                return x;
            }
            // SAFETY: register operations of the enabled features.
            unsafe {
                let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x);
                let u = _mm512_castps_si512(x);
                let q = _mm512_mask_or_epi32(u, nan, u, _mm512_set1_epi32(0x0040_0000));
                _mm512_castsi512_ps(q)
            }
        }

        #[inline(always)]
        unsafe fn narrow16<const BF: bool>(x: __m512) -> __m256i {
            // SAFETY (both): register operations of the enabled features.
            unsafe {
                if BF {
                    let u = _mm512_castps_si512(x);
                    let lsb = _mm512_and_si512(_mm512_srli_epi32::<16>(u), _mm512_set1_epi32(1));
                    let rounded = _mm512_srli_epi32::<16>(_mm512_add_epi32(
                        _mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)),
                        lsb,
                    ));
                    let nan = _mm512_cmpgt_epi32_mask(
                        _mm512_and_si512(u, _mm512_set1_epi32(0x7FFF_FFFF)),
                        _mm512_set1_epi32(0x7F80_0000),
                    );
                    let quiet =
                        _mm512_or_si512(_mm512_srli_epi32::<16>(u), _mm512_set1_epi32(0x40));
                    // Every lane holds a 16-bit value: truncating to 16 bits keeps it.
                    _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, rounded, quiet))
                } else {
                    _mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(x)
                }
            }
        }

        /// As the eight-wide `register`: keeps `vcvtps2ph`'s store out of the instruction.
        #[target_feature(enable = "avx")]
        #[inline]
        fn register(mut h: __m256i) -> __m256i {
            // SAFETY: an empty instruction sequence that claims to change `h` in its register.
            unsafe {
                std::arch::asm!("/* {0} */", inout(ymm_reg) h, options(pure, nomem, nostack, preserves_flags));
            }
            h
        }

        /// The whole groups of sixteen of [`super::Avx2F16c::map`]; returns how many elements
        /// it wrote.
        ///
        /// # Safety
        /// As `HalfConv::map`; the CPU has AVX-512 F ([`available`]).
        #[target_feature(enable = "avx512f,avx2,f16c")]
        pub(super) unsafe fn map<const BF: bool>(
            a: Operand,
            b: Operand,
            dst: *mut u16,
            n: usize,
            stream: bool,
            f: &impl Fn(f32, f32) -> f32,
        ) -> usize {
            use Operand::{Run, Same};
            let run = |p: *const u16| {
                // SAFETY: `map16` asks only for elements below `n`, which the run holds.
                move |i: usize| unsafe {
                    bits16::<BF>(_mm256_loadu_si256(p.add(i) as *const __m256i))
                }
            };
            let same = |v: f32| move |_: usize| _mm512_set1_ps(v);
            // SAFETY: the caller's contract.
            unsafe {
                let s = stream;
                match (a, b) {
                    (Run(p), Run(q)) => map16::<BF>(run(p), run(q), dst, n, s, f),
                    (Run(p), Same(y)) => map16::<BF>(run(p), same(y), dst, n, s, f),
                    (Same(x), Run(q)) => map16::<BF>(same(x), run(q), dst, n, s, f),
                    (Same(x), Same(y)) => map16::<BF>(same(x), same(y), dst, n, s, f),
                }
            }
        }

        /// As the eight-wide `map8`, sixteen at a time.
        ///
        /// # Safety
        /// The loaders read valid elements below `n`; `dst` valid for `n` writes, and 32-byte
        /// aligned with `stream`.
        #[inline(always)]
        unsafe fn map16<const BF: bool>(
            a: impl Fn(usize) -> __m512,
            b: impl Fn(usize) -> __m512,
            dst: *mut u16,
            n: usize,
            stream: bool,
            f: impl Fn(f32, f32) -> f32,
        ) -> usize {
            let mut i = 0;
            // SAFETY: the caller's contract.
            unsafe {
                let apply = |x: __m512, y: __m512| {
                    let x: [f32; 16] = std::mem::transmute(x);
                    let y: [f32; 16] = std::mem::transmute(y);
                    let r: [f32; 16] = std::array::from_fn(|j| f(x[j], y[j]));
                    std::mem::transmute::<[f32; 16], __m512>(r)
                };
                while i + 16 <= n {
                    let (x, y) = (a(i), b(i));
                    let mut r = apply(x, y);
                    // See `HalfConv::map`: operands with NaNs are quieted only where a result
                    // is NaN.
                    if BF && _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(r, r) != 0 {
                        r = apply(quiet16::<BF>(x), quiet16::<BF>(y));
                    }
                    let h = register(narrow16::<BF>(r));
                    if stream {
                        _mm256_stream_si256(dst.add(i) as *mut __m256i, h);
                    } else {
                        _mm256_storeu_si256(dst.add(i) as *mut __m256i, h);
                    }
                    i += 16;
                }
            }
            i
        }
    }

    /// Loaders for [`map8`]: eight elements of a run from element `i`, widened as [`bits8`];
    /// one value eight times.
    ///
    /// # Safety
    /// The run holds the elements the loader is asked for.
    #[inline(always)]
    unsafe fn run8<const BF: bool>(p: *const u16) -> impl Fn(usize) -> __m256 {
        // SAFETY: the caller's contract.
        move |i| unsafe { bits8::<BF>(_mm_loadu_si128(p.add(i) as *const __m128i)) }
    }

    #[inline(always)]
    fn same8(v: f32) -> impl Fn(usize) -> __m256 {
        // SAFETY: a register operation of the enabled features.
        move |_| unsafe { _mm256_set1_ps(v) }
    }

    /// [`HalfConv::map`]'s whole groups of eight, from operands' loaders (one kind of operand
    /// each, so the loop has no branch but its own).
    ///
    /// # Safety
    /// The loaders read valid elements below `n`; `dst` valid for `n` writes, and 16-byte
    /// aligned with `stream`.
    #[inline(always)]
    unsafe fn map8<const BF: bool>(
        a: impl Fn(usize) -> __m256,
        b: impl Fn(usize) -> __m256,
        dst: *mut u16,
        n: usize,
        stream: bool,
        f: impl Fn(f32, f32) -> f32,
    ) -> usize {
        let mut i = 0;
        // SAFETY: the caller's contract.
        unsafe {
            let apply = |x: __m256, y: __m256| {
                let x: [f32; 8] = std::mem::transmute(x);
                let y: [f32; 8] = std::mem::transmute(y);
                // Eight independent lanes: the compiler makes one vector operation of them.
                let r: [f32; 8] = std::array::from_fn(|j| f(x[j], y[j]));
                std::mem::transmute::<[f32; 8], __m256>(r)
            };
            while i + 8 <= n {
                let (x, y) = (a(i), b(i));
                let mut r = apply(x, y);
                // See `HalfConv::map`: operands with NaNs are quieted only where a result is NaN.
                if BF && _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_UNORD_Q>(r, r)) != 0 {
                    r = apply(quiet8::<BF>(x), quiet8::<BF>(y));
                }
                let h = register(narrow8::<BF>(r));
                if stream {
                    _mm_stream_si128(dst.add(i) as *mut __m128i, h);
                } else {
                    _mm_storeu_si128(dst.add(i) as *mut __m128i, h);
                }
                i += 8;
            }
        }
        i
    }

    /// [`Avx2F16c::widen`] compiled with its features (for callers outside the kernel clones).
    ///
    /// # Safety
    /// As [`HalfConv::widen`]; the CPU has AVX2 and F16C.
    #[target_feature(enable = "avx2,f16c")]
    pub(super) unsafe fn widen_slice<const BF: bool>(src: &[u16], dst: &mut [f32]) {
        let n = src.len().min(dst.len());
        // SAFETY: both slices hold n elements; the caller checked the CPU.
        unsafe { Avx2F16c::widen::<BF>(src.as_ptr(), dst.as_mut_ptr(), n) }
    }

    /// [`Avx2F16c::map`] compiled with its features, for tests.
    ///
    /// # Safety
    /// Each [`Operand::Run`] holds `dst.len()` elements; the CPU has AVX2 and F16C; with
    /// `stream`, `dst` is 64-byte aligned.
    #[cfg(test)]
    #[target_feature(enable = "avx2,f16c")]
    pub(super) unsafe fn map_slice<const BF: bool>(
        a: Operand,
        b: Operand,
        dst: &mut [u16],
        stream: bool,
        f: impl Fn(f32, f32) -> f32,
    ) {
        // SAFETY: the caller's contract.
        unsafe { Avx2F16c::map::<BF>(a, b, dst.as_mut_ptr(), dst.len(), stream, f) }
    }

    /// [`Avx2F16c::narrow`] compiled with its features.
    ///
    /// # Safety
    /// As [`HalfConv::narrow`]; the CPU has AVX2 and F16C.
    #[target_feature(enable = "avx2,f16c")]
    pub(super) unsafe fn narrow_slice<const BF: bool>(src: &[f32], dst: &mut [u16]) {
        let n = src.len().min(dst.len());
        // SAFETY: as above.
        unsafe { Avx2F16c::narrow::<BF>(src.as_ptr(), dst.as_mut_ptr(), n) }
    }
}

/// Whether this CPU runs [`Avx2F16c`].
pub(crate) fn has_avx2_f16c() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("f16c")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Widens `src` into `dst` (as many as the shorter holds) on the best path of this CPU, or on the
/// scalar path when `scalar`.
pub(crate) fn widen_slice<const BF: bool>(src: &[u16], dst: &mut [f32], scalar: bool) {
    #[cfg(target_arch = "x86_64")]
    if !scalar && has_avx2_f16c() {
        // SAFETY: the CPU has the features.
        return unsafe { x86::widen_slice::<BF>(src, dst) };
    }
    let _ = scalar;
    let n = src.len().min(dst.len());
    // SAFETY: both slices hold n elements.
    unsafe { Scalar::widen::<BF>(src.as_ptr(), dst.as_mut_ptr(), n) }
}

/// Narrows `src` into `dst` (as many as the shorter holds); see [`widen_slice`].
pub(crate) fn narrow_slice<const BF: bool>(src: &[f32], dst: &mut [u16], scalar: bool) {
    #[cfg(target_arch = "x86_64")]
    if !scalar && has_avx2_f16c() {
        // SAFETY: the CPU has the features.
        return unsafe { x86::narrow_slice::<BF>(src, dst) };
    }
    let _ = scalar;
    let n = src.len().min(dst.len());
    // SAFETY: both slices hold n elements.
    unsafe { Scalar::narrow::<BF>(src.as_ptr(), dst.as_mut_ptr(), n) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The software conversions of the `half` crate (its `const` forms never use F16C): the
    /// reference, independent of this CPU.
    fn soft_widen<const BF: bool>(h: u16) -> u32 {
        if BF {
            half::bf16::from_bits(h).to_f32_const().to_bits()
        } else {
            half::f16::from_bits(h).to_f32_const().to_bits()
        }
    }

    fn soft_narrow<const BF: bool>(x: f32) -> u16 {
        if BF {
            half::bf16::from_f32_const(x).to_bits()
        } else {
            half::f16::from_f32_const(x).to_bits()
        }
    }

    /// Every 16-bit pattern, on both paths and at every tail length, gives the reference's bits
    /// (NaN payloads included).
    fn widen_all<const BF: bool>() {
        let src: Vec<u16> = (0..=u16::MAX).collect();
        for scalar in [true, false] {
            for len in [src.len(), src.len() - 3] {
                let mut dst = vec![0f32; len];
                widen_slice::<BF>(&src[..len], &mut dst, scalar);
                for (i, d) in dst.iter().enumerate() {
                    assert_eq!(
                        d.to_bits(),
                        soft_widen::<BF>(src[i]),
                        "bf16={BF} scalar={scalar} {:#06x}",
                        src[i]
                    );
                }
            }
        }
    }

    /// Float32 values around every rounding boundary of both formats: every upper half with
    /// lower halves that sit just below, on and above the half-way points of either format (and
    /// some others), normal, subnormal, infinite and NaN.
    fn narrow_many<const BF: bool>() {
        const LOW: [u32; 16] = [
            0x0000, 0x0001, 0x0FFF, 0x1000, 0x1001, 0x1FFF, 0x2000, 0x2001, 0x7FFF, 0x8000, 0x8001,
            0xBFFF, 0xC000, 0xFFFF, 0x5A5A, 0xA5A5,
        ];
        let src: Vec<f32> = (0..=u16::MAX as u32)
            .flat_map(|hi| LOW.iter().map(move |&lo| f32::from_bits(hi << 16 | lo)))
            .collect();
        for scalar in [true, false] {
            for len in [src.len(), src.len() - 5] {
                let mut dst = vec![0u16; len];
                narrow_slice::<BF>(&src[..len], &mut dst, scalar);
                for (i, d) in dst.iter().enumerate() {
                    assert_eq!(
                        *d,
                        soft_narrow::<BF>(src[i]),
                        "bf16={BF} scalar={scalar} {:#010x}",
                        src[i].to_bits()
                    );
                }
            }
        }
    }

    /// The register path of `map` (sixteen at a time where the CPU has AVX-512, eight, then one
    /// at a time) gives the bits of the element-by-element default for every 16-bit pattern, as
    /// either operand, against a run or a broadcast value, at lengths that end in each kind of
    /// group.
    #[cfg(target_arch = "x86_64")]
    fn map_like_elementwise<const BF: bool>() {
        use Operand::{Run, Same};
        assert!(has_avx2_f16c(), "the register path needs AVX2 and F16C");
        let all: Vec<u16> = (0..=u16::MAX).collect();
        let rev: Vec<u16> = all.iter().rev().copied().collect();
        let one = widen1::<BF>(0x3C01);
        // Identity passes a NaN through; pow and hypot give a number for some quiet NaN
        // operands (pow(NaN, 0), pow(1, NaN), hypot(inf, NaN)) and a NaN for signaling ones.
        let fs: [fn(f32, f32) -> f32; 5] =
            [|x, _| x, |x, y| x + y, |x, y| x * y, f32::powf, f32::hypot];
        let runs = |v: f32| [(Run(all.as_ptr()), Same(v)), (Same(v), Run(all.as_ptr()))];
        for (k, f) in fs.into_iter().enumerate() {
            let pairs = [(Run(all.as_ptr()), Run(rev.as_ptr()))].into_iter();
            let pairs = pairs.chain([one, 0.0, 1.0, f32::INFINITY].into_iter().flat_map(runs));
            for (a, b) in pairs {
                for (len, stream) in [all.len(), all.len() - 1, all.len() - 8, all.len() - 9]
                    .into_iter()
                    .flat_map(|len| [(len, false), (len, true)])
                {
                    let mut want = vec![0u16; len];
                    // Streaming needs a 64-byte aligned destination.
                    let mut buf = vec![0u16; len + 32];
                    let at = buf.as_ptr().align_offset(64);
                    let got = &mut buf[at..at + len];
                    // SAFETY: both runs hold every length's elements; the CPU has the features.
                    unsafe {
                        Scalar::map::<BF>(a, b, want.as_mut_ptr(), len, false, f);
                        x86::map_slice::<BF>(a, b, got, stream, f);
                    }
                    if let Some(i) = (0..len).find(|&i| got[i] != want[i]) {
                        panic!(
                            "bf16={BF} f{k} len {len} stream {stream} element {i}: {:#06x}, \
                             want {:#06x}",
                            got[i], want[i]
                        );
                    }
                }
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn float16_maps_like_elementwise() {
        map_like_elementwise::<false>();
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn bfloat16_maps_like_elementwise() {
        map_like_elementwise::<true>();
    }

    #[test]
    fn float16_widens_like_half() {
        widen_all::<false>();
    }

    #[test]
    fn bfloat16_widens_like_half() {
        widen_all::<true>();
    }

    #[test]
    fn float16_narrows_like_half() {
        narrow_many::<false>();
    }

    #[test]
    fn bfloat16_narrows_like_half() {
        narrow_many::<true>();
    }

    /// Short runs (every length below two vectors) convert exactly their elements and write
    /// nothing past them.
    #[test]
    fn short_runs_stay_in_bounds() {
        for n in 0..17 {
            let src: Vec<u16> = (0..n as u16).map(|i| 0x3C00 + i).collect();
            let mut dst = vec![-1.0f32; n + 4];
            widen_slice::<false>(&src, &mut dst[..n], false);
            assert!(dst[n..].iter().all(|&x| x == -1.0), "n={n}");
            let mut back = vec![0xFFFFu16; n + 4];
            narrow_slice::<false>(&dst[..n], &mut back[..n], false);
            assert_eq!(&back[..n], &src[..], "n={n}");
            assert!(back[n..].iter().all(|&x| x == 0xFFFF), "n={n}");
        }
    }
}
