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
 */
#include <immintrin.h>

#define PANEL 16
#define BLOCK 6
#define PREFETCH 1024

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
