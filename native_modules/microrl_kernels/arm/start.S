/* Bare-metal start-up for qemu-system-arm's MPS2 boards: the vector table at 0 (stack, reset,
 * SysTick), the FPU enabled where there is one, then harness_main and its exit code by
 * semihosting. */
    .syntax unified
    .thumb
    .section .vectors, "a"
    .word _stack_top
    .word _start            /* 1: reset */
    .rept 13                /* 2-14: faults and the rest end the run */
    .word fault
    .endr
    .word systick_handler   /* 15: SysTick, counting the counter's wraps (harness_arch.h) */
    .text
    .thumb_func
    .global _start
_start:
#if defined(__ARM_FP)
    ldr r0, =0xE000ED88      /* CPACR: full access to CP10 and CP11 */
    ldr r1, [r0]
    orr r1, r1, #(0xF << 20)
    str r1, [r0]
    dsb
    isb
#endif
    bl harness_main
    bl harness_exit
    .thumb_func
fault:
    movs r0, #5
    bl harness_exit
