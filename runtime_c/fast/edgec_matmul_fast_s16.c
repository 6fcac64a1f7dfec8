/* The fast 16x8 matrix product of two activations (edgec_nn.h, edgec/ops/matmul.py MATMUL_FAST16): TFLite's
 * BatchMatMul<int16_t, int64_t> bit for bit, with no scratch. Both operands are read where they lie, through
 * their strides; two outputs of a row at a time (columns j and j + 1) share each pair of A's values:
 *   kk: A's rows and B's columns both contiguous along k (attention's Q x K^T with K in its own layout): each
 *       output's int16 pairs are single words, one SMLALD (two products into an int64 sum) per pair;
 *   kn: A's rows contiguous along k, B's rows contiguous along n (P x V, or a transposed copy of K): the words
 *       (B[k][j], B[k][j+1]) and (B[k+1][j], B[k+1][j+1]) make column j's and j+1's pairs by PKHBT / PKHTB;
 *   any other strides: the values one by one (two loads and a pack per pair).
 * Each mode is its own entry (edgec_matmul_fast_{kk,kn,any}_s16): the generated call names the one its lowering
 * picked (which also orients the product: the transposed one where only B is contiguous along k), so a firmware
 * links only that loop; edgec_matmul_fast_s16 dispatches on p->mode (tests).
 * The sums are int64 as TFLite's: two activations bound no product (|a b| <= 2^30, k of them), so no int32 sum
 * is provably exact. The requantization is TFLite's MultiplyByQuantizedMultiplier(int64_t, int32_t, int)
 * (edgec_requantize64): with R the multiplier reduced to Q15 and T = 15 - shift, the int32 result is bits T..T+31
 * of acc * R + 2^(T-1). The lowering folds T in: for T <= 32, M = R * 2^(32-T) (below 2^32 for T >= 15) and the
 * high word of acc * M + 2^31 (mod 2^64) is exactly those bits; for T > 32, M = R, the rounding 2^(T-1) and the
 * high word shifted right by T - 32. One UMLAL, one MLA, one shift. */
#include <string.h>

#include "edgec_fast_support.h"

#ifdef EDGEC_DSP_NATIVE
#define EDGEC_MM16_SMLALD(x, y, acc) __smlald((int32_t)(x), (int32_t)(y), (acc))
#define EDGEC_MM16_SAT(v) __ssat((v), 16)
/* an int16 pair as one (possibly unaligned) word: Arm M-profile cores with DSP take unaligned LDR */
EDGEC_INLINE uint32_t edgec_mm16_pair(const int16_t *p)
{
    uint32_t w;
    memcpy(&w, p, 4);
    return w;
}
/* lane 0 of x and lane 0 of y (PKHBT); lane 1 of x and lane 1 of y (PKHTB): ACLE has no intrinsic for either */
EDGEC_INLINE uint32_t edgec_mm16_lows(uint32_t x, uint32_t y)
{
    uint32_t r;
    __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(r) : "r"(x), "r"(y));
    return r;
}
EDGEC_INLINE uint32_t edgec_mm16_highs(uint32_t x, uint32_t y)
{
    uint32_t r;
    __asm__("pkhtb %0, %2, %1, asr #16" : "=r"(r) : "r"(x), "r"(y));
    return r;
}
#else
EDGEC_INLINE int64_t EDGEC_MM16_SMLALD(uint32_t x, uint32_t y, int64_t acc)
{
    return acc + (int64_t)((int32_t)(int16_t)(uint16_t)(x & 0xffffu) * (int32_t)(int16_t)(uint16_t)(y & 0xffffu)) +
           (int64_t)((int32_t)(int16_t)(uint16_t)(x >> 16) * (int32_t)(int16_t)(uint16_t)(y >> 16));
}
#define EDGEC_MM16_SAT(v) ((v) < -32768 ? -32768 : ((v) > 32767 ? 32767 : (v)))
/* value by value: lane 0 = p[0] on any byte order (a little-endian compiler makes it one load) */
EDGEC_INLINE uint32_t edgec_mm16_pair(const int16_t *p)
{
    return (uint32_t)(uint16_t)p[0] | (uint32_t)(uint16_t)p[1] << 16;
}
EDGEC_INLINE uint32_t edgec_mm16_lows(uint32_t x, uint32_t y) { return (x & 0xffffu) | (y << 16); }
EDGEC_INLINE uint32_t edgec_mm16_highs(uint32_t x, uint32_t y) { return (y & 0xffff0000u) | (x >> 16); }
#endif

