/* edgec Helium (MVE) add (declared in edgec_nn.h, machinery in edgec_mve_support.h): 4 values per vector, each
 * input's rescaling by a gather from its 256-entry table, one vector requantization. Compiled only for Helium
 * cores (EDGEC_MVE). */
#include "edgec_mve_support.h"

#ifdef EDGEC_MVE
void edgec_add_lut_mve_s8(const edgec_add_lut_params *p, const int8_t *input1, const int8_t *input2,
                          const int32_t *lut1, const int32_t *lut2, const edgec_rq *rq, int8_t *output)
{
    const edgec_mve_rq q = edgec_mve_rq_one(rq);
    const int32x4_t lo = vdupq_n_s32(p->act_min), hi = vdupq_n_s32(p->act_max);
    int32_t n = p->n;
    /* the tables are indexed by value + 128: the gathers start at entry 128 and take the sign-extended values as
     * offsets (a negative one wraps: the 32-bit address is base + 4 * value); output may be input1 (in place) */
    lut1 += 128;
    lut2 += 128;
    if (rq->neg == -1) { /* the usual record: the correction is acc >> 31 (no mask), the record's other fields scalar
                          * operands: no vector register for them, none spilled (IC's adds: 17 -> 14 a vector) */
        const int32_t mult = rq->mult, khi = rq->khi, nshift = -rq->shift;
        for (; n >= 4; n -= 4, input1 += 4, input2 += 4, output += 4) {
            const uint32x4_t i1 = vreinterpretq_u32_s32(vldrbq_s32(input1));
            const uint32x4_t i2 = vreinterpretq_u32_s32(vldrbq_s32(input2));
            const int32x4_t acc = vaddq_s32(vldrwq_gather_shifted_offset_s32(lut1, i1),
                                            vldrwq_gather_shifted_offset_s32(lut2, i2));
            const int32x4_t v = vaddq_s32(vaddq_n_s32(vqrdmulhq_n_s32(acc, mult), khi), vshrq_n_s32(acc, 31));
            vstrbq_s32(output, vminq_s32(vmaxq_s32(vshlq_r_s32(v, nshift), lo), hi));
        }
    }
    for (; n >= 4; n -= 4, input1 += 4, input2 += 4, output += 4) {
        const uint32x4_t i1 = vreinterpretq_u32_s32(vldrbq_s32(input1));
        const uint32x4_t i2 = vreinterpretq_u32_s32(vldrbq_s32(input2));
        const int32x4_t acc = vaddq_s32(vldrwq_gather_shifted_offset_s32(lut1, i1),
                                        vldrwq_gather_shifted_offset_s32(lut2, i2));
        vstrbq_s32(output, edgec_mve_requant(acc, q, lo, hi));
    }
    if (n > 0) { /* the last 1-3 values */
        const mve_pred16_t keep = vctp32q((uint32_t)n);
        const uint32x4_t i1 = vreinterpretq_u32_s32(vldrbq_z_s32(input1, keep));
        const uint32x4_t i2 = vreinterpretq_u32_s32(vldrbq_z_s32(input2, keep));
        const int32x4_t acc = vaddq_s32(vldrwq_gather_shifted_offset_z_s32(lut1, i1, keep),
                                        vldrwq_gather_shifted_offset_z_s32(lut2, i2, keep));
        vstrbq_p_s32(output, edgec_mve_requant(acc, q, lo, hi), keep);
    }
}
#endif /* EDGEC_MVE */
