/* RV32 (M-mode) reset entry for QEMU virt (-bios none: QEMU jumps to the ELF entry at 0x80000000). */
    .section .text.init, "ax"
    .globl _start
_start:
    .option push
    .option norelax
    la gp, __global_pointer$
    .option pop
    la sp, __stack_top
    la t0, __bss_start
    la t1, __bss_end
1:  bgeu t0, t1, 2f
    sw zero, 0(t0)
    addi t0, t0, 4
    j 1b
2:  la t0, __data_lma              /* copy .data from its load image */
    la t1, __data_start
    la t2, __data_end
3:  bgeu t1, t2, 4f
    lw t3, 0(t0)
    sw t3, 0(t1)
    addi t0, t0, 4
    addi t1, t1, 4
    j 3b
4:  call edgec_board_init
    call main
    call edgec_exit
5:  j 5b
