/* edgec speed-optimized convolution without im2col (declared in edgec_nn.h; chosen by `--optimize speed`, the
 * default, for kernels larger than 1x1): the input rows a kernel window covers are widened to int16 once each,
 * into a ring of k_h rows in scratch (padding pixels and rows hold the input zero point, whose contribution the
 * folded bias removes; the channels padded to a multiple of 4), and the dot products read the taps of one
 * kernel row straight from there: k_w * c4 int16 values that lie side by side in a widened row. 2 output
 * pixels x 2 output channels in registers, as in fast/edgec_conv_blocked_fast.c, whose weight order this kernel
 * shares except that each pixel's taps are [ky][kx][c4] (edgec/codegen/specialize.py): per 4 taps of the 2x2
 * block, 4 LDRD and 8 SMLAD, and no copy of the taps per output pixel. The requantization follows each block
 * directly, from registers. */
#include "edgec_fast_support.h"

#include <string.h>

/* One group of 4 taps of both pixels (xa, xb: 2 words each) and both channels (w: 2 words of channel c, then 2
 * of channel c + 1), at word offsets `off` (input) and 2 * off (weights). */
#ifdef EDGEC_DSP
#define EDGEC_WIN_GROUP(off)                                                                       \
    do {                                                                                           \
        E_LDRD(x0, x1, xa, (off));                                                                 \
        E_LDRD(wa, wb, w, 2 * (off));                                                              \
        E_LDRD(x2, x3, xb, (off));                                                                 \
        a00 = E_SMLAD(x0, wa, a00);                                                                \
        a00 = E_SMLAD(x1, wb, a00);                                                                \
        a10 = E_SMLAD(x2, wa, a10);                                                                \
        a10 = E_SMLAD(x3, wb, a10);                                                                \
        E_LDRD(wa, wb, w, 2 * (off) + 2);                                                          \
        a01 = E_SMLAD(x0, wa, a01);                                                                \
        a01 = E_SMLAD(x1, wb, a01);                                                                \
        a11 = E_SMLAD(x2, wa, a11);                                                                \
        a11 = E_SMLAD(x3, wb, a11);                                                                \
    } while (0)
#define EDGEC_WIN_REGS uint32_t x0, x1, x2, x3, wa, wb;
#else
#define EDGEC_WIN_TAP(i)                                                                           \
    do {                                                                                           \
        const int32_t p_ = xs_[(i)], r_ = ys_[(i)], u_ = ws_[(i)], v_ = ws_[4 + (i)];              \
        a00 += p_ * u_;                                                                            \
        a10 += r_ * u_;                                                                            \
        a01 += p_ * v_;                                                                            \
        a11 += r_ * v_;                                                                            \
    } while (0)
#define EDGEC_WIN_GROUP(off)                                                                       \
    do {                                                                                           \
        const edgec_h16 *xs_ = (const edgec_h16 *)(const void *)(xa + (off));                      \
        const edgec_h16 *ys_ = (const edgec_h16 *)(const void *)(xb + (off));                      \
        const edgec_h16 *ws_ = (const edgec_h16 *)(const void *)(w + 2 * (off));                   \
        EDGEC_WIN_TAP(0);                                                                          \
        EDGEC_WIN_TAP(1);                                                                          \
        EDGEC_WIN_TAP(2);                                                                          \
        EDGEC_WIN_TAP(3);                                                                          \
    } while (0)
#define EDGEC_WIN_REGS
#endif

/* Requantize one channel (record q) of both pixels, store at o0[d], o1[d]. */
#define EDGEC_WIN_STORE(acc0, acc1, q, d, clamp)                                                  \
    do {                                                                                           \
        const int32_t m_ = (q)->mult, k_ = (q)->khi, n_ = (q)->neg, s_ = (q)->shift;               \
        const int32_t t0_ = (acc0) * 2, t1_ = (acc1) * 2;                                          \
        int32_t v_ = (E_SMMLAR(t0_, m_, k_) + ((t0_ >> 31) & n_)) >> s_;                           \
        o0[d] = (int8_t)(clamp);                                                                   \
        v_ = (E_SMMLAR(t1_, m_, k_) + ((t1_ >> 31) & n_)) >> s_;                                   \
        o1[d] = (int8_t)(clamp);                                                                   \
    } while (0)

/* All output channels of 2 pixels: pixel 0's taps of kernel row 0 start at x, pixel 1's at x + b; seg words per
 * kernel row, rows row_words apart. */
#define EDGEC_WIN_PIXELS(name, clamp, seg_words)                                                   \
    static EDGEC_HOT void name(const edgec_w32 *x, int32_t b, int32_t k_h, int32_t seg, int32_t row_words,  \
                               const edgec_w32 *w, const edgec_rq *q, int32_t out_c, int8_t *o0, int8_t *o1, \
                               int32_t lo, int32_t hi)                                             \
    {                                                                                              \
        const int32_t skip = row_words - (seg_words);                                              \
        for (; out_c > 0; out_c -= 2, q += 2, o0 += 2, o1 += 2) {                                  \
            const int32_t d1 = out_c > 1; /* channel c + 1 goes to o + 1, a copy to o + 0 */       \
            int32_t a00 = q[0].bias, a01 = q[d1].bias, a10 = a00, a11 = a01, ky;                   \
            const edgec_w32 *xa = x, *xb = x + b;                                                  \
            for (ky = k_h; ky > 0; --ky, xa += skip, xb += skip) {                                 \
                const edgec_w32 *end = xa + ((seg_words) & ~3);                                    \
                EDGEC_WIN_REGS                                                                     \
                for (; xa < end; xa += 4, xb += 4, w += 8) {                                       \
                    EDGEC_WIN_GROUP(0);                                                            \
                    EDGEC_WIN_GROUP(2);                                                            \
                }                                                                                  \
                if ((seg_words) & 2) {                                                             \
                    EDGEC_WIN_GROUP(0);                                                            \
                    xa += 2;                                                                       \
                    xb += 2;                                                                       \
                    w += 4;                                                                        \
                }                                                                                  \
            }                                                                                      \
            EDGEC_WIN_STORE(a00, a10, q, 0, clamp);                                                \
            EDGEC_WIN_STORE(a01, a11, q + d1, d1, clamp);                                          \
        }                                                                                          \
        (void)seg;                                                                                 \
        (void)lo;                                                                                  \
        (void)hi;                                                                                  \
    }
