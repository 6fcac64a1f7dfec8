/* edgec fast global average pooling (declared in edgec_nn.h). With the DSP extension, channels 8 (then 4) at a time
 * when rows are whole words: per pixel one word of 4 channels added into two words of int16 lanes by two SXTAB16
 * (a lane holds the exact sum of up to 256 pixels; longer images are summed 256 pixels at a time); the other
 * channels one at a time. */
#include "edgec_fast_support.h"

/* the rounded average of `sum` over `pixels`, clamped to the activation range */
EDGEC_INLINE int8_t edgec_avg_out(int32_t sum, int32_t pixels, int32_t act_min, int32_t act_max)
{
    const int32_t avg = sum > 0 ? (sum + pixels / 2) / pixels : (sum - pixels / 2) / pixels;
    return (int8_t)(avg < act_min ? act_min : (avg > act_max ? act_max : avg));
}

#ifdef EDGEC_DSP
/* the int16 lanes of a word */
#define EDGEC_AVG_LO(v) ((int32_t)(int16_t)(uint16_t)((v) & 0xffffu))
#define EDGEC_AVG_HI(v) ((int32_t)(int16_t)(uint16_t)((v) >> 16))
/* 4 channels of a word v added into the lanes of lo (channels 0, 2) and hi (1, 3) */
#define EDGEC_AVG_ADD(lo, hi, v)                                                                   \
    do {                                                                                           \
        (lo) = E_SXTAB16((lo), (v));                                                               \
        (hi) = E_SXTAB16_ROR8((hi), (v));                                                          \
    } while (0)
/* the sums of `words` words (4 channels each; 1 or 2) at x over `pixels` pixels `stride` bytes apart, channel k's
 * into s[k] (s[4..7] 0 for one word) */
static EDGEC_NOINLINE void edgec_avg_sums(const int8_t *x, int32_t stride, int32_t pixels, int32_t words, int32_t *s)
{
    int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0, k;
    while (pixels > 0) {
        const int32_t n = pixels < 256 ? pixels : 256;
        uint32_t a = 0, b = 0, c = 0, d = 0; /* channels (0, 2) (1, 3) (4, 6) (5, 7) */
        pixels -= n;
        if (words == 2) {
            for (k = n >> 1; k > 0; --k, x += 2 * stride) { /* two pixels a step */
                const edgec_w32 *p = (const edgec_w32 *)(const void *)x;
                const edgec_w32 *q = (const edgec_w32 *)(const void *)(x + stride);
                const uint32_t v = p[0], u = p[1], v2 = q[0], u2 = q[1];
                EDGEC_AVG_ADD(a, b, v);
                EDGEC_AVG_ADD(c, d, u);
                EDGEC_AVG_ADD(a, b, v2);
                EDGEC_AVG_ADD(c, d, u2);
            }
            if (n & 1) {
                const edgec_w32 *p = (const edgec_w32 *)(const void *)x;
                EDGEC_AVG_ADD(a, b, p[0]);
                EDGEC_AVG_ADD(c, d, p[1]);
                x += stride;
            }
            s4 += EDGEC_AVG_LO(c);
            s5 += EDGEC_AVG_LO(d);
            s6 += EDGEC_AVG_HI(c);
            s7 += EDGEC_AVG_HI(d);
        } else {
            for (k = n; k > 0; --k, x += stride) EDGEC_AVG_ADD(a, b, ((const edgec_w32 *)(const void *)x)[0]);
        }
        s0 += EDGEC_AVG_LO(a);
        s1 += EDGEC_AVG_LO(b);
        s2 += EDGEC_AVG_HI(a);
        s3 += EDGEC_AVG_HI(b);
    }
    s[0] = s0;
    s[1] = s1;
    s[2] = s2;
    s[3] = s3;
    s[4] = s4;
    s[5] = s5;
    s[6] = s6;
    s[7] = s7;
}
#endif

void edgec_avg_pool_global_s8(const edgec_avg_pool_global_params *p, const int8_t *input, int8_t *output)
{
    const int32_t pixels = p->pixels, c = p->c, act_min = p->act_min, act_max = p->act_max;
    int32_t ch = 0, i;
#ifdef EDGEC_DSP
    if ((c & 3) == 0 && ((uintptr_t)input & 3) == 0) {
        int32_t s[8];
        for (; ch < c; ch += 8) {
            const int32_t words = c - ch >= 8 ? 2 : 1;
            edgec_avg_sums(input + ch, c, pixels, words, s);
            for (i = 0; i < 4 * words; ++i) output[ch + i] = edgec_avg_out(s[i], pixels, act_min, act_max);
        }
        return;
    }
#endif
    for (; ch < c; ++ch) {
        const int8_t *x = input + ch;
        int32_t sum = 0;
        for (i = 0; i < pixels; ++i, x += c) sum += *x;
        output[ch] = edgec_avg_out(sum, pixels, act_min, act_max);
    }
}
