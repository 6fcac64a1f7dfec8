/* edgec pooling, portable C99. Bit-exact with edgec/ops/pool.py. */
#include "edgec_nn_support.h"

void edgec_max_pool_s8(const edgec_pool_params *p, const int8_t *input, int8_t *output)
{
    const int32_t in_w = p->in_w, c = p->c;
    int32_t oy, ox, ch, ky, kx;
    for (oy = 0; oy < p->out_h; ++oy) {
        const int32_t iy0 = oy * p->stride_h - p->pad_top;
        const int32_t ky0 = edgec_tap_begin(iy0, 1);
        const int32_t ky1 = edgec_tap_end(iy0, 1, p->in_h, p->k_h);
        for (ox = 0; ox < p->out_w; ++ox) {
            const int32_t ix0 = ox * p->stride_w - p->pad_left;
            const int32_t kx0 = edgec_tap_begin(ix0, 1);
            const int32_t kx1 = edgec_tap_end(ix0, 1, in_w, p->k_w);
            for (ch = 0; ch < c; ++ch) {
                int32_t m = -128;
                for (ky = ky0; ky < ky1; ++ky) {
                    for (kx = kx0; kx < kx1; ++kx) {
                        const int32_t v = input[((iy0 + ky) * in_w + (ix0 + kx)) * c + ch];
                        m = v > m ? v : m;
                    }
                }
                *output++ = (int8_t)edgec_clamp(m, p->act_min, p->act_max);
            }
        }
    }
}

void edgec_avg_pool_s8(const edgec_pool_params *p, const int8_t *input, int8_t *output)
{
    const int32_t in_w = p->in_w, c = p->c;
    int32_t oy, ox, ch, ky, kx;
    for (oy = 0; oy < p->out_h; ++oy) {
        const int32_t iy0 = oy * p->stride_h - p->pad_top;
        const int32_t ky0 = edgec_tap_begin(iy0, 1);
        const int32_t ky1 = edgec_tap_end(iy0, 1, p->in_h, p->k_h);
        for (ox = 0; ox < p->out_w; ++ox) {
            const int32_t ix0 = ox * p->stride_w - p->pad_left;
            const int32_t kx0 = edgec_tap_begin(ix0, 1);
            const int32_t kx1 = edgec_tap_end(ix0, 1, in_w, p->k_w);
            const int32_t count = (ky1 > ky0 && kx1 > kx0) ? (ky1 - ky0) * (kx1 - kx0) : 0;
            for (ch = 0; ch < c; ++ch) {
                int32_t sum = 0, avg = 0;
                for (ky = ky0; ky < ky1; ++ky) {
                    for (kx = kx0; kx < kx1; ++kx) {
                        sum += input[((iy0 + ky) * in_w + (ix0 + kx)) * c + ch];
                    }
                }
                if (count > 0) { /* no valid tap (degenerate padding): average 0 */
                    avg = sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
                }
                *output++ = (int8_t)edgec_clamp(avg, p->act_min, p->act_max);
            }
        }
    }
}

/* int16 pools (TFLite MaxPool16 / AveragePool16) between two int16 layers: the same windows and rounding. */
void edgec_max_pool_s16(const edgec_pool_params *p, const int16_t *input, int16_t *output)
{
    const int32_t in_w = p->in_w, c = p->c;
    int32_t oy, ox, ch, ky, kx;
    for (oy = 0; oy < p->out_h; ++oy) {
        const int32_t iy0 = oy * p->stride_h - p->pad_top;
        const int32_t ky0 = edgec_tap_begin(iy0, 1);
        const int32_t ky1 = edgec_tap_end(iy0, 1, p->in_h, p->k_h);
        for (ox = 0; ox < p->out_w; ++ox) {
            const int32_t ix0 = ox * p->stride_w - p->pad_left;
            const int32_t kx0 = edgec_tap_begin(ix0, 1);
            const int32_t kx1 = edgec_tap_end(ix0, 1, in_w, p->k_w);
            for (ch = 0; ch < c; ++ch) {
                int32_t m = -32768;
                for (ky = ky0; ky < ky1; ++ky) {
                    for (kx = kx0; kx < kx1; ++kx) {
                        const int32_t v = input[((iy0 + ky) * in_w + (ix0 + kx)) * c + ch];
                        m = v > m ? v : m;
                    }
                }
                *output++ = (int16_t)edgec_clamp(m, p->act_min, p->act_max);
            }
        }
    }
}

void edgec_avg_pool_s16(const edgec_pool_params *p, const int16_t *input, int16_t *output)
{
    const int32_t in_w = p->in_w, c = p->c;
    int32_t oy, ox, ch, ky, kx;
    for (oy = 0; oy < p->out_h; ++oy) {
        const int32_t iy0 = oy * p->stride_h - p->pad_top;
        const int32_t ky0 = edgec_tap_begin(iy0, 1);
        const int32_t ky1 = edgec_tap_end(iy0, 1, p->in_h, p->k_h);
        for (ox = 0; ox < p->out_w; ++ox) {
            const int32_t ix0 = ox * p->stride_w - p->pad_left;
            const int32_t kx0 = edgec_tap_begin(ix0, 1);
            const int32_t kx1 = edgec_tap_end(ix0, 1, in_w, p->k_w);
            const int32_t count = (ky1 > ky0 && kx1 > kx0) ? (ky1 - ky0) * (kx1 - kx0) : 0;
            for (ch = 0; ch < c; ++ch) {
                int32_t sum = 0, avg = 0;
                for (ky = ky0; ky < ky1; ++ky) {
                    for (kx = kx0; kx < kx1; ++kx) {
                        sum += input[((iy0 + ky) * in_w + (ix0 + kx)) * c + ch];
                    }
                }
                if (count > 0) { /* no valid tap (degenerate padding): average 0 */
                    avg = sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
                }
                *output++ = (int16_t)edgec_clamp(avg, p->act_min, p->act_max);
            }
        }
    }
}
