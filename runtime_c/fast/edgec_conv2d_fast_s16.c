/* The fast 16x8 convolution (edgec_nn.h, edgec/ops/conv/s16.py): two output pixels at a time, their windows
 * gathered into scratch as int16 (zeros where a window leaves the image: the input zero point is 0), one after the
 * other, or read where they lie (in_place: a 1x1, stride-1, unpadded convolution of in_c a multiple of 4), then
 * two output channels a pass over them: the four int32 sums by SMLAD of the windows' int16 pairs and the weights'
 * SXTB16 pairs (weights of a pair of channels interleaved per group of 4 taps, each group as w0 w2 w1 w3), then
 * TFLite's 64-bit requantization (edgec_rq16_out). The lowering proves |sum + bias| < 2^31. */
#include "edgec_rq16.h"

/* output pixel `pix`'s window (k4 int16, zero padded) into col: tap t at col[t] */
static void edgec_s16_window(const edgec_conv_fast_s16_params *p, const int16_t *input, int32_t pix, int16_t *col)
{
    const int32_t in_c = p->in_c, oy = pix / p->out_w, ox = pix % p->out_w;
    int32_t ky, kx, i;
    int16_t *const end = col + p->k4;
    for (ky = 0; ky < p->k_h; ++ky) {
        const int32_t iy = oy * p->stride_h - p->pad_top + ky * p->dil_h;
        for (kx = 0; kx < p->k_w; ++kx) {
            const int32_t ix = ox * p->stride_w - p->pad_left + kx * p->dil_w;
            if (iy >= 0 && iy < p->in_h && ix >= 0 && ix < p->in_w) {
                const int16_t *px = input + (iy * p->in_w + ix) * in_c;
                for (i = 0; i < in_c; ++i) {
                    *col++ = px[i];
                }
            } else {
                for (i = 0; i < in_c; ++i) {
                    *col++ = 0;
                }
            }
        }
    }
    while (col < end) {
        *col++ = 0;
    }
}

/* the four sums (pixel a and b times channel 0 and 1) over `groups` (>= 1) groups of 4 taps: xa, xb [group][4
 * taps] int16 (word aligned), w [group][channel][4 taps] int8. The assembly's loop and the intrinsics' (clang, the
 * emulated DSP of the host tests) are the same steps. */
