/* A few rows times a weight, reading the weight once: y [M, N] = x [M, K] @ w [N, K]^T, for small M.
 *
 * Why: a verify multiplies a few rows (a draft tree's nodes) by every weight of the model, and at this size a
 * CPU product is bound by reading the weight. BLAS libraries' few-row GEMMs re-pack or re-read it (docs/speed.md,
 * "Few-row products"); this kernel streams each weight once for up to BLOCK (6) rows, so a verify of 3 rows
 * costs about what one row costs.
 *
 * Layout: the weight is copied once into panels of 16 outputs, wp [N / 16][K][16] (N padded to a multiple of
 * 16 with zero rows): one panel is one contiguous stream, read front to back. For each k, the 16 weights of the
 * panel are multiplied by x[m, k] for every row m (AVX2 + FMA, 8 floats a register), both halves of the panel
 * in 2 M accumulators. More rows than BLOCK run in blocks of BLOCK, each streaming the panel again (36 KB for
 * K = 576: the second block mostly reads it from the cache).
 * The prefetch asks for the panel PREFETCH floats ahead: the hardware prefetcher alone left a 4-row product
 * waiting on memory (a load stream and 8 FMAs a line did not overlap).
 *
 * native_rows_wide: the same product with AVX-512 (a panel of 16 is one register) on two panels at once, up to
 * WIDE_BLOCK (12) rows a block: 2 x 12 accumulators, the two panels' weights and a broadcast, 27 of AVX-512's 32
 * registers. Past about 4 rows the AVX2 kernel waits on its FMAs rather than on memory (on one AMD EPYC core a
 * 6-row lm_head cost 1.9x its one row); 16 floats an FMA halve that arithmetic where the CPU runs AVX-512 at
 * full width. Compiled for AVX-512 by function attribute only, so the library still loads on an AVX2-only CPU,
 * which never calls it (native_rows_wide_supported). The calibration times both and keeps the faster.
 *
 * Each kernel also reads float16 panels (the _f16 entries, widened by F16C): a weight whose values are all
 * float16 values (a draft head's, shipped in float16) is kept in half the bytes, the same product.
 */
#include <immintrin.h>

#define PANEL 16
#define BLOCK 6
#define PREFETCH 1024

#define WIDE_BLOCK 12

int native_rows_supported(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}

/* 8 weights from a panel as floats: float32 panels, or float16 ones (a draft head's weights, shipped in float16:
 * half the bytes to read, the same values) widened by F16C */
#define LOAD8_F32(p) _mm256_loadu_ps(p)
#define LOAD8_F16(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))
#define LOAD16_F32(p) _mm512_loadu_ps(p)
#define LOAD16_F16(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p)))

/* 1..BLOCK rows: both halves of a panel at once, 2 x rows accumulators (12 of AVX2's 16 registers at 6) */
#define BOTH_HALVES(MM, W, SUFFIX, LOAD8)                                                                        \
    static void both_##MM##SUFFIX(const float *x, const W *p, float *y, long n, long k_len) {                   \
        __m256 a[MM][2];                                                                                         \
        for (int m = 0; m < MM; m++) a[m][0] = a[m][1] = _mm256_setzero_ps();                                   \
        for (long k = 0; k < k_len; k++) {                                                                       \
            _mm_prefetch((const char *)(p + k * PANEL + PREFETCH), _MM_HINT_T0);                                \
            __m256 v0 = LOAD8(p + k * PANEL), v1 = LOAD8(p + k * PANEL + 8);                                   \
            for (int m = 0; m < MM; m++) {                                                                       \
                __m256 xb = _mm256_broadcast_ss(x + m * k_len + k);                                              \
                a[m][0] = _mm256_fmadd_ps(xb, v0, a[m][0]);                                                      \
                a[m][1] = _mm256_fmadd_ps(xb, v1, a[m][1]);                                                      \
            }                                                                                                    \
        }                                                                                                        \
        for (int m = 0; m < MM; m++) {                                                                           \
            _mm256_storeu_ps(y + m * n, a[m][0]);                                                                \
            _mm256_storeu_ps(y + m * n + 8, a[m][1]);                                                            \
        }                                                                                                        \
    }

