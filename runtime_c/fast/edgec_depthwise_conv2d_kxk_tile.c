/* edgec fast depthwise convolution of any window k_h x k_w on a widened tile, int8 (declared in edgec_nn.h,
 * machinery in edgec_fast_support.h): edgec_depthwise_conv2d_kxk_tile_s8, the `--optimize speed` variant of
 * edgec_depthwise_conv2d_kxk_s8 (same constants: edgec/ops/conv/depthwise_kxk.py). MobileNetV3's and
 * EfficientNet's 5x5 layers at strides 1 and 2 on small images (3x3 to 24x24, 48 to 576 channels).
 *
 * Per group of 4 channels, every input row of the group is widened once into the scratch tile: a record of two
 * words per tile column, the int16 pairs (c0, c2) and (c1, c3) (what SXTB16 gives), the columns the windows reach
 * left and right of the image holding the input zero point (written once per call). A tap is then one LDRD of
 * the record, one LDRD of its weights and four 16x16 multiply-accumulates, with no edge test inside a window row;
 * a 5-tap row is unrolled (immediate offsets: 34 instructions for 20 MACs). Window rows above or below the image
 * add their zero-point terms (zpr, after the weights) to the output row's starting values, computed once per
 * output row and group. The group's accumulators are kept in scratch, then requantized channel by channel with
 * the channel's multiplier, offset and shift in registers. */
#include "edgec_fast_support.h"

/* one tap: the record at x_ + off times the weights at w_ + off into a0..a3 */
#ifdef EDGEC_DSP
#define EDGEC_DWT_TAP(x_, w_, off)                                                                 \
    do {                                                                                           \
        uint32_t xe, xd, we, wd;                                                                   \
        E_LDRD(xe, xd, x_, (off));                                                                 \
        E_LDRD(we, wd, w_, (off));                                                                 \
        a0 = E_SMLABB(xe, we, a0);                                                                 \
        a2 = E_SMLATT(xe, we, a2);                                                                 \
        a1 = E_SMLABB(xd, wd, a1);                                                                 \
        a3 = E_SMLATT(xd, wd, a3);                                                                 \
    } while (0)

/* n outputs of one output row (records `xstep` words apart), each `rows` window rows of 5 taps, dilation 1:
 * `skip` words from one row's first record to the next's; acc[4 i + j] = start[j] + the taps of output i */
static EDGEC_HOT void edgec_dwt_rows5(const edgec_w32 *x, const edgec_w32 *w0, int32_t rows, int32_t skip,
                                      int32_t n, int32_t xstep, const int32_t *start, int32_t *acc)
{
    for (; n > 0; --n, x += xstep, acc += 4) {
        int32_t a0 = start[0], a1 = start[1], a2 = start[2], a3 = start[3], r;
        const edgec_w32 *xr = x, *w = w0;
        for (r = rows; r > 0; --r, xr += skip, w += 10) {
            EDGEC_DWT_TAP(xr, w, 0);
            EDGEC_DWT_TAP(xr, w, 2);
            EDGEC_DWT_TAP(xr, w, 4);
            EDGEC_DWT_TAP(xr, w, 6);
            EDGEC_DWT_TAP(xr, w, 8);
        }
        acc[0] = a0;
        acc[1] = a1;
        acc[2] = a2;
        acc[3] = a3;
    }
}

/* the same for any row length k and dilation: records `step` words apart */
static void edgec_dwt_rows(const edgec_w32 *x, const edgec_w32 *w0, int32_t rows, int32_t skip, int32_t n,
                           int32_t xstep, int32_t k, int32_t step, const int32_t *start, int32_t *acc)
{
    for (; n > 0; --n, x += xstep, acc += 4) {
        int32_t a0 = start[0], a1 = start[1], a2 = start[2], a3 = start[3], r, t;
        const edgec_w32 *w = w0;
        for (r = 0; r < rows; ++r) {
            const edgec_w32 *xt = x + r * skip;
            for (t = 0; t < k; ++t, xt += step, w += 2) {
                const uint32_t xe = xt[0], xd = xt[1], we = w[0], wd = w[1];
                a0 = E_SMLABB(xe, we, a0);
                a2 = E_SMLATT(xe, we, a2);
                a1 = E_SMLABB(xd, wd, a1);
                a3 = E_SMLATT(xd, wd, a3);
            }
        }
        acc[0] = a0;
        acc[1] = a1;
        acc[2] = a2;
        acc[3] = a3;
    }
}

