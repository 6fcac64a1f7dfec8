/* edgec runtime identity: the ABI version these objects were compiled with (edgec_nn.h's
 * EDGEC_RUNTIME_ABI_VERSION), which every generated model's NAME_init() compares with its own: a build that links
 * one model against another edgec version's runtime objects finds out at init, not by wrong outputs. */
#include <string.h>

#include "edgec_nn.h"

const int32_t edgec_runtime_abi_version = EDGEC_RUNTIME_ABI_VERSION;

void edgec_stage_copy(void *dst, const void *src, uint32_t bytes)
{
#if defined(__thumb2__) && !defined(__ARM_ARCH_6M__)
    uint32_t *d = (uint32_t *)dst;
    const uint32_t *s = (const uint32_t *)src;
    if ((((uintptr_t)d | (uintptr_t)s) & 3u) == 0u) {
        uint32_t n = bytes >> 4;
        for (; n != 0u; --n) {      /* the flash read once, in order: 16 bytes a step */
            __asm__ volatile("ldmia %1!, {r4, r5, r6, r7}\n\tstmia %0!, {r4, r5, r6, r7}"
                             : "+r"(d), "+r"(s) : : "r4", "r5", "r6", "r7", "memory");
        }
        memcpy(d, s, bytes & 15u);
        return;
    }
#endif
    memcpy(dst, src, bytes);
}
