/* edgec fast matrix product of two activations (attention's scores and context), declared in edgec_nn.h,
 * machinery in edgec_fast_support.h. Per batch: B is widened to int16 minus its zero point and laid out
 * transposed ([n][k], k even) in scratch, so every dot product reads two contiguous int16 rows; A's rows are
 * widened the same way two at a time; a 2x2 block of outputs takes 4 SMLADs per 2 k-steps. Any strides
 * (element units) on A, B and the output, so a Transpose before or after the product is a view, not a copy. */
#include <string.h>

#include "edgec_fast_support.h"

#ifdef EDGEC_DSP
#define EDGEC_MM_DOT(acc, x, y) ((acc) = E_SMLAD((x), (y), (acc)))
#else
#define EDGEC_MM_LO(w) ((int32_t)(int16_t)(uint16_t)((w) & 0xffffu))
#define EDGEC_MM_HI(w) ((int32_t)(int16_t)(uint16_t)((w) >> 16))
#define EDGEC_MM_DOT(acc, x, y) ((acc) += EDGEC_MM_LO(x) * EDGEC_MM_LO(y) + EDGEC_MM_HI(x) * EDGEC_MM_HI(y))
#endif

/* `len` int8 values at stride `stride`, minus zp, as int16 (padded with one 0 to an even count), each full
 * group of 4 in the order SXTB16 makes (x0, x2, x1, x3): both operands of a dot product are widened the same
 * way, so the order does not change the sum. A contiguous run (stride 1) takes 4 values per word on the DSP
 * path (SXTAB16 adds -zp to both lanes). */
static void edgec_mm_widen(const int8_t *src, int32_t stride, int32_t len, int32_t zp, int16_t *dst)
{
    int32_t i = 0;
#ifdef EDGEC_DSP
    if (stride == 1) {
        const uint32_t nzp = (uint32_t)(uint16_t)(int16_t)-zp * 0x00010001u;
        edgec_w32 *d = (edgec_w32 *)(void *)dst;
        for (; i + 4 <= len; i += 4, src += 4, d += 2) {
            uint32_t v;
            memcpy(&v, src, 4);
            d[0] = E_SXTAB16(nzp, v);
            d[1] = E_SXTAB16_ROR8(nzp, v);
        }
    }
#endif
    for (; i + 4 <= len; i += 4, src += 4 * stride) {
        dst[i] = (int16_t)((int32_t)src[0] - zp);
        dst[i + 1] = (int16_t)((int32_t)src[2 * stride] - zp);
        dst[i + 2] = (int16_t)((int32_t)src[stride] - zp);
        dst[i + 3] = (int16_t)((int32_t)src[3 * stride] - zp);
    }
    for (; i < len; ++i, src += stride) dst[i] = (int16_t)((int32_t)*src - zp);
    if (len & 1) dst[len] = 0;
}

/* Rows r0 (and r1 if two) of A (int16 words, `words` each) times all n columns of bt. */
static EDGEC_HOT void edgec_mm_rows(const edgec_w32 *r0, const edgec_w32 *r1, int32_t words, const edgec_w32 *bt,
                                   int32_t n, const edgec_matmul_fast_params *p, int8_t *o0, int8_t *o1)
{
    const edgec_rq rq = {0, p->rq_mult, p->rq_khi, p->rq_neg, p->rq_shift}, *q = &rq;
    const int32_t lo = p->act_min, hi = p->act_max, os = p->out_col_stride;
    const int full = lo == -128 && hi == 127;
    int32_t j, t;
    for (j = 0; j + 1 < n; j += 2, bt += 2 * words, o0 += 2 * os, o1 += 2 * os) {
        const edgec_w32 *c0 = bt, *c1 = bt + words;
        int32_t a00 = 0, a01 = 0, a10 = 0, a11 = 0;
        for (t = 0; t < words; ++t) {
            const uint32_t x0 = r0[t], x1 = r1[t], y0 = c0[t], y1 = c1[t];
            EDGEC_MM_DOT(a00, x0, y0);
            EDGEC_MM_DOT(a01, x0, y1);
            EDGEC_MM_DOT(a10, x1, y0);
            EDGEC_MM_DOT(a11, x1, y1);
        }
        o0[0] = edgec_out(a00, q, full, lo, hi);
        o0[os] = edgec_out(a01, q, full, lo, hi);
        if (r1 != r0) {
            o1[0] = edgec_out(a10, q, full, lo, hi);
            o1[os] = edgec_out(a11, q, full, lo, hi);
        }
    }
    if (j < n) {
        int32_t a0 = 0, a1 = 0;
        for (t = 0; t < words; ++t) {
            const uint32_t y = bt[t];
            EDGEC_MM_DOT(a0, r0[t], y);
            EDGEC_MM_DOT(a1, r1[t], y);
        }
        o0[0] = edgec_out(a0, q, full, lo, hi);
        if (r1 != r0) o1[0] = edgec_out(a1, q, full, lo, hi);
    }
}

void edgec_matmul_fast_s8(const edgec_matmul_fast_params *p, const int8_t *a, const int8_t *b, int8_t *scratch,
                          int8_t *output)
{
    const int32_t m = p->m, k = p->k, n = p->n, k2 = (k + 1) & ~1, words = k2 >> 1;
    int16_t *bt = (int16_t *)(void *)scratch, *ar = bt + n * k2;
    int32_t bi, i, j;
    for (bi = 0; bi < p->batch; ++bi) {
        const int8_t *ab = a + bi * p->a_batch_stride, *bb = b + bi * p->b_batch_stride;
        int8_t *ob = output + bi * p->out_batch_stride;
        if (bi == 0 || p->b_batch_stride != 0) {
            for (j = 0; j < n; ++j) edgec_mm_widen(bb + j * p->b_col_stride, p->b_row_stride, k, p->b_zp, bt + j * k2);
        }
        for (i = 0; i < m; i += 2) {
            const int two = i + 1 < m;
            edgec_mm_widen(ab + i * p->a_row_stride, p->a_col_stride, k, p->a_zp, ar);
            if (two) edgec_mm_widen(ab + (i + 1) * p->a_row_stride, p->a_col_stride, k, p->a_zp, ar + k2);
            edgec_mm_rows((const edgec_w32 *)(const void *)ar, (const edgec_w32 *)(const void *)(two ? ar + k2 : ar),
                          words, (const edgec_w32 *)(const void *)bt, n, p, ob + i * p->out_row_stride,
                          ob + (two ? i + 1 : i) * p->out_row_stride);
        }
    }
}
