/* The fast 16x8 convolution (edgec_nn.h, edgec/ops/conv/s16.py): two output pixels at a time, their windows
 * gathered into scratch as int16 (zeros where a window leaves the image: the input zero point is 0) and
 * interleaved per group of 4 taps, or read where they lie (in_place: a 1x1, stride-1, unpadded convolution of
 * in_c a multiple of 4), then two output channels a pass over them: the four int32 sums by SMLAD of the
 * windows' int16 pairs and the weights' SXTB16 pairs (weights of a pair of channels interleaved per group, each
 * group as w0 w2 w1 w3), then TFLite's 64-bit requantization (edgec_rq16_out). The lowering proves
 * |sum + bias| < 2^31. */
#include "edgec_rq16.h"

/* output pixel `pix`'s window (k4 int16, zero padded) into the interleaved columns as pixel `which` (0, 1) of the
 * pair: tap t at cols[(t / 4) * 8 + which * 4 + t % 4] */
static void edgec_s16_window(const edgec_conv_fast_s16_params *p, const int16_t *input, int32_t pix, int32_t which,
                             int16_t *cols)
{
    const int32_t in_c = p->in_c, oy = pix / p->out_w, ox = pix % p->out_w;
    int32_t ky, kx, i, t = 0;
    int16_t *col = cols + 4 * which;
    for (ky = 0; ky < p->k_h; ++ky) {
        const int32_t iy = oy * p->stride_h - p->pad_top + ky * p->dil_h;
        for (kx = 0; kx < p->k_w; ++kx) {
            const int32_t ix = ox * p->stride_w - p->pad_left + kx * p->dil_w;
            const int inside = iy >= 0 && iy < p->in_h && ix >= 0 && ix < p->in_w;
            const int16_t *px = input + (inside ? (iy * p->in_w + ix) * in_c : 0);
            for (i = 0; i < in_c; ++i, ++t) {
                col[(t >> 2) * 8 + (t & 3)] = inside ? px[i] : 0;
            }
        }
    }
    for (; t < p->k4; ++t) {
        col[(t >> 2) * 8 + (t & 3)] = 0;
    }
}

/* the four sums (pixel a and b times channel 0 and 1) over `groups` groups of 4 taps: x [group][pixel][4 taps],
 * w [group][channel][4 taps] */
#ifdef EDGEC_DSP
EDGEC_INLINE void edgec_s16_block(const edgec_w32 *x, const uint32_t *w, int32_t groups, int32_t *s)
{
    int32_t a0 = 0, a1 = 0, b0 = 0, b1 = 0, g;
    for (g = 0; g < groups; ++g) {
        const uint32_t w0 = w[0], w1 = w[1];
        const uint32_t w0e = E_SXTB16(w0), w1e = E_SXTB16(w1);
        uint32_t xv = x[0];
        a0 = E_SMLAD(xv, w0e, a0);
        a1 = E_SMLAD(xv, w1e, a1);
        xv = x[2];
        b0 = E_SMLAD(xv, w0e, b0);
        b1 = E_SMLAD(xv, w1e, b1);
        {
            const uint32_t w0o = E_SXTB16_ROR8(w0), w1o = E_SXTB16_ROR8(w1);
            xv = x[1];
            a0 = E_SMLAD(xv, w0o, a0);
            a1 = E_SMLAD(xv, w1o, a1);
            xv = x[3];
            b0 = E_SMLAD(xv, w0o, b0);
            b1 = E_SMLAD(xv, w1o, b1);
        }
        x += 4;
        w += 2;
    }
    s[0] = a0;
    s[1] = a1;
    s[2] = b0;
    s[3] = b1;
}
/* the same with the two pixels read where they lie (xa, xb: k4 int16 each, word aligned) */
EDGEC_INLINE void edgec_s16_block2(const edgec_w32 *xa, const edgec_w32 *xb, const uint32_t *w, int32_t groups,
                                   int32_t *s)
{
    int32_t a0 = 0, a1 = 0, b0 = 0, b1 = 0, g;
    for (g = 0; g < groups; ++g) {
        const uint32_t w0 = w[0], w1 = w[1];
        const uint32_t w0e = E_SXTB16(w0), w1e = E_SXTB16(w1);
        uint32_t xv = xa[0];
        a0 = E_SMLAD(xv, w0e, a0);
        a1 = E_SMLAD(xv, w1e, a1);
        xv = xb[0];
        b0 = E_SMLAD(xv, w0e, b0);
        b1 = E_SMLAD(xv, w1e, b1);
        {
            const uint32_t w0o = E_SXTB16_ROR8(w0), w1o = E_SXTB16_ROR8(w1);
            xv = xa[1];
            a0 = E_SMLAD(xv, w0o, a0);
            a1 = E_SMLAD(xv, w1o, a1);
            xv = xb[1];
            b0 = E_SMLAD(xv, w0o, b0);
            b1 = E_SMLAD(xv, w1o, b1);
        }
        xa += 2;
        xb += 2;
        w += 2;
    }
    s[0] = a0;
    s[1] = a1;
    s[2] = b0;
    s[3] = b1;
}
#else
static void edgec_s16_block2(const int16_t *xa, const int16_t *xb, const uint32_t *w, int32_t groups, int32_t *s)
{
    const int8_t *b = (const int8_t *)(const void *)w;
    int32_t g, j;
    s[0] = s[1] = s[2] = s[3] = 0;
    for (g = 0; g < groups; ++g) {
        for (j = 0; j < 2; ++j) {       /* channel j: bytes w0 w2 w1 w3 */
            const int8_t *wj = b + 4 * j;
            s[j] += xa[0] * wj[0] + xa[1] * wj[2] + xa[2] * wj[1] + xa[3] * wj[3];
            s[2 + j] += xb[0] * wj[0] + xb[1] * wj[2] + xb[2] * wj[1] + xb[3] * wj[3];
        }
        xa += 4;
        xb += 4;
        b += 8;
    }
}

