/* edgec fast global average pooling (declared in edgec_nn.h). */
#include "../edgec_nn_support.h"

void edgec_avg_pool_global_s8(int32_t pixels, int32_t c, int32_t act_min, int32_t act_max,
                              const int8_t *input, int8_t *output)
{
    int32_t ch, i;
    for (ch = 0; ch < c; ++ch) {
        const int8_t *x = input + ch;
        int32_t sum = 0, avg;
        for (i = 0; i < pixels; ++i, x += c) sum += *x;
        avg = sum > 0 ? (sum + pixels / 2) / pixels : (sum - pixels / 2) / pixels;
        output[ch] = (int8_t)(avg < act_min ? act_min : (avg > act_max ? act_max : avg));
    }
}
