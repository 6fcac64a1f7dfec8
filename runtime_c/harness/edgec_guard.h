/* edgec arena guard (debug builds, `edgec build --arena-guard`; see edgec/plan/guard.py).
 * Canary regions of the arena, each alive from op `first` to op `last` (op indices of the model's graph,
 * -1 = before the first op): edgec_guard_paint fills the regions that come to life, edgec_guard_intact
 * checks every region alive at an op after it ran. */
#ifndef EDGEC_GUARD_H
#define EDGEC_GUARD_H
#include <stdint.h>

typedef struct {
    uint32_t offset;    /* in the arena */
    uint32_t bytes;
    int32_t first;      /* painted before op `first` runs (-1: at the start of the run) */
    int32_t last;       /* checked after every op first..last */
} edgec_guard_region;

/* fill the regions whose `first` is in [first_lo, first_hi] with the canary pattern */
void edgec_guard_paint(int8_t *arena, const edgec_guard_region *r, uint32_t n, int32_t first_lo, int32_t first_hi);
/* 1 if every region alive at `op` still holds the pattern, else 0 */
int edgec_guard_intact(const int8_t *arena, const edgec_guard_region *r, uint32_t n, int32_t op);
#endif
