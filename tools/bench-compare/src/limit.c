/* The "limit" for bench-compare: hand-written, shape-specialised C kernels for every case of the
 * performance suite, as in the shared reference (../shared/bench/limit.c, whose kernels these
 * are), driven as a child process so that bench-compare can interleave its measurements with the
 * library's and NumPy's in one run.
 *
 * Built by bench-compare with: cc -O3 -march=native -fopenmp limit.c -o limit
 * (-march=native is for the limit only; the library itself is built for any x86-64.)
 *
 * Protocol (one command per line on stdin, one answer line on stdout):
 *   case  <S1..S12|S2.op|P1> <alloc|out> <reps> [warm ms] -> "ok <median ms> <variant>" (best variant)
 *   lat   <L1|L2>   <alloc|out> <reps> [warm ms]   -> "ok <median ms> <variant>"
 *   sweep <elements> <alloc|out> <reps> [warm ms]  -> "ok <median ms> <variant>"
 *   expr  <E1|E2|H1|H2> <alloc|out> <reps> [warm ms] -> "ok <median ms> <variant>"  (fused loops)
 *   red   <R1|R2|F1|F2|M1..M6|H3|H4> alloc <reps> [warm ms] -> "ok <median ms> <variant>"
 *   quit
 * "alloc" is the best of the variants that allocate their result per call: fresh (64-byte
 * aligned_alloc, 4 KiB pages) and fresh-thp (2 MiB aligned + MADV_HUGEPAGE from 4 MiB up), each
 * with normal and streaming stores. "out" is the best of pre (a reused, already touched buffer)
 * and pre-nt (the same with streaming stores). S9 is in place for both. Threads: OMP_NUM_THREADS.
 * Timing: a sample is a batch of K back-to-back calls lasting >= min_batch_ms (K = 1 for slow
 * cases); the answer is the median per-call time of <reps> samples after a warm-up of at least two
 * samples and [warm ms] (the caches of this machine take tens of calls to settle).
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* ------------------------------------------------------------------ timing */
static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}
static int cmp_dbl(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}
typedef void (*bench_fn)(void *ctx);
static double warm_ms = 0; /* warm-up lasts at least this long (the 5th field of a command) */
static double measure(bench_fn fn, void *ctx, int warm, int reps, double min_batch_ms) {
    long K = 1;
    for (;;) {
        double t0 = now_ns();
        for (long k = 0; k < K; k++) fn(ctx);
        double dt = (now_ns() - t0) * 1e-6;
        if (dt >= min_batch_ms || K >= (1L << 30)) break;
        long nk = (dt <= 0) ? K * 16 : (long)(K * (min_batch_ms / dt) * 1.2) + 1;
        if (nk > K * 16) nk = K * 16;
        K = nk > K ? nk : K + 1;
    }
    double w0 = now_ns();
    for (int w = 0; w < warm || (now_ns() - w0) * 1e-6 < warm_ms; w++)
        for (long k = 0; k < K; k++) fn(ctx);
    double s[256];
    if (reps > 256) reps = 256;
    for (int r = 0; r < reps; r++) {
        double t0 = now_ns();
        for (long k = 0; k < K; k++) fn(ctx);
        s[r] = (now_ns() - t0) * 1e-6 / (double)K;
    }
    qsort(s, (size_t)reps, sizeof(double), cmp_dbl);
    return (reps & 1) ? s[reps / 2] : 0.5 * (s[reps / 2 - 1] + s[reps / 2]);
}

/* ------------------------------------------------------------------ vectors */
#ifdef __AVX512F__
#define VWF 16
#define VWD 8
#define VWI 16
#define vf_ld _mm512_loadu_ps
#define vf_add _mm512_add_ps
#define vf_div _mm512_div_ps
#define vf_mul _mm512_mul_ps
#define vf_set1 _mm512_set1_ps
#define vf_st(p, v) _mm512_stream_ps((p), (v))
#define vd_ld _mm512_loadu_pd
#define vd_add _mm512_add_pd
#define vd_set1 _mm512_set1_pd
#define vd_st(p, v) _mm512_stream_pd((p), (v))
#define vi_ld(p) _mm512_loadu_si512((const void *)(p))
#define vi_add _mm512_add_epi32
#define vi_set1 _mm512_set1_epi32
#define vi_st(p, v) _mm512_stream_si512((__m512i *)(p), (v))
#else
#define VWF 8
#define VWD 4
#define VWI 8
#define vf_ld _mm256_loadu_ps
#define vf_add _mm256_add_ps
#define vf_div _mm256_div_ps
#define vf_mul _mm256_mul_ps
#define vf_set1 _mm256_set1_ps
#define vf_st(p, v) _mm256_stream_ps((p), (v))
#define vd_ld _mm256_loadu_pd
#define vd_add _mm256_add_pd
#define vd_set1 _mm256_set1_pd
#define vd_st(p, v) _mm256_stream_pd((p), (v))
#define vi_ld(p) _mm256_loadu_si256((const __m256i *)(p))
#define vi_add _mm256_add_epi32
#define vi_set1 _mm256_set1_epi32
#define vi_st(p, v) _mm256_stream_si256((__m256i *)(p), (v))
#endif

#define ROWK(T, SUF, OPN, OP)                                                                      \
    static inline void vv_##OPN##_##SUF(T *restrict o, const T *restrict a, const T *restrict b, \
                                        size_t n) {                                              \
        for (size_t i = 0; i < n; i++) o[i] = a[i] OP b[i];                                      \
    }                                                                                            \
    static inline void vs_##OPN##_##SUF(T *restrict o, const T *restrict a, T s, size_t n) {     \
        for (size_t i = 0; i < n; i++) o[i] = a[i] OP s;                                         \
    }                                                                                            \
    static inline void sv_##OPN##_##SUF(T *restrict o, T s, const T *restrict b, size_t n) {     \
        for (size_t i = 0; i < n; i++) o[i] = s OP b[i];                                         \
    }
ROWK(float, f32, add, +)
ROWK(float, f32, div, /)
ROWK(double, f64, add, +)
ROWK(int32_t, i32, add, +)

