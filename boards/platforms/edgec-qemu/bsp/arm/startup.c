/* Vector table + reset handler for ARMv6-M, ARMv7-M and ARMv8-M (C only). */
#include <stdint.h>
#include "edgec_board.h"

extern uint32_t __etext_data_lma, __data_start__, __data_end__, __bss_start__, __bss_end__, __StackTop;
extern void (*__preinit_array_start[])(void), (*__preinit_array_end[])(void);
extern void (*__init_array_start[])(void), (*__init_array_end[])(void);
int main(void);

void Reset_Handler(void) __attribute__((noreturn));
void Default_Handler(void);
void Default_Handler(void) { for (;;) { } }
void HardFault_Handler(void) __attribute__((weak));
void HardFault_Handler(void) { edgec_exit(0x7f); }
void NMI_Handler(void)        __attribute__((weak, alias("Default_Handler")));
void MemManage_Handler(void)  __attribute__((weak, alias("Default_Handler")));
void BusFault_Handler(void)   __attribute__((weak, alias("Default_Handler")));
void UsageFault_Handler(void) __attribute__((weak, alias("Default_Handler")));
void SVC_Handler(void)        __attribute__((weak, alias("Default_Handler")));
void DebugMon_Handler(void)   __attribute__((weak, alias("Default_Handler")));
void PendSV_Handler(void)     __attribute__((weak, alias("Default_Handler")));
void SysTick_Handler(void);        /* board.c */
void edgec_uart_irq_handler(void); /* board.c */

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"   /* the UART entry overrides the default range */
/* 16 system exceptions + EDGEC_NUM_IRQ external interrupts (board manifest build.num_irq). */
__attribute__((section(".isr_vector"), used))
void (*const edgec_vectors[16 + EDGEC_NUM_IRQ])(void) = {
    (void (*)(void))(&__StackTop), Reset_Handler, NMI_Handler, HardFault_Handler,
    MemManage_Handler, BusFault_Handler, UsageFault_Handler, 0,
    0, 0, 0, SVC_Handler, DebugMon_Handler, 0, PendSV_Handler, SysTick_Handler,
    [16 ... 16 + EDGEC_NUM_IRQ - 1] = Default_Handler,
    [16 + EDGEC_UART_IRQN] = edgec_uart_irq_handler,
};
#pragma GCC diagnostic pop

void _init(void) __attribute__((weak));
void _init(void) {}
void _fini(void) __attribute__((weak));
void _fini(void) {}

void Reset_Handler(void)
{
    uint32_t *src = &__etext_data_lma, *dst = &__data_start__;
    while (dst < &__data_end__) *dst++ = *src++;
    for (dst = &__bss_start__; dst < &__bss_end__;) *dst++ = 0;
#if defined(__ARM_FP) || defined(__ARM_FEATURE_MVE)
    *(volatile uint32_t *)0xE000ED88 |= (0xFu << 20);   /* CPACR: enable CP10/CP11 (FPU) */
    __asm volatile("dsb\n isb" ::: "memory");
#endif
    for (void (**f)(void) = __preinit_array_start; f < __preinit_array_end; f++) (*f)();
    for (void (**f)(void) = __init_array_start; f < __init_array_end; f++) (*f)();
    edgec_board_init();
    edgec_exit(main());
}
