/* The fast 16x8 convolution (edgec_nn.h, edgec/ops/conv/s16.py): two output pixels at a time, their windows
 * gathered into scratch as int16 (zeros where a window leaves the image: the input zero point is 0) and
 * interleaved per group of 4 taps, then two output channels a pass over them: the four int32 sums by SMLAD of the
 * windows' int16 pairs and the weights' SXTB16 pairs (weights of a pair of channels interleaved per group, each
 * group as w0 w2 w1 w3), then TFLite's 64-bit requantization (edgec_rq16_out). The lowering proves
 * |sum + bias| < 2^31. */
#include "edgec_rq16.h"

/* output pixel `pix`'s window (k4 int16, zero padded) into col */
static void edgec_s16_window(const edgec_conv_fast_s16_params *p, const int16_t *input, int32_t pix, int16_t *col)
{
    const int32_t in_c = p->in_c, oy = pix / p->out_w, ox = pix % p->out_w;
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
#else
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
    int16_t *cols = scratch, *line = scratch + 2 * k4;
#ifdef EDGEC_DSP
    const edgec_w32 *x = (const edgec_w32 *)(const void *)cols;
#else
    const int16_t *x = cols;
#endif
    int32_t pix, oc, g, j;
    for (pix = 0; pix < pixels; pix += 2) {
        const int32_t two = pix + 1 < pixels;       /* a second pixel (else pixel b repeats pixel a, not stored) */
        const uint32_t *w = weights;
        const int32_t *r = rq;
        int16_t *out_b = output + out_c;
        for (j = 0; j < 2; ++j) {
            edgec_s16_window(p, input, j && two ? pix + 1 : pix, line);
            for (g = 0; g < groups; ++g) {
                cols[8 * g + 4 * j] = line[4 * g];
                cols[8 * g + 4 * j + 1] = line[4 * g + 1];
                cols[8 * g + 4 * j + 2] = line[4 * g + 2];
                cols[8 * g + 4 * j + 3] = line[4 * g + 3];
            }
        }
        for (oc = 0; oc < out_c; oc += 2) {
            int32_t s[4];
            edgec_s16_block(x, w, groups, s);
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