/* streaming-store rows: o must be vector aligned (every row here is a multiple of 64 bytes) */
#define ROWK_NT(T, SUF, OPN, OP, VW, LD, VOP, SET1, ST)                                  \
    static inline void vv_##OPN##_##SUF##_nt(T *o, const T *a, const T *b, size_t n) { \
        size_t i = 0;                                                                  \
        for (; i + VW <= n; i += VW) ST(o + i, VOP(LD(a + i), LD(b + i)));             \
        for (; i < n; i++) o[i] = a[i] OP b[i];                                        \
    }                                                                                  \
    static inline void vs_##OPN##_##SUF##_nt(T *o, const T *a, T s, size_t n) {        \
        size_t i = 0;                                                                  \
        for (; i + VW <= n; i += VW) ST(o + i, VOP(LD(a + i), SET1(s)));               \
        for (; i < n; i++) o[i] = a[i] OP s;                                           \
    }                                                                                  \
    static inline void sv_##OPN##_##SUF##_nt(T *o, T s, const T *b, size_t n) {        \
        size_t i = 0;                                                                  \
        for (; i + VW <= n; i += VW) ST(o + i, VOP(SET1(s), LD(b + i)));               \
        for (; i < n; i++) o[i] = s OP b[i];                                           \
    }
ROWK_NT(float, f32, add, +, VWF, vf_ld, vf_add, vf_set1, vf_st)
ROWK_NT(float, f32, div, /, VWF, vf_ld, vf_div, vf_set1, vf_st)
ROWK_NT(double, f64, add, +, VWD, vd_ld, vd_add, vd_set1, vd_st)
ROWK_NT(int32_t, i32, add, +, VWI, vi_ld, vi_add, vi_set1, vi_st)

/* ------------------------------------------------------------------ cases */
#define R 4096L
#define C 4096L
#define NN (R * C)
#define S6N 32L
#define S6C 64L
#define S6HW (56L * 56L)
#define S7N 512L
#define S7C 3L
#define S7L 1024L

typedef void (*kern_t)(void *o, const void *a, const void *b, int nt);
#define PAR_BEGIN _Pragma("omp parallel") {
#define PAR_END if (nt) _mm_sfence(); }
#define FOR_STATIC _Pragma("omp for schedule(static)")

static void k_s1(void *o_, const void *a_, const void *b_, int nt) {
    float *o = o_; const float *a = a_, *b = b_;
    PAR_BEGIN FOR_STATIC for (long r = 0; r < R; r++) {
        if (nt) vv_add_f32_nt(o + r * C, a + r * C, b + r * C, C);
        else vv_add_f32(o + r * C, a + r * C, b + r * C, C);
    } PAR_END
}
static void k_s2(void *o_, const void *a_, const void *b_, int nt) {
    float *o = o_; const float *a = a_, *b = b_;
    PAR_BEGIN FOR_STATIC for (long r = 0; r < R; r++) {
        if (nt) vv_add_f32_nt(o + r * C, a + r * C, b, C);
        else vv_add_f32(o + r * C, a + r * C, b, C);
    } PAR_END
}
static void k_s3(void *o_, const void *a_, const void *b_, int nt) {
    float *o = o_; const float *a = a_, *b = b_;
    PAR_BEGIN FOR_STATIC for (long r = 0; r < R; r++) {
        if (nt) vs_add_f32_nt(o + r * C, a + r * C, b[r], C);
        else vs_add_f32(o + r * C, a + r * C, b[r], C);
    } PAR_END
}
static void k_s4(void *o_, const void *a_, const void *b_, int nt) {
    float *o = o_; const float *a = a_, *b = b_;
    PAR_BEGIN FOR_STATIC for (long r = 0; r < R; r++) {
        if (nt) sv_add_f32_nt(o + r * C, a[r], b, C);
        else sv_add_f32(o + r * C, a[r], b, C);
    } PAR_END
}
static void k_s5(void *o_, const void *a_, const void *b_, int nt) {
    float *o = o_; const float *a = a_; const float s = *(const float *)b_;
    PAR_BEGIN FOR_STATIC for (long r = 0; r < R; r++) {
        if (nt) vs_add_f32_nt(o + r * C, a + r * C, s, C);
        else vs_add_f32(o + r * C, a + r * C, s, C);
    } PAR_END
}
static void k_s6(void *o_, const void *a_, const void *b_, int nt) {
    float *o = o_; const float *a = a_, *b = b_;
    PAR_BEGIN FOR_STATIC for (long p = 0; p < S6N * S6C; p++) {
        float s = b[p % S6C];
        if (nt) vs_add_f32_nt(o + p * S6HW, a + p * S6HW, s, S6HW);
        else vs_add_f32(o + p * S6HW, a + p * S6HW, s, S6HW);
    } PAR_END
}
static void k_s7(void *o_, const void *a_, const void *b_, int nt) {
    float *o = o_; const float *a = a_, *b = b_;
    PAR_BEGIN FOR_STATIC for (long p = 0; p < S7N * S7C; p++) {
        float s = b[p % S7C];
        if (nt) vs_add_f32_nt(o + p * S7L, a + p * S7L, s, S7L);
        else vs_add_f32(o + p * S7L, a + p * S7L, s, S7L);
    } PAR_END
}
/* S8 transpose(a)+b: out[i][j] = a[j][i] + b[i][j]; 8x8 AVX register transposes in 64x64 tiles */
static inline void tr8(__m256 *r) {
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
    r[0] = _mm256_permute2f128_ps(s0, s4, 0x20); r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    r[2] = _mm256_permute2f128_ps(s2, s6, 0x20); r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    r[4] = _mm256_permute2f128_ps(s0, s4, 0x31); r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    r[6] = _mm256_permute2f128_ps(s2, s6, 0x31); r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}
