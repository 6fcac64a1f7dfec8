/* edgec arena guard (see edgec_guard.h). */
#include "edgec_guard.h"

/* the canary byte at arena offset i: varies with the position, so a kernel copying one canary over
 * another, or filling memory with one value, still breaks it */
static uint8_t canary(uint32_t i) { return (uint8_t)(0xA5u ^ (i * 29u) ^ (i >> 8)); }

void edgec_guard_paint(int8_t *arena, const edgec_guard_region *r, uint32_t n, int32_t first_lo, int32_t first_hi)
{
    for (uint32_t k = 0; k < n; k++) {
        if (r[k].first < first_lo || r[k].first > first_hi) continue;
        for (uint32_t i = r[k].offset; i < r[k].offset + r[k].bytes; i++) arena[i] = (int8_t)canary(i);
    }
}

int edgec_guard_intact(const int8_t *arena, const edgec_guard_region *r, uint32_t n, int32_t op)
{
    for (uint32_t k = 0; k < n; k++) {
        if (op < r[k].first || op > r[k].last) continue;
        for (uint32_t i = r[k].offset; i < r[k].offset + r[k].bytes; i++)
            if ((uint8_t)arena[i] != canary(i)) return 0;
    }
    return 1;
}
