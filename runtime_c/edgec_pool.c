/* edgec pooling, portable C99. Bit-exact with edgec/ops/pool.py. */
#include "edgec_nn_support.h"

/* The taps of output pixel (oy, ox) that fall inside the input: rows ky0..ky1, columns kx0..kx1 of the window. */
typedef struct {
    int32_t iy0, ix0, ky0, ky1, kx0, kx1;
} edgec_pool_window;

static edgec_pool_window pool_window(const edgec_pool_params *p, int32_t oy, int32_t ox)
{
    edgec_pool_window w;
    w.iy0 = oy * p->stride_h - p->pad_top;
    w.ix0 = ox * p->stride_w - p->pad_left;
    w.ky0 = edgec_tap_begin(w.iy0, 1);
    w.ky1 = edgec_tap_end(w.iy0, 1, p->in_h, p->k_h);
    w.kx0 = edgec_tap_begin(w.ix0, 1);
    w.kx1 = edgec_tap_end(w.ix0, 1, p->in_w, p->k_w);
    return w;
}

/* TFLite's average: the sum over the valid taps, divided rounding half away from zero; 0 where no tap is valid
 * (degenerate padding). */
static int32_t pool_average(int32_t sum, const edgec_pool_window *w)
{
    const int32_t count = (w->ky1 > w->ky0 && w->kx1 > w->kx0) ? (w->ky1 - w->ky0) * (w->kx1 - w->kx0) : 0;
    if (count == 0) return 0;
    return sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
}

/* The bodies of the max and average pools for one element type T (int8, and int16 between two int16 layers:
 * TFLite MaxPool16 / AveragePool16), the same windows and rounding. LOWEST is T's smallest value. The functions
 * are written out below (edgec/cheader.py finds a runtime file's kernels by their definitions). */
#define EDGEC_MAX_POOL_BODY(T, LOWEST)                                                                           \
    {                                                                                                            \
        const int32_t in_w = p->in_w, c = p->c, out_h = p->out_h, out_w = p->out_w;                              \
        int32_t oy, ox, ch, ky, kx;                                                                              \
        for (oy = 0; oy < out_h; ++oy) {                                                                         \
            for (ox = 0; ox < out_w; ++ox) {                                                                     \
                const edgec_pool_window w = pool_window(p, oy, ox);                                              \
                for (ch = 0; ch < c; ++ch) {                                                                     \
                    int32_t m = LOWEST;                                                                          \
                    for (ky = w.ky0; ky < w.ky1; ++ky) {                                                         \
                        for (kx = w.kx0; kx < w.kx1; ++kx) {                                                     \
                            const int32_t v = input[((w.iy0 + ky) * in_w + (w.ix0 + kx)) * c + ch];              \
                            m = v > m ? v : m;                                                                   \
                        }                                                                                        \
                    }                                                                                            \
                    *output++ = (T)edgec_clamp(m, p->act_min, p->act_max);                                       \
                }                                                                                                \
            }                                                                                                    \
        }                                                                                                        \
    }

#define EDGEC_AVG_POOL_BODY(T)                                                                                   \
    {                                                                                                            \
        const int32_t in_w = p->in_w, c = p->c, out_h = p->out_h, out_w = p->out_w;                              \
        int32_t oy, ox, ch, ky, kx;                                                                              \
        for (oy = 0; oy < out_h; ++oy) {                                                                         \
            for (ox = 0; ox < out_w; ++ox) {                                                                     \
                const edgec_pool_window w = pool_window(p, oy, ox);                                              \
                for (ch = 0; ch < c; ++ch) {                                                                     \
                    int32_t sum = 0;                                                                             \
                    for (ky = w.ky0; ky < w.ky1; ++ky) {                                                         \
                        for (kx = w.kx0; kx < w.kx1; ++kx) {                                                     \
                            sum += input[((w.iy0 + ky) * in_w + (w.ix0 + kx)) * c + ch];                         \
                        }                                                                                        \
                    }                                                                                            \
                    *output++ = (T)edgec_clamp(pool_average(sum, &w), p->act_min, p->act_max);                   \
                }                                                                                                \
            }                                                                                                    \
        }                                                                                                        \
    }

void edgec_max_pool_s8(const edgec_pool_params *p, const int8_t *input, int8_t *output)
{
    EDGEC_MAX_POOL_BODY(int8_t, -128)
}

void edgec_avg_pool_s8(const edgec_pool_params *p, const int8_t *input, int8_t *output)
{
    EDGEC_AVG_POOL_BODY(int8_t)
}

void edgec_max_pool_s16(const edgec_pool_params *p, const int16_t *input, int16_t *output)
{
    EDGEC_MAX_POOL_BODY(int16_t, -32768)
}

void edgec_avg_pool_s16(const edgec_pool_params *p, const int16_t *input, int16_t *output)
{
    EDGEC_AVG_POOL_BODY(int16_t)
}

/* QONNX's Trunc of an average pool's sum (Brevitas TruncAvgPool2d, edgec/frontend/qonnx.py): sum / count rounded
 * half to even (rounding EDGEC_ROUND_EVEN), down (EDGEC_ROUND_FLOOR) or up (EDGEC_ROUND_CEIL), then clamped. */
static int32_t pool_divide(int32_t sum, int32_t count, int32_t rounding)
{
    int32_t q = sum / count, r = sum % count;
    if (r < 0) {                 /* C99 truncates toward zero: q is the floor, 0 <= r < count */
        q -= 1;
        r += count;
    }
    if (r == 0) return q;
    if (rounding == EDGEC_ROUND_FLOOR) return q;
    if (rounding == EDGEC_ROUND_CEIL) return q + 1;
    if (2 * r > count || (2 * r == count && (q & 1))) return q + 1;
    return q;
}

void edgec_avg_pool_trunc_s8(const edgec_pool_params *p, int32_t rounding, const int8_t *input, int8_t *output)
{
    const int32_t in_w = p->in_w, c = p->c, out_h = p->out_h, out_w = p->out_w;
    int32_t oy, ox, ch, ky, kx;
    for (oy = 0; oy < out_h; ++oy) {
        for (ox = 0; ox < out_w; ++ox) {
            const edgec_pool_window w = pool_window(p, oy, ox);
            const int32_t count = (w.ky1 > w.ky0 && w.kx1 > w.kx0) ? (w.ky1 - w.ky0) * (w.kx1 - w.kx0) : 0;
            for (ch = 0; ch < c; ++ch) {
                int32_t sum = 0;
                for (ky = w.ky0; ky < w.ky1; ++ky) {
                    for (kx = w.kx0; kx < w.kx1; ++kx) {
                        sum += input[((w.iy0 + ky) * in_w + (w.ix0 + kx)) * c + ch];
                    }
                }
                *output++ = (int8_t)edgec_clamp(count ? pool_divide(sum, count, rounding) : 0, p->act_min,
                                                p->act_max);
            }
        }
    }
}
