/* Stack high-water mark on vendor-framework boards, by painting (the bench link calls these around every
 * run; runtime_c/harness/edgec_link.c has weak defaults that report "not measured").
 *   EDGEC_STACK_NEWLIB_ESTACK: one MSP stack growing down from the linker symbol _estack (STM32duino's
 *   linker scripts) towards newlib's heap.  The free bytes between the heap's top (sbrk(0) when painting)
 *   and 64 bytes below the caller's frame are painted; the untouched depth after the run is the high-water
 *   mark.  A malloc during the run would take painted bytes and count as stack: an over-estimate, never less.
 * Without a selection this file defines nothing and the bench reports the stack as not measured. */
#include <stdint.h>

#if defined(EDGEC_STACK_NEWLIB_ESTACK)
#include <stddef.h>

void *sbrk(ptrdiff_t increment);     /* newlib's; <unistd.h> hides it under -std=c99 (strict ISO C) */

#define STACK_PAINT 0x5AC35AC3u
extern uint32_t _estack;
static uint32_t *paint_from;

void edgec_stack_paint(void);
int32_t edgec_stack_used(void);
uint32_t edgec_stack_size(void);

void edgec_stack_paint(void)
{
    uint32_t *p = (uint32_t *)(((uintptr_t)sbrk(0) + 3u) & ~(uintptr_t)3u), *sp;
    __asm volatile("mov %0, sp" : "=r"(sp));
    paint_from = p;
    for (sp -= 16; p < sp; p++) *p = STACK_PAINT;
}

int32_t edgec_stack_used(void)
{
    const uint32_t *p = paint_from;
    if (!p) return -1;
    while (p < &_estack && *p == STACK_PAINT) p++;
    return (int32_t)((const char *)&_estack - (const char *)p);
}

uint32_t edgec_stack_size(void)
{
    uintptr_t top = (uintptr_t)sbrk(0);
    return (uint32_t)((uintptr_t)&_estack - top);
}
#endif
