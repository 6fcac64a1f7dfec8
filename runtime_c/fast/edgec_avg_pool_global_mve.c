/* edgec Helium (MVE) global average pooling (declared in edgec_nn.h): the sums of 8 channels per vector (int16;
 * 4 in int32 past 256 pixels), one widening load and one add per pixel; then TFLite's rounded division per
 * channel. Compiled only for Helium cores (EDGEC_MVE). */
#include "edgec_mve_support.h"

#ifdef EDGEC_MVE
void edgec_avg_pool_global_mve_s8(const edgec_avg_pool_global_params *p, const int8_t *input, int8_t *output)
{
    const int32_t pixels = p->pixels, c = p->c, act_min = p->act_min, act_max = p->act_max;
    int32_t ch, i, j;
    if (pixels <= 256) { /* 8 channels per vector: the sums fit int16 (256 * 128) */
        for (ch = 0; ch < c; ch += 8) {
            const int32_t m = c - ch < 8 ? c - ch : 8;
            const mve_pred16_t keep = vctp16q((uint32_t)m);
            const int8_t *x = input + ch;
            int16x8_t sum = vdupq_n_s16(0);
            int16_t s[8];
            for (i = 0; i < pixels; ++i, x += c) sum = vaddq_s16(sum, vldrbq_z_s16(x, keep));
            vst1q_s16(s, sum);
            for (j = 0; j < m; ++j) {
                const int32_t v = s[j], avg = v > 0 ? (v + pixels / 2) / pixels : (v - pixels / 2) / pixels;
                output[ch + j] = (int8_t)(avg < act_min ? act_min : (avg > act_max ? act_max : avg));
            }
        }
        return;
    }
    for (ch = 0; ch < c; ch += 4) {
        const int32_t m = c - ch < 4 ? c - ch : 4;
        const mve_pred16_t keep = vctp32q((uint32_t)m);
        const int8_t *x = input + ch;
        int32x4_t sum = vdupq_n_s32(0);
        int32_t s[4];
        for (i = 0; i < pixels; ++i, x += c) sum = vaddq_s32(sum, vldrbq_z_s32(x, keep));
        vst1q_s32(s, sum);
        for (j = 0; j < m; ++j) {
            const int32_t avg = s[j] > 0 ? (s[j] + pixels / 2) / pixels : (s[j] - pixels / 2) / pixels;
            output[ch + j] = (int8_t)(avg < act_min ? act_min : (avg > act_max ? act_max : avg));
        }
    }
}
#endif /* EDGEC_MVE */