/* two values s apart as one pair (lane 0 the first) */
EDGEC_INLINE uint32_t edgec_mm16_pair_at(const int16_t *p, int32_t s)
{
    return (uint32_t)(uint16_t)p[0] | (uint32_t)(uint16_t)p[s] << 16;
}

/* The inner loops, 4 k-steps (two pairs) an iteration, t >= 1 iterations: the two int64 sums of an output pair.
 * On the DSP path they are written out (gcc 12 spills the pointers of these loops into the stack and shuffles
 * the 64-bit sums between registers: 25 instructions for 8 products instead of 12 / 18). */
#ifdef EDGEC_DSP_NATIVE
/* kk: u (the row of A), y0 and y1 (two columns of B) all contiguous along k */
#define EDGEC_MM16_KK_LOOP(u, y0, y1, t, s0, s1)                                                             \
    do {                                                                                                      \
        uint32_t w_, v0_, v1_;                                                                                \
        __asm__ volatile("1:\n\t"                                                                             \
                         "ldr %[w], [%[u]], #4\n\t"                                                          \
                         "ldr %[v0], [%[y0]], #4\n\t"                                                        \
                         "ldr %[v1], [%[y1]], #4\n\t"                                                        \
                         "smlald %Q[s0], %R[s0], %[w], %[v0]\n\t"                                            \
                         "smlald %Q[s1], %R[s1], %[w], %[v1]\n\t"                                            \
                         "ldr %[w], [%[u]], #4\n\t"                                                          \
                         "ldr %[v0], [%[y0]], #4\n\t"                                                        \
                         "ldr %[v1], [%[y1]], #4\n\t"                                                        \
                         "smlald %Q[s0], %R[s0], %[w], %[v0]\n\t"                                            \
                         "smlald %Q[s1], %R[s1], %[w], %[v1]\n\t"                                            \
                         "subs %[t], %[t], #1\n\t"                                                           \
                         "bne 1b"                                                                            \
                         : [u] "+r"(u), [y0] "+r"(y0), [y1] "+r"(y1), [t] "+r"(t), [s0] "+r"(s0), [s1] "+r"(s1), \
                           [w] "=&r"(w_), [v0] "=&r"(v0_), [v1] "=&r"(v1_)                                    \
                         :                                                                                    \
                         : "cc", "memory");                                                                   \
    } while (0)
/* kn: u (the row of A) contiguous along k; y two columns of B's row, the next row rb bytes on */
#define EDGEC_MM16_KN_LOOP(u, y, rb, t, s0, s1)                                                              \
    do {                                                                                                      \
        uint32_t w_, r0_, r1_, q_;                                                                            \
        __asm__ volatile("1:\n\t"                                                                             \
                         "ldr %[w], [%[u]], #4\n\t"                                                          \
                         "ldr %[r0], [%[y]]\n\t"                                                             \
                         "ldr %[r1], [%[y], %[rb]]\n\t"                                                      \
                         "add %[y], %[y], %[rb], lsl #1\n\t"                                                 \
                         "pkhbt %[q], %[r0], %[r1], lsl #16\n\t"                                             \
                         "pkhtb %[r1], %[r1], %[r0], asr #16\n\t"                                            \
                         "smlald %Q[s0], %R[s0], %[w], %[q]\n\t"                                             \
                         "smlald %Q[s1], %R[s1], %[w], %[r1]\n\t"                                            \
                         "ldr %[w], [%[u]], #4\n\t"                                                          \
                         "ldr %[r0], [%[y]]\n\t"                                                             \
                         "ldr %[r1], [%[y], %[rb]]\n\t"                                                      \
                         "add %[y], %[y], %[rb], lsl #1\n\t"                                                 \
                         "pkhbt %[q], %[r0], %[r1], lsl #16\n\t"                                             \
                         "pkhtb %[r1], %[r1], %[r0], asr #16\n\t"                                            \
                         "smlald %Q[s0], %R[s0], %[w], %[q]\n\t"                                             \
                         "smlald %Q[s1], %R[s1], %[w], %[r1]\n\t"                                            \
                         "subs %[t], %[t], #1\n\t"                                                           \
                         "bne 1b"                                                                            \
                         : [u] "+r"(u), [y] "+r"(y), [t] "+r"(t), [s0] "+r"(s0), [s1] "+r"(s1), [w] "=&r"(w_), \
                           [r0] "=&r"(r0_), [r1] "=&r"(r1_), [q] "=&r"(q_)                                    \
                         : [rb] "r"(rb)                                                                       \
                         : "cc", "memory");                                                                   \
    } while (0)