#if defined(EDGEC_DSP_NATIVE) && !defined(__clang__) /* as the other blocks of assembly: gcc measured */
EDGEC_INLINE void edgec_s16_block(const int16_t *xa, const int16_t *xb, const uint32_t *w, int32_t groups,
                                  int32_t *s)
{
    int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    uint32_t w0, w1, a0, a1, b, t;
    __asm__ volatile(
        "1:\n\t"
        "ldrd %[w0], %[w1], [%[w]], #8\n\t"
        "ldrd %[a0], %[a1], [%[xa]], #8\n\t"
        "ldr %[b], [%[xb]], #4\n\t"
        "sxtb16 %[t], %[w0]\n\t"
        "smlad %[s0], %[a0], %[t], %[s0]\n\t"
        "smlad %[s2], %[b], %[t], %[s2]\n\t"
        "sxtb16 %[t], %[w1]\n\t"
        "smlad %[s1], %[a0], %[t], %[s1]\n\t"
        "smlad %[s3], %[b], %[t], %[s3]\n\t"
        "ldr %[b], [%[xb]], #4\n\t"
        "sxtb16 %[t], %[w0], ror #8\n\t"
        "smlad %[s0], %[a1], %[t], %[s0]\n\t"
        "smlad %[s2], %[b], %[t], %[s2]\n\t"
        "sxtb16 %[t], %[w1], ror #8\n\t"
        "smlad %[s1], %[a1], %[t], %[s1]\n\t"
        "smlad %[s3], %[b], %[t], %[s3]\n\t"
        "subs %[n], %[n], #1\n\t"
        "bne 1b\n\t"
        : [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [xa] "+r"(xa), [xb] "+r"(xb), [w] "+r"(w),
          [n] "+r"(groups), [w0] "=&r"(w0), [w1] "=&r"(w1), [a0] "=&r"(a0), [a1] "=&r"(a1), [b] "=&r"(b),
          [t] "=&r"(t)
        :
        : "cc", "memory");
    s[0] = s0;
    s[1] = s1;
    s[2] = s2;
    s[3] = s3;
}
#elif defined(EDGEC_DSP)
EDGEC_INLINE void edgec_s16_block(const int16_t *xa, const int16_t *xb, const uint32_t *w, int32_t groups,
                                  int32_t *s)
{
    const edgec_w32 *a = (const edgec_w32 *)(const void *)xa, *b = (const edgec_w32 *)(const void *)xb;
    int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (; groups > 0; --groups, a += 2, b += 2, w += 2) {
        const uint32_t w0 = w[0], w1 = w[1];
        uint32_t t = E_SXTB16(w0);
        s0 = E_SMLAD(a[0], t, s0);
        s2 = E_SMLAD(b[0], t, s2);
        t = E_SXTB16(w1);
        s1 = E_SMLAD(a[0], t, s1);
        s3 = E_SMLAD(b[0], t, s3);
        t = E_SXTB16_ROR8(w0);
        s0 = E_SMLAD(a[1], t, s0);
        s2 = E_SMLAD(b[1], t, s2);
        t = E_SXTB16_ROR8(w1);
        s1 = E_SMLAD(a[1], t, s1);
        s3 = E_SMLAD(b[1], t, s3);
    }
    s[0] = s0;
    s[1] = s1;
    s[2] = s2;
    s[3] = s3;
}
#else
EDGEC_INLINE void edgec_s16_block(const int16_t *xa, const int16_t *xb, const uint32_t *w, int32_t groups,
                                  int32_t *s)
{
    const int8_t *b = (const int8_t *)(const void *)w;
    int32_t g, j;
    s[0] = s[1] = s[2] = s[3] = 0;
    for (g = 0; g < groups; ++g) {
        for (j = 0; j < 2; ++j) {       /* channel j: bytes w0 w2 w1 w3 */
            const int8_t *wj = b + 4 * j;
            s[j] += xa[0] * wj[0] + xa[1] * wj[2] + xa[2] * wj[1] + xa[3] * wj[3];
            s[2 + j] += xb[0] * wj[0] + xb[1] * wj[2] + xb[2] * wj[1] + xb[3] * wj[3];
        }
        xa += 4;
        xb += 4;
        b += 8;
    }
}
#endif

/* the pair's outputs (pixel b's where xb is not xa): two channels a pass over the windows xa, xb. Not inlined: the
 * assembly's 14 registers spill the pass's state into this frame, not under the windows' gathering. */
static EDGEC_NOINLINE void edgec_s16_pair(const edgec_conv_fast_s16_params *p, const int16_t *xa, const int16_t *xb,
                                          const uint32_t *w, const int32_t *r, int16_t *output)
{
    const int32_t out_c = p->out_c, groups = p->k4 >> 2, lo = p->act_min, hi = p->act_max, two = xb != xa;
    const int32_t *const last = r + 3 * (out_c - 1);        /* the last channel's record */
    for (; r <= last; r += 6, output += 2, w += 2 * groups) {
        int32_t s[4];
        edgec_s16_block(xa, xb, w, groups, s);
        output[0] = edgec_rq16_out(s[0], r, lo, hi);
        if (two) {
            output[out_c] = edgec_rq16_out(s[2], r, lo, hi);
        }
        if (r != last) {
            output[1] = edgec_rq16_out(s[1], r + 3, lo, hi);
            if (two) {
                output[out_c + 1] = edgec_rq16_out(s[3], r + 3, lo, hi);
            }
        }
    }
}

void edgec_conv2d_fast_s16(const edgec_conv_fast_s16_params *p, const int16_t *input, const uint32_t *weights,
                           const int32_t *rq, int16_t *scratch, int16_t *output)
{
    const int32_t pixels = p->out_h * p->out_w;
    int32_t pix;
    for (pix = 0; pix < pixels; pix += 2, output += 2 * p->out_c) {
        const int32_t k4 = p->k4, two = pix + 1 < pixels;  /* a second pixel (else pixel b is pixel a, not stored) */
        const int16_t *xa = input + pix * k4;
        if (!p->in_place) {
            xa = scratch;
            edgec_s16_window(p, input, pix, scratch);
            if (two) {
                edgec_s16_window(p, input, pix + 1, scratch + k4);
            }
        }
        edgec_s16_pair(p, xa, two ? xa + k4 : xa, weights, rq, output);
    }
}
