/* edgec_ticks() on real microcontrollers: the board's cycle (or microsecond) counter, read directly
 * from its registers, so it needs no vendor framework and compiles with any gcc for the core.
 * Select one with -DEDGEC_TIMER_<method> (from the board profile's [timing] method) and give the
 * counter's rate with -DEDGEC_TICK_HZ=<hz>u, or with -DEDGEC_TICK_HZ_CORE_CLOCK for a counter that runs at
 * the core clock: then the firmware reports CMSIS's SystemCoreClock, the clock the framework really set up
 * (STM32duino 2.12 runs the H743 at 480 MHz where PlatformIO's board file says 400), not a profile's number:
 *   EDGEC_TIMER_DWT_CYCCNT   Cortex-M3/M4/M7/M33/M55: DWT->CYCCNT (core cycles)
 *   EDGEC_TIMER_RP2040_TIMER RP2040 (Cortex-M0+ has no cycle counter): the 64-bit 1 MHz TIMER
 *   EDGEC_TIMER_CCOUNT       Xtensa (ESP32-S3): the CCOUNT special register (core cycles)
 * 32-bit counters are extended to 64 bits on every read, so one timed region must be shorter than
 * one wrap (2^32 cycles: 17.9 s at 240 MHz, 35.8 s at 120 MHz). */
#include <stdint.h>
#include "edgec_board.h"

#if !defined(EDGEC_TICK_HZ) && !defined(EDGEC_TICK_HZ_CORE_CLOCK)
#error "define EDGEC_TICK_HZ (ticks per second of the selected counter) or EDGEC_TICK_HZ_CORE_CLOCK"
#endif

#if defined(EDGEC_TIMER_DWT_CYCCNT)
#define DEMCR (*(volatile uint32_t *)0xE000EDFCu)      /* bit 24 TRCENA */
#define DWT_CTRL (*(volatile uint32_t *)0xE0001000u)   /* bit 0 CYCCNTENA */
#define DWT_CYCCNT (*(volatile uint32_t *)0xE0001004u)
#define DWT_LAR (*(volatile uint32_t *)0xE0001FB0u)    /* Cortex-M7: software lock, unlock key below */
static void counter_start(void)
{
    if (DWT_CTRL & 1u) return;
    DEMCR |= 1u << 24;
    DWT_LAR = 0xC5ACCE55u;
    DWT_CYCCNT = 0;
    DWT_CTRL |= 1u;
}
static uint32_t counter_read32(void) { return DWT_CYCCNT; }

#elif defined(EDGEC_TIMER_CCOUNT)
static void counter_start(void) { }
static uint32_t counter_read32(void)
{
    uint32_t c;
    __asm__ volatile("rsr %0, ccount" : "=a"(c));
    return c;
}

#elif defined(EDGEC_TIMER_RP2040_TIMER)
#define TIMERAWH (*(volatile uint32_t *)0x40054024u)   /* raw (unlatched) reads: safe beside the SDK's */
#define TIMERAWL (*(volatile uint32_t *)0x40054028u)
static void counter_start(void) { }
#else
#error "define one of EDGEC_TIMER_DWT_CYCCNT, EDGEC_TIMER_RP2040_TIMER or EDGEC_TIMER_CCOUNT"
#endif

uint64_t edgec_ticks(void)
{
#if defined(EDGEC_TIMER_RP2040_TIMER)
    uint32_t hi, lo, hi2;
    do {
        hi = TIMERAWH;
        lo = TIMERAWL;
        hi2 = TIMERAWH;
    } while (hi != hi2);
    return ((uint64_t)hi << 32) | lo;
#else
    static uint32_t last, wraps;
    counter_start();
    uint32_t now = counter_read32();
    if (now < last) wraps++;
    last = now;
    return ((uint64_t)wraps << 32) | now;
#endif
}

#if defined(EDGEC_TICK_HZ_CORE_CLOCK)
extern uint32_t SystemCoreClock;     /* CMSIS: every Cortex-M vendor's system file keeps it current */
uint32_t edgec_tick_hz(void) { return SystemCoreClock; }
#else
uint32_t edgec_tick_hz(void) { return EDGEC_TICK_HZ; }
#endif
void edgec_ticks_align(void) { counter_start(); }