#define T8 64L
static void k_s8(void *o_, const void *a_, const void *b_, int nt) {
    float *o = o_; const float *a = a_, *b = b_;
    PAR_BEGIN FOR_STATIC for (long ib = 0; ib < R; ib += T8) {
        for (long jb = 0; jb < C; jb += T8)
            for (long j0 = jb; j0 < jb + T8; j0 += 8)
                for (long i0 = ib; i0 < ib + T8; i0 += 8) {
                    __m256 r[8];
                    for (int k = 0; k < 8; k++) r[k] = _mm256_loadu_ps(a + (j0 + k) * C + i0);
                    tr8(r);
                    for (int k = 0; k < 8; k++) {
                        float *op = o + (i0 + k) * C + j0;
                        __m256 v = _mm256_add_ps(r[k], _mm256_loadu_ps(b + (i0 + k) * C + j0));
                        if (nt) _mm256_stream_ps(op, v); else _mm256_storeu_ps(op, v);
                    }
                }
    } PAR_END
}
static void k_s9(void *o_, const void *a_, const void *b_, int nt) {
    (void)a_; (void)nt;
    float *o = o_; const float *b = b_;
#pragma omp parallel for schedule(static)
    for (long r = 0; r < R; r++) {
        float *restrict row = o + r * C;
        for (long c = 0; c < C; c++) row[c] += b[c];
    }
}
static void k_s10(void *o_, const void *a_, const void *b_, int nt) {
    double *o = o_; const double *a = a_, *b = b_;
    PAR_BEGIN FOR_STATIC for (long r = 0; r < R; r++) {
        if (nt) vv_add_f64_nt(o + r * C, a + r * C, b, C);
        else vv_add_f64(o + r * C, a + r * C, b, C);
    } PAR_END
}
static void k_s11(void *o_, const void *a_, const void *b_, int nt) {
    int32_t *o = o_; const int32_t *a = a_, *b = b_;
    PAR_BEGIN FOR_STATIC for (long r = 0; r < R; r++) {
        if (nt) vv_add_i32_nt(o + r * C, a + r * C, b, C);
        else vv_add_i32(o + r * C, a + r * C, b, C);
    } PAR_END
}
static void k_s12(void *o_, const void *a_, const void *b_, int nt) {
    float *o = o_; const float *a = a_, *b = b_;
    PAR_BEGIN FOR_STATIC for (long r = 0; r < R; r++) {
        if (nt) vv_div_f32_nt(o + r * C, a + r * C, b, C);
        else vv_div_f32(o + r * C, a + r * C, b, C);
    } PAR_END
}

/* S2's shapes for the further memory-bound operations: a (R,C) op b (C,) with the library's
 * semantics (NaN-propagating maximum/minimum, bool results of 0/1 bytes, shifts by a negative
 * amount or by the width or more giving 0 left and the sign right). Streaming stores go through
 * a 256-byte block computed in L1, whatever the result's element size. */
#define S2OP(NAME, TI, TO, EXPR)                                                                 \
    static inline void row_##NAME(TO *restrict o, const TI *restrict a, const TI *restrict b,   \
                                  size_t n) {                                                   \
        for (size_t i = 0; i < n; i++) {                                                        \
            TI x = a[i], y = b[i];                                                              \
            o[i] = (TO)(EXPR);                                                                  \
        }                                                                                       \
    }                                                                                           \
    static inline void row_##NAME##_nt(TO *o, const TI *a, const TI *b, size_t n) {             \
        enum { PER = 256 / sizeof(TO) };                                                        \
        _Alignas(64) TO tmp[PER];                                                               \
        size_t i = 0;                                                                           \
        for (; i + PER <= n; i += PER) {                                                        \
            row_##NAME(tmp, a + i, b + i, PER);                                                 \
            for (int k = 0; k < 8; k++)                                                         \
                _mm256_stream_si256((__m256i *)((char *)(o + i) + 32 * k),                      \
                                    _mm256_load_si256((const __m256i *)((char *)tmp + 32 * k))); \
        }                                                                                       \
        row_##NAME(o + i, a + i, b + i, n - i);                                                 \
    }                                                                                           \
    static void k_s2_##NAME(void *o_, const void *a_, const void *b_, int nt) {                 \
        TO *o = o_; const TI *a = a_, *b = b_;                                                  \
        PAR_BEGIN FOR_STATIC for (long r = 0; r < R; r++) {                                     \
            if (nt) row_##NAME##_nt(o + r * C, a + r * C, b, C);                                \
            else row_##NAME(o + r * C, a + r * C, b, C);                                        \
        } PAR_END                                                                               \
    }
S2OP(eq, float, uint8_t, x == y)
S2OP(ne, float, uint8_t, x != y)
S2OP(lt, float, uint8_t, x < y)
S2OP(le, float, uint8_t, x <= y)
S2OP(gt, float, uint8_t, x > y)
S2OP(ge, float, uint8_t, x >= y)
S2OP(max, float, float, (x != x || y != y) ? NAN : (x < y ? y : x))
S2OP(min, float, float, (x != x || y != y) ? NAN : (y < x ? y : x))
S2OP(land, float, uint8_t, (x != 0.0f) & (y != 0.0f))
S2OP(lor, float, uint8_t, (x != 0.0f) | (y != 0.0f))
S2OP(lxor, float, uint8_t, (x != 0.0f) ^ (y != 0.0f))
S2OP(and, int32_t, int32_t, x & y)
S2OP(or, int32_t, int32_t, x | y)
S2OP(xor, int32_t, int32_t, x ^ y)
S2OP(shl, int32_t, int32_t, (uint32_t)y < 32 ? (int32_t)((uint32_t)x << y) : 0)
S2OP(shr, int32_t, int32_t, (uint32_t)y < 32 ? x >> y : x >> 31)

/* S2 in float16 and bfloat16 (S2.f16, S2.bf16): each element widened to float32, added, and
 * rounded to nearest even once, as PyTorch and the library compute. float16 through F16C
 * (vcvtph2ps / vcvtps2ph); bfloat16 by integer shifts, with the same rounding and quiet NaNs. */
