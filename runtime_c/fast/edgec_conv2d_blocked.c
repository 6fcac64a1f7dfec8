/* edgec speed-optimized convolution (declared in edgec_nn.h; chosen by `--optimize speed`, the default): the
 * im2col convolution with 2 output pixels x 2 output channels in registers. Each input word is loaded once
 * for two channels and each weight word once for two pixels; the weights are widened to int16 at build time
 * in the order the inner loop reads them (edgec/ops/conv/im2col.py), so the loop is loads and SMLADs only:
 * per 4 input channels of the 2x2 block, 4 LDRD and 8 SMLAD (16 MACs). A 1x1, stride-1, unpadded
 * convolution widens the input pixels themselves (no im2col copy). The requantization follows each block
 * directly, from registers. */
#include "edgec_conv_block2x2.h"
#include "edgec_conv_taps.h"
#include "edgec_fast_support.h"

/* Weights: for each pair of output channels (c, c + 1; an odd last channel paired with a copy of itself), for each
 * group of 4 taps (t0..t3; the groups padded with zero weights to an even count), the int16 words (w0, w2)
 * (w1, w3) of channel c then of channel c + 1. Columns: for each group, pixel 0's words (x0, x2) (x1, x3), then
 * pixel 1's (a padded group's columns are never written: their zero weights cancel whatever they hold).
 * One call: all output channels of 2 pixels, requantized from registers and stored to o0[c], o1[c] (for a
 * lone last pixel o1 == o0: the same value stored twice). */
/* All output channels of 2 pixels; `clamp` of v_ to the activation range. */
#define EDGEC_BLK_PIXELS(name, clamp)                                                              \
    static EDGEC_HOT void name(const edgec_w32 *cols, const edgec_w32 *cend, const edgec_w32 *w,   \
                               const edgec_rq *q, int32_t out_c, int8_t *o0, int8_t *o1, int32_t lo, \
                               int32_t hi)                                                         \
    {                                                                                              \
        for (; out_c > 0; out_c -= 2, q += 2, o0 += 2, o1 += 2) {                                  \
            const int32_t d1 = out_c > 1; /* channel c + 1 goes to o + 1, a copy to o + 0 */       \
            int32_t a00 = q[0].bias, a01 = q[d1].bias, a10 = a00, a11 = a01;                       \
            const edgec_w32 *x = cols;                                                             \
            EDGEC_2X2_REGS                                                                         \
            for (; x < cend; x += 8, w += 8) {                                                     \
                EDGEC_2X2_GROUP(0);                                                                \
                EDGEC_2X2_GROUP(4);                                                                \
            }                                                                                      \
            EDGEC_2X2_STORE(a00 * 2, o0, a10 * 2, o1, q, 0, clamp, EDGEC_NEG_ANY);                                        \
            EDGEC_2X2_STORE(a01 * 2, o0, a11 * 2, o1, q + d1, d1, clamp, EDGEC_NEG_ANY);                                        \
        }                                                                                          \
        (void)lo;                                                                                  \
        (void)hi;                                                                                  \
    }
EDGEC_BLK_PIXELS(edgec_blocked_pixels_full, EDGEC_SAT8(v_))
EDGEC_BLK_PIXELS(edgec_blocked_pixels_clamped, v_ < lo ? lo : (v_ > hi ? hi : v_))

void edgec_conv2d_blocked_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                             const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    const int32_t k4 = p->k4, groups = k4 >> 2, k8 = (k4 + 7) & ~7, out_c = p->out_c, out_w = p->out_w;
    const int32_t in_c = p->in_c, n = p->out_h * out_w;
    const int full = p->act_min == -128 && p->act_max == 127;
    const int pointwise = p->k_h == 1 && p->k_w == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
                          p->pad_left == 0 && (in_c & 3) == 0 && p->in_w == out_w;
    edgec_w32 *cols = (edgec_w32 *)(void *)scratch;
    int8_t *row = scratch + 4 * k8;
    int32_t pix, j, g;
    for (pix = 0; pix < n; pix += 2) {
        const int two = n - pix > 1;
        for (j = 0; j < 2; ++j) { /* a lone last pixel fills both columns */
            const int32_t q = pix + (two ? j : 0);
            const edgec_w32 *t = (const edgec_w32 *)(const void *)(
                pointwise ? input + q * in_c : edgec_conv_taps(p, input, q / out_w, q % out_w, row));
            edgec_w32 *c = cols + 2 * j;
            for (g = groups; g > 0; --g, c += 4) edgec_widen(*t++, c);
        }
        (full ? edgec_blocked_pixels_full : edgec_blocked_pixels_clamped)(
            cols, cols + k8, (const edgec_w32 *)weights, rq, out_c, output + pix * out_c, output + (pix + two) * out_c,
            p->act_min, p->act_max);
    }
}