static void edgec_s16_block(const int16_t *x, const uint32_t *w, int32_t groups, int32_t *s)
{
    const int8_t *b = (const int8_t *)(const void *)w;
    int32_t g, j;
    s[0] = s[1] = s[2] = s[3] = 0;
    for (g = 0; g < groups; ++g) {
        for (j = 0; j < 2; ++j) {       /* channel j: bytes w0 w2 w1 w3 */
            const int8_t *wj = b + 4 * j;
            s[j] += x[0] * wj[0] + x[1] * wj[2] + x[2] * wj[1] + x[3] * wj[3];
            s[2 + j] += x[4] * wj[0] + x[5] * wj[2] + x[6] * wj[1] + x[7] * wj[3];
        }
        x += 8;
        b += 8;
    }
}
#endif

void edgec_conv2d_fast_s16(const edgec_conv_fast_s16_params *p, const int16_t *input, const uint32_t *weights,
                           const int32_t *rq, int16_t *scratch, int16_t *output)
{
    const int32_t k4 = p->k4, groups = k4 / 4, out_c = p->out_c, lo = p->act_min, hi = p->act_max;
    const int32_t pixels = p->out_h * p->out_w;
#ifdef EDGEC_DSP
    const edgec_w32 *x = (const edgec_w32 *)(const void *)scratch;
#else
    const int16_t *x = scratch;
#endif
    int32_t pix, oc;
    for (pix = 0; pix < pixels; pix += 2) {
        const int32_t two = pix + 1 < pixels;       /* a second pixel (else pixel b repeats pixel a, not stored) */
        const uint32_t *w = weights;
        const int32_t *r = rq;
        int16_t *out_b = output + out_c;
#ifdef EDGEC_DSP
        const edgec_w32 *xa = (const edgec_w32 *)(const void *)(input + pix * k4);
        const edgec_w32 *xb = two ? xa + k4 / 2 : xa;
#else
        const int16_t *xa = input + pix * k4, *xb = two ? xa + k4 : xa;
#endif
        if (!p->in_place) {
            edgec_s16_window(p, input, pix, 0, scratch);
            edgec_s16_window(p, input, two ? pix + 1 : pix, 1, scratch);
        }
        for (oc = 0; oc < out_c; oc += 2) {
            int32_t s[4];
            if (p->in_place) {
                edgec_s16_block2(xa, xb, w, groups, s);
            } else {
                edgec_s16_block(x, w, groups, s);
            }
            output[oc] = edgec_rq16_out(s[0], r, lo, hi);
            if (two) {
                out_b[oc] = edgec_rq16_out(s[2], r, lo, hi);
            }
            if (oc + 1 < out_c) {
                output[oc + 1] = edgec_rq16_out(s[1], r + 3, lo, hi);
                if (two) {
                    out_b[oc + 1] = edgec_rq16_out(s[3], r + 3, lo, hi);
                }
            }
            w += 2 * groups;
            r += 6;
        }
        output += 2 * out_c;
    }
}
