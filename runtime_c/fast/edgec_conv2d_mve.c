/* edgec Helium (MVE) convolution (declared in edgec_nn.h, machinery in edgec_mve_support.h): int8 dot products
 * of 3 output pixels by 2 output channels (VMLADAVA, 16 taps per instruction, no widening), then a vector
 * requantization pass. Depthwise 3x3: edgec_depthwise_conv2d_3x3_mve.c. Compiled only for Helium cores (EDGEC_MVE). */
#include "edgec_mve_support.h"

#ifdef EDGEC_MVE
/* ---------------------------------------------------------------- convolution */
/* The k_h*k_w*in_c int8 taps of output pixel (oy, ox) in weight order [ky][kx][ic]: the input pixel itself
 * for a 1x1 kernel (unless the k4 bytes read from there would pass the input's end), else gathered into row
 * with padded taps holding the input zero point (which the folded bias removes). */
static const int8_t *edgec_mve_taps(const edgec_conv2d_im2col_params *p, const int8_t *input, int32_t oy,
                                    int32_t ox, int8_t *row)
{
    const int32_t in_c = p->in_c, in_w = p->in_w, k_w = p->k_w, span = k_w * in_c;
    const int32_t iy0 = oy * p->stride_h - p->pad_top, ix0 = ox * p->stride_w - p->pad_left;
    const int8_t zp = (int8_t)p->input_zp;
    int32_t kx0 = ix0 < 0 ? -ix0 : 0, kx1 = in_w - ix0 < k_w ? in_w - ix0 : k_w;
    int32_t ky;
    int8_t *r = row;
    if (p->k_h == 1 && k_w == 1 && iy0 >= 0 && iy0 < p->in_h && ix0 >= 0 && ix0 < in_w &&
        (iy0 * in_w + ix0) * in_c + p->k4 <= p->in_h * in_w * in_c) {
        return input + (iy0 * in_w + ix0) * in_c; /* past in_c: the next pixel's values, times zero weights */
    }
    if (kx0 == 0 && kx1 == k_w && iy0 >= 0 && iy0 + p->k_h <= p->in_h) { /* inside: a copy per kernel row */
        const int8_t *src = input + (iy0 * in_w + ix0) * in_c;
        if (span <= 16) {
            const mve_pred16_t keep = vctp8q((uint32_t)span);
            for (ky = 0; ky < p->k_h; ++ky, r += span, src += in_w * in_c) {
                vstrbq_p_s8(r, vldrbq_z_s8(src, keep), keep);
            }
        } else {
            for (ky = 0; ky < p->k_h; ++ky, src += in_w * in_c) {
                const int8_t *s = src;
                int32_t n;
                for (n = span; n > 0; n -= 16, r += 16, s += 16) {
                    const mve_pred16_t keep = vctp8q((uint32_t)n);
                    vstrbq_p_s8(r, vldrbq_z_s8(s, keep), keep);
                }
                r += n; /* n <= 0: back to the end of this row's span */
            }
        }
        return row;
    }
    if (kx1 < kx0) kx1 = kx0;
    if (span <= 16) { /* short rows at the border: the inside part gathered, the zero point elsewhere */
        const mve_pred16_t keep = vctp8q((uint32_t)span);
        const mve_pred16_t in = (mve_pred16_t)(vctp8q((uint32_t)(kx1 * in_c)) & ~vctp8q((uint32_t)(kx0 * in_c)));
        const uint8x16_t offs = vsubq_n_u8(vidupq_n_u8(0u, 1), (uint8_t)(kx0 * in_c)); /* masked lanes wrap */
        const int8x16_t zv = vdupq_n_s8(zp);
        for (ky = 0; ky < p->k_h; ++ky, r += span) {
            const int32_t iy = iy0 + ky;
            if (iy < 0 || iy >= p->in_h || kx1 == kx0) {
                vstrbq_p_s8(r, zv, keep);
            } else {
                const int8_t *src = input + (iy * in_w + ix0 + kx0) * in_c;
                vstrbq_p_s8(r, vpselq_s8(vldrbq_gather_offset_z_s8(src, offs, in), zv, in), keep);
            }
        }
        return row;
    }
    for (ky = 0; ky < p->k_h; ++ky, r += span) {
        const int32_t iy = iy0 + ky;
        if (iy < 0 || iy >= p->in_h || kx1 == kx0) {
            edgec_mve_fill(r, zp, span);
            continue;
        }
        if (kx0 > 0) edgec_mve_fill(r, zp, kx0 * in_c);
        edgec_mve_copy(r + kx0 * in_c, input + (iy * in_w + ix0 + kx0) * in_c, (kx1 - kx0) * in_c);
        if (kx1 < k_w) edgec_mve_fill(r + kx1 * in_c, zp, (k_w - kx1) * in_c);
    }
    return row;
}

