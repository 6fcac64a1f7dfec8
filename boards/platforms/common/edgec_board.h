/* edgec board support API: what the benchmark firmware and the link protocol need from a board.
 * One header for every edgec platform (each platform builder adds this folder to the include path);
 * implemented by the edgec-qemu BSPs (bsp/arm: bare-metal Cortex-M, bsp/riscv: RV32 virt), the edgec-host
 * BSP, and on real boards by edgec_ticks_mcu.c (time) + the generated templates/arduino_main.cpp.j2 (serial). */
#ifndef EDGEC_BOARD_H
#define EDGEC_BOARD_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void     edgec_board_init(void);                 /* UART + tick counter; called before main() */
void     edgec_uart_putc(uint8_t c);
int      edgec_uart_getc(void);                   /* blocking, returns 0..255 */
int      edgec_uart_try_getc(void);               /* -1 if nothing is pending */
void     edgec_uart_write(const void *buf, size_t n);
void     edgec_uart_flush(void);                  /* push buffered output out (no-op on UARTs) */
uint64_t edgec_ticks(void);                       /* 64-bit tick counter */
uint32_t edgec_tick_hz(void);                     /* ticks per second of edgec_ticks() */
void     edgec_ticks_align(void);                 /* re-phase the tick grid; call right before t0 */
void     edgec_exit(int code) __attribute__((noreturn));
/* Optional (weak defaults in edgec_link.c report "not measured"): stack high-water mark by painting. */
void     edgec_stack_paint(void);                 /* fill the free stack below SP with a pattern */
int32_t  edgec_stack_used(void);                  /* bytes of stack touched since the paint, or -1 */
uint32_t edgec_stack_size(void);                  /* bytes reserved for the stack, or 0 if unknown */

#ifdef __cplusplus
}
#endif
#endif
