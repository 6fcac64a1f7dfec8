/* edgec Helium (MVE) kernels' shared machinery (private to fast/; the kernels are declared in ../edgec_nn.h):
 * the requantization of four int32 accumulators at once, bit-exact with edgec_rq_value() of
 * edgec_fast_support.h. EDGEC_MVE is set where the compiler targets Helium's integer instructions
 * (__ARM_FEATURE_MVE: -mcpu=cortex-m55 with the board's FPU, see boards/qemu-cortex-m55.toml); elsewhere the
 * _mve kernels are not compiled (edgec/ops/select.py puts ops on them only for such boards). */
#ifndef EDGEC_MVE_SUPPORT_H
#define EDGEC_MVE_SUPPORT_H

#include "edgec_fast_support.h"

#if defined(__ARM_FEATURE_MVE) && !defined(EDGEC_NO_MVE)
#if !defined(__OPTIMIZE__)
/* At -O0 the compiler keeps a frame pointer (r7) and every value in memory: the kernels' inline assembly then
 * lacks registers, and the compiler's own message ("r7 cannot be used in 'asm' here") does not say why. */
#error "edgec: compile runtime_c/fast/*_mve.c with -Og or higher (-O0 leaves its Helium asm no registers)"
#endif
#define EDGEC_MVE 1
#include <arm_mve.h>

/* n bytes of src to dst, and n bytes of value, 16 per vector (the last block predicated). */
EDGEC_INLINE void edgec_mve_copy(int8_t *dst, const int8_t *src, int32_t n)
{
    for (; n > 0; n -= 16, dst += 16, src += 16) {
        const mve_pred16_t p = vctp8q((uint32_t)n);
        vstrbq_p_s8(dst, vldrbq_z_s8(src, p), p);
    }
}

EDGEC_INLINE void edgec_mve_fill(int8_t *dst, int8_t value, int32_t n)
{
    const int8x16_t v = vdupq_n_s8(value);
    for (; n > 0; n -= 16, dst += 16) vstrbq_p_s8(dst, v, vctp8q((uint32_t)n));
}

/* The requantization constants of four lanes (one output channel broadcast, or four channels). */
typedef struct {
    int32x4_t mult, khi, neg, nshift; /* nshift = -shift: VSHL by a negative count shifts right */
} edgec_mve_rq;

EDGEC_INLINE edgec_mve_rq edgec_mve_rq_one(const edgec_rq *q)
{
    /* a gather with all offsets 0 loads a field into every lane in one instruction */
    const uint32x4_t zero = vdupq_n_u32(0u);
    edgec_mve_rq r;
    r.mult = vldrwq_gather_offset_s32(&q->mult, zero);
    r.khi = vldrwq_gather_offset_s32(&q->khi, zero);
    r.neg = vldrwq_gather_offset_s32(&q->neg, zero);
    r.nshift = vnegq_s32(vldrwq_gather_offset_s32(&q->shift, zero));
    return r;
}

/* Four consecutive records q[0..3] (edgec_rq is five int32: gather with a stride of 5 words). */
EDGEC_INLINE edgec_mve_rq edgec_mve_rq_four(const edgec_rq *q)
{
    const uint32x4_t offs = vmulq_n_u32(vidupq_n_u32(0u, 1), 5u);
    const int32_t *base = (const int32_t *)(const void *)q;
    edgec_mve_rq r;
    r.mult = vldrwq_gather_shifted_offset_s32(base + 1, offs);
    r.khi = vldrwq_gather_shifted_offset_s32(base + 2, offs);
    r.neg = vldrwq_gather_shifted_offset_s32(base + 3, offs);
    r.nshift = vnegq_s32(vldrwq_gather_shifted_offset_s32(base + 4, offs));
    return r;
}

/* The biases of four consecutive records. */
EDGEC_INLINE int32x4_t edgec_mve_bias_four(const edgec_rq *q)
{
    return vldrwq_gather_shifted_offset_s32((const int32_t *)(const void *)q, vmulq_n_u32(vidupq_n_u32(0u, 1), 5u));
}

/* Four dot products of k int8 values, out[j] = sum(s[i] * vj[i]), 16 products per VMLADAVA (the last, partial
 * block with predicated loads: nothing is read past k). Convolution: s is one output channel's weights and
 * vj four pixels' taps; fully connected: s is the input and vj four weight rows. */
EDGEC_INLINE void edgec_mve_dot4(const int8_t *s, const int8_t *v0, const int8_t *v1, const int8_t *v2,
                                 const int8_t *v3, int32_t k, int32_t *out)
{
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    if (k >= 16) { /* the whole blocks: 10 instructions per 64 products (gcc 12 neither post-increments nor
                    * keeps the four pointers apart in registers by itself) */
        __asm__("dls lr, %[n]\n"
                "1:\n"
                "vldrb.u8 q0, [%[s]], #16\n"
                "vldrb.u8 q1, [%[v0]], #16\n"
                "vmladava.s8 %[a0], q1, q0\n"
                "vldrb.u8 q2, [%[v1]], #16\n"
                "vmladava.s8 %[a1], q2, q0\n"
                "vldrb.u8 q3, [%[v2]], #16\n"
                "vmladava.s8 %[a2], q3, q0\n"
                "vldrb.u8 q1, [%[v3]], #16\n"
                "vmladava.s8 %[a3], q1, q0\n"
                "le lr, 1b\n"
                : [a0] "+Te"(a0), [a1] "+Te"(a1), [a2] "+Te"(a2), [a3] "+Te"(a3), [s] "+r"(s), [v0] "+r"(v0),
                  [v1] "+r"(v1), [v2] "+r"(v2), [v3] "+r"(v3)
                : [n] "r"(k >> 4)
                : "q0", "q1", "q2", "q3", "lr", "memory");
        k &= 15;
    }
    if (k > 0) {
        const mve_pred16_t p = vctp8q((uint32_t)k);
        const int8x16_t sv = vldrbq_z_s8(s, p); /* 0 in the lanes past k */
        a0 = vmladavaq_s8(a0, vldrbq_z_s8(v0, p), sv);
        a1 = vmladavaq_s8(a1, vldrbq_z_s8(v1, p), sv);
        a2 = vmladavaq_s8(a2, vldrbq_z_s8(v2, p), sv);
        a3 = vmladavaq_s8(a3, vldrbq_z_s8(v3, p), sv);
    }
    out[0] = a0;
    out[1] = a1;
    out[2] = a2;
    out[3] = a3;
}

/* (((2*acc*mult + 2^31) >> 32) + khi + (acc < 0 ? neg : 0)) >> shift, clamped to [lo, hi]: VQRDMULH is
 * SMMLAR without its addend (it saturates only for acc = mult = INT32_MIN, which |acc| < 2^30 rules out). */
EDGEC_INLINE int32x4_t edgec_mve_requant(int32x4_t acc, edgec_mve_rq r, int32x4_t lo, int32x4_t hi)
{
    int32x4_t v = vaddq_s32(vqrdmulhq_s32(acc, r.mult), r.khi);
    v = vaddq_s32(v, vandq_s32(vshrq_n_s32(acc, 31), r.neg));
    v = vshlq_s32(v, r.nshift);
    return vminq_s32(vmaxq_s32(v, lo), hi);
}
#endif

#endif /* EDGEC_MVE_SUPPORT_H */
