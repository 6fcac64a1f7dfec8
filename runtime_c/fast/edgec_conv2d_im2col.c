/* edgec fast im2col convolution, int8 and int4 weights (declared in edgec_nn.h, machinery in
 * edgec_fast_support.h): edgec_conv2d_im2col_s8, edgec_conv2d_im2col_s4. */
#include "edgec_conv_taps.h"
#include "edgec_fast_support.h"

/* Widen k4 int8 taps into pixel slot j of the 4-pixel im2col: [group][pixel][2 words]. */
static void edgec_conv_cols(const int8_t *taps, int32_t groups, edgec_w32 *cols)
{
    const edgec_w32 *t = (const edgec_w32 *)(const void *)taps;
    for (; groups > 0; --groups, cols += 8) edgec_widen(*t++, cols);
}

#ifdef EDGEC_DSP
#define EDGEC_CONV_PIX(acc, x, off)                                                                \
    do {                                                                                           \
        uint32_t l_, h_;                                                                           \
        E_LDRD(l_, h_, x, off);                                                                    \
        (acc) = E_SMLAD(wl_, l_, (acc));                                                           \
        (acc) = E_SMLAD(wh_, h_, (acc));                                                           \
    } while (0)
#define EDGEC_CONV_GROUP(w, x, off)                                                                \
    do {                                                                                           \
        const uint32_t wl_ = E_SXTB16(w), wh_ = E_SXTB16_ROR8(w);                                  \
        EDGEC_CONV_PIX(a0, x, (off));                                                              \
        EDGEC_CONV_PIX(a1, x, (off) + 2);                                                          \
        EDGEC_CONV_PIX(a2, x, (off) + 4);                                                          \
        EDGEC_CONV_PIX(a3, x, (off) + 6);                                                          \
    } while (0)
#else
#define EDGEC_CONV_PIX(acc, xs) (acc) += (xs)[0] * w0 + (xs)[1] * w2 + (xs)[2] * w1 + (xs)[3] * w3
#define EDGEC_CONV_GROUP(w, x, off)                                                                \
    do {                                                                                           \
        const edgec_h16 *xs_ = (const edgec_h16 *)(const void *)((x) + (off));                     \
        const int32_t w0 = (int8_t)(uint8_t)((w) & 0xffu), w1 = (int8_t)(uint8_t)(((w) >> 8) & 0xffu); \
        const int32_t w2 = (int8_t)(uint8_t)(((w) >> 16) & 0xffu), w3 = (int8_t)(uint8_t)((w) >> 24); \
        EDGEC_CONV_PIX(a0, xs_);                                                                   \
        EDGEC_CONV_PIX(a1, xs_ + 4);                                                               \
        EDGEC_CONV_PIX(a2, xs_ + 8);                                                               \
        EDGEC_CONV_PIX(a3, xs_ + 12);                                                              \
    } while (0)
#endif

/* The accumulators of one block of 4 pixels for output channels [0, m): acc[4 * oc + pixel]. */
static EDGEC_HOT void edgec_conv_macs(const edgec_w32 *cols, int32_t groups, const edgec_w32 *w, const edgec_rq *q,
                                      int32_t m, int32_t *acc)
{
    for (; m > 0; --m, ++q, acc += 4) {
        const edgec_w32 *x = cols;
        int32_t a0 = q->bias, a1 = a0, a2 = a0, a3 = a0, g;
        for (g = groups >> 1; g > 0; --g, w += 2, x += 16) {
            const uint32_t wa = w[0], wb = w[1];
            EDGEC_CONV_GROUP(wa, x, 0);
            EDGEC_CONV_GROUP(wb, x, 8);
        }
        if (groups & 1) {
            const uint32_t wa = *w++;
            EDGEC_CONV_GROUP(wa, x, 0);
        }
        acc[0] = a0;
        acc[1] = a1;
        acc[2] = a2;
        acc[3] = a3;
    }
}

/* o[pixel * out_c + oc] = the requantized acc[4 * oc + pixel], pixel < valid, oc < m. */
static EDGEC_NOINLINE void edgec_conv_requant(const int32_t *acc, int32_t m, const edgec_rq *q, int8_t *o,
                                              int32_t out_c, int32_t valid, int32_t lo, int32_t hi)
{
    int32_t i, j;
    if (valid == 4 && lo == -128 && hi == 127) {
        for (i = m; i > 0; --i, ++q, ++o, acc += 4) {
            const int32_t mult = q->mult, khi = q->khi, neg = q->neg, shift = q->shift;
            o[0] = (int8_t)EDGEC_SAT8(edgec_rq_value(acc[0], mult, khi, neg, shift));
            o[out_c] = (int8_t)EDGEC_SAT8(edgec_rq_value(acc[1], mult, khi, neg, shift));
            o[2 * out_c] = (int8_t)EDGEC_SAT8(edgec_rq_value(acc[2], mult, khi, neg, shift));
            o[3 * out_c] = (int8_t)EDGEC_SAT8(edgec_rq_value(acc[3], mult, khi, neg, shift));
        }
        return;
    }
    for (i = 0; i < m; ++i) {
        for (j = 0; j < valid; ++j) o[i + j * out_c] = edgec_out(acc[4 * i + j], q + i, lo == -128 && hi == 127, lo, hi);
    }
}

