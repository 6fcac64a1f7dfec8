/* edgec fast matrix product of two activations (attention's scores and context), declared in edgec_nn.h,
 * machinery in edgec_fast_support.h. Per batch: B is widened to int16 minus its zero point once and laid out
 * transposed, two columns interleaved word by word ([n/2][k/2][2] words: one LDRD reads word t of both
 * columns); A is widened two rows at a time the same way. A 2x2 block of outputs takes two LDRDs and 4 SMLADs
 * per 2 k-steps with nothing but its 4 accumulators and 3 pointers live; a row pair's accumulators go to
 * scratch and one tight pass requantizes them. k is padded with zeros to a multiple of 4 (an even number of
 * words: the inner loop takes two at a time), n to even (a zero column). Any strides (element units) on A, B
 * and the output, so a Transpose before or after the product is a view, not a copy. */
#include <string.h>

#include "edgec_fast_support.h"

#ifdef EDGEC_DSP
#define EDGEC_MM_DOT(acc, x, y) ((acc) = E_SMLAD((x), (y), (acc)))
#else
#define EDGEC_MM_LO(w) ((int32_t)(int16_t)(uint16_t)((w) & 0xffffu))
#define EDGEC_MM_HI(w) ((int32_t)(int16_t)(uint16_t)((w) >> 16))
#define EDGEC_MM_DOT(acc, x, y) ((acc) += EDGEC_MM_LO(x) * EDGEC_MM_LO(y) + EDGEC_MM_HI(x) * EDGEC_MM_HI(y))
#endif

/* Two int8 values (minus zp) as one word of two int16 lanes, lo = first: pure integer arithmetic, so the
 * portable path reads the lanes back the same way on any byte order. */
EDGEC_INLINE uint32_t edgec_mm_pair(int32_t x, int32_t y, int32_t zp)
{
    return (uint32_t)(uint16_t)(int16_t)(x - zp) | ((uint32_t)(uint16_t)(int16_t)(y - zp) << 16);
}

/* `count` vectors of `len` int8 values (vector v at src + v * vs, its values `es` apart), minus zp, as
 * `words` words of int16 pairs each (zeros past len), vectors interleaved in pairs: word w of vector v at
 * dst[(v / 2) * 2 * words + 2 * w + v % 2]. Each full group of 4 values becomes (x0, x2), (x1, x3), the order
 * SXTB16 makes, a last 2 or 3 (x0, x1), (x2, 0), a last 1 (x0, 0); both operands of a dot product are widened
 * by this function with the same len, so the pairing does not change the sum. On the DSP path SXTAB16 adds -zp
 * to both lanes: a contiguous vector takes 4 values per load, a strided one 2 per SXTAB16. */
static void edgec_mm_widen(const int8_t *src, int32_t vs, int32_t es, int32_t count, int32_t len, int32_t zp,
                           edgec_w32 *dst, int32_t words)
{
    const int32_t groups = len >> 2, rest = len & 3, pad = words - 2 * groups - ((rest + 1) >> 1);
#ifdef EDGEC_DSP
    const uint32_t nzp = (uint32_t)(uint16_t)(int16_t)-zp * 0x00010001u;
#endif
    int32_t v, g;
    for (v = 0; v < count; ++v) {
        const int8_t *s = src + v * vs;
        edgec_w32 *d = dst + (v >> 1) * 2 * words + (v & 1);
#ifdef EDGEC_DSP
        if (es == 1) {
            for (g = 0; g < groups; ++g, s += 4, d += 4) {
                uint32_t x;
                memcpy(&x, s, 4);
                d[0] = E_SXTAB16(nzp, x);
                d[2] = E_SXTAB16_ROR8(nzp, x);
            }
        } else {
            for (g = 0; g < groups; ++g, s += 4 * es, d += 4) {
                d[0] = E_SXTAB16(nzp, (uint32_t)(uint8_t)s[0] | (uint32_t)(uint8_t)s[2 * es] << 16);
                d[2] = E_SXTAB16(nzp, (uint32_t)(uint8_t)s[es] | (uint32_t)(uint8_t)s[3 * es] << 16);
            }
        }
#else
        for (g = 0; g < groups; ++g, s += 4 * es, d += 4) {
            d[0] = edgec_mm_pair(s[0], s[2 * es], zp);
            d[2] = edgec_mm_pair(s[es], s[3 * es], zp);
        }
#endif
        if (rest) {
            d[0] = edgec_mm_pair(s[0], rest > 1 ? s[es] : zp, zp);
            d += 2;
            if (rest == 3) {
                d[0] = edgec_mm_pair(s[2 * es], zp, zp);
                d += 2;
            }
        }
        for (g = 0; g < pad; ++g, d += 2) d[0] = 0;
    }
}