/* n records of the 4 channels at src (pixels c bytes apart) into dst */
EDGEC_INLINE void edgec_dwt_widen(const int8_t *src, int32_t c, int32_t n, edgec_w32 *dst)
{
    for (; n > 0; --n, src += c, dst += 2) {
        const uint32_t v = *(const edgec_w32 *)(const void *)src;
        dst[0] = E_SXTB16(v);
        dst[1] = E_SXTB16_ROR8(v);
    }
}
#else
static void edgec_dwt_rows(const edgec_w32 *xw, const edgec_w32 *w0, int32_t rows, int32_t skip, int32_t n,
                           int32_t xstep, int32_t k, int32_t step, const int32_t *start, int32_t *acc)
{
    for (; n > 0; --n, xw += xstep, acc += 4) {
        const edgec_h16 *w = (const edgec_h16 *)(const void *)w0;
        int32_t r, t;
        acc[0] = start[0];
        acc[1] = start[1];
        acc[2] = start[2];
        acc[3] = start[3];
        for (r = 0; r < rows; ++r) {
            const edgec_h16 *x = (const edgec_h16 *)(const void *)(xw + r * skip);
            for (t = 0; t < k; ++t, x += 2 * step, w += 4) {
                acc[0] += (int32_t)x[0] * w[0];
                acc[2] += (int32_t)x[1] * w[1];
                acc[1] += (int32_t)x[2] * w[2];
                acc[3] += (int32_t)x[3] * w[3];
            }
        }
    }
}

#define edgec_dwt_rows5(x, w, rows, skip, n, xstep, start, acc)                                    \
    edgec_dwt_rows((x), (w), (rows), (skip), (n), (xstep), 5, 2, (start), (acc))

EDGEC_INLINE void edgec_dwt_widen(const int8_t *src, int32_t c, int32_t n, edgec_w32 *dst)
{
    for (; n > 0; --n, src += c, dst += 2) {
        edgec_h16 *d = (edgec_h16 *)(void *)dst;
        d[0] = src[0];
        d[1] = src[2];
        d[2] = src[1];
        d[3] = src[3];
    }
}
#endif

/* the taps [t0, t1) of a window axis that lie inside [0, len) when the window starts at `start` (dilation d) */
EDGEC_INLINE void edgec_dwt_inside(int32_t start, int32_t len, int32_t k, int32_t d, int32_t *t0, int32_t *t1)
{
    int32_t a = start >= 0 ? 0 : (-start + d - 1) / d, b = len - start <= 0 ? 0 : (len - start + d - 1) / d;
    if (a > k) a = k;
    if (b > k) b = k;
    if (b < a) b = a;
    *t0 = a;
    *t1 = b;
}

/* out[i * c] = acc[4 * i] requantized and clamped, i < n (one channel of an output row) */
static EDGEC_NOINLINE void edgec_dwt_requant(const int32_t *acc, int32_t n, const edgec_rq *q, int32_t c,
                                             int32_t lo, int32_t hi, int8_t *out)
{
    const int32_t mult = q->mult, khi = q->khi, neg = q->neg, shift = q->shift;
    if (lo == -128 && hi == 127) {
        for (; n > 0; --n, acc += 4, out += c) {
            const int32_t t = *acc * 2;
            const int32_t v = (E_SMMLAR(t, mult, khi) + ((t >> 31) & neg)) >> shift;
            *out = (int8_t)EDGEC_SAT8(v);
        }
    } else {
        for (; n > 0; --n, acc += 4, out += c) {
            const int32_t t = *acc * 2;
            const int32_t v = (E_SMMLAR(t, mult, khi) + ((t >> 31) & neg)) >> shift;
            *out = (int8_t)(v < lo ? lo : (v > hi ? hi : v));
        }
    }
}

