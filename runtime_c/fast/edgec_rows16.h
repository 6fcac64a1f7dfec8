/* What the fast SVDF (fast/edgec_svdf_fast.c) and the fully connected layer with large biases
 * (fast/edgec_fully_connected_bias32.c) share: 4 rows of int16 weights at a time times int8 inputs widened in
 * registers (SXTB16), and TFLite's requantization of any int32 accumulator (a TFLite file's int32 sums wrap: its
 * biases may take the whole int32 range, beyond the one-multiply requantization's |acc| < 2^30 of
 * edgec_fast_support.h). Sums are kept modulo 2^32 (uint32_t), as TFLite Micro's int32 sums wrap. */
#ifndef EDGEC_ROWS16_H
#define EDGEC_ROWS16_H

#include "edgec_fast_support.h"

#include <string.h>

/* 4 bytes at p, any alignment (one LDR where unaligned words may be read) */
EDGEC_INLINE uint32_t edgec_r16_load(const void *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

EDGEC_INLINE void edgec_r16_store(void *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

#ifdef EDGEC_DSP_NATIVE
#define EDGEC_R16_LO(v) E_SXTB16(v)      /* bytes 0 and 2 as two int16 lanes */
#define EDGEC_R16_HI(v) E_SXTB16_ROR8(v) /* bytes 1 and 3 */
#define EDGEC_R16_MAC(a, b, acc) ((uint32_t)E_SMLAD((a), (b), (int32_t)(acc))) /* wraps, as the sums must */
#else
EDGEC_INLINE uint32_t edgec_r16_lanes(uint32_t v)
{
    return (uint32_t)(uint16_t)(int16_t)(int8_t)(uint8_t)(v & 0xffu) |
           (uint32_t)(uint16_t)(int16_t)(int8_t)(uint8_t)((v >> 16) & 0xffu) << 16;
}
EDGEC_INLINE uint32_t edgec_r16_mac(uint32_t a, uint32_t b, uint32_t acc)
{
    return acc + (uint32_t)((int32_t)(int16_t)(uint16_t)(a & 0xffffu) * (int32_t)(int16_t)(uint16_t)(b & 0xffffu)) +
           (uint32_t)((int32_t)(int16_t)(uint16_t)(a >> 16) * (int32_t)(int16_t)(uint16_t)(b >> 16));
}
#define EDGEC_R16_LO(v) edgec_r16_lanes(v)
#define EDGEC_R16_HI(v) edgec_r16_lanes((v) >> 8)
#define EDGEC_R16_MAC(a, b, acc) edgec_r16_mac((a), (b), (acc))
#endif

/* one group of 4 inputs (word v) into the 4 rows' sums; w: the group's 8 weight words, row r's (w0, w2) (w1, w3)
 * at 2r, 2r + 1 */
#define EDGEC_R16_GROUP(v, w, acc)                                                                 \
    do {                                                                                           \
        const uint32_t xl_ = EDGEC_R16_LO(v), xh_ = EDGEC_R16_HI(v);                               \
        (acc)[0] = EDGEC_R16_MAC(xl_, (w)[0], (acc)[0]);                                           \
        (acc)[0] = EDGEC_R16_MAC(xh_, (w)[1], (acc)[0]);                                           \
        (acc)[1] = EDGEC_R16_MAC(xl_, (w)[2], (acc)[1]);                                           \
        (acc)[1] = EDGEC_R16_MAC(xh_, (w)[3], (acc)[1]);                                           \
        (acc)[2] = EDGEC_R16_MAC(xl_, (w)[4], (acc)[2]);                                           \
        (acc)[2] = EDGEC_R16_MAC(xh_, (w)[5], (acc)[2]);                                           \
        (acc)[3] = EDGEC_R16_MAC(xl_, (w)[6], (acc)[3]);                                           \
        (acc)[3] = EDGEC_R16_MAC(xh_, (w)[7], (acc)[3]);                                           \
    } while (0)

/* acc[0..3] += 4 rows . x (n inputs; w: per group of 4 inputs the 8 words of EDGEC_R16_GROUP, the last partial
 * group's missing inputs with weight 0, and not read past x + n) */
EDGEC_INLINE void edgec_r16_dot4(const int8_t *x, int32_t n, const edgec_w32 *w, uint32_t *acc)
{
    uint32_t a[4];
    int32_t g, r;
    a[0] = acc[0];
    a[1] = acc[1];
    a[2] = acc[2];
    a[3] = acc[3];
    for (g = n >> 2; g > 0; --g, x += 4, w += 8) {
        const uint32_t v = edgec_r16_load(x);
        uint32_t q[8];
        E_LDRD(q[0], q[1], w, 0); /* LDRD: gcc would load the 8 words one by one */
        E_LDRD(q[2], q[3], w, 2);
        E_LDRD(q[4], q[5], w, 4);
        E_LDRD(q[6], q[7], w, 6);
        EDGEC_R16_GROUP(v, q, a);
    }
    if (n & 3) {
        uint32_t v = 0;
        for (r = 0; r < (n & 3); ++r) v |= (uint32_t)(uint8_t)x[r] << (8 * r);
        EDGEC_R16_GROUP(v, w, a);
    }
    acc[0] = a[0];
    acc[1] = a[1];
    acc[2] = a[2];
    acc[3] = a[3];
}

#ifdef EDGEC_DSP_NATIVE
#define EDGEC_R16_QADD(a, b) __qadd((a), (b))
#else
EDGEC_INLINE int32_t edgec_r16_qadd(int32_t a, int32_t b)
{
    const int64_t s = (int64_t)a + b;
    return s > INT32_MAX ? INT32_MAX : (s < INT32_MIN ? INT32_MIN : (int32_t)s);
}
#define EDGEC_R16_QADD(a, b) edgec_r16_qadd((a), (b))
#endif

/* TFLite's MultiplyByQuantizedMultiplier(acc, mult, shift) for any int32 acc (here modulo 2^32), mult in
 * [0, 2^31), left = max(shift, 0) <= 30, right = max(-shift, 0), half = 2^(right - 1) and neg = 1 where right > 0
 * (else both 0): gemmlowp's SaturatingRoundingDoublingHighMul is h = floor((x * mult + 2^30) / 2^31) on both signs
 * (its nudge, 1 - 2^30 below 0, with the truncating division), and RoundingDivideByPOT(h, right) is
 * (h + half - [h < 0]) >> right (edgec/ops/fast.py rq_records). That sum is saturated instead of computed
 * exactly: it can only exceed int32 where the result is 2^(31 - right) - 1 or more, which the callers' clamps make
 * the same (edgec/ops/fast.py rq_any: right small enough for the clamp that follows). */
EDGEC_INLINE int32_t edgec_rq_any(uint32_t acc, int32_t mult, int32_t left, int32_t right, int32_t half, int32_t neg)
{
    const int32_t x = (int32_t)(acc << left);
    const int32_t h = (int32_t)(((int64_t)x * mult + ((int64_t)1 << 30)) >> 31);
    return EDGEC_R16_QADD(h, half - (neg & (int32_t)((uint32_t)h >> 31))) >> right;
}

/* edgec_rq_any with no left shift and a right shift of 1 or more (half = 2^(right - 1)) */
EDGEC_INLINE int32_t edgec_rq_right(uint32_t acc, int32_t mult, int32_t right, int32_t half)
{
    const int32_t h = (int32_t)(((int64_t)(int32_t)acc * mult + ((int64_t)1 << 30)) >> 31);
    return EDGEC_R16_QADD(h, half - (int32_t)((uint32_t)h >> 31)) >> right;
}

#endif /* EDGEC_ROWS16_H */
