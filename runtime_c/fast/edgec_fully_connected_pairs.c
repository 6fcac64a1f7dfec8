/* edgec speed variant of the fully connected layer for weights read from flash (declared in edgec_nn.h; chosen
 * where the weights' flash bytes are weighed: edgec/ops/dense_pairs.py): int8 weights, 1 byte a weight, at fewer
 * instructions a MAC than the packed kernel's SXTB16 pairs.
 *
 * Rows go in pairs (e, o). A word holds, for two inputs i, j, the bytes [w_e[i] + 128, w_o[i], w_e[j] + 128,
 * w_o[j]] (low first), read against the widened input word X = (x_i, x_j) (edgec_widen's (x0, x2) or (x1, x3)):
 * - SMLAD(word, X) adds (256 w_o[i] + w_e[i] + 128) x_i + (256 w_o[j] + w_e[j] + 128) x_j: each int16 half is
 *   256 times the odd row's weight plus the even row's offset weight (0..255);
 * - SMLAD(UXTB16(word), X) adds (w_e[i] + 128) x_i + (w_e[j] + 128) x_j.
 * Over the row, the second sum is lo = dot_e + 128 S (S: the sum of the inputs, once a call) and the first minus
 * it is 256 dot_o, modulo 2^32: exact where |dot_o| < 2^23, which the lowering checks on the weights (128 times
 * the odd row's sum of |w| under 2^23). Three instructions for 4 MACs (SXTB16 pairs: four).
 *
 * Layout (4 rows a block, rows padded to 4 with copies of the last; k4 inputs, zero weights past in_features):
 * [block][group of 4 inputs][pair 0, 1][word (x0, x2), word (x1, x3)]. */
#include "edgec_fast_support.h"

#ifdef EDGEC_DSP_NATIVE
#define EDGEC_FCP_MAC(w, x, acc) ((uint32_t)__smlad((int32_t)(w), (int32_t)(x), (int32_t)(acc)))
#define EDGEC_FCP_UXTB16(w) ((uint32_t)__uxtb16((w)))
#else /* the same integers, modulo 2^32 (no signed overflow) */
EDGEC_INLINE int32_t edgec_fcp_h(uint32_t v, int hi) { return (int32_t)(int16_t)(uint16_t)(hi ? v >> 16 : v); }
EDGEC_INLINE uint32_t EDGEC_FCP_MAC(uint32_t w, uint32_t x, uint32_t acc)
{
    return acc + (uint32_t)(edgec_fcp_h(w, 0) * edgec_fcp_h(x, 0)) + (uint32_t)(edgec_fcp_h(w, 1) * edgec_fcp_h(x, 1));
}
#define EDGEC_FCP_UXTB16(w) ((w) & 0x00ff00ffu)
#endif

/* The 6 words of group `g` (x words 2g, 2g + 1; weight words 4g .. 4g + 3) as single LDRs in one run, which the
 * Cortex-M4 pipelines (2 cycles, then 1 a word: 7 cycles; three LDRDs take 9), in one asm statement so that the
 * compiler's scheduler does not split the run. */
#ifdef EDGEC_DSP_NATIVE
#define EDGEC_FCP_LOAD(g)                                                                          \
    __asm__("ldr %0, [%6, %8]\n\tldr %1, [%6, %9]\n\tldr %2, [%7, %10]\n\t"                         \
            "ldr %3, [%7, %11]\n\tldr %4, [%7, %12]\n\tldr %5, [%7, %13]"                          \
            : "=&r"(xl), "=&r"(xh), "=&r"(w0), "=&r"(w1), "=&r"(w2), "=&r"(w3)                      \
            : "r"(x), "r"(w), "i"(8 * (g)), "i"(8 * (g) + 4), "i"(16 * (g)), "i"(16 * (g) + 4),       \
              "i"(16 * (g) + 8), "i"(16 * (g) + 12), "m"(*(const edgec_d64 *)(const void *)(x + 2 * (g))), \
              "m"(*(const uint32_t(*)[4])(const void *)(w + 4 * (g))))
#else
#define EDGEC_FCP_LOAD(g)                                                                          \
    (xl = x[2 * (g)], xh = x[2 * (g) + 1], w0 = w[4 * (g)], w1 = w[4 * (g) + 1], w2 = w[4 * (g) + 2],       \
     w3 = w[4 * (g) + 3])
