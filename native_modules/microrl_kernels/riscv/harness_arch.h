/* harness.c's machine-dependent part on qemu-system-riscv32's virt board (M-mode, -bios none):
 * semihosting and the instruction counter (harness.c has the console and the exit over them).
 * Under `qemu -icount shift=0` the instret CSR counts instructions (qemu derives it from its
 * instruction counter). */
#define JOB_ADDR 0x80400000u /* RAM starts at 0x80000000; the harness itself takes less than 4 MB */

static int semihost(int call, void *args) {
    register int a0 __asm__("a0") = call;
    register void *a1 __asm__("a1") = args;
    /* the RISC-V semihosting sequence: three uncompressed instructions, as qemu recognises them */
    __asm__ volatile(".option push\n\t.option norvc\n\t.balign 16\n\tslli zero, zero, 0x1f\n\tebreak\n\tsrai zero, zero, 0x7\n\t.option pop"
                     : "+r"(a0) : "r"(a1) : "memory");
    return a0;
}

static inline uint32_t ccount(void) {
    uint32_t c;
    __asm__ volatile("rdinstret %0" : "=r"(c));
    return c;
}
