/* Bare-metal start-up for qemu-system-riscv32 -M virt -bios none: stack, harness_main, exit. */
    .section .text.start
    .global _start
_start:
    .option push
    .option norelax
    la gp, __global_pointer$
    .option pop
    la sp, _stack_top
    call harness_main
    call harness_exit