#endif
/* one pair of rows over a group: its words wa (against xl), wb (against xh) */
#define EDGEC_FCP_PAIR(f, l, wa, wb)                                                               \
    do {                                                                                           \
        f = EDGEC_FCP_MAC(wa, xl, f);                                                              \
        l = EDGEC_FCP_MAC(EDGEC_FCP_UXTB16(wa), xl, l);                                            \
        f = EDGEC_FCP_MAC(wb, xh, f);                                                              \
        l = EDGEC_FCP_MAC(EDGEC_FCP_UXTB16(wb), xh, l);                                            \
    } while (0)
/* group `g`: x words 2g, 2g + 1; weight words 4g .. 4g + 3 (pair 0, then pair 1) */
#define EDGEC_FCP_GROUP(g)                                                                         \
    do {                                                                                           \
        uint32_t xl, xh, w0, w1, w2, w3;                                                           \
        EDGEC_FCP_LOAD(g);                                                                         \
        EDGEC_FCP_PAIR(f0, l0, w0, w1);                                                            \
        EDGEC_FCP_PAIR(f1, l1, w2, w3);                                                            \
    } while (0)

static EDGEC_HOT void edgec_fcp_blocks(const edgec_w32 *xw, int32_t groups, int32_t n_out, const edgec_w32 *w,
                                       const edgec_rq *rq, int8_t *out, int32_t s128, int32_t lo, int32_t hi)
{
    const int full = lo == -128 && hi == 127;
    int32_t r;
    for (r = 0; r < n_out; r += 4, rq += 4) {
        const edgec_w32 *x = xw;
        uint32_t f0 = 0, l0 = 0, f1 = 0, l1 = 0;
        int32_t g;
        for (g = groups >> 2; g > 0; --g, x += 8, w += 16) {
            EDGEC_FCP_GROUP(0);
            EDGEC_BARRIER();
            EDGEC_FCP_GROUP(1);
            EDGEC_BARRIER();
            EDGEC_FCP_GROUP(2);
            EDGEC_BARRIER();
            EDGEC_FCP_GROUP(3);
        }
        for (g = groups & 3; g > 0; --g, x += 2, w += 4) EDGEC_FCP_GROUP(0);
        /* each row's dot product + its bias, requantized; the padding rows of a partial last block not stored */
        out[r] = edgec_out((int32_t)l0 - s128 + rq[0].bias, rq, full, lo, hi);
        if (r + 1 < n_out) out[r + 1] = edgec_out(((int32_t)(f0 - l0) >> 8) + rq[1].bias, rq + 1, full, lo, hi);
        if (r + 2 < n_out) out[r + 2] = edgec_out((int32_t)l1 - s128 + rq[2].bias, rq + 2, full, lo, hi);
        if (r + 3 < n_out) out[r + 3] = edgec_out(((int32_t)(f1 - l1) >> 8) + rq[3].bias, rq + 3, full, lo, hi);
    }
}

void edgec_fully_connected_pairs_s8(const edgec_fully_connected_packed_params *p, const int8_t *input,
                                    const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    const int32_t n_in = p->in_features, groups = p->k4 >> 2;
    edgec_w32 *xw = (edgec_w32 *)(void *)scratch;
    uint32_t s = 0;
    int32_t g, i;
    for (g = 0; g < groups; ++g) { /* missing inputs of a partial last group are 0 (their weights are 0 too) */
        uint32_t v = 0;
        if (4 * g + 4 <= n_in && ((uintptr_t)input & 3u) == 0) {
            v = ((const edgec_w32 *)(const void *)input)[g];
        } else {
            for (i = 0; i < 4 && 4 * g + i < n_in; ++i) v |= (uint32_t)(uint8_t)input[4 * g + i] << (8 * i);
        }
        edgec_widen(v, xw + 2 * g);
        s = EDGEC_FCP_MAC(xw[2 * g], 0x00010001u, s);
        s = EDGEC_FCP_MAC(xw[2 * g + 1], 0x00010001u, s);
    }
    edgec_fcp_blocks(xw, groups, p->out_features, (const edgec_w32 *)weights, rq, output, 128 * (int32_t)s,
                     p->act_min, p->act_max);
}
