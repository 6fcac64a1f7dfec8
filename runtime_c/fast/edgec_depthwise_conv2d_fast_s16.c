/* The fast 16x8 depthwise convolution (edgec_nn.h, edgec/ops/conv/s16.py): depth multiplier 1, an even channel
 * count; per output pixel the window's rows and columns inside the image, then two channels a pass over them with
 * their sums in registers (SMLABB / SMLATT of one input word, two channels, and one weight word), then TFLite's
 * 64-bit requantization (edgec_rq16_out). The lowering proves |sum + bias| < 2^31. */
#include "edgec_rq16.h"

/* output pixel (oy, ox)'s c channels (at = oy << 16 | ox): the window's taps inside the image. Not inlined, with
 * the window's bounds found here: one function's sums, pointers and pixel loop spilled into a 224 B frame. */
static EDGEC_NOINLINE void edgec_s16_dw_pixel(const edgec_conv_fast_s16_params *p, const int16_t *input,
                                              const uint32_t *weights, const int32_t *rq, int16_t *output,
                                              int32_t at)
{
    const int32_t iy0 = (at >> 16) * p->stride_h - p->pad_top, ix0 = (at & 0xffff) * p->stride_w - p->pad_left;
    const int32_t c = p->in_c, lo = p->act_min, hi = p->act_max;
    int32_t ky0 = 0, ky1 = p->k_h, kx0 = 0, kx1 = p->k_w, rows = 0, cols = 0, ky, kx;
    const int16_t *x0 = input, *w0 = (const int16_t *)(const void *)weights;
    while (ky0 < ky1 && iy0 + ky0 * p->dil_h < 0) {
        ++ky0;
    }
    while (ky1 > ky0 && iy0 + (ky1 - 1) * p->dil_h >= p->in_h) {
        --ky1;
    }
    while (kx0 < kx1 && ix0 + kx0 * p->dil_w < 0) {
        ++kx0;
    }
    while (kx1 > kx0 && ix0 + (kx1 - 1) * p->dil_w >= p->in_w) {
        --kx1;
    }
    if (ky1 > ky0 && kx1 > kx0) {       /* else the whole window is off the image: the sums are 0 */
        x0 += ((iy0 + ky0 * p->dil_h) * p->in_w + ix0 + kx0 * p->dil_w) * c;
        w0 += (ky0 * p->k_w + kx0) * c;
        rows = ky1 - ky0;
        cols = kx1 - kx0;
    }
    const int32_t x_step = p->dil_w * c, y_step = p->dil_h * p->in_w * c, w_row = p->k_w * c;
    int16_t *const end = output + c;
#ifdef EDGEC_DSP
    for (; output + 3 < end; output += 4, x0 += 4, w0 += 4, rq += 12) {     /* four channels: two words a tap */
        int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
        const int16_t *xr = x0, *wr = w0;
        for (ky = 0; ky < rows; ++ky, xr += y_step, wr += w_row) {
            const edgec_w32 *x = (const edgec_w32 *)(const void *)xr;
            const edgec_w32 *w = (const edgec_w32 *)(const void *)wr;
            for (kx = 0; kx < cols; ++kx) {
                const uint32_t x01 = x[0], x23 = x[1], w01 = w[0], w23 = w[1];
                a0 = E_SMLABB(x01, w01, a0);
                a1 = E_SMLATT(x01, w01, a1);
                a2 = E_SMLABB(x23, w23, a2);
                a3 = E_SMLATT(x23, w23, a3);
                x += x_step / 2;
                w += c / 2;
            }
        }
        output[0] = edgec_rq16_out(a0, rq, lo, hi);
        output[1] = edgec_rq16_out(a1, rq + 3, lo, hi);
        output[2] = edgec_rq16_out(a2, rq + 6, lo, hi);
        output[3] = edgec_rq16_out(a3, rq + 9, lo, hi);
    }
#endif
    for (; output < end; output += 2, x0 += 2, w0 += 2, rq += 6) {
        int32_t a0 = 0, a1 = 0;
        const int16_t *xr = x0, *wr = w0;
        for (ky = 0; ky < rows; ++ky, xr += y_step, wr += w_row) {
            const int16_t *x = xr, *w = wr;
            for (kx = 0; kx < cols; ++kx) {
#ifdef EDGEC_DSP
                const uint32_t xv = *(const edgec_w32 *)(const void *)x;
                const uint32_t wv = *(const edgec_w32 *)(const void *)w;
                a0 = E_SMLABB(xv, wv, a0);
                a1 = E_SMLATT(xv, wv, a1);
#else
                a0 += x[0] * w[0];
                a1 += x[1] * w[1];
#endif
                x += x_step;
                w += c;
            }
        }
        output[0] = edgec_rq16_out(a0, rq, lo, hi);
        output[1] = edgec_rq16_out(a1, rq + 3, lo, hi);
    }
}

void edgec_depthwise_conv2d_fast_s16(const edgec_conv_fast_s16_params *p, const int16_t *input,
                                     const uint32_t *weights, const int32_t *rq, int16_t *output)
{
    int32_t oy, ox;
    for (oy = 0; oy < p->out_h; ++oy) {
        for (ox = 0; ox < p->out_w; ++ox, output += p->in_c) {
            edgec_s16_dw_pixel(p, input, weights, rq, output, oy << 16 | ox);
        }
    }
}