#define EDGEC_WIN_CLAMP (v_ < lo ? lo : (v_ > hi ? hi : v_))
EDGEC_WIN_PIXELS(edgec_window_pixels_full, EDGEC_SAT8(v_), seg)
EDGEC_WIN_PIXELS(edgec_window_pixels_clamped, EDGEC_WIN_CLAMP, seg)
/* 3 or 4 input channels, k_w = 3 (the first layer of an image model): 6 words per kernel row, unrolled */
EDGEC_WIN_PIXELS(edgec_window_pixels_rgb_full, EDGEC_SAT8(v_), 6)
EDGEC_WIN_PIXELS(edgec_window_pixels_rgb_clamped, EDGEC_WIN_CLAMP, 6)

typedef void (*edgec_window_pixels_fn)(const edgec_w32 *, int32_t, int32_t, int32_t, int32_t, const edgec_w32 *,
                                       const edgec_rq *, int32_t, int8_t *, int8_t *, int32_t, int32_t);

/* Input row iy (a padding row outside the image) widened into dst: wp pixels from ix = -pad_left, c4 int16 each
 * in the order of edgec_widen. */
static void edgec_window_row(const edgec_conv2d_im2col_params *p, const int8_t *input, int32_t iy, int32_t wp,
                             int32_t c4, edgec_w32 *dst)
{
    const int32_t in_c = p->in_c, in_w = p->in_w, x0 = -p->pad_left;
    const uint32_t zp = (uint32_t)(uint8_t)(int8_t)p->input_zp * 0x01010101u;
    const int inside = iy >= 0 && iy < p->in_h;
    int32_t ix = x0, first = inside ? (x0 < 0 ? 0 : x0) : x0 + wp, last = inside ? x0 + wp : x0;
    int32_t c;
    if (last > in_w) last = in_w;
    if (last < first) last = first;
    for (; ix < first; ++ix) {
        for (c = 0; c < c4; c += 4, dst += 2) edgec_widen(zp, dst);
    }
    if (ix < last) {
        const int8_t *s = input + (iy * in_w + ix) * in_c;
        if ((in_c & 3) == 0) {
            const edgec_w32 *v = (const edgec_w32 *)(const void *)s;
            for (c = (last - ix) * in_c; c > 0; c -= 4, dst += 2) edgec_widen(*v++, dst);
        } else {
            for (; ix < last; ++ix, s += in_c) {
                for (c = 0; c < c4; c += 4, dst += 2) {
                    uint32_t v = 0;
                    int32_t j;
                    for (j = 3; j >= 0; --j) v = (v << 8) | (c + j < in_c ? (uint8_t)s[c + j] : 0u);
                    edgec_widen(v, dst);
                }
            }
        }
        ix = last;
    }
    for (; ix < x0 + wp; ++ix) {
        for (c = 0; c < c4; c += 4, dst += 2) edgec_widen(zp, dst);
    }
}

void edgec_conv2d_window_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                            const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    const int32_t c4 = (p->in_c + 3) & ~3, k_h = p->k_h, out_w = p->out_w, out_c = p->out_c;
    const int32_t wp = (out_w - 1) * p->stride_w + p->k_w, row_words = wp * c4 / 2, step = p->stride_w * c4 / 2;
    const int32_t seg = p->k_w * c4 / 2, sh = p->stride_h;
    const int full = p->act_min == -128 && p->act_max == 127;
    const edgec_window_pixels_fn pixels = seg == 6 ? (full ? edgec_window_pixels_rgb_full
                                                           : edgec_window_pixels_rgb_clamped)
                                                   : (full ? edgec_window_pixels_full : edgec_window_pixels_clamped);
    edgec_w32 *rows = (edgec_w32 *)(void *)scratch; /* input rows iy0 .. iy0 + k_h - 1, widened */
    int32_t oy, ox, r;
    for (oy = 0; oy < p->out_h; ++oy) {
        const int32_t iy0 = oy * sh - p->pad_top;
        r = 0;
        if (oy > 0 && sh < k_h) { /* the rows the last window shares with this one move up */
            r = k_h - sh;
            memmove(rows, rows + sh * row_words, (size_t)(r * row_words) * 4u);
        }
        for (; r < k_h; ++r) edgec_window_row(p, input, iy0 + r, wp, c4, rows + r * row_words);
        for (ox = 0; ox < out_w; ox += 2) {
            const int two = out_w - ox > 1; /* a lone last pixel is computed twice and stored once */
            int8_t *o = output + (oy * out_w + ox) * out_c;
            pixels(rows + ox * step, two * step, k_h, seg, row_words, (const edgec_w32 *)weights, rq, out_c, o,
                   o + two * out_c, p->act_min, p->act_max);
        }
    }
}