#define AVX2_KERNELS(W, SUFFIX, LOAD8)                                                                           \
    BOTH_HALVES(1, W, SUFFIX, LOAD8) BOTH_HALVES(2, W, SUFFIX, LOAD8) BOTH_HALVES(3, W, SUFFIX, LOAD8)            \
    BOTH_HALVES(4, W, SUFFIX, LOAD8) BOTH_HALVES(5, W, SUFFIX, LOAD8) BOTH_HALVES(6, W, SUFFIX, LOAD8)            \
    typedef void (*panel_fn##SUFFIX)(const float *, const W *, float *, long, long);                             \
    static const panel_fn##SUFFIX BY_ROWS##SUFFIX[BLOCK + 1] = {0, both_1##SUFFIX, both_2##SUFFIX, both_3##SUFFIX, \
                                                                 both_4##SUFFIX, both_5##SUFFIX, both_6##SUFFIX};

AVX2_KERNELS(float, , LOAD8_F32)
AVX2_KERNELS(unsigned short, _f16, LOAD8_F16)

/* y [rows, n] = x [rows, k_len] @ w^T, w given as panels wp [n / PANEL][k_len][PANEL]; n % PANEL == 0.
 * On `threads` threads the panels are shared out (OpenMP: built with -fopenmp, it runs on the OpenMP runtime
 * torch loaded, whose threads are the ones torch's own products use; built without, on the calling thread).
 * native_rows_f16: the same with float16 panels. */
#define AVX2_ENTRY(NAME, W, SUFFIX)                                                                              \
    void NAME(const float *x, const W *wp, float *y, long rows, long n, long k_len, long threads) {              \
        long panels = n / PANEL;                                                                                 \
        _Pragma("omp parallel for num_threads(threads) schedule(static) if (threads > 1 && panels > 1)")        \
        for (long b = 0; b < panels; b++)                                                                        \
            for (long r = 0; r < rows; r += BLOCK) {                                                             \
                long mm = rows - r < BLOCK ? rows - r : BLOCK;                                                   \
                BY_ROWS##SUFFIX[mm](x + r * k_len, wp + b * k_len * PANEL, y + r * n + b * PANEL, n, k_len);   \
            }                                                                                                    \
    }

AVX2_ENTRY(native_rows, float, )
AVX2_ENTRY(native_rows_f16, unsigned short, _f16)

int native_rows_wide_supported(void) {
    __builtin_cpu_init();
    return native_rows_supported() && __builtin_cpu_supports("avx512f");
}

/* 1..WIDE_BLOCK rows on two panels (p0, p1: each [k_len][PANEL]); y their outputs' first columns */
#define TWO_PANELS(MM, W, SUFFIX, LOAD16)                                                                        \
    __attribute__((target("avx512f,fma"))) static void two_##MM##SUFFIX(const float *x, const W *p0,           \
                                                                         const W *p1, float *y, long n,          \
                                                                         long k_len) {                           \
        __m512 a[MM][2];                                                                                         \
        for (int m = 0; m < MM; m++) a[m][0] = a[m][1] = _mm512_setzero_ps();                                   \
        for (long k = 0; k < k_len; k++) {                                                                       \
            _mm_prefetch((const char *)(p0 + k * PANEL + PREFETCH), _MM_HINT_T0);                               \
            _mm_prefetch((const char *)(p1 + k * PANEL + PREFETCH), _MM_HINT_T0);                               \
            __m512 v0 = LOAD16(p0 + k * PANEL), v1 = LOAD16(p1 + k * PANEL);                                     \
            for (int m = 0; m < MM; m++) {                                                                       \
                __m512 xb = _mm512_set1_ps(x[m * k_len + k]);                                                    \
                a[m][0] = _mm512_fmadd_ps(xb, v0, a[m][0]);                                                      \
                a[m][1] = _mm512_fmadd_ps(xb, v1, a[m][1]);                                                      \
            }                                                                                                    \
        }                                                                                                        \
        for (int m = 0; m < MM; m++) {                                                                           \
            _mm512_storeu_ps(y + m * n, a[m][0]);                                                                \
            _mm512_storeu_ps(y + m * n + PANEL, a[m][1]);                                                        \
        }                                                                                                        \
    }

/* 1..WIDE_BLOCK rows on one panel (the last one, when the panels are odd) */
#define ONE_PANEL(MM, W, SUFFIX, LOAD16)                                                                         \
    __attribute__((target("avx512f,fma"))) static void one_##MM##SUFFIX(const float *x, const W *p, float *y,   \
                                                                         long n, long k_len) {                   \
        __m512 a[MM];                                                                                            \
        for (int m = 0; m < MM; m++) a[m] = _mm512_setzero_ps();                                                 \
        for (long k = 0; k < k_len; k++) {                                                                       \
            _mm_prefetch((const char *)(p + k * PANEL + PREFETCH), _MM_HINT_T0);                                \
            __m512 v = LOAD16(p + k * PANEL);                                                                    \
            for (int m = 0; m < MM; m++) a[m] = _mm512_fmadd_ps(_mm512_set1_ps(x[m * k_len + k]), v, a[m]);     \
        }                                                                                                        \
        for (int m = 0; m < MM; m++) _mm512_storeu_ps(y + m * n, a[m]);                                          \
    }

