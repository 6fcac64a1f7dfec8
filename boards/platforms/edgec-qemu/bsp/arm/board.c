/* QEMU Cortex-M board support: UART0 driver (CMSDK, Stellaris PL011 or nRF51), SysTick as a 64-bit
 * counter, semihosting exit, newlib syscalls. */
#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>
#include "edgec_board.h"

#ifndef EDGEC_UART_WFI
#define EDGEC_UART_WFI 1  /* sleep in WFI until the UART RX interrupt (less QEMU lock contention) */
#endif
#define REG(off) (*(volatile uint32_t *)(EDGEC_UART_BASE + (off)))

#if defined(EDGEC_UART_CMSDK)          /* ARM CMSDK APB UART: MPS2 AN385/386/500, MPS3 AN547 */
#define U_DATA 0x00
#define U_STATE 0x04                   /* bit0 TX full, bit1 RX full */
#define U_CTRL 0x08                    /* bit0 TX en, bit1 RX en, bit3 RX irq en */
#define U_INTCLR 0x0C
#define U_BAUDDIV 0x10
static void uart_init(void)
{
    REG(U_BAUDDIV) = EDGEC_F_CPU / 115200;
    REG(U_CTRL) = 3u | (EDGEC_UART_WFI ? 1u << 3 : 0u);
    (void)REG(U_DATA);   /* QEMU: a DATA read un-throttles the chardev if the host sent early bytes */
}
static inline void uart_irq_ack(void) { REG(U_INTCLR) = 2; }
static inline void uart_irq_arm(void) { }
void edgec_uart_putc(uint8_t c) { while (REG(U_STATE) & 1u) {} REG(U_DATA) = c; }
int edgec_uart_try_getc(void) { return (REG(U_STATE) & 2u) ? (int)(REG(U_DATA) & 0xffu) : -1; }

#elif defined(EDGEC_UART_STELLARIS)    /* Stellaris UART (PL011 derivative): LM3S6965 */
#define U_DR 0x000
#define U_FR 0x018                     /* bit4 RXFE, bit5 TXFF */
#define U_IBRD 0x024
#define U_FBRD 0x028
#define U_LCRH 0x02C
#define U_CTL 0x030
#define U_IM 0x038
#define U_ICR 0x044
static void uart_init(void)
{
    REG(U_CTL) = 0;
    REG(U_IBRD) = 6; REG(U_FBRD) = 50;          /* 115200 @ 12.5 MHz */
    REG(U_LCRH) = (3u << 5) | (1u << 4);        /* 8N1, FIFOs on */
    REG(U_CTL) = (1u << 0) | (1u << 8) | (1u << 9);
    if (EDGEC_UART_WFI) REG(U_IM) = (1u << 4) | (1u << 6);   /* RXIM | RTIM */
    /* QEMU: enabling the FIFO empties it without un-throttling the chardev; a DR read does. */
    if (REG(U_FR) & (1u << 4)) (void)REG(U_DR);
}
static inline void uart_irq_ack(void) { REG(U_ICR) = (1u << 4) | (1u << 6); }
static inline void uart_irq_arm(void) { }
void edgec_uart_putc(uint8_t c) { while (REG(U_FR) & (1u << 5)) {} REG(U_DR) = c; }
int edgec_uart_try_getc(void) { return (REG(U_FR) & (1u << 4)) ? -1 : (int)(REG(U_DR) & 0xffu); }

#elif defined(EDGEC_UART_NRF51)        /* nRF51 UART: BBC micro:bit */
#define T_STARTRX 0x000
#define T_STARTTX 0x008
#define E_RXDRDY 0x108
#define E_TXDRDY 0x11C
#define U_INTENSET 0x304
#define U_INTENCLR 0x308
#define U_ENABLE 0x500
#define U_RXD 0x518
#define U_TXD 0x51C
#define U_BAUD 0x524
static void uart_init(void)
{
    REG(U_BAUD) = 0x01D7E000u;         /* 115200 */
    REG(U_ENABLE) = 4;
    REG(T_STARTTX) = 1;
    REG(T_STARTRX) = 1;
}
/* The nRF51 UART interrupt is a level (EVENTS_RXDRDY && INTEN): the handler masks it, the reader
 * re-arms it, otherwise the handler would re-enter forever. */
static inline void uart_irq_ack(void) { REG(U_INTENCLR) = 1u << 2; }
static inline void uart_irq_arm(void) { REG(U_INTENSET) = 1u << 2; }
void edgec_uart_putc(uint8_t c) { REG(E_TXDRDY) = 0; REG(U_TXD) = c; while (!REG(E_TXDRDY)) {} }
int edgec_uart_try_getc(void)
{
    if (!REG(E_RXDRDY)) return -1;
    REG(E_RXDRDY) = 0;                 /* clear first: reading RXD re-raises it if more bytes are queued */
    return (int)(REG(U_RXD) & 0xffu);
}

#else
#error "define EDGEC_UART_CMSDK, EDGEC_UART_STELLARIS or EDGEC_UART_NRF51"
#endif

/* RX: sleep in WFI until the RX interrupt; the handler only acknowledges, data is read in thread
 * mode.  PRIMASK around check+WFI: a byte arriving in between still wakes the WFI. */
