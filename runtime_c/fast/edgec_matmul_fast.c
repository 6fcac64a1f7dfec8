/* edgec fast matrix product of two activations (attention's scores and context), declared in edgec_nn.h,
 * machinery in edgec_fast_support.h. Per batch, B is widened once to int16 minus its zero point and laid out
 * transposed, k in groups of 4 (zero-padded), two columns interleaved: for column pair c and group g the
 * words (b0, b2) of column 2c, of column 2c+1, then (b1, b3) of each ([n/2][k/4][4] words), so one LDRD reads
 * the same word of both columns; the column sums of the widened B go to scratch too. A is read in place, 4
 * int8 values a load, split by SXTB16 into (a0, a2) and (a1, a3) without its zero point, which comes out of
 * the inner loop: sum (a - za)(b - zb) = sum a (b - zb) - za * colsum, the accumulators start at -za * colsum.
 * A 2x2 block of outputs takes 2 loads of A, 4 SXTB16, 2 LDRDs of B and 8 SMLADs per 4 k-steps; a row pair's
 * sums go to scratch and one tight pass per row requantizes them. A whose rows are not contiguous runs of a
 * multiple of 4 values is copied two rows at a time into scratch first. Any strides (element units) on A, B
 * and the output, so a Transpose before or after the product is a view, not a copy. */
#include <string.h>

#include "edgec_fast_support.h"

#ifdef EDGEC_DSP
#define EDGEC_MM_DOT(acc, x, y) ((acc) = E_SMLAD((x), (y), (acc)))
#define EDGEC_MM_EVEN(u) E_SXTB16(u)
#define EDGEC_MM_ODD(u) E_SXTB16_ROR8(u)
#define EDGEC_MM_LOAD4(u, x) memcpy(&(u), (x), 4) /* Arm: little-endian, as every DSP-path kernel assumes */
#else
#define EDGEC_MM_LO(w) ((int32_t)(int16_t)(uint16_t)((w) & 0xffffu))
#define EDGEC_MM_HI(w) ((int32_t)(int16_t)(uint16_t)((w) >> 16))
#define EDGEC_MM_DOT(acc, x, y) ((acc) += EDGEC_MM_LO(x) * EDGEC_MM_LO(y) + EDGEC_MM_HI(x) * EDGEC_MM_HI(y))
#define EDGEC_MM_BYTE(u, s) ((uint32_t)(uint16_t)(int16_t)(int8_t)(uint8_t)(((u) >> (s)) & 0xffu))
#define EDGEC_MM_EVEN(u) (EDGEC_MM_BYTE(u, 0) | EDGEC_MM_BYTE(u, 16) << 16)
#define EDGEC_MM_ODD(u) (EDGEC_MM_BYTE(u, 8) | EDGEC_MM_BYTE(u, 24) << 16)
/* value by value: the same word on any byte order (a little-endian compiler makes it one load) */
#define EDGEC_MM_LOAD4(u, x)                                                                                  \
    ((u) = (uint32_t)(uint8_t)(x)[0] | (uint32_t)(uint8_t)(x)[1] << 8 | (uint32_t)(uint8_t)(x)[2] << 16 |     \
           (uint32_t)(uint8_t)(x)[3] << 24)
#endif

/* Two int8 values (minus zp) as one word of two int16 lanes, lo = first: pure integer arithmetic, so the
 * portable path reads the lanes back the same way on any byte order. */
EDGEC_INLINE uint32_t edgec_mm_pair(int32_t x, int32_t y, int32_t zp)
{
    return (uint32_t)(uint16_t)(int16_t)(x - zp) | ((uint32_t)(uint16_t)(int16_t)(y - zp) << 16);
}

/* One column of B (k values `rs` apart) minus zp into d (its words 4 apart: (b0, b2) at d[0], (b1, b3) at d[2]
 * per group of 4, zeros past k); returns the column's sum minus zp. */