void edgec_depthwise_conv2d_kxk_tile_s8(const edgec_depthwise_conv2d_kxk_params *p, const int8_t *input,
                                        const uint32_t *weights, const edgec_rq *rq, int8_t *scratch,
                                        int8_t *output)
{
    const int32_t c = p->c, kh = p->k_h, kw = p->k_w, dh = p->dil_h, dw = p->dil_w, sw = p->stride_w;
    const int32_t in_h = p->in_h, in_w = p->in_w, out_w = p->out_w, pl = p->pad_left;
    const int32_t tw = (out_w - 1) * sw + (kw - 1) * dw + 1; /* tile columns: input columns [-pl, tw - pl) */
    const int32_t x0 = pl < 0 ? 0 : (pl < tw ? pl : tw);
    const int32_t x1 = pl + in_w < x0 ? x0 : (pl + in_w < tw ? pl + in_w : tw);
    const int32_t rec = 2 * tw; /* words a tile row */
    const uint32_t zw = (uint32_t)(uint16_t)(int16_t)p->input_zp * 0x00010001u;
    const int32_t *zpr = (const int32_t *)(const void *)(weights + kh * kw * c / 2);
    const int unrolled = kw == 5 && dw == 1;
    /* the tile (in_h rows of tw records), then the accumulators of the group's outputs (4 a pixel) */
    edgec_w32 *tile = (edgec_w32 *)(void *)scratch;
    int32_t *acc = (int32_t *)(void *)(scratch + 8 * in_h * tw);
    int32_t y, i, cg, oy, ox, j, ky;
    for (y = 0; y < in_h; ++y) { /* the columns off the image hold the zero point */
        for (i = 0; i < 2 * x0; ++i) tile[y * rec + i] = zw;
        for (i = 2 * x1; i < rec; ++i) tile[y * rec + i] = zw;
    }
    for (cg = 0; cg < c; cg += 4) {
        const edgec_w32 *wg = (const edgec_w32 *)(const void *)weights + 2 * kh * kw * (cg / 4);
        if (x1 > x0)
            for (y = 0; y < in_h; ++y)
                edgec_dwt_widen(input + (y * in_w + x0 - pl) * c + cg, c, x1 - x0, tile + y * rec + 2 * x0);
        for (oy = 0; oy < p->out_h; ++oy) {
            const int32_t y0 = oy * p->stride_h - p->pad_top;
            int32_t r0, r1, start[4];
            edgec_dwt_inside(y0, in_h, kh, dh, &r0, &r1);
            for (j = 0; j < 4; ++j) { /* the bias and the zero-point terms of the window rows off the image */
                int32_t s = rq[cg + j].bias;
                for (ky = 0; ky < r0; ++ky) s += zpr[ky * c + cg + j];
                for (ky = r1; ky < kh; ++ky) s += zpr[ky * c + cg + j];
                start[j] = s;
            }
            {
                int32_t *a = acc + 4 * oy * out_w;
                if (r1 <= r0) { /* the whole window off the image */
                    for (ox = 0; ox < out_w; ++ox)
                        for (j = 0; j < 4; ++j) a[4 * ox + j] = start[j];
                } else if (unrolled) {
                    edgec_dwt_rows5(tile + (y0 + r0 * dh) * rec, wg + 2 * kw * r0, r1 - r0, dh * rec, out_w,
                                    2 * sw, start, a);
                } else {
                    edgec_dwt_rows(tile + (y0 + r0 * dh) * rec, wg + 2 * kw * r0, r1 - r0, dh * rec, out_w,
                                   2 * sw, kw, 2 * dw, start, a);
                }
            }
        }
        for (j = 0; j < 4; ++j)
            edgec_dwt_requant(acc + j, p->out_h * out_w, rq + cg + j, c, p->act_min, p->act_max, output + cg + j);
    }
}