void edgec_conv2d_im2col_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                            const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    const int32_t k4 = p->k4, groups = k4 >> 2, out_c = p->out_c, out_w = p->out_w, in_c = p->in_c;
    const int32_t n = p->out_h * out_w;
    /* a 1x1, stride-1, unpadded convolution reads its taps straight from the input pixel */
    const int pointwise = p->k_h == 1 && p->k_w == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
                          p->pad_left == 0 && (in_c & 3) == 0 && p->in_w == out_w;
    edgec_w32 *cols = (edgec_w32 *)(void *)scratch;
    int8_t *row = scratch + 8 * k4;
    int32_t *acc = (int32_t *)(void *)(scratch + 9 * k4);
    int32_t pix, j, oc;
    for (pix = 0; pix < n; pix += 4) {
        const int32_t valid = n - pix < 4 ? n - pix : 4;
        for (j = 0; j < 4; ++j) { /* a short last block repeats its last pixel */
            const int32_t q = pix + (j < valid ? j : valid - 1);
            edgec_conv_cols(pointwise ? input + q * in_c : edgec_conv_taps(p, input, q / out_w, q % out_w, row),
                            groups, cols + 2 * j);
        }
        for (oc = 0; oc < out_c; oc += EDGEC_CONV_CHUNK) {
            const int32_t m = out_c - oc < EDGEC_CONV_CHUNK ? out_c - oc : EDGEC_CONV_CHUNK;
            edgec_conv_macs(cols, groups, (const edgec_w32 *)weights + oc * groups, rq + oc, m, acc);
            edgec_conv_requant(acc, m, rq + oc, output + pix * out_c + oc, out_c, valid, p->act_min, p->act_max);
        }
    }
}

/* ---------------------------------------------------------------- int4 weights (edgec/ops/conv/im2col.py) */
/* im2col convolution with int4 weights: the s8 kernel's 4-pixel im2col, each output channel's weights
 * (k4 + 4) / 8 words of 8 nibbles in PERM8 order, so that one word meets two column groups: (n0, n4) and
 * (n1, n5) the (x0, x2) and (x1, x3) words of the first, the word rotated by 8 bits the second (a short last
 * group: its low half only). */
#ifdef EDGEC_DSP
#define EDGEC_CONV4_GROUP(v, x, off)                                                               \
    do {                                                                                           \
        const uint32_t wl_ = EDGEC_NIBBLES_LO(v), wh_ = EDGEC_NIBBLES_HI(v);                       \
        EDGEC_CONV_PIX(a0, x, (off));                                                              \
        EDGEC_CONV_PIX(a1, x, (off) + 2);                                                          \
        EDGEC_CONV_PIX(a2, x, (off) + 4);                                                          \
        EDGEC_CONV_PIX(a3, x, (off) + 6);                                                          \
    } while (0)
#else
#define EDGEC_CONV4_GROUP(v, x, off)                                                               \
    do {                                                                                           \
        const edgec_h16 *xs_ = (const edgec_h16 *)(const void *)((x) + (off));                     \
        const int32_t w0 = EDGEC_NIBBLE(v, 0), w2 = EDGEC_NIBBLE(v, 4);                            \
        const int32_t w1 = EDGEC_NIBBLE(v, 1), w3 = EDGEC_NIBBLE(v, 5);                            \
        EDGEC_CONV_PIX(a0, xs_);                                                                   \
        EDGEC_CONV_PIX(a1, xs_ + 4);                                                               \
        EDGEC_CONV_PIX(a2, xs_ + 8);                                                               \
        EDGEC_CONV_PIX(a3, xs_ + 12);                                                              \
    } while (0)
#endif

static EDGEC_HOT void edgec_conv_macs_s4(const edgec_w32 *cols, int32_t groups, const uint32_t *w,
                                         const edgec_rq *q, int32_t m, int32_t *acc)
{
    for (; m > 0; --m, ++q, acc += 4) {
        const edgec_w32 *x = cols;
        int32_t a0 = q->bias, a1 = a0, a2 = a0, a3 = a0, g;
        for (g = groups >> 1; g > 0; --g, x += 16) {
            const uint32_t v = *w++, u = edgec_ror(v, 8);
            EDGEC_CONV4_GROUP(v, x, 0);
            EDGEC_CONV4_GROUP(u, x, 8);
        }
        if (groups & 1) {
            const uint32_t v = *w++;
            EDGEC_CONV4_GROUP(v, x, 0);
        }
        acc[0] = a0;
        acc[1] = a1;
        acc[2] = a2;
        acc[3] = a3;
    }
}

void edgec_conv2d_im2col_s4(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                            const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    const int32_t k4 = p->k4, groups = k4 >> 2, words = (groups + 1) >> 1, out_c = p->out_c, out_w = p->out_w;
    const int32_t in_c = p->in_c, n = p->out_h * out_w;
    const int pointwise = p->k_h == 1 && p->k_w == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
                          p->pad_left == 0 && (in_c & 3) == 0 && p->in_w == out_w;
    edgec_w32 *cols = (edgec_w32 *)(void *)scratch;
    int8_t *row = scratch + 8 * k4;
    int32_t *acc = (int32_t *)(void *)(scratch + 9 * k4);
    int32_t pix, j, oc;
    for (pix = 0; pix < n; pix += 4) {
        const int32_t valid = n - pix < 4 ? n - pix : 4;
        for (j = 0; j < 4; ++j) {
            const int32_t q = pix + (j < valid ? j : valid - 1);
            edgec_conv_cols(pointwise ? input + q * in_c : edgec_conv_taps(p, input, q / out_w, q % out_w, row),
                            groups, cols + 2 * j);
        }
        for (oc = 0; oc < out_c; oc += EDGEC_CONV_CHUNK) {
            const int32_t m = out_c - oc < EDGEC_CONV_CHUNK ? out_c - oc : EDGEC_CONV_CHUNK;
            edgec_conv_macs_s4(cols, groups, weights + oc * words, rq + oc, m, acc);
            edgec_conv_requant(acc, m, rq + oc, output + pix * out_c + oc, out_c, valid, p->act_min, p->act_max);
        }
    }
}