EDGEC_INLINE int32_t edgec_mm_widen_column(const int8_t *s, int32_t rs, int32_t k, int32_t zp, edgec_w32 *d)
{
    const int32_t full = k >> 2, rest = k & 3;
    int32_t g, sum = 0;
#ifdef EDGEC_DSP
    const uint32_t nzp = (uint32_t)(uint16_t)(int16_t)-zp * 0x00010001u;
    if (rs == 1) {
        for (g = 0; g < full; ++g, s += 4, d += 4) {
            uint32_t x, e, o;
            memcpy(&x, s, 4);
            d[0] = e = E_SXTAB16(nzp, x);
            d[2] = o = E_SXTAB16_ROR8(nzp, x);
            sum = E_SMLAD(e, 0x00010001u, sum);
            sum = E_SMLAD(o, 0x00010001u, sum);
        }
    } else {
        for (g = 0; g < full; ++g, s += 4 * rs, d += 4) {
            const uint32_t e = E_SXTAB16(nzp, (uint32_t)(uint8_t)s[0] | (uint32_t)(uint8_t)s[2 * rs] << 16);
            const uint32_t o = E_SXTAB16(nzp, (uint32_t)(uint8_t)s[rs] | (uint32_t)(uint8_t)s[3 * rs] << 16);
            d[0] = e;
            d[2] = o;
            sum = E_SMLAD(e, 0x00010001u, sum);
            sum = E_SMLAD(o, 0x00010001u, sum);
        }
    }
#else
    for (g = 0; g < full; ++g, s += 4 * rs, d += 4) {
        d[0] = edgec_mm_pair(s[0], s[2 * rs], zp);
        d[2] = edgec_mm_pair(s[rs], s[3 * rs], zp);
        sum += s[0] + s[rs] + s[2 * rs] + s[3 * rs] - 4 * zp;
    }
#endif
    if (rest) {
        const int32_t v0 = s[0], v1 = rest > 1 ? s[rs] : zp, v2 = rest > 2 ? s[2 * rs] : zp;
        d[0] = edgec_mm_pair(v0, v2, zp);
        d[2] = edgec_mm_pair(v1, zp, zp);
        sum += v0 + v1 + v2 - 3 * zp;
    }
    return sum;
}

/* B ([k][n] through its strides) minus zp into bt (layout above; a last odd column zeroed) and -za * (the sum
 * of each widened column) into bias. */
static void edgec_mm_widen_b(const int8_t *b, int32_t rs, int32_t cs, int32_t k, int32_t n, int32_t zp, int32_t za,
                             int32_t groups, edgec_w32 *bt, int32_t *bias)
{
    int32_t j, g;
    for (j = 0; j < n; ++j) {
        bias[j] = -za * edgec_mm_widen_column(b + j * cs, rs, k, zp, bt + (j >> 1) * 4 * groups + (j & 1));
    }
    if (n & 1) {
        edgec_w32 *d = bt + (n >> 1) * 4 * groups + 1;
        for (g = 0; g < groups; ++g, d += 4) d[0] = d[2] = 0;
        bias[n] = 0;
    }
}

/* Rows r0 and r1 of A (contiguous, 4 * groups values, d = r1 - r0) times every column pair of bt: each pair's
 * 2x2 block to acc as row 0's two sums, then row 1's. */
static EDGEC_HOT void edgec_mm_dots(const int8_t *r0, int32_t d, int32_t groups, const edgec_w32 *bt,
                                    const int32_t *bias, int32_t npairs, int32_t *acc)
{
    const int8_t *const end = r0 + 4 * groups;
    int32_t *const stop = acc + 4 * npairs;
    for (; acc != stop; acc += 4, bias += 2) {
        const int8_t *x = r0;
        int32_t a00 = bias[0], a01 = bias[1], a10 = a00, a11 = a01;
        do {
            uint32_t u0, u1, y0, y1;
            EDGEC_MM_LOAD4(u0, x);
            EDGEC_MM_LOAD4(u1, x + d);
            E_LDRD(y0, y1, bt, 0);
            EDGEC_MM_DOT(a00, EDGEC_MM_EVEN(u0), y0);
            EDGEC_MM_DOT(a01, EDGEC_MM_EVEN(u0), y1);
            EDGEC_MM_DOT(a10, EDGEC_MM_EVEN(u1), y0);
            EDGEC_MM_DOT(a11, EDGEC_MM_EVEN(u1), y1);
            E_LDRD(y0, y1, bt, 2);
            EDGEC_MM_DOT(a00, EDGEC_MM_ODD(u0), y0);
            EDGEC_MM_DOT(a01, EDGEC_MM_ODD(u0), y1);
            EDGEC_MM_DOT(a10, EDGEC_MM_ODD(u1), y0);
            EDGEC_MM_DOT(a11, EDGEC_MM_ODD(u1), y1);
            x += 4;
            bt += 4;
        } while (x != end);
        acc[0] = a00;
        acc[1] = a01;
        acc[2] = a10;
        acc[3] = a11;
    }
}

/* Two output rows of n values (o0, o1; `os` elements apart) from a row pair's sums (a column pair's 2x2 block
 * 4 apart: row 0's two, row 1's two). */
