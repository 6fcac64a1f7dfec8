/* edgec speed-optimized convolution for short dot products (declared in edgec_nn.h; the `pointwise` variant of
 * `--optimize speed`, edgec/ops/conv/im2col.py): 2 output pixels x 2 output channels in registers like
 * edgec_conv2d_blocked_s8, but with no loop over the taps and a cheaper store, for the 1x1 convolutions of
 * MobileNets whose dot products are short (8..64 taps), where the per-output work used to dominate:
 *   - the taps are not looped over: the unrolled body of 16 groups of 4 taps is entered part-way (a switch whose
 *     cases fall through), so a dot product of k4 taps runs k4 / 4 groups of 4 LDRD + 8 SMLAD and one branch;
 *     longer ones run whole bodies of 64 taps first;
 *   - the weights and the bias are doubled at build time, so the accumulator is already the 2 * acc the
 *     requantization multiplies (no shift per output) and the bias seeds the first SMLAD;
 *   - the requantization records of a channel pair are read once for both pixels.
 * Any convolution runs on it (an im2col row per pixel where it is not a plain 1x1); the build uses it for 1x1. */
#include "edgec_conv_block2x2.h"
#include "edgec_conv_taps.h"
#include "edgec_fast_support.h"

/* Weights: for each pair of output channels (c, c + 1; an odd last channel paired with a copy of itself), for each
 * group of 4 taps (t0..t3), the doubled int16 words (w0, w2) (w1, w3) of channel c then of channel c + 1.
 * Columns: for each group, pixel 0's widened words (x0, x2) (x1, x3), then pixel 1's. */
/* a switch case that goes on into the next one, said so for the compilers that check */
#if defined(__has_attribute)
#if __has_attribute(fallthrough)
#define EDGEC_FALLTHROUGH __attribute__((fallthrough))
#endif
#endif
#ifndef EDGEC_FALLTHROUGH
#define EDGEC_FALLTHROUGH ((void)0)
#endif

/* groups 0 .. n-1 of the current body (n in 1..16; more: all 16), highest first: cases fall through */
#define EDGEC_PW_GROUPS(n)                                                                         \
    switch (n) {                                                                                   \
    default: EDGEC_2X2_GROUP(60); EDGEC_FALLTHROUGH;                                                \
    case 15: EDGEC_2X2_GROUP(56); EDGEC_FALLTHROUGH;                                                \
    case 14: EDGEC_2X2_GROUP(52); EDGEC_FALLTHROUGH;                                                \
    case 13: EDGEC_2X2_GROUP(48); EDGEC_FALLTHROUGH;                                                \
    case 12: EDGEC_2X2_GROUP(44); EDGEC_FALLTHROUGH;                                                \
    case 11: EDGEC_2X2_GROUP(40); EDGEC_FALLTHROUGH;                                                \
    case 10: EDGEC_2X2_GROUP(36); EDGEC_FALLTHROUGH;                                                 \
    case 9: EDGEC_2X2_GROUP(32); EDGEC_FALLTHROUGH;                                                  \
    case 8: EDGEC_2X2_GROUP(28); EDGEC_FALLTHROUGH;                                                  \
    case 7: EDGEC_2X2_GROUP(24); EDGEC_FALLTHROUGH;                                                  \
    case 6: EDGEC_2X2_GROUP(20); EDGEC_FALLTHROUGH;                                                  \
    case 5: EDGEC_2X2_GROUP(16); EDGEC_FALLTHROUGH;                                                  \
    case 4: EDGEC_2X2_GROUP(12); EDGEC_FALLTHROUGH;                                                  \
    case 3: EDGEC_2X2_GROUP(8); EDGEC_FALLTHROUGH;                                                  \
    case 2: EDGEC_2X2_GROUP(4); EDGEC_FALLTHROUGH;                                                  \
    case 1: EDGEC_2X2_GROUP(0);                                                                     \
    }

/* All output channels of 2 pixels (columns `cols`, `groups` groups of 4 taps; records q .. qend - 1, their bias
 * fields 2 * bias, an odd count followed by a copy of the last); `clamp` of v_ to the activation range, `fix` the negative accumulators' correction. */