/* acc[4 * oc + j]: the dot products of output channel oc's weights with the taps xj of pixel j < 3, for the
 * channel pairs (oc, oc + 1) < 2 * pairs, over k16 taps (k rounded up to 16: the weights are 0 past k, whatever
 * the taps hold there). Weights [pair][k16 / 16][2][16]: each 16-tap block of the two channels side by side, so
 * one pointer walks them. 12 instructions per 96 products (two weight vectors, three pixels' taps, six
 * VMLADAVA); gcc 12 neither post-increments nor keeps this many pointers and accumulators in registers. */
static EDGEC_NOINLINE void edgec_mve_conv_macs(const int8_t *const *xp, const int8_t *w, int32_t k16, int32_t pairs,
                                               int32_t *acc)
{
    const int32_t more = (k16 >> 4) - 1;
    const int8_t *x0 = xp[0], *x1 = xp[1], *x2 = xp[2];
    int32_t a0, a1, a2, b0, b1, b2;
    const int8_t *v0, *v1, *v2;
    __asm__ volatile("0:\n"
                     "ldr %[v0], %[x0]\n"
                     "ldr %[v1], %[x1]\n"
                     "ldr %[v2], %[x2]\n"
                     "vldrb.u8 q0, [%[w]], #16\n"
                     "vldrb.u8 q1, [%[w]], #16\n"
                     "vldrb.u8 q2, [%[v0]], #16\n"
                     "vmladav.s8 %[a0], q2, q0\n"
                     "vmladav.s8 %[b0], q2, q1\n"
                     "vldrb.u8 q3, [%[v1]], #16\n"
                     "vmladav.s8 %[a1], q3, q0\n"
                     "vmladav.s8 %[b1], q3, q1\n"
                     "vldrb.u8 q2, [%[v2]], #16\n"
                     "vmladav.s8 %[a2], q2, q0\n"
                     "vmladav.s8 %[b2], q2, q1\n"
                     "ldr lr, %[more]\n"
                     "wls lr, lr, 2f\n"
                     "1:\n"
                     "vldrb.u8 q0, [%[w]], #16\n"
                     "vldrb.u8 q1, [%[w]], #16\n"
                     "vldrb.u8 q2, [%[v0]], #16\n"
                     "vmladava.s8 %[a0], q2, q0\n"
                     "vmladava.s8 %[b0], q2, q1\n"
                     "vldrb.u8 q3, [%[v1]], #16\n"
                     "vmladava.s8 %[a1], q3, q0\n"
                     "vmladava.s8 %[b1], q3, q1\n"
                     "vldrb.u8 q2, [%[v2]], #16\n"
                     "vmladava.s8 %[a2], q2, q0\n"
                     "vmladava.s8 %[b2], q2, q1\n"
                     "le lr, 1b\n"
                     "2:\n"
                     "strd %[a0], %[a1], [%[acc]]\n"
                     "str %[a2], [%[acc], #8]\n"
                     "strd %[b0], %[b1], [%[acc], #16]\n"
                     "str %[b2], [%[acc], #24]\n"
                     "add %[acc], #32\n"
                     "subs %[m], #1\n"
                     "bne 0b\n"
                     : [a0] "=&Te"(a0), [a1] "=&Te"(a1), [a2] "=&Te"(a2), [b0] "=&Te"(b0), [b1] "=&Te"(b1),
                       [b2] "=&Te"(b2), [v0] "=&r"(v0), [v1] "=&r"(v1), [v2] "=&r"(v2), [w] "+&r"(w),
                       [acc] "+&r"(acc), [m] "+&r"(pairs)
                     : [x0] "m"(x0), [x1] "m"(x1), [x2] "m"(x2), [more] "m"(more)
                     : "q0", "q1", "q2", "q3", "lr", "memory", "cc");
}

