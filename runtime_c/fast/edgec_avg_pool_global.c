/* edgec fast global average pooling (declared in edgec_nn.h). */
#include "../edgec_nn_support.h"

void edgec_avg_pool_global_s8(const edgec_avg_pool_global_params *p, const int8_t *input, int8_t *output)
{
    const int32_t pixels = p->pixels, c = p->c, act_min = p->act_min, act_max = p->act_max;
    int32_t ch, i;
    for (ch = 0; ch < c; ++ch) {
        const int8_t *x = input + ch;
        int32_t sum = 0, avg;
        for (i = 0; i < pixels; ++i, x += c) sum += *x;
        avg = sum > 0 ? (sum + pixels / 2) / pixels : (sum - pixels / 2) / pixels;
        output[ch] = (int8_t)(avg < act_min ? act_min : (avg > act_max ? act_max : avg));
    }
}