#ifdef __AVX512F__
#define HW 16
typedef __m512 hvec;
typedef __m256i hbits;
#define h_ldbits(p) _mm256_loadu_si256((const __m256i *)(p))
#define h_stbits(p, v) _mm256_storeu_si256((__m256i *)(p), (v))
#define h_ntbits(p, v) _mm256_stream_si256((__m256i *)(p), (v))
#define h_add _mm512_add_ps
static inline hvec h_wide_f16(hbits h) { return _mm512_cvtph_ps(h); }
static inline hbits h_narrow_f16(hvec v) { return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT); }
static inline hvec h_wide_bf16(hbits h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
static inline hbits h_narrow_bf16(hvec v) {
    __m512i u = _mm512_castps_si512(v);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), lsb), 16);
    __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF)),
                                            _mm512_set1_epi32(0x7F800000));
    r = _mm512_mask_blend_epi32(nan, r, _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40)));
    return _mm512_cvtepi32_epi16(r);
}
#else
#define HW 8
typedef __m256 hvec;
typedef __m128i hbits;
#define h_ldbits(p) _mm_loadu_si128((const __m128i *)(p))
#define h_stbits(p, v) _mm_storeu_si128((__m128i *)(p), (v))
#define h_ntbits(p, v) _mm_stream_si128((__m128i *)(p), (v))
#define h_add _mm256_add_ps
static inline hvec h_wide_f16(hbits h) { return _mm256_cvtph_ps(h); }
static inline hbits h_narrow_f16(hvec v) { return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT); }
static inline hvec h_wide_bf16(hbits h) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
static inline hbits h_narrow_bf16(hvec v) {
    __m256i u = _mm256_castps_si256(v);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)), lsb), 16);
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF)),
                                     _mm256_set1_epi32(0x7F800000));
    r = _mm256_blendv_epi8(r, _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40)), nan);
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}
#endif
/* one row of C elements (a multiple of HW, 64-byte aligned): o = a + b */
#define HROW(SUF)                                                                                 \
    static void k_s2_##SUF(void *o_, const void *a_, const void *b_, int nt) {                   \
        uint16_t *o = o_; const uint16_t *a = a_, *b = b_;                                       \
        PAR_BEGIN FOR_STATIC for (long r = 0; r < R; r++) {                                      \
            uint16_t *orow = o + r * C; const uint16_t *arow = a + r * C;                        \
            for (long i = 0; i < C; i += HW) {                                                   \
                hbits v = h_narrow_##SUF(h_add(h_wide_##SUF(h_ldbits(arow + i)),                 \
                                               h_wide_##SUF(h_ldbits(b + i))));                  \
                if (nt) h_ntbits(orow + i, v); else h_stbits(orow + i, v);                       \
            }                                                                                    \
        } PAR_END                                                                                \
    }
HROW(f16)
HROW(bf16)

/* P1 x.permute(2,0,1) + y, x (64,256,256), y (256,1,1), the result in x's layout (as PyTorch and
 * NumPy lay it out): in memory, (16384,256) + (256,) */
#define P1R (64L * 256L)
#define P1C 256L
static void k_p1(void *o_, const void *a_, const void *b_, int nt) {
    float *o = o_; const float *a = a_, *b = b_;
    PAR_BEGIN FOR_STATIC for (long r = 0; r < P1R; r++) {
        if (nt) vv_add_f32_nt(o + r * P1C, a + r * P1C, b, P1C);
        else vv_add_f32(o + r * P1C, a + r * P1C, b, P1C);
    } PAR_END
}

/* sweep: (n,1024)+(1024,); serial below 65,536 elements (a parallel region costs more) */
static long sw_rows;
static void k_sweep(void *o_, const void *a_, const void *b_, int nt) {
    float *o = o_; const float *a = a_, *b = b_;
    long n = sw_rows;
    if (n * 1024 < 65536) {
        for (long r = 0; r < n; r++) {
            if (nt) vv_add_f32_nt(o + r * 1024, a + r * 1024, b, 1024);
            else vv_add_f32(o + r * 1024, a + r * 1024, b, 1024);
        }
        if (nt) _mm_sfence();
        return;
    }
    PAR_BEGIN FOR_STATIC for (long r = 0; r < n; r++) {
        if (nt) vv_add_f32_nt(o + r * 1024, a + r * 1024, b, 1024);
        else vv_add_f32(o + r * 1024, a + r * 1024, b, 1024);
    } PAR_END
}

/* L1 (3,1)+(1,3) and L2 (4,)+(4,): fixed shapes known at compile time */
__attribute__((noinline)) static void k_l1(void *o_, const void *a_, const void *b_, int nt) {
    (void)nt;
    float *restrict o = o_; const float *restrict a = a_, *restrict b = b_;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) o[i * 3 + j] = a[i] + b[j];
}
__attribute__((noinline)) static void k_l2(void *o_, const void *a_, const void *b_, int nt) {
    (void)nt;
    float *restrict o = o_; const float *restrict a = a_, *restrict b = b_;
    for (int i = 0; i < 4; i++) o[i] = a[i] + b[i];
}

/* ------------------------------------------------------------------ reductions */
/* Of the (4096,4096) float32 A: R1 sums each row (32 accumulators a row, which the compiler
 * keeps in vector registers); R2 sums each column (the rows split between the threads, each
 * adding its rows, eight at a time, into a row of accumulators that stays in cache, then the
 * threads' rows added); F1 is R2 of A[r][c] * B[c] without making the product; F2 makes the product into the
 * reused buffer O (streaming stores) and then does R2 on it. The (4096,) result is allocated per
 * call, as the library's is. */
