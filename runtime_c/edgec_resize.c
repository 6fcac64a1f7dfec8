/* edgec resize, portable C99. Bit-exact with edgec/ops/resize.py. */
#include "edgec_nn_support.h"

void edgec_resize_linear_s8(const edgec_resize_params *p, const int8_t *input, const int32_t *idx,
                            const int32_t *frac, int8_t *output)
{
    const int32_t c = p->c, in_w = p->in_w, oh = p->out_h, ow = p->out_w;
    const int32_t *y0 = idx, *y1 = idx + oh, *x0 = idx + 2 * oh, *x1 = idx + 2 * oh + ow;
    int32_t oy, ox, ch;
    for (oy = 0; oy < oh; ++oy) {
        const int64_t fy = frac[oy];
        for (ox = 0; ox < ow; ++ox) {
            const int64_t fx = frac[oh + ox];
            const int8_t *a = input + (y0[oy] * in_w + x0[ox]) * c, *b = input + (y0[oy] * in_w + x1[ox]) * c;
            const int8_t *cc = input + (y1[oy] * in_w + x0[ox]) * c, *d = input + (y1[oy] * in_w + x1[ox]) * c;
            for (ch = 0; ch < c; ++ch) {
                const int64_t top = a[ch] * (1024 - fx) + b[ch] * fx;
                const int64_t bot = cc[ch] * (1024 - fx) + d[ch] * fx;
                const int64_t v = edgec_round_pot64(top * (1024 - fy) + bot * fy, 20);
                *output++ = (int8_t)(v < -128 ? -128 : (v > 127 ? 127 : v));
            }
        }
    }
}