#define EDGEC_PW_PIXELS(name, clamp, fix)                                                               \
    static EDGEC_HOT void name(const edgec_w32 *cols, int32_t groups, const edgec_w32 *w, const edgec_rq *q, \
                               const edgec_rq *qend, int8_t *o0, int8_t *o1, int32_t lo, int32_t hi) \
    {                                                                                              \
        for (;; q += 2, o0 += 2, o1 += 2) {                                                        \
            int32_t a00 = q[0].bias, a01 = q[1].bias, a10 = a00, a11 = a01, g = groups;            \
            const edgec_w32 *x = cols;                                                             \
            EDGEC_2X2_REGS                                                                          \
            for (;; g -= 16, x += 64, w += 64) { /* whole bodies of 16 groups, then the rest */     \
                EDGEC_PW_GROUPS(g)                                                                 \
                if (g <= 16) break;                                                                \
            }                                                                                      \
            w += 4 * g;                                                                            \
            EDGEC_2X2_STORE(a00, o0, a10, o1, q, 0, clamp, fix);                                                \
            if (q + 1 == qend) break; /* an odd last channel: its pair is a copy */                \
            EDGEC_2X2_STORE(a01, o0, a11, o1, q + 1, 1, clamp, fix);                                            \
            if (q + 2 == qend) break;                                                              \
        }                                                                                          \
        (void)lo;                                                                                  \
        (void)hi;                                                                                  \
    }
/* the full int8 range with every neg -1 (the usual layer), or some neg 0; any other range (both kinds of neg) */
EDGEC_PW_PIXELS(edgec_pointwise_pixels_full, EDGEC_SAT8(v_), EDGEC_NEG_ALL)
EDGEC_PW_PIXELS(edgec_pointwise_pixels_full_anyneg, EDGEC_SAT8(v_), EDGEC_NEG_ANY)
EDGEC_PW_PIXELS(edgec_pointwise_pixels_clamped, v_ < lo ? lo : (v_ > hi ? hi : v_), EDGEC_NEG_ANY)

void edgec_conv2d_pointwise_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                               const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    const int32_t k4 = p->k4, groups = k4 >> 2, out_c = p->out_c, out_w = p->out_w;
    const int32_t in_c = p->in_c, n = p->out_h * out_w;
    const int full = p->act_min == -128 && p->act_max == 127;
    int negs = 1;
    const int plain = p->k_h == 1 && p->k_w == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
                      p->pad_left == 0 && (in_c & 3) == 0 && p->in_w == out_w;
    void (*pixels)(const edgec_w32 *, int32_t, const edgec_w32 *, const edgec_rq *, const edgec_rq *, int8_t *,
                   int8_t *, int32_t, int32_t);
    edgec_w32 *cols = (edgec_w32 *)(void *)scratch;
    int8_t *row = scratch + 4 * k4;
    int32_t pix, j, g;
    for (j = 0; j < out_c; ++j) negs &= rq[j].neg == -1;
    pixels = !full ? edgec_pointwise_pixels_clamped
                   : negs ? edgec_pointwise_pixels_full : edgec_pointwise_pixels_full_anyneg;
    for (pix = 0; pix < n; pix += 2) {
        const int32_t second = n - pix > 1 ? pix + 1 : pix; /* a lone last pixel fills both columns */
        edgec_w32 *c = cols;
        if (plain) { /* both pixels' taps are input words: widen them side by side */
            const edgec_w32 *t0 = (const edgec_w32 *)(const void *)(input + pix * in_c);
            const edgec_w32 *t1 = (const edgec_w32 *)(const void *)(input + second * in_c);
            for (g = groups; g > 0; --g, c += 4) {
                edgec_widen(*t0++, c);
                edgec_widen(*t1++, c + 2);
            }
        } else {
            for (j = 0; j < 2; ++j, c = cols + 2) {
                const int32_t q = j ? second : pix;
                const edgec_w32 *t =
                    (const edgec_w32 *)(const void *)edgec_conv_taps(p, input, q / out_w, q % out_w, row);
                edgec_w32 *d = c;
                for (g = groups; g > 0; --g, d += 4) edgec_widen(*t++, d);
            }
        }
        pixels(cols, groups, (const edgec_w32 *)weights, rq, rq + out_c, output + pix * out_c,
               output + second * out_c, p->act_min, p->act_max);
    }
}