static float *part; /* a row of accumulators per thread */
static void red_rows(float *o, const float *a) {
#pragma omp parallel for schedule(static)
    for (long r = 0; r < R; r++) {
        float s[32] = {0};
        const float *row = a + r * C;
        for (long c = 0; c < C; c += 32)
            for (int k = 0; k < 32; k++) s[k] += row[c + k];
        float t = 0;
        for (int k = 0; k < 32; k++) t += s[k];
        o[r] = t;
    }
}
static void red_cols(float *o, const float *a, const float *b) {
    int used = 1;
#pragma omp parallel
    {
        int t = omp_get_thread_num(), n = omp_get_num_threads();
        float *restrict acc = part + (long)t * C;
        for (long c = 0; c < C; c++) acc[c] = 0;
        /* eight rows per pass over the accumulators (each thread has a multiple of 8 rows) */
        for (long r = R * t / n; r < R * (t + 1) / n; r += 8) {
            const float *restrict p = a + r * C;
            if (b)
                for (long c = 0; c < C; c++)
                    acc[c] += p[c] * b[c] + p[C + c] * b[c] + p[2 * C + c] * b[c] + p[3 * C + c] * b[c] +
                              p[4 * C + c] * b[c] + p[5 * C + c] * b[c] + p[6 * C + c] * b[c] + p[7 * C + c] * b[c];
            else
                for (long c = 0; c < C; c++)
                    acc[c] += p[c] + p[C + c] + p[2 * C + c] + p[3 * C + c] + p[4 * C + c] + p[5 * C + c] +
                              p[6 * C + c] + p[7 * C + c];
        }
        if (t == 0) used = n;
    }
    for (long c = 0; c < C; c++) {
        float s = part[c];
        for (int t = 1; t < used; t++) s += part[(long)t * C + c];
        o[c] = s;
    }
}
/* The math cases, M1-M5 into the reused (4096,4096) buffer O, M6 into a result allocated per call:
 * M1 expf, M2 sqrtf,
 * M3 fabsf of each element; M4 A clamped between LO (4096,1) and HI = B (4096,); M5 lerp(A, E,
 * 0.3) as a + w * (e - a); M6 the variance of each column (two passes: the means, then the squared
 * deviations, summed by rows as red_cols does). */
static float *math_e, *math_lo;
static void *red_a, *red_b, *red_tmp;
/* no-math-errno: sqrtf is then the vector instruction (the values are the same). */
__attribute__((optimize("no-math-errno"))) static void math_map(float *restrict o, const float *restrict a, int which) {
    const float *restrict e = math_e, *restrict lo = math_lo, *restrict hi = red_b;
#pragma omp parallel for schedule(static)
    for (long r = 0; r < R; r++) {
        const float *ar = a + r * C;
        float *orow = o + r * C;
        switch (which) {
        case 1: for (long c = 0; c < C; c++) orow[c] = expf(ar[c]); break;
        case 2: for (long c = 0; c < C; c++) orow[c] = sqrtf(ar[c]); break;
        case 3: for (long c = 0; c < C; c++) orow[c] = fabsf(ar[c]); break;
        case 4: /* compares the compiler vectorizes (the data has no NaN) */
            for (long c = 0; c < C; c++) {
                float v = ar[c] < lo[r] ? lo[r] : ar[c];
                orow[c] = v > hi[c] ? hi[c] : v;
            }
            break;
        default: for (long c = 0; c < C; c++) orow[c] = ar[c] + 0.3f * (e[r * C + c] - ar[c]); break;
        }
    }
}
static void math_var(float *o, const float *a) {
    float *mean = malloc(C * sizeof(float));
    red_cols(mean, a, NULL);
    for (long c = 0; c < C; c++) mean[c] /= (float)R;
    int used = 1;
#pragma omp parallel
    {
        int t = omp_get_thread_num(), n = omp_get_num_threads();
        float *restrict acc = part + (long)t * C;
        for (long c = 0; c < C; c++) acc[c] = 0;
        for (long r = R * t / n; r < R * (t + 1) / n; r++)
            for (long c = 0; c < C; c++) {
                float d = a[r * C + c] - mean[c];
                acc[c] += d * d;
            }
        if (t == 0) used = n;
    }
    for (long c = 0; c < C; c++) {
        float s = part[c];
        for (int t = 1; t < used; t++) s += part[(long)t * C + c];
        o[c] = s / (float)(R - 1);
    }
    free(mean);
}
/* The chains' reductions in one pass each, the bound of a fused form: H3 ((A - B)**2).mean(0) as
 * red_cols, of the squared differences (eight rows per pass over a row of accumulators); H4 the sum of A where the mask is true (the mask:
 * A's seed-3 values at least 13, about half, one byte each, as the library's bool tensor). */
static unsigned char *red_mask;
static void red_sqdiff_mean(float *o, const float *a, const float *b) {
    int used = 1;
#pragma omp parallel
    {
        int t = omp_get_thread_num(), n = omp_get_num_threads();
        float *restrict acc = part + (long)t * C;
        for (long c = 0; c < C; c++) acc[c] = 0;
        /* eight rows per pass over the accumulators, as red_cols */
        for (long r = R * t / n; r < R * (t + 1) / n; r += 8) {
            const float *restrict p = a + r * C;
            for (long c = 0; c < C; c++) {
                float s = 0;
                for (int k = 0; k < 8; k++) {
                    float d = p[k * C + c] - b[c];
                    s += d * d;
                }
                acc[c] += s;
            }
        }
        if (t == 0) used = n;
    }
    for (long c = 0; c < C; c++) {
        float s = part[c];
        for (int t = 1; t < used; t++) s += part[(long)t * C + c];
        o[c] = s / (float)R;
    }
}
static float red_masked_sum(const float *restrict a, const unsigned char *restrict m) {
    float total = 0;
#pragma omp parallel reduction(+ : total)
    {
        float s[32] = {0};
#pragma omp for schedule(static)
        for (long i = 0; i < NN; i += 32)
            for (int k = 0; k < 32; k++) s[k] += m[i + k] ? a[i + k] : 0.0f;
        for (int k = 0; k < 32; k++) total += s[k];
    }
    return total;
}
static int red_case; /* 1 R1, 2 R2, 3 F1, 4 F2, 5-10 M1-M6, 11 H3, 12 H4 */
static void run_red(void *ctx) {
    (void)ctx;
    if (red_case >= 5 && red_case <= 9) {
        /* into the reused buffer O: a fresh 64 MiB allocation per call would measure page faults */
        math_map(red_tmp, red_a, red_case - 4);
        __asm__ volatile("" ::"r"(red_tmp) : "memory");
        return;
    }
    if (red_case == 12) {
        float *o = malloc(sizeof(float));
        *o = red_masked_sum(red_a, red_mask);
        __asm__ volatile("" ::"r"(o) : "memory");
        free(o);
        return;
    }
    float *o = malloc(C * sizeof(float));
    if (red_case == 11) red_sqdiff_mean(o, red_a, red_b);
    else if (red_case == 10) math_var(o, red_a);
    else if (red_case == 1) red_rows(o, red_a);
    else if (red_case == 2) red_cols(o, red_a, NULL);
    else if (red_case == 3) red_cols(o, red_a, red_b);
    else {
#pragma omp parallel
        {
#pragma omp for schedule(static)
            for (long r = 0; r < R; r++) {
                float *orow = (float *)red_tmp + r * C;
                const float *arow = (const float *)red_a + r * C, *b = red_b;
                for (long c = 0; c < C; c += VWF) vf_st(orow + c, vf_mul(vf_ld(arow + c), vf_ld(b + c)));
            }
            _mm_sfence();
        }
        red_cols(o, red_tmp, NULL);
    }
    __asm__ volatile("" ::"r"(o) : "memory");
    free(o);
}

