/* edgec fast 1-D depthwise convolution, int8 (declared in edgec_nn.h, machinery in edgec_fast_support.h):
 * edgec_depthwise_conv2d_line_s8. Any number of taps, stride and dilation along the line, 4 channels at a time in
 * registers; padded taps read the input zero point (folded into the records' bias, as in every fast kernel). */
#include "edgec_depthwise_taps.h"
#include "edgec_fast_support.h"

#ifdef EDGEC_DSP
/* edgec_dw4_taps for two outputs at once, their taps at x and x + gap (one weight load for both; acc[4..8): the
 * second) */
EDGEC_INLINE void edgec_dwl_taps2(const edgec_w32 *w, const int8_t *x, int32_t gap, int32_t step, int32_t n,
                                  int32_t *acc)
{
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], b0 = acc[4], b1 = acc[5], b2 = acc[6], b3 = acc[7];
    int32_t t;
    for (t = 0; t < n; ++t, x += step, w += 2) {
        const uint32_t u = *(const edgec_w32 *)(const void *)x, v = *(const edgec_w32 *)(const void *)(x + gap);
        const uint32_t we = w[0], wo = w[1];
        uint32_t xe = E_SXTB16(u), xo = E_SXTB16_ROR8(u);
        a0 = E_SMLABB(xe, we, a0);
        a2 = E_SMLATT(xe, we, a2);
        a1 = E_SMLABB(xo, wo, a1);
        a3 = E_SMLATT(xo, wo, a3);
        xe = E_SXTB16(v);
        xo = E_SXTB16_ROR8(v);
        b0 = E_SMLABB(xe, we, b0);
        b2 = E_SMLATT(xe, we, b2);
        b1 = E_SMLABB(xo, wo, b1);
        b3 = E_SMLATT(xo, wo, b3);
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
    acc[4] = b0;
    acc[5] = b1;
    acc[6] = b2;
    acc[7] = b3;
}
#else
EDGEC_INLINE void edgec_dwl_taps2(const edgec_w32 *w, const int8_t *x, int32_t gap, int32_t step, int32_t n,
                                  int32_t *acc)
{
    edgec_dw4_taps(w, x, step, n, acc);
    edgec_dw4_taps(w, x + gap, step, n, acc + 4);
}
#endif

void edgec_depthwise_conv2d_line_s8(const edgec_depthwise_conv2d_line_params *p, const int8_t *input,
                                    const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    const int32_t c = p->c, k = p->k, d = p->dilation, len = p->len;
    const int32_t lo = p->act_min, hi = p->act_max, full = lo == -128 && hi == 127;
    const uint32_t zpw = (uint32_t)(uint8_t)(int8_t)p->input_zp * 0x01010101u;
    const int8_t *zp = (const int8_t *)(const void *)&zpw;
    int32_t o, cg, j;
    (void)scratch;
    for (o = 0; o < p->out_len;) {
        const int32_t start = o * p->stride - p->pad;
        /* taps [0, t0) before the line, [t0, t1) on it, [t1, k) after it */
        int32_t t0 = start >= 0 ? 0 : (-start + d - 1) / d, t1 = len - start <= 0 ? 0 : (len - start + d - 1) / d;
        /* outputs o and o + 1 both wholly on the line: summed together */
        const int32_t pair = o + 1 < p->out_len && start >= 0 && start + p->stride + (k - 1) * d < len;
        if (t0 > k) t0 = k;
        if (t1 > k) t1 = k;
        if (t1 < t0) t1 = t0;
        for (cg = 0; cg < c; cg += 4) {
            const edgec_w32 *w = (const edgec_w32 *)(const void *)weights + 2 * k * (cg / 4);
            const edgec_rq *q = rq + cg;
            int32_t acc[8];
            for (j = 0; j < 4; ++j) acc[j] = acc[j + 4] = q[j].bias;
            if (pair) {
                edgec_dwl_taps2(w, input + start * c + cg, p->stride * c, d * c, k, acc);
                for (j = 0; j < 4; ++j) {
                    output[o * c + cg + j] = edgec_out(acc[j], q + j, full, lo, hi);
                    output[(o + 1) * c + cg + j] = edgec_out(acc[j + 4], q + j, full, lo, hi);
                }
                continue;
            }
            w = edgec_dw4_taps(w, zp, 0, t0, acc);
            w = edgec_dw4_taps(w, input + (start + t0 * d) * c + cg, d * c, t1 - t0, acc);
            edgec_dw4_taps(w, zp, 0, k - t1, acc);
            for (j = 0; j < 4; ++j) output[o * c + cg + j] = edgec_out(acc[j], q + j, full, lo, hi);
        }
        o += pair ? 2 : 1;
    }
}