#define BOTH_WIDE(MM, W, SUFFIX, LOAD16) TWO_PANELS(MM, W, SUFFIX, LOAD16) ONE_PANEL(MM, W, SUFFIX, LOAD16)
#define WIDE_KERNELS(W, SUFFIX, LOAD16)                                                                          \
    BOTH_WIDE(1, W, SUFFIX, LOAD16) BOTH_WIDE(2, W, SUFFIX, LOAD16) BOTH_WIDE(3, W, SUFFIX, LOAD16)               \
    BOTH_WIDE(4, W, SUFFIX, LOAD16) BOTH_WIDE(5, W, SUFFIX, LOAD16) BOTH_WIDE(6, W, SUFFIX, LOAD16)               \
    BOTH_WIDE(7, W, SUFFIX, LOAD16) BOTH_WIDE(8, W, SUFFIX, LOAD16) BOTH_WIDE(9, W, SUFFIX, LOAD16)               \
    BOTH_WIDE(10, W, SUFFIX, LOAD16) BOTH_WIDE(11, W, SUFFIX, LOAD16) BOTH_WIDE(12, W, SUFFIX, LOAD16)            \
    typedef void (*two_fn##SUFFIX)(const float *, const W *, const W *, float *, long, long);                    \
    typedef void (*one_fn##SUFFIX)(const float *, const W *, float *, long, long);                               \
    static const two_fn##SUFFIX TWO_BY_ROWS##SUFFIX[WIDE_BLOCK + 1] = {                                          \
        0, two_1##SUFFIX, two_2##SUFFIX, two_3##SUFFIX, two_4##SUFFIX, two_5##SUFFIX, two_6##SUFFIX,              \
        two_7##SUFFIX, two_8##SUFFIX, two_9##SUFFIX, two_10##SUFFIX, two_11##SUFFIX, two_12##SUFFIX};              \
    static const one_fn##SUFFIX ONE_BY_ROWS##SUFFIX[WIDE_BLOCK + 1] = {                                          \
        0, one_1##SUFFIX, one_2##SUFFIX, one_3##SUFFIX, one_4##SUFFIX, one_5##SUFFIX, one_6##SUFFIX,              \
        one_7##SUFFIX, one_8##SUFFIX, one_9##SUFFIX, one_10##SUFFIX, one_11##SUFFIX, one_12##SUFFIX};

WIDE_KERNELS(float, , LOAD16_F32)
WIDE_KERNELS(unsigned short, _f16, LOAD16_F16)

/* native_rows with AVX-512, two panels at a time (the same arguments; callers check native_rows_wide_supported);
 * native_rows_wide_f16: the same with float16 panels */
#define WIDE_ENTRY(NAME, W, SUFFIX)                                                                              \
    void NAME(const float *x, const W *wp, float *y, long rows, long n, long k_len, long threads) {              \
        long panels = n / PANEL, pairs = (panels + 1) / 2;                                                       \
        _Pragma("omp parallel for num_threads(threads) schedule(static) if (threads > 1 && pairs > 1)")         \
        for (long b = 0; b < pairs; b++) {                                                                       \
            const W *p0 = wp + 2 * b * k_len * PANEL;                                                            \
            for (long r = 0; r < rows; r += WIDE_BLOCK) {                                                        \
                long mm = rows - r < WIDE_BLOCK ? rows - r : WIDE_BLOCK;                                         \
                if (2 * b + 1 < panels)                                                                          \
                    TWO_BY_ROWS##SUFFIX[mm](x + r * k_len, p0, p0 + k_len * PANEL, y + r * n + 2 * b * PANEL, n, \
                                            k_len);                                                              \
                else                                                                                             \
                    ONE_BY_ROWS##SUFFIX[mm](x + r * k_len, p0, y + r * n + 2 * b * PANEL, n, k_len);             \
            }                                                                                                    \
        }                                                                                                        \
    }

WIDE_ENTRY(native_rows_wide, float, )
WIDE_ENTRY(native_rows_wide_f16, unsigned short, _f16)