/* ------------------------------------------------------------------ driver */
typedef struct {
    const char *name;
    int esize, is_float /* 0 int32, 1 float32, 2 float64, 3 float16, 4 bfloat16 */, inplace, nt_ok;
    long out_n, in_a, in_b;
    kern_t kern;
    int osize; /* the result's element size */
} case_t;

static const case_t CASES[] = {
    {"S1", 4, 1, 0, 1, NN, NN, NN, k_s1, 4},
    {"S2", 4, 1, 0, 1, NN, NN, C, k_s2, 4},
    {"S3", 4, 1, 0, 1, NN, NN, R, k_s3, 4},
    {"S4", 4, 1, 0, 1, NN, R, C, k_s4, 4},
    {"S5", 4, 1, 0, 1, NN, NN, 1, k_s5, 4},
    {"S6", 4, 1, 0, 1, S6N * S6C * S6HW, S6N * S6C * S6HW, S6C, k_s6, 4},
    {"S7", 4, 1, 0, 1, S7N * S7C * S7L, S7N * S7C * S7L, S7C, k_s7, 4},
    {"S8", 4, 1, 0, 1, NN, NN, NN, k_s8, 4},
    {"S9", 4, 1, 1, 0, NN, NN, C, k_s9, 4},
    {"S10", 8, 2, 0, 1, NN, NN, C, k_s10, 8},
    {"S11", 4, 0, 0, 1, NN, NN, C, k_s11, 4},
    {"S12", 4, 1, 0, 1, NN, NN, C, k_s12, 4},
    {"P1", 4, 1, 0, 1, P1R * P1C, P1R * P1C, P1C, k_p1, 4},
    {"L1", 4, 1, 0, 0, 9, 3, 3, k_l1, 4},
    {"L2", 4, 1, 0, 0, 4, 4, 4, k_l2, 4},
    {"S2.eq", 4, 1, 0, 1, NN, NN, C, k_s2_eq, 1},
    {"S2.ne", 4, 1, 0, 1, NN, NN, C, k_s2_ne, 1},
    {"S2.lt", 4, 1, 0, 1, NN, NN, C, k_s2_lt, 1},
    {"S2.le", 4, 1, 0, 1, NN, NN, C, k_s2_le, 1},
    {"S2.gt", 4, 1, 0, 1, NN, NN, C, k_s2_gt, 1},
    {"S2.ge", 4, 1, 0, 1, NN, NN, C, k_s2_ge, 1},
    {"S2.max", 4, 1, 0, 1, NN, NN, C, k_s2_max, 4},
    {"S2.min", 4, 1, 0, 1, NN, NN, C, k_s2_min, 4},
    {"S2.land", 4, 1, 0, 1, NN, NN, C, k_s2_land, 1},
    {"S2.lor", 4, 1, 0, 1, NN, NN, C, k_s2_lor, 1},
    {"S2.lxor", 4, 1, 0, 1, NN, NN, C, k_s2_lxor, 1},
    {"S2.and", 4, 0, 0, 1, NN, NN, C, k_s2_and, 4},
    {"S2.or", 4, 0, 0, 1, NN, NN, C, k_s2_or, 4},
    {"S2.xor", 4, 0, 0, 1, NN, NN, C, k_s2_xor, 4},
    {"S2.shl", 4, 0, 0, 1, NN, NN, C, k_s2_shl, 4},
    {"S2.shr", 4, 0, 0, 1, NN, NN, C, k_s2_shr, 4},
    {"S2.f16", 2, 3, 0, 1, NN, NN, C, k_s2_f16, 2},
    {"S2.bf16", 2, 4, 0, 1, NN, NN, C, k_s2_bf16, 2},
};

#define HUGE_SZ ((size_t)2 << 20)
/* inputs and the reused output: 2 MiB aligned + MADV_HUGEPAGE, as NumPy's large arrays */
static void *xalloc(size_t bytes) {
    size_t sz = (bytes + HUGE_SZ - 1) / HUGE_SZ * HUGE_SZ;
    void *p = aligned_alloc(HUGE_SZ, sz);
    if (!p) { fprintf(stderr, "limit: out of memory\n"); exit(1); }
    madvise(p, sz, MADV_HUGEPAGE);
    return p;
}
static void *alloc_out(size_t bytes, int thp) {
    if (thp && bytes >= ((size_t)4 << 20)) {
        size_t sz = (bytes + HUGE_SZ - 1) / HUGE_SZ * HUGE_SZ;
        void *p = aligned_alloc(HUGE_SZ, sz);
        madvise(p, sz, MADV_HUGEPAGE);
        return p;
    }
    return aligned_alloc(64, (bytes + 63) / 64 * 64);
}
/* the same values as the library and NumPy get (bench-compare's fill) */
static void fill(void *p, long n, const case_t *c, int seed) {
    for (long i = 0; i < n; i++) {
        double v = (double)((i * 7 + seed) % 97) * 0.25 + 1.0;
        if (c->is_float == 1) ((float *)p)[i] = (float)v;
        else if (c->is_float == 3) ((uint16_t *)p)[i] = _cvtss_sh((float)v, 0);
        else if (c->is_float == 4) { float f = (float)v; uint32_t u; memcpy(&u, &f, 4); ((uint16_t *)p)[i] = (uint16_t)(u >> 16); }
        else if (c->is_float == 2) ((double *)p)[i] = v;
        else ((int32_t *)p)[i] = (int32_t)((i * 7 + seed) % 97) + 1;
    }
}

