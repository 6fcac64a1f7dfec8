/* QEMU riscv32 'virt' board support: NS16550A UART @0x10000000 (polled), the mcycle counter,
 * exit through the sifive_test device @0x100000. */
#include <stdint.h>
#include "edgec_board.h"

#define UART ((volatile uint8_t *)(uintptr_t)EDGEC_UART_BASE)
#define RBR 0
#define THR 0
#define FCR 2
#define LCR 3
#define LSR 5                          /* bit0 data ready, bit5 THR empty */

void edgec_board_init(void)
{
    UART[LCR] = 0x03;                  /* 8N1 */
    UART[FCR] = 0xC7;                  /* FIFO on + cleared, RX trigger level 14 (QEMU then accepts 14 bytes per read) */
    /* QEMU: if host bytes arrived before this point the chardev is throttled and the FIFO reset
     * does not un-throttle it (RX would stall forever); an RBR read does. */
    (void)UART[RBR];
}
void edgec_uart_putc(uint8_t c) { while (!(UART[LSR] & 0x20u)) {} UART[THR] = c; }
int edgec_uart_try_getc(void) { return (UART[LSR] & 1u) ? (int)UART[RBR] : -1; }
int edgec_uart_getc(void) { int c; while ((c = edgec_uart_try_getc()) < 0) {} return c; }
void edgec_uart_write(const void *buf, size_t n) { const uint8_t *p = buf; while (n--) edgec_uart_putc(*p++); }
void edgec_uart_flush(void) { }

/* mcycle: under QEMU `-icount shift=0` it reads the virtual clock in ns, i.e. an exact count of
 * emulated instructions (without icount it would be the host TSC and mean nothing). */
uint64_t edgec_ticks(void)
{
    uint32_t hi, lo, hi2;
    do {
        __asm volatile("csrr %0, mcycleh" : "=r"(hi));
        __asm volatile("csrr %0, mcycle" : "=r"(lo));
        __asm volatile("csrr %0, mcycleh" : "=r"(hi2));
    } while (hi != hi2);
    return ((uint64_t)hi << 32) | lo;
}
uint32_t edgec_tick_hz(void) { return EDGEC_F_CPU; }
void edgec_ticks_align(void) { }

void edgec_exit(int code)
{
    *(volatile uint32_t *)0x100000u = code ? ((uint32_t)code << 16) | 0x3333u : 0x5555u;
    for (;;) {}
}