#else
#define EDGEC_MM16_KK_LOOP(u, y0, y1, t, s0, s1)                                                             \
    do {                                                                                                      \
        for (; (t) > 0; --(t)) {                                                                              \
            uint32_t w_ = edgec_mm16_pair(u);                                                                 \
            (s0) = EDGEC_MM16_SMLALD(w_, edgec_mm16_pair(y0), (s0));                                          \
            (s1) = EDGEC_MM16_SMLALD(w_, edgec_mm16_pair(y1), (s1));                                          \
            w_ = edgec_mm16_pair((u) + 2);                                                                    \
            (s0) = EDGEC_MM16_SMLALD(w_, edgec_mm16_pair((y0) + 2), (s0));                                    \
            (s1) = EDGEC_MM16_SMLALD(w_, edgec_mm16_pair((y1) + 2), (s1));                                    \
            (u) += 4;                                                                                         \
            (y0) += 4;                                                                                        \
            (y1) += 4;                                                                                        \
        }                                                                                                     \
    } while (0)
#define EDGEC_MM16_KN_LOOP(u, y, rb, t, s0, s1)                                                              \
    do {                                                                                                      \
        const int32_t rs_ = (rb) / 2;                                                                         \
        int32_t h_;                                                                                           \
        for (; (t) > 0; --(t)) {                                                                              \
            for (h_ = 0; h_ < 2; ++h_) {                                                                      \
                const uint32_t w_ = edgec_mm16_pair(u), r0_ = edgec_mm16_pair(y), r1_ = edgec_mm16_pair((y) + rs_); \
                (s0) = EDGEC_MM16_SMLALD(w_, edgec_mm16_lows(r0_, r1_), (s0));                                \
                (s1) = EDGEC_MM16_SMLALD(w_, edgec_mm16_highs(r0_, r1_), (s1));                               \
                (u) += 2;                                                                                     \
                (y) += 2 * rs_;                                                                               \
            }                                                                                                 \
        }                                                                                                     \
    } while (0)
#endif

/* the requantization's constants (the lowering's rq_*) and the clamp, as one row's loop keeps them: the shift and
 * the full-range flag as bytes (24 B on the entry's frame, not 32) */
typedef struct {
    uint64_t round;
    uint32_t mult;
    int32_t lo;
    int16_t hi;
    uint8_t shift, full;
} edgec_mm16_rq;

EDGEC_INLINE edgec_mm16_rq edgec_mm16_rq_of(const edgec_matmul_fast_s16_params *p)
{
    edgec_mm16_rq q;
    q.round = (uint64_t)(uint32_t)p->rq_round_hi << 32 | (uint32_t)p->rq_round_lo;
    q.mult = (uint32_t)p->rq_mult;
    q.shift = (uint8_t)p->rq_shift;
    q.lo = p->act_min;
    q.hi = (int16_t)p->act_max;
    q.full = (uint8_t)(p->act_min == -32768 && p->act_max == 32767);
    return q;
}