/* The requantized outputs of `valid` pixels (o, o + out_c, ...) from acc[4 * oc + pixel]; rq4 holds the
 * records of 4 channels at a time as vectors: [out_c / 4][bias, mult, khi, neg, -shift][4] (edgec/ops/conv/im2col.py rq_vectors).
 * A pixel's 4 channels are one gather (stride 4 words): no register-hungry de-interleave. */
#define EDGEC_MVE_RQ_PIXEL(j) edgec_mve_requant(vaddq_s32(vldrwq_gather_shifted_offset_s32(acc + (j), offs), bias), \
                                                q, lo, hi)
static EDGEC_NOINLINE void edgec_mve_conv_requant(const int32_t *acc, const int32_t *rq4, int32_t out_c, int8_t *o,
                                                  int32_t valid, int32x4_t lo, int32x4_t hi)
{
    const uint32x4_t offs = vidupq_n_u32(0u, 4);
    int32_t oc;
    for (oc = 0; oc < out_c; oc += 4, acc += 16, rq4 += 20, o += 4) {
        const int32x4_t bias = vldrwq_s32(rq4);
        edgec_mve_rq q;
        q.mult = vldrwq_s32(rq4 + 4);
        q.khi = vldrwq_s32(rq4 + 8);
        q.neg = vldrwq_s32(rq4 + 12);
        q.nshift = vldrwq_s32(rq4 + 16);
        if (out_c - oc >= 4) {
            vstrbq_s32(o, EDGEC_MVE_RQ_PIXEL(0));
            if (valid > 1) vstrbq_s32(o + out_c, EDGEC_MVE_RQ_PIXEL(1));
            if (valid > 2) vstrbq_s32(o + 2 * out_c, EDGEC_MVE_RQ_PIXEL(2));
        } else { /* the last 1-3 channels */
            const mve_pred16_t keep = vctp32q((uint32_t)(out_c - oc));
            vstrbq_p_s32(o, EDGEC_MVE_RQ_PIXEL(0), keep);
            if (valid > 1) vstrbq_p_s32(o + out_c, EDGEC_MVE_RQ_PIXEL(1), keep);
            if (valid > 2) vstrbq_p_s32(o + 2 * out_c, EDGEC_MVE_RQ_PIXEL(2), keep);
        }
    }
}
#undef EDGEC_MVE_RQ_PIXEL

/* Weights: see edgec_mve_conv_macs (k16 = p->k4: k_h*k_w*in_c rounded up to 16, zero padded). scratch: the
 * accumulators, 64 * ceil(out_c / 4) bytes (16-byte aligned), then 3 pixels' taps (3 * k16; 4 * k16 given). */
void edgec_conv2d_mve_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                         const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    const int32_t n = p->out_h * p->out_w, out_w = p->out_w, out_c = p->out_c;
    const int32x4_t lo = vdupq_n_s32(p->act_min), hi = vdupq_n_s32(p->act_max);
    int32_t *acc = (int32_t *)(void *)scratch;
    int8_t *rows = scratch + 64 * ((out_c + 3) / 4);
    /* a pointwise layer reads its taps in place (past in_c: the next pixel's, times zero weights), except
     * where the k4 bytes would pass the input's end */
    const int pointwise = p->k_h == 1 && p->k_w == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
                          p->pad_left == 0 && p->in_w == out_w;
    const int32_t in_place = pointwise && n * p->in_c >= p->k4 ? (n * p->in_c - p->k4) / p->in_c : -1; /* last */
    int32_t pix, j;
    for (pix = 0; pix < n; pix += 3) {
        const int32_t valid = n - pix < 3 ? n - pix : 3;
        const int8_t *x[3];
        for (j = 0; j < 3; ++j) { /* a short last block repeats its last pixel */
            if (j >= valid) {
                x[j] = x[valid - 1];
            } else if (pix + j <= in_place) {
                x[j] = input + (pix + j) * p->in_c;
            } else {
                x[j] = edgec_mve_taps(p, input, (pix + j) / out_w, (pix + j) % out_w, rows + j * p->k4);
            }
        }
        edgec_mve_conv_macs(x, (const int8_t *)(const void *)weights, p->k4, (out_c + 1) / 2, acc);
        edgec_mve_conv_requant(acc, (const int32_t *)(const void *)rq, out_c, output + pix * out_c, valid, lo, hi);
    }
}

#endif /* EDGEC_MVE */