/* Rows pair `ar` ([words][2]: word t of row 0, of row 1) times the column pairs of `bt` ([npairs][words][2]);
 * the accumulators of row 0 to acc0[0..2*npairs), of row 1 to acc1. words is even. */
static EDGEC_HOT void edgec_mm_dots(const edgec_w32 *ar, const edgec_w32 *bt, int32_t words, int32_t npairs,
                                    int32_t *acc0, int32_t *acc1)
{
    const edgec_w32 *const end = ar + 2 * words;
    int32_t jp;
    for (jp = 0; jp < npairs; ++jp, acc0 += 2, acc1 += 2) {
        const edgec_w32 *x = ar;
        int32_t a00 = 0, a01 = 0, a10 = 0, a11 = 0;
        do {
            uint32_t x0, x1, y0, y1;
            E_LDRD(x0, x1, x, 0);
            E_LDRD(y0, y1, bt, 0);
            EDGEC_MM_DOT(a00, x0, y0);
            EDGEC_MM_DOT(a01, x0, y1);
            EDGEC_MM_DOT(a10, x1, y0);
            EDGEC_MM_DOT(a11, x1, y1);
            E_LDRD(x0, x1, x, 2);
            E_LDRD(y0, y1, bt, 2);
            EDGEC_MM_DOT(a00, x0, y0);
            EDGEC_MM_DOT(a01, x0, y1);
            EDGEC_MM_DOT(a10, x1, y0);
            EDGEC_MM_DOT(a11, x1, y1);
            x += 4;
            bt += 4;
        } while (x != end);
        acc0[0] = a00;
        acc0[1] = a01;
        acc1[0] = a10;
        acc1[1] = a11;
    }
}

/* n accumulators requantized to the output, `os` elements apart. */
static EDGEC_HOT void edgec_mm_requantize(const int32_t *acc, int32_t n, const edgec_matmul_fast_params *p,
                                          int8_t *out)
{
    const int32_t mult = p->rq_mult, khi = p->rq_khi, neg = p->rq_neg, shift = p->rq_shift, os = p->out_col_stride;
    const int32_t lo = p->act_min, hi = p->act_max;
    const int32_t *const end = acc + n;
    if (lo == -128 && hi == 127) {
        for (; acc != end; ++acc, out += os) *out = (int8_t)EDGEC_SAT8(edgec_rq_value(*acc, mult, khi, neg, shift));
    } else {
        for (; acc != end; ++acc, out += os) {
            const int32_t v = edgec_rq_value(*acc, mult, khi, neg, shift);
            *out = (int8_t)(v < lo ? lo : (v > hi ? hi : v));
        }
    }
}

void edgec_matmul_fast_s8(const edgec_matmul_fast_params *p, const int8_t *a, const int8_t *b, int8_t *scratch,
                          int8_t *output)
{
    const int32_t m = p->m, k = p->k, n = p->n, words = ((k + 3) >> 2) << 1, npairs = (n + 1) >> 1;
    edgec_w32 *bt = (edgec_w32 *)(void *)scratch, *ar = bt + 2 * npairs * words;
    int32_t *acc = (int32_t *)(void *)(ar + 2 * words);
    int32_t bi, i;
    for (bi = 0; bi < p->batch; ++bi) {
        const int8_t *ab = a + bi * p->a_batch_stride, *bb = b + bi * p->b_batch_stride;
        int8_t *ob = output + bi * p->out_batch_stride;
        if (bi == 0 || p->b_batch_stride != 0) {
            edgec_mm_widen(bb, p->b_col_stride, p->b_row_stride, n, k, p->b_zp, bt, words);
            if (n & 1) edgec_mm_widen(bb, 0, 1, 1, 0, 0, bt + (n >> 1) * 2 * words + 1, words);   /* a zero column */
        }
        for (i = 0; i < m; i += 2) {
            const int two = i + 1 < m;
            /* two rows (the last one twice when m is odd) */
            edgec_mm_widen(ab + i * p->a_row_stride, two ? p->a_row_stride : 0, p->a_col_stride, 2, k, p->a_zp, ar,
                           words);
            edgec_mm_dots(ar, bt, words, npairs, acc, acc + 2 * npairs);
            edgec_mm_requantize(acc, n, p, ob + i * p->out_row_stride);
            if (two) edgec_mm_requantize(acc + 2 * npairs, n, p, ob + (i + 1) * p->out_row_stride);
        }
    }
}