/* the two sums of an output pair, requantized, clamped and stored at o[0] and (if two) o[os] */
EDGEC_INLINE void edgec_mm16_store(int64_t s0, int64_t s1, int two, const edgec_mm16_rq *q, int16_t *o, int32_t os)
{
    int32_t y0 = (int32_t)(uint32_t)(((uint64_t)s0 * q->mult + q->round) >> 32) >> q->shift;
    int32_t y1 = (int32_t)(uint32_t)(((uint64_t)s1 * q->mult + q->round) >> 32) >> q->shift;
    y0 = EDGEC_MM16_SAT(y0);
    y1 = EDGEC_MM16_SAT(y1);
    if (!q->full) {
        y0 = y0 < q->lo ? q->lo : (y0 > q->hi ? q->hi : y0);
        y1 = y1 < q->lo ? q->lo : (y1 > q->hi ? q->hi : y1);
    }
    o[0] = (int16_t)y0;
    if (two) {
        o[os] = (int16_t)y1;
    }
}

/* kk: one row's outputs o[j * os], j < n: x (k values, contiguous) times B's columns b + j * cs (contiguous) */
static EDGEC_HOT void edgec_mm16_row_kk(const int16_t *x, const int16_t *b, int32_t cs, int32_t k, int32_t n,
                                       int16_t *o, int32_t os, const edgec_mm16_rq *q)
{
    int32_t j;
    for (j = 0; j < n; j += 2, o += 2 * os) {
        const int16_t *u = x, *y0 = b + j * cs, *y1 = j + 1 < n ? y0 + cs : y0;
        int64_t s0 = 0, s1 = 0;
        int32_t t = k >> 2;
        if (t > 0) {
            EDGEC_MM16_KK_LOOP(u, y0, y1, t, s0, s1);
        }
        if (k & 3) {    /* the last 1 to 3 k-steps */
            if (k & 2) {
                const uint32_t w = edgec_mm16_pair(u);
                s0 = EDGEC_MM16_SMLALD(w, edgec_mm16_pair(y0), s0);
                s1 = EDGEC_MM16_SMLALD(w, edgec_mm16_pair(y1), s1);
                u += 2;
                y0 += 2;
                y1 += 2;
            }
            if (k & 1) {
                s0 += (int32_t)u[0] * y0[0];
                s1 += (int32_t)u[0] * y1[0];
            }
        }
        edgec_mm16_store(s0, s1, j + 1 < n, q, o, os);
    }
}

/* kn: one row's outputs o[j * os], j < n: x (k values, contiguous) times B (rows of n contiguous values, rs
 * apart): column j's and j + 1's pairs packed from one word of each of two rows */
static EDGEC_HOT void edgec_mm16_row_kn(const int16_t *x, const int16_t *b, int32_t rs, int32_t k, int32_t n,
                                       int16_t *o, int32_t os, const edgec_mm16_rq *q)
{
    const int32_t rb = 2 * rs;      /* bytes from one row of B to the next */
    int32_t j;
    for (j = 0; j + 1 < n; j += 2, o += 2 * os) {
        const int16_t *u = x, *y = b + j;
        int64_t s0 = 0, s1 = 0;
        int32_t t = k >> 2;
        if (t > 0) {
            EDGEC_MM16_KN_LOOP(u, y, rb, t, s0, s1);
        }
        if (k & 3) {    /* the last 1 to 3 k-steps */
            if (k & 2) {
                const uint32_t w = edgec_mm16_pair(u), r0 = edgec_mm16_pair(y), r1 = edgec_mm16_pair(y + rs);
                s0 = EDGEC_MM16_SMLALD(w, edgec_mm16_lows(r0, r1), s0);
                s1 = EDGEC_MM16_SMLALD(w, edgec_mm16_highs(r0, r1), s1);
                u += 2;
                y += 2 * rs;
            }
            if (k & 1) {
                s0 += (int32_t)u[0] * y[0];
                s1 += (int32_t)u[0] * y[1];
            }
        }
        edgec_mm16_store(s0, s1, 1, q, o, os);
    }
    if (n & 1) {    /* the last column: its pairs value by value */
        const int16_t *u = x, *y = b + j;
        int64_t s0 = 0;
        int32_t t;
        for (t = k >> 1; t > 0; --t) {
            s0 = EDGEC_MM16_SMLALD(edgec_mm16_pair(u), edgec_mm16_pair_at(y, rs), s0);
            u += 2;
            y += 2 * rs;
        }
        if (k & 1) {
            s0 += (int32_t)u[0] * y[0];
        }
        edgec_mm16_store(s0, s0, 0, q, o, os);
    }
}

