/* The fast 16x8 depthwise convolution (edgec_nn.h, edgec/ops/conv/s16.py): depth multiplier 1, an even channel
 * count; per output pixel the window's rows and columns inside the image, then two channels a pass over them with
 * their sums in registers (SMLABB / SMLATT of one input word, two channels, and one weight word), then TFLite's
 * 64-bit requantization (edgec_rq16_out). The lowering proves |sum + bias| < 2^31. */
#include "edgec_rq16.h"

void edgec_depthwise_conv2d_fast_s16(const edgec_conv_fast_s16_params *p, const int16_t *input,
                                     const uint32_t *weights, const int32_t *rq, int16_t *output)
{
    const int32_t c = p->in_c, k_w = p->k_w, lo = p->act_min, hi = p->act_max;
    const int32_t x_step = p->dil_w * c, y_step = p->dil_h * p->in_w * c;
    int32_t oy, ox, ch, ky, kx;
    for (oy = 0; oy < p->out_h; ++oy) {
        const int32_t iy0 = oy * p->stride_h - p->pad_top;
        int32_t ky0 = 0, ky1 = p->k_h;
        while (ky0 < ky1 && iy0 + ky0 * p->dil_h < 0) {
            ++ky0;
        }
        while (ky1 > ky0 && iy0 + (ky1 - 1) * p->dil_h >= p->in_h) {
            --ky1;
        }
        for (ox = 0; ox < p->out_w; ++ox) {
            const int32_t ix0 = ox * p->stride_w - p->pad_left;
            int32_t kx0 = 0, kx1 = k_w;
            const int16_t *x0;
            const int16_t *w0;
            while (kx0 < kx1 && ix0 + kx0 * p->dil_w < 0) {
                ++kx0;
            }
            while (kx1 > kx0 && ix0 + (kx1 - 1) * p->dil_w >= p->in_w) {
                --kx1;
            }
            int32_t rows = ky1 - ky0;
            if (rows <= 0 || kx0 >= kx1) {      /* the whole window off the image: the sums are 0 */
                rows = 0;
                kx0 = kx1 = 0;
                x0 = input;
            } else {
                x0 = input + ((iy0 + ky0 * p->dil_h) * p->in_w + ix0 + kx0 * p->dil_w) * c;
            }
            w0 = (const int16_t *)(const void *)weights + (rows ? (ky0 * k_w + kx0) * c : 0);
            ch = 0;
#ifdef EDGEC_DSP
            for (; ch + 3 < c; ch += 4) {       /* four channels: two input words, two weight words a tap */
                int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
                const int16_t *xr = x0 + ch, *wr = w0 + ch;
                for (ky = 0; ky < rows; ++ky) {
                    const edgec_w32 *x = (const edgec_w32 *)(const void *)xr;
                    const edgec_w32 *w = (const edgec_w32 *)(const void *)wr;
                    for (kx = kx0; kx < kx1; ++kx) {
                        const uint32_t x01 = x[0], x23 = x[1], w01 = w[0], w23 = w[1];
                        a0 = E_SMLABB(x01, w01, a0);
                        a1 = E_SMLATT(x01, w01, a1);
                        a2 = E_SMLABB(x23, w23, a2);
                        a3 = E_SMLATT(x23, w23, a3);
                        x += x_step / 2;
                        w += c / 2;
                    }
                    xr += y_step;
                    wr += k_w * c;
                }
                output[ch] = edgec_rq16_out(a0, rq + 3 * ch, lo, hi);
                output[ch + 1] = edgec_rq16_out(a1, rq + 3 * ch + 3, lo, hi);
                output[ch + 2] = edgec_rq16_out(a2, rq + 3 * ch + 6, lo, hi);
                output[ch + 3] = edgec_rq16_out(a3, rq + 3 * ch + 9, lo, hi);
            }
#endif
            for (; ch < c; ch += 2) {
                int32_t a0 = 0, a1 = 0;
                const int16_t *xr = x0 + ch, *wr = w0 + ch;
                for (ky = 0; ky < rows; ++ky) {
                    const int16_t *x = xr, *w = wr;
                    for (kx = kx0; kx < kx1; ++kx) {
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
                    xr += y_step;
                    wr += k_w * c;
                }
                output[ch] = edgec_rq16_out(a0, rq + 3 * ch, lo, hi);
                output[ch + 1] = edgec_rq16_out(a1, rq + 3 * ch + 3, lo, hi);
            }
            output += c;
        }
    }
}
