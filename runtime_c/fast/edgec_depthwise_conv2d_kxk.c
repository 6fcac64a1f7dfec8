/* edgec fast depthwise convolution of any window k_h x k_w, int8 (declared in edgec_nn.h, machinery in
 * edgec_fast_support.h): edgec_depthwise_conv2d_kxk_s8. MCUNet's 5x5 and 7x7 layers (strides 1 and 2), and any
 * window, stride, dilation and padding the 3x3 and 1-D kernels do not take: 4 channels at a time, their 4
 * accumulators in registers over the whole window where it lies inside the image's columns (two outputs a pass
 * would need 8 and spill them on Armv7-M: measured slower). Padded taps read the input zero point (folded into the
 * records' bias, as in every fast kernel); a window row wholly above or below the image adds its precomputed
 * zero-point term instead (zpr: per row of the window and channel, input_zp x the row's weights). */
#include "edgec_depthwise_taps.h"
#include "edgec_fast_support.h"

#ifdef EDGEC_DSP
/* edgec_dw4_taps over `rows` window rows of n taps each, `skip` bytes from one row's first tap to the next's */
EDGEC_INLINE const edgec_w32 *edgec_dwk_rows(const edgec_w32 *w, const int8_t *x, int32_t skip, int32_t rows,
                                             int32_t step, int32_t n, int32_t *acc)
{
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], r;
    const int32_t span = step * n;
    for (r = 0; r < rows; ++r, x += skip) {
        const int8_t *xp = x, *end = x + span;
        do {
            const uint32_t v = *(const edgec_w32 *)(const void *)xp;
            const uint32_t we = w[0], wo = w[1];
            const uint32_t xe = E_SXTB16(v), xo = E_SXTB16_ROR8(v);
            w += 2;
            xp += step;
            a0 = E_SMLABB(xe, we, a0);
            a2 = E_SMLATT(xe, we, a2);
            a1 = E_SMLABB(xo, wo, a1);
            a3 = E_SMLATT(xo, wo, a3);
        } while (xp != end);
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
    return w;
}
#else
EDGEC_INLINE const edgec_w32 *edgec_dwk_rows(const edgec_w32 *w, const int8_t *x, int32_t skip, int32_t rows,
                                             int32_t step, int32_t n, int32_t *acc)
{
    int32_t r;
    for (r = 0; r < rows; ++r, x += skip) w = edgec_dw4_taps(w, x, step, n, acc);
    return w;
}
#endif

/* the taps [t0, t1) of a window axis that lie inside [0, len) when the window starts at `start` (dilation d) */
EDGEC_INLINE void edgec_dwk_inside(int32_t start, int32_t len, int32_t k, int32_t d, int32_t *t0, int32_t *t1)
{
    int32_t a = start >= 0 ? 0 : (-start + d - 1) / d, b = len - start <= 0 ? 0 : (len - start + d - 1) / d;
    if (a > k) a = k;
    if (b > k) b = k;
    if (b < a) b = a;
    *t0 = a;
    *t1 = b;
}

void edgec_depthwise_conv2d_kxk_s8(const edgec_depthwise_conv2d_kxk_params *p, const int8_t *input,
                                   const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    const int32_t c = p->c, kh = p->k_h, kw = p->k_w, dh = p->dil_h, dw = p->dil_w, sw = p->stride_w;
    const int32_t row = p->in_w * c, lo = p->act_min, hi = p->act_max, full = lo == -128 && hi == 127;
    const uint32_t zpw = (uint32_t)(uint8_t)(int8_t)p->input_zp * 0x01010101u;
    const int8_t *zp = (const int8_t *)(const void *)&zpw;
    /* the zero-point terms of the window rows (kh x c int32) follow the weights (kh x kw x c / 2 words) */
    const int32_t *zpr = (const int32_t *)(const void *)(weights + kh * kw * c / 2);
    int32_t oy, ox, cg, j, ky;
    (void)scratch;
    for (oy = 0; oy < p->out_h; ++oy) {
        const int32_t y0 = oy * p->stride_h - p->pad_top;
        int32_t r0, r1;
        int8_t *out = output + oy * p->out_w * c;
        edgec_dwk_inside(y0, p->in_h, kh, dh, &r0, &r1);
        for (ox = 0; ox < p->out_w; ++ox) {
            const int32_t x0 = ox * sw - p->pad_left;
            int32_t t0, t1;
            edgec_dwk_inside(x0, p->in_w, kw, dw, &t0, &t1);
            for (cg = 0; cg < c; cg += 4) {
                const edgec_w32 *w = (const edgec_w32 *)(const void *)weights + 2 * kh * kw * (cg / 4);
                const edgec_rq *q = rq + cg;
                int32_t acc[4];
                for (j = 0; j < 4; ++j) acc[j] = q[j].bias;
                for (ky = 0; ky < r0; ++ky)              /* window rows above the image: their zero-point terms */
                    for (j = 0; j < 4; ++j) acc[j] += zpr[ky * c + cg + j];
                for (ky = r1; ky < kh; ++ky)             /* and below it */
                    for (j = 0; j < 4; ++j) acc[j] += zpr[ky * c + cg + j];
                w += 2 * kw * r0;
                if (r1 > r0) {
                    const int8_t *x = input + (y0 + r0 * dh) * row + (x0 + t0 * dw) * c + cg;   /* first tap in */
                    if (t0 == 0 && t1 == kw) {
                        edgec_dwk_rows(w, x, dh * row, r1 - r0, dw * c, kw, acc);
                    } else {
                        for (ky = r0; ky < r1; ++ky, x += ky < r1 ? dh * row : 0) {
                            w = edgec_dw4_taps(w, zp, 0, t0, acc);
                            w = edgec_dw4_taps(w, x, dw * c, t1 - t0, acc);
                            w = edgec_dw4_taps(w, zp, 0, kw - t1, acc);
                        }
                    }
                }
                for (j = 0; j < 4; ++j) out[ox * c + cg + j] = edgec_out(acc[j], q + j, full, lo, hi);
            }
        }
    }
}