typedef struct {
    const case_t *c;
    void *a, *b, *out;
    int nt, mode; /* mode 0 pre, 1 fresh, 2 fresh-thp */
    size_t obytes;
} run_t;
static void run_once(void *ctx) {
    run_t *r = ctx;
    if (r->mode == 0) { r->c->kern(r->out, r->a, r->b, r->nt); __asm__ volatile("" ::: "memory"); return; }
    void *o = alloc_out(r->obytes, r->mode == 2);
    r->c->kern(o, r->a, r->b, r->nt);
    __asm__ volatile("" ::"r"(o) : "memory");
    free(o);
}

/* inputs of the current case, kept while the same case is asked for again */
static const case_t *cur;
static long cur_sweep = -1;
static void *A, *B, *O;
static void release(void) {
    free(A); free(B); free(O);
    A = B = O = NULL; cur = NULL; cur_sweep = -1;
}
static void setup(const case_t *c, long sweep_elems) {
    if (cur == c && cur_sweep == sweep_elems) return;
    release();
    cur = c; cur_sweep = sweep_elems;
    size_t e = (size_t)c->esize, oe = (size_t)c->osize;
    A = xalloc((size_t)c->in_a * e); B = xalloc((size_t)c->in_b * e + 64); O = xalloc((size_t)c->out_n * oe);
    fill(A, c->in_a, c, 1); fill(B, c->in_b, c, 2);
    memset(O, 0, (size_t)c->out_n * oe);
}

static void answer(const case_t *c, const char *variant, int reps, double min_batch_ms) {
    size_t ob = (size_t)c->out_n * c->osize;
    double best = 1e300; const char *which = "-";
    if (c->inplace) {
        run_t r = {c, A, B, A, 0, 0, ob};
        best = measure(run_once, &r, 2, reps, min_batch_ms); which = "inplace";
    } else if (!strcmp(variant, "out")) {
        static const char *names[] = {"pre", "pre-nt"};
        for (int nt = 0; nt <= c->nt_ok; nt++) {
            run_t r = {c, A, B, O, nt, 0, ob};
            double m = measure(run_once, &r, 2, reps, min_batch_ms);
            if (m < best) { best = m; which = names[nt]; }
        }
    } else {
        static const char *names[2][2] = {{"fresh", "fresh-nt"}, {"fresh-thp", "fresh-thp-nt"}};
        for (int thp = 0; thp <= 1; thp++) {
            if (thp && ob < ((size_t)4 << 20)) continue; /* same as fresh below 4 MiB */
            for (int nt = 0; nt <= c->nt_ok; nt++) {
                run_t r = {c, A, B, O, nt, thp ? 2 : 1, ob};
                double m = measure(run_once, &r, 2, reps, min_batch_ms);
                if (m < best) { best = m; which = names[thp][nt]; }
            }
        }
    }
    printf("ok %.6g %s\n", best, which);
    fflush(stdout);
}

/* ------------------------------------------------------------------ fused expressions */
/* E1: o = a * b + c, a (M,M), b (M,), c (M,1). E2: o = maximum((x - m) / s * g + t, 0), x (M,M),
 * m and s (M,1), g and t (M,). One pass each, float32, every operation rounded on its own (no
 * fused multiply-add: the library and the separate calls round the product). Inputs are filled as
 * the library's and NumPy's are (input k with seed k + 1). */
