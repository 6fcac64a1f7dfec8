/* edgec GATHER of an activation at run-time indices (TFLite Micro's gather.cc), portable C99. Bit-exact with
 * edgec/ops/gather.py. */
#include <stddef.h>

#include "edgec_nn_support.h"

int edgec_gather_s8(int32_t batch, int32_t outer, int32_t axis_size, int32_t coords, int32_t inner,
                    const int8_t *x, const int32_t *ids, int8_t *y)
{
    int32_t b, o, c, i;
    int outside = 0;
    for (b = 0; b < batch; ++b) {
        for (o = 0; o < outer; ++o) {
            for (c = 0; c < coords; ++c) {
                const int32_t k = ids[(size_t)b * (size_t)coords + (size_t)c];
                const int ok = k >= 0 && k < axis_size;    /* (TFLM's Invoke fails: zeros, then the status) */
                const int8_t *from = x + (((size_t)b * (size_t)outer + (size_t)o) * (size_t)axis_size
                                          + (size_t)(ok ? k : 0)) * (size_t)inner;
                int8_t *to = y + (((size_t)b * (size_t)outer + (size_t)o) * (size_t)coords + (size_t)c) * (size_t)inner;
                outside += !ok;
                for (i = 0; i < inner; ++i) to[i] = ok ? from[i] : (int8_t)0;
            }
        }
    }
    return outside;
}