EDGEC_INLINE void edgec_mm_requantize(const int32_t *acc, int32_t n, const edgec_matmul_fast_params *p, int8_t *o0,
                                      int8_t *o1)
{
    const int32_t mult = p->rq_mult, khi = p->rq_khi, neg = p->rq_neg, shift = p->rq_shift, os = p->out_col_stride;
    const int32_t lo = p->act_min, hi = p->act_max;
    const int32_t *const end = acc + 4 * (n >> 1);
    if (lo == -128 && hi == 127) {
        for (; acc != end; acc += 4, o0 += 2 * os, o1 += 2 * os) {
            const int32_t v0 = edgec_rq_value(acc[0], mult, khi, neg, shift);
            const int32_t v1 = edgec_rq_value(acc[1], mult, khi, neg, shift);
            const int32_t v2 = edgec_rq_value(acc[2], mult, khi, neg, shift);
            const int32_t v3 = edgec_rq_value(acc[3], mult, khi, neg, shift);
            o0[0] = (int8_t)EDGEC_SAT8(v0);
            o0[os] = (int8_t)EDGEC_SAT8(v1);
            o1[0] = (int8_t)EDGEC_SAT8(v2);
            o1[os] = (int8_t)EDGEC_SAT8(v3);
        }
    } else {
        for (; acc != end; acc += 4, o0 += 2 * os, o1 += 2 * os) {
            const int32_t v0 = edgec_rq_value(acc[0], mult, khi, neg, shift);
            const int32_t v1 = edgec_rq_value(acc[1], mult, khi, neg, shift);
            const int32_t v2 = edgec_rq_value(acc[2], mult, khi, neg, shift);
            const int32_t v3 = edgec_rq_value(acc[3], mult, khi, neg, shift);
            o0[0] = (int8_t)(v0 < lo ? lo : (v0 > hi ? hi : v0));
            o0[os] = (int8_t)(v1 < lo ? lo : (v1 > hi ? hi : v1));
            o1[0] = (int8_t)(v2 < lo ? lo : (v2 > hi ? hi : v2));
            o1[os] = (int8_t)(v3 < lo ? lo : (v3 > hi ? hi : v3));
        }
    }
    if (n & 1) {
        const int32_t v0 = edgec_rq_value(acc[0], mult, khi, neg, shift);
        const int32_t v2 = edgec_rq_value(acc[2], mult, khi, neg, shift);
        o0[0] = (int8_t)(v0 < lo ? lo : (v0 > hi ? hi : v0));
        o1[0] = (int8_t)(v2 < lo ? lo : (v2 > hi ? hi : v2));
    }
}

void edgec_matmul_fast_s8(const edgec_matmul_fast_params *p, const int8_t *a, const int8_t *b, int8_t *scratch,
                          int8_t *output)
{
    const int32_t m = p->m, k = p->k, n = p->n, groups = (k + 3) >> 2, npairs = (n + 1) >> 1;
    const int32_t rs = p->a_row_stride, cs = p->a_col_stride, in_place = cs == 1 && (k & 3) == 0;
    edgec_w32 *bt = (edgec_w32 *)(void *)scratch;
    int32_t *bias = (int32_t *)(void *)(bt + 4 * groups * npairs), *acc = bias + 2 * npairs;
    int8_t *rows = (int8_t *)(void *)(acc + 4 * npairs);
    int32_t bi, i, t;
    for (bi = 0; bi < p->batch; ++bi) {
        const int8_t *ab = a + bi * p->a_batch_stride;
        int8_t *ob = output + bi * p->out_batch_stride;
        if (bi == 0 || p->b_batch_stride != 0) {
            edgec_mm_widen_b(b + bi * p->b_batch_stride, p->b_row_stride, p->b_col_stride, k, n, p->b_zp, p->a_zp,
                             groups, bt, bias);
        }
        for (i = 0; i < m; i += 2) {
            const int two = i + 1 < m;
            const int8_t *r0 = ab + i * rs;
            int32_t d = two ? rs : 0;
            if (!in_place) {    /* the two rows as contiguous runs (the padding meets B's zeros) */
                for (t = 0; t < 4 * groups; ++t) {
                    rows[t] = t < k ? r0[t * cs] : (int8_t)0;
                    rows[4 * groups + t] = t < k ? r0[d + t * cs] : (int8_t)0;
                }
                r0 = rows;
                d = 4 * groups;
            }
            edgec_mm_dots(r0, d, groups, bt, bias, npairs, acc);
            /* an odd m's last row: row 1 is row 0 again, written twice */
            edgec_mm_requantize(acc, n, p, ob + i * p->out_row_stride, ob + (two ? i + 1 : i) * p->out_row_stride);
        }
    }
}