#define NVIC_ISER ((volatile uint32_t *)0xE000E100)
void edgec_uart_irq_handler(void);
void edgec_uart_irq_handler(void) { uart_irq_ack(); }
int edgec_uart_getc(void)
{
    int c;
#if EDGEC_UART_WFI
    for (;;) {
        __asm volatile("cpsid i" ::: "memory");
        uart_irq_arm();
        c = edgec_uart_try_getc();
        if (c < 0) __asm volatile("wfi");
        __asm volatile("cpsie i" ::: "memory");   /* a pending RX interrupt is taken here */
        if (c >= 0) return c;
    }
#else
    while ((c = edgec_uart_try_getc()) < 0) {}
    return c;
#endif
}
void edgec_uart_write(const void *buf, size_t n) { const uint8_t *p = buf; while (n--) edgec_uart_putc(*p++); }
void edgec_uart_flush(void) { }

/* ---- SysTick as a 64-bit counter: 24-bit down-counter + wrap interrupt ---- */
#define SYST_CSR (*(volatile uint32_t *)0xE000E010)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018)
#define SCB_ICSR (*(volatile uint32_t *)0xE000ED04)   /* bit26 PENDSTSET */
static volatile uint32_t systick_wraps;
void SysTick_Handler(void);
void SysTick_Handler(void) { systick_wraps++; }
uint64_t edgec_ticks(void)
{
    uint32_t primask, hi, lo;
    __asm volatile("mrs %0, primask\n cpsid i" : "=r"(primask) :: "memory");
    hi = systick_wraps;
    lo = SYST_CVR;
    if (SCB_ICSR & (1u << 26)) { lo = SYST_CVR; hi++; }   /* wrapped, exception still pending */
    __asm volatile("msr primask, %0" :: "r"(primask) : "memory");
    /* a period is 2^24 ticks; CVR==0 is position 0 of the period that 'hi' already counts */
    return ((uint64_t)hi << 24) + ((0x01000000u - lo) & 0x00FFFFFFu);
}
/* Stop+start SysTick: QEMU restarts the period here, so under -icount the work measured right
 * after gives bit-identical tick counts whatever host I/O timing preceded it. */
void edgec_ticks_align(void) { SYST_CSR &= ~1u; SYST_CSR |= 1u; }
uint32_t edgec_tick_hz(void) { return EDGEC_F_CPU; }

void edgec_board_init(void)
{
    uart_init();
    if (EDGEC_UART_WFI) NVIC_ISER[EDGEC_UART_IRQN / 32] = 1u << (EDGEC_UART_IRQN % 32);
    SYST_RVR = 0x00FFFFFF; SYST_CVR = 0;
    SYST_CSR = 7;                    /* CLKSOURCE=CPU, TICKINT, ENABLE */
}

/* ---- semihosting exit (QEMU: -semihosting-config enable=on,target=native) ---- */
void edgec_exit(int code)
{
    uint32_t blk[2] = {0x20026u /* ADP_Stopped_ApplicationExit */, (uint32_t)code};
    register int r0 __asm__("r0") = 0x20; /* SYS_EXIT_EXTENDED */
    register void *r1 __asm__("r1") = blk;
    __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    for (;;) {}
}

/* ---- newlib syscalls (printf -> UART) ---- */
extern char __HeapBase, __HeapLimit;
static char *heap_end = &__HeapBase;
void *_sbrk(ptrdiff_t incr);
void *_sbrk(ptrdiff_t incr)
{
    char *prev = heap_end;
    if (heap_end + incr > &__HeapLimit) { errno = ENOMEM; return (void *)-1; }
    heap_end += incr;
    return prev;
}
int _write(int fd, const char *p, int n);
int _write(int fd, const char *p, int n) { (void)fd; edgec_uart_write(p, (size_t)n); return n; }
int _read(int fd, char *p, int n);
int _read(int fd, char *p, int n) { (void)fd; if (n > 0) { p[0] = (char)edgec_uart_getc(); return 1; } return 0; }
int _close(int fd);
int _close(int fd) { (void)fd; return -1; }
int _lseek(int fd, int off, int w);
int _lseek(int fd, int off, int w) { (void)fd; (void)off; (void)w; return 0; }
int _fstat(int fd, struct stat *st);
int _fstat(int fd, struct stat *st) { (void)fd; st->st_mode = S_IFCHR; return 0; }
int _isatty(int fd);
int _isatty(int fd) { (void)fd; return 1; }
int _getpid(void);
int _getpid(void) { return 1; }
int _kill(int pid, int sig);
int _kill(int pid, int sig) { (void)pid; (void)sig; errno = EINVAL; return -1; }
void _exit(int code);
void _exit(int code) { edgec_exit(code); }

/* ---- stack high-water mark by painting (linker script: __StackLimit..__StackTop, one MSP stack) ---- */
#define STACK_PAINT 0x5AC35AC3u
extern uint32_t __StackLimit, __StackTop;
void edgec_stack_paint(void)
{
    uint32_t *p = &__StackLimit, *sp;
    __asm volatile("mov %0, sp" : "=r"(sp));
    for (sp -= 16; p < sp; p++) *p = STACK_PAINT;     /* 64 bytes of margin below this frame */
}
int32_t edgec_stack_used(void)
{
    const uint32_t *p = &__StackLimit;
    while (p < &__StackTop && *p == STACK_PAINT) p++;
    return (int32_t)((const char *)&__StackTop - (const char *)p);
}
uint32_t edgec_stack_size(void) { return (uint32_t)((const char *)&__StackTop - (const char *)&__StackLimit); }