/* any strides: one row's outputs o[j * os], j < n: x (k values, cx apart) times B ([k][n] through rs, cs) */
static EDGEC_HOT void edgec_mm16_row_any(const int16_t *x, int32_t cx, const int16_t *b, int32_t rs, int32_t cs,
                                        int32_t k, int32_t n, int16_t *o, int32_t os, const edgec_mm16_rq *q)
{
    int32_t j;
    for (j = 0; j < n; j += 2, o += 2 * os) {
        const int16_t *u = x, *y0 = b + j * cs, *y1 = j + 1 < n ? y0 + cs : y0;
        int64_t s0 = 0, s1 = 0;
        int32_t t;
        for (t = k >> 1; t > 0; --t) {
            const uint32_t w = edgec_mm16_pair_at(u, cx);
            s0 = EDGEC_MM16_SMLALD(w, edgec_mm16_pair_at(y0, rs), s0);
            s1 = EDGEC_MM16_SMLALD(w, edgec_mm16_pair_at(y1, rs), s1);
            u += 2 * cx;
            y0 += 2 * rs;
            y1 += 2 * rs;
        }
        if (k & 1) {
            s0 += (int32_t)u[0] * y0[0];
            s1 += (int32_t)u[0] * y1[0];
        }
        edgec_mm16_store(s0, s1, j + 1 < n, q, o, os);
    }
}

/* every row of every batch through the row loop of `mode` (a constant in each entry below: the others drop out) */
EDGEC_INLINE void edgec_mm16_rows(const edgec_matmul_fast_s16_params *p, const int16_t *a, const int16_t *b,
                                  int16_t *output, int mode)
{
    const edgec_mm16_rq q = edgec_mm16_rq_of(p);
    int32_t bt, i;
    for (bt = 0; bt < p->batch; ++bt) {
        for (i = 0; i < p->m; ++i) {
            const int16_t *x = a + bt * p->a_batch_stride + i * p->a_row_stride, *y = b + bt * p->b_batch_stride;
            int16_t *o = output + bt * p->out_batch_stride + i * p->out_row_stride;
            if (mode == EDGEC_MM16_KK) {
                edgec_mm16_row_kk(x, y, p->b_col_stride, p->k, p->n, o, p->out_col_stride, &q);
            } else if (mode == EDGEC_MM16_KN) {
                edgec_mm16_row_kn(x, y, p->b_row_stride, p->k, p->n, o, p->out_col_stride, &q);
            } else {
                edgec_mm16_row_any(x, p->a_col_stride, y, p->b_row_stride, p->b_col_stride, p->k, p->n, o,
                                   p->out_col_stride, &q);
            }
        }
    }
}

void edgec_matmul_fast_kk_s16(const edgec_matmul_fast_s16_params *p, const int16_t *a, const int16_t *b,
                              int16_t *output)
{
    edgec_mm16_rows(p, a, b, output, EDGEC_MM16_KK);
}

void edgec_matmul_fast_kn_s16(const edgec_matmul_fast_s16_params *p, const int16_t *a, const int16_t *b,
                              int16_t *output)
{
    edgec_mm16_rows(p, a, b, output, EDGEC_MM16_KN);
}

void edgec_matmul_fast_any_s16(const edgec_matmul_fast_s16_params *p, const int16_t *a, const int16_t *b,
                               int16_t *output)
{
    edgec_mm16_rows(p, a, b, output, EDGEC_MM16_ANY);
}

void edgec_matmul_fast_s16(const edgec_matmul_fast_s16_params *p, const int16_t *a, const int16_t *b,
                           int16_t *output)
{
    if (p->mode == EDGEC_MM16_KK) {
        edgec_matmul_fast_kk_s16(p, a, b, output);
    } else if (p->mode == EDGEC_MM16_KN) {
        edgec_matmul_fast_kn_s16(p, a, b, output);
    } else {
        edgec_matmul_fast_any_s16(p, a, b, output);
    }
}