#define EM 2048L
typedef struct {
    const char *name;
    int ninputs;
    long sizes[5];
    void (*row)(float *o, const float *const *in, long r);
} expr_t;
__attribute__((optimize("fp-contract=off"))) static void row_e1(float *restrict o, const float *const *in, long r) {
    const float *restrict a = in[0] + r * EM, *restrict b = in[1];
    const float cr = in[2][r];
    for (long i = 0; i < EM; i++) o[i] = a[i] * b[i] + cr;
}
__attribute__((optimize("fp-contract=off"))) static void row_e2(float *restrict o, const float *const *in, long r) {
    const float *restrict x = in[0] + r * EM, *restrict g = in[3], *restrict t = in[4];
    const float mr = in[1][r], sr = in[2][r];
    for (long i = 0; i < EM; i++) {
        float v = (x[i] - mr) / sr * g[i] + t[i];
        o[i] = (v != v) ? v : (v < 0.0f ? 0.0f : v); /* maximum(v, 0), NaN-propagating */
    }
}
/* H2: o = (a * b + c) * s - d, a (M,M), b (M,1), c (M,), d (1,M), s 0-d (inputs in that order). */
__attribute__((optimize("fp-contract=off"))) static void row_h2(float *restrict o, const float *const *in, long r) {
    const float *restrict a = in[0] + r * EM, *restrict c = in[2], *restrict d = in[3];
    const float br = in[1][r], s = in[4][0];
    for (long i = 0; i < EM; i++) o[i] = (a[i] * br + c[i]) * s - d[i];
}
static const expr_t EXPRS[] = {
    {"E1", 3, {EM * EM, EM, EM}, row_e1},
    {"E2", 5, {EM * EM, EM, EM, EM, EM}, row_e2},
    {"H1", 3, {EM * EM, EM, EM}, row_e1}, /* the chain a*b + c: E1's loop */
    {"H2", 5, {EM * EM, EM, EM, EM, 1}, row_h2},
};
static const expr_t *ecur;
static float *EIN[5], *EOUT;
typedef struct {
    const expr_t *e;
    int nt, mode; /* mode 0 into EOUT, 1 fresh, 2 fresh-thp */
} erun_t;
static void expr_kernel(const expr_t *e, float *o, int nt) {
    PAR_BEGIN FOR_STATIC for (long r = 0; r < EM; r++) {
        if (!nt) { e->row(o + r * EM, (const float *const *)EIN, r); continue; }
        /* streaming: the row computed into L1, then written with non-temporal stores */
        _Alignas(64) float tmp[EM];
        e->row(tmp, (const float *const *)EIN, r);
        for (long i = 0; i < EM; i += 8) _mm256_stream_ps(o + r * EM + i, _mm256_load_ps(tmp + i));
    } PAR_END
}
static void expr_once(void *ctx) {
    erun_t *r = ctx;
    size_t ob = (size_t)EM * EM * sizeof(float);
    if (r->mode == 0) { expr_kernel(r->e, EOUT, r->nt); __asm__ volatile("" ::: "memory"); return; }
    float *o = alloc_out(ob, r->mode == 2);
    expr_kernel(r->e, o, r->nt);
    __asm__ volatile("" ::"r"(o) : "memory");
    free(o);
}
static void expr_release(void) {
    for (int k = 0; k < 5; k++) { free(EIN[k]); EIN[k] = NULL; }
    free(EOUT); EOUT = NULL; ecur = NULL;
}
static void expr_answer(const expr_t *e, const char *variant, int reps) {
    if (ecur != e) {
        expr_release();
        release(); /* one set of inputs in memory at a time */
        ecur = e;
        for (int k = 0; k < e->ninputs; k++) {
            EIN[k] = xalloc((size_t)e->sizes[k] * sizeof(float));
            for (long i = 0; i < e->sizes[k]; i++)
                EIN[k][i] = (float)((double)((i * 7 + k + 1) % 97) * 0.25 + 1.0);
        }
        EOUT = xalloc((size_t)EM * EM * sizeof(float));
        memset(EOUT, 0, (size_t)EM * EM * sizeof(float));
    }
    static const char *names[3][2] = {{"pre", "pre-nt"}, {"fresh", "fresh-nt"}, {"fresh-thp", "fresh-thp-nt"}};
    double best = 1e300; const char *which = "-";
    int out = !strcmp(variant, "out");
    for (int mode = out ? 0 : 1; mode <= (out ? 0 : 2); mode++)
        for (int nt = 0; nt <= 1; nt++) {
            erun_t r = {e, nt, mode};
            double m = measure(expr_once, &r, 2, reps, 1.0);
            if (m < best) { best = m; which = names[mode][nt]; }
        }
    printf("ok %.6g %s\n", best, which);
    fflush(stdout);
}

int main(void) {
    char line[256];
    while (fgets(line, sizeof line, stdin)) {
        char cmd[16], name[32], variant[16];
        int reps = 0;
        warm_ms = 0;
        if (sscanf(line, "%15s %31s %15s %d %lf", cmd, name, variant, &reps, &warm_ms) < 4) {
            if (!strncmp(line, "quit", 4)) break;
            printf("err bad command\n"); fflush(stdout); continue;
        }
        if (!strcmp(cmd, "expr")) {
            const expr_t *e = NULL;
            for (size_t i = 0; i < sizeof EXPRS / sizeof EXPRS[0]; i++)
                if (!strcmp(EXPRS[i].name, name)) e = &EXPRS[i];
            if (!e) { printf("err unknown expression\n"); fflush(stdout); continue; }
            expr_answer(e, variant, reps);
            continue;
        }
        expr_release();
        if (!strcmp(cmd, "sweep")) {
            long elems = atol(name);
            long rows = elems / 1024 > 0 ? elems / 1024 : 1;
            static case_t sc;
            sc = (case_t){"SW", 4, 1, 0, 1, rows * 1024, rows * 1024, 1024, k_sweep, 4};
            sw_rows = rows;
            if (cur_sweep != rows * 1024) { release(); }
            setup(&sc, rows * 1024);
            answer(&sc, variant, reps, 2.0);
            continue;
        }
        if (!strcmp(cmd, "red")) {
            static const case_t rc = {"RED", 4, 1, 0, 0, NN, NN, C, NULL, 4};
            red_case = !strcmp(name, "R1") ? 1 : !strcmp(name, "R2") ? 2 : !strcmp(name, "F1") ? 3
                     : !strcmp(name, "F2") ? 4 : 0;
            if (name[0] == 'M' && name[1] >= '1' && name[1] <= '6' && !name[2]) red_case = 4 + name[1] - '0';
            if (!strcmp(name, "H3")) red_case = 11;
            if (!strcmp(name, "H4")) red_case = 12;
            if (!red_case) { printf("err unknown reduction\n"); fflush(stdout); continue; }
            setup(&rc, -2);
            if (!part) part = xalloc((size_t)omp_get_max_threads() * C * sizeof(float));
            red_a = A; red_b = B; red_tmp = O;
            if (red_case >= 5 && !math_e) {
                /* E (seed 4) and LO (seed 3) filled as the library's inputs are */
                math_e = xalloc(NN * sizeof(float)); math_lo = xalloc(R * sizeof(float));
                fill(math_e, NN, &rc, 4); fill(math_lo, R, &rc, 3);
            }
            if (red_case == 12 && !red_mask) {
                red_mask = xalloc(NN);
                for (long i = 0; i < NN; i++) red_mask[i] = ((double)((i * 7 + 3) % 97) * 0.25 + 1.0) >= 13.0;
            }
            printf("ok %.6g %s\n", measure(run_red, NULL, 2, reps, 1.0), red_case == 4 ? "pre-nt" : red_case >= 11 ? "one-pass" : "fresh");
            fflush(stdout);
            continue;
        }
        const case_t *c = NULL;
        for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
            if (!strcmp(CASES[i].name, name)) c = &CASES[i];
        if (!c) { printf("err unknown case\n"); fflush(stdout); continue; }
        setup(c, -1);
        answer(c, variant, reps, !strcmp(cmd, "lat") ? 2.0 : 1.0);
    }
    release();
    expr_release();
    return 0;
}
