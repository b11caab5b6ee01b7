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
 */
#include <immintrin.h>

#define PANEL 16
#define BLOCK 6
#define PREFETCH 1024

#define WIDE_BLOCK 12

int native_rows_supported(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/* 1..BLOCK rows: both halves of a panel at once, 2 x rows accumulators (12 of AVX2's 16 registers at 6) */
#define BOTH_HALVES(MM)                                                                                          \
    static void both_##MM(const float *x, const float *p, float *y, long n, long k_len) {                       \
        __m256 a[MM][2];                                                                                         \
        for (int m = 0; m < MM; m++) a[m][0] = a[m][1] = _mm256_setzero_ps();                                   \
        for (long k = 0; k < k_len; k++) {                                                                       \
            _mm_prefetch((const char *)(p + k * PANEL + PREFETCH), _MM_HINT_T0);                                \
            __m256 v0 = _mm256_loadu_ps(p + k * PANEL), v1 = _mm256_loadu_ps(p + k * PANEL + 8);               \
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

BOTH_HALVES(1) BOTH_HALVES(2) BOTH_HALVES(3) BOTH_HALVES(4) BOTH_HALVES(5) BOTH_HALVES(6)

typedef void (*panel_fn)(const float *, const float *, float *, long, long);
static const panel_fn BY_ROWS[BLOCK + 1] = {0, both_1, both_2, both_3, both_4, both_5, both_6};

/* y [rows, n] = x [rows, k_len] @ w^T, w given as panels wp [n / PANEL][k_len][PANEL]; n % PANEL == 0.
 * On `threads` threads the panels are shared out (OpenMP: built with -fopenmp, it runs on the OpenMP runtime
 * torch loaded, whose threads are the ones torch's own products use; built without, on the calling thread). */
void native_rows(const float *x, const float *wp, float *y, long rows, long n, long k_len, long threads) {
    long panels = n / PANEL;
    #pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1 && panels > 1)
    for (long b = 0; b < panels; b++)
        for (long r = 0; r < rows; r += BLOCK) {
            long mm = rows - r < BLOCK ? rows - r : BLOCK;
            BY_ROWS[mm](x + r * k_len, wp + b * k_len * PANEL, y + r * n + b * PANEL, n, k_len);
        }
}

int native_rows_wide_supported(void) {
    __builtin_cpu_init();
    return native_rows_supported() && __builtin_cpu_supports("avx512f");
}

/* 1..WIDE_BLOCK rows on two panels (p0, p1: each [k_len][PANEL]); y0, y1 their outputs' first columns */
#define TWO_PANELS(MM)                                                                                           \
    __attribute__((target("avx512f,fma"))) static void two_##MM(const float *x, const float *p0,               \
                                                                 const float *p1, float *y, long n, long k_len) { \
        __m512 a[MM][2];                                                                                         \
        for (int m = 0; m < MM; m++) a[m][0] = a[m][1] = _mm512_setzero_ps();                                   \
        for (long k = 0; k < k_len; k++) {                                                                       \
            _mm_prefetch((const char *)(p0 + k * PANEL + PREFETCH), _MM_HINT_T0);                               \
            _mm_prefetch((const char *)(p1 + k * PANEL + PREFETCH), _MM_HINT_T0);                               \
            __m512 v0 = _mm512_loadu_ps(p0 + k * PANEL), v1 = _mm512_loadu_ps(p1 + k * PANEL);                 \
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
#define ONE_PANEL(MM)                                                                                            \
    __attribute__((target("avx512f,fma"))) static void one_##MM(const float *x, const float *p, float *y,       \
                                                                 long n, long k_len) {                           \
        __m512 a[MM];                                                                                            \
        for (int m = 0; m < MM; m++) a[m] = _mm512_setzero_ps();                                                 \
        for (long k = 0; k < k_len; k++) {                                                                       \
            _mm_prefetch((const char *)(p + k * PANEL + PREFETCH), _MM_HINT_T0);                                \
            __m512 v = _mm512_loadu_ps(p + k * PANEL);                                                           \
            for (int m = 0; m < MM; m++) a[m] = _mm512_fmadd_ps(_mm512_set1_ps(x[m * k_len + k]), v, a[m]);     \
        }                                                                                                        \
        for (int m = 0; m < MM; m++) _mm512_storeu_ps(y + m * n, a[m]);                                          \
    }

TWO_PANELS(1) TWO_PANELS(2) TWO_PANELS(3) TWO_PANELS(4) TWO_PANELS(5) TWO_PANELS(6)
TWO_PANELS(7) TWO_PANELS(8) TWO_PANELS(9) TWO_PANELS(10) TWO_PANELS(11) TWO_PANELS(12)
ONE_PANEL(1) ONE_PANEL(2) ONE_PANEL(3) ONE_PANEL(4) ONE_PANEL(5) ONE_PANEL(6)
ONE_PANEL(7) ONE_PANEL(8) ONE_PANEL(9) ONE_PANEL(10) ONE_PANEL(11) ONE_PANEL(12)

typedef void (*two_fn)(const float *, const float *, const float *, float *, long, long);
static const two_fn TWO_BY_ROWS[WIDE_BLOCK + 1] = {0, two_1, two_2, two_3, two_4, two_5, two_6,
                                                   two_7, two_8, two_9, two_10, two_11, two_12};
static const panel_fn ONE_BY_ROWS[WIDE_BLOCK + 1] = {0, one_1, one_2, one_3, one_4, one_5, one_6,
                                                     one_7, one_8, one_9, one_10, one_11, one_12};

/* native_rows with AVX-512, two panels at a time (the same arguments; callers check native_rows_wide_supported) */
void native_rows_wide(const float *x, const float *wp, float *y, long rows, long n, long k_len, long threads) {
    long panels = n / PANEL, pairs = (panels + 1) / 2;
    #pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1 && pairs > 1)
    for (long b = 0; b < pairs; b++) {
        const float *p0 = wp + 2 * b * k_len * PANEL;
        for (long r = 0; r < rows; r += WIDE_BLOCK) {
            long mm = rows - r < WIDE_BLOCK ? rows - r : WIDE_BLOCK;
            if (2 * b + 1 < panels)
                TWO_BY_ROWS[mm](x + r * k_len, p0, p0 + k_len * PANEL, y + r * n + 2 * b * PANEL, n, k_len);
            else
                ONE_BY_ROWS[mm](x + r * k_len, p0, y + r * n + 2 * b * PANEL, n, k_len);
        }
    }
}
