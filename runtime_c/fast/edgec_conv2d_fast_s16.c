/* The fast 16x8 convolution (edgec_nn.h, edgec/ops/conv/s16.py): for each output pixel its window gathered into
 * scratch as int16 (zeros where it leaves the image: the input zero point is 0), then two output channels a pass
 * over it, the int32 sum by SMLAD of the window's int16 pairs and the weights' SXTB16 pairs (weights w0 w2 w1 w3
 * per group of 4), then TFLite's 64-bit requantization (edgec_rq16_out). The lowering proves |sum + bias| < 2^31. */
#include "edgec_rq16.h"

static void edgec_s16_window(const edgec_conv_fast_s16_params *p, const int16_t *input, int32_t oy, int32_t ox,
                             int16_t *col)
{
    const int32_t in_c = p->in_c;
    int16_t *end = col + p->k4;
    int32_t ky, kx, i;
    for (ky = 0; ky < p->k_h; ++ky) {
        const int32_t iy = oy * p->stride_h - p->pad_top + ky * p->dil_h;
        for (kx = 0; kx < p->k_w; ++kx) {
            const int32_t ix = ox * p->stride_w - p->pad_left + kx * p->dil_w;
            if (iy < 0 || iy >= p->in_h || ix < 0 || ix >= p->in_w) {
                for (i = 0; i < in_c; ++i) {
                    col[i] = 0;
                }
            } else {
                const int16_t *px = input + (iy * p->in_w + ix) * in_c;
                for (i = 0; i < in_c; ++i) {
                    col[i] = px[i];
                }
            }
            col += in_c;
        }
    }
    while (col < end) {
        *col++ = 0;
    }
}

#ifdef EDGEC_DSP
/* the sums of channels oc and oc + 1 (w0, w1: their weights) over the window's k4 / 4 groups */
EDGEC_INLINE void edgec_s16_dot2(const edgec_w32 *x, const uint32_t *w0, const uint32_t *w1, int32_t groups,
                                 int32_t *s0, int32_t *s1)
{
    int32_t a0 = 0, a1 = 0, g;
    for (g = 0; g < groups; ++g) {
        const uint32_t x01 = x[0], x23 = x[1], wa = *w0++, wb = *w1++;
        x += 2;
        a0 = E_SMLAD(x01, E_SXTB16(wa), a0);
        a1 = E_SMLAD(x01, E_SXTB16(wb), a1);
        a0 = E_SMLAD(x23, E_SXTB16_ROR8(wa), a0);
        a1 = E_SMLAD(x23, E_SXTB16_ROR8(wb), a1);
    }
    *s0 = a0;
    *s1 = a1;
}

EDGEC_INLINE int32_t edgec_s16_dot1(const edgec_w32 *x, const uint32_t *w, int32_t groups)
{
    int32_t a = 0, g;
    for (g = 0; g < groups; ++g) {
        const uint32_t wa = *w++;
        a = E_SMLAD(x[0], E_SXTB16(wa), a);
        a = E_SMLAD(x[1], E_SXTB16_ROR8(wa), a);
        x += 2;
    }
    return a;
}
#else
static void edgec_s16_dot2(const int16_t *x, const uint32_t *w0, const uint32_t *w1, int32_t groups, int32_t *s0,
                           int32_t *s1)
{
    const int8_t *b0 = (const int8_t *)(const void *)w0, *b1 = (const int8_t *)(const void *)w1;
    int32_t a0 = 0, a1 = 0, g;
    for (g = 0; g < groups; ++g) {
        a0 += x[0] * b0[0] + x[1] * b0[2] + x[2] * b0[1] + x[3] * b0[3];
        a1 += x[0] * b1[0] + x[1] * b1[2] + x[2] * b1[1] + x[3] * b1[3];
        x += 4;
        b0 += 4;
        b1 += 4;
    }
    *s0 = a0;
    *s1 = a1;
}

static int32_t edgec_s16_dot1(const int16_t *x, const uint32_t *w, int32_t groups)
{
    int32_t a, unused;
    edgec_s16_dot2(x, w, w, groups, &a, &unused);
    return a;
}
#endif

void edgec_conv2d_fast_s16(const edgec_conv_fast_s16_params *p, const int16_t *input, const uint32_t *weights,
                           const int32_t *rq, int16_t *scratch, int16_t *output)
{
    const int32_t groups = p->k4 / 4, out_c = p->out_c, lo = p->act_min, hi = p->act_max;
#ifdef EDGEC_DSP
    const edgec_w32 *col = (const edgec_w32 *)(const void *)scratch;
#else
    const int16_t *col = scratch;
#endif
    int32_t oy, ox, oc;
    for (oy = 0; oy < p->out_h; ++oy) {
        for (ox = 0; ox < p->out_w; ++ox) {
            const uint32_t *w = weights;
            const int32_t *r = rq;
            edgec_s16_window(p, input, oy, ox, scratch);
            for (oc = 0; oc + 1 < out_c; oc += 2) {
                int32_t s0, s1;
                edgec_s16_dot2(col, w, w + groups, groups, &s0, &s1);
                output[0] = edgec_rq16_out(s0, r, lo, hi);
                output[1] = edgec_rq16_out(s1, r + 3, lo, hi);
                output += 2;
                w += 2 * groups;
                r += 6;
            }
            if (oc < out_c) {
                *output++ = edgec_rq16_out(edgec_s16_dot1(col, w, groups), r, lo, hi);
            }
        }
    }
}
