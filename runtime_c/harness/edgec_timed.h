/* edgec_timed_invoke: the one timed model run of every harness (edgec_link.c, edgec_dataset.c, edgec_mlperf.c). */
#ifndef EDGEC_TIMED_H
#define EDGEC_TIMED_H
#include <stdint.h>

#include "edgec_board.h"

#if defined(__GNUC__) && !defined(__clang__)
#define EDGEC_TIMED_OUTLINE __attribute__((noinline, noclone, unused))
#elif defined(__GNUC__)
#define EDGEC_TIMED_OUTLINE __attribute__((noinline, unused))
#else
#define EDGEC_TIMED_OUTLINE
#endif

/* One timed run: the caller sets invoke, edgec_timed_invoke the rest. */
typedef struct {
    int (*invoke)(void);        /* the model's NAME_invoke */
    int status;                 /* what it returned */
    uint64_t ticks;             /* its ticks */
} edgec_timed_run;

/* run->invoke() between a re-phased tick grid and the tick count after it. Out of line, with the same instructions
 * in every harness: a tick can be coarser than an instruction (the qemu boards' SysTick at 25 MHz under -icount
 * shift=0: 40 emulated instructions), so harness code around the call that differed by 3 instructions (the serial
 * link's and the dataset firmware's) rounded the same run of a model to different ticks (tests/test_farm.py: 520
 * and 560 for the same 556 instructions). Here the grid's phase at t0 and the instructions from t0 to the end do not
 * depend on the harness. Everything in *run: only `run` lives across the calls (an 8 B frame). */
static EDGEC_TIMED_OUTLINE void edgec_timed_invoke(edgec_timed_run *run)
{
    edgec_ticks_align();
    run->ticks = edgec_ticks();
    run->status = run->invoke();
    run->ticks = edgec_ticks() - run->ticks;
}

#endif
