/* harness.c's machine-dependent part on qemu-system-riscv32's virt board (M-mode, -bios none):
 * the semihosting console and the instruction counter. Under `qemu -icount shift=0` the instret
 * CSR counts instructions (qemu derives it from its instruction counter). */
#define JOB_ADDR 0x80400000u /* RAM starts at 0x80000000; the harness itself takes less than 4 MB */

static int semihost(int call, void *args) {
    register int a0 __asm__("a0") = call;
    register void *a1 __asm__("a1") = args;
    /* the RISC-V semihosting sequence: three uncompressed instructions, as qemu recognises them */
    __asm__ volatile(".option push\n\t.option norvc\n\t.balign 16\n\tslli zero, zero, 0x1f\n\tebreak\n\tsrai zero, zero, 0x7\n\t.option pop"
                     : "+r"(a0) : "r"(a1) : "memory");
    return a0;
}

static void emit(const void *buf, uint32_t len) {
    /* into the host file harness.out in qemu's folder (SYS_OPEN, mode 5 "wb"): qemu's console on
     * stdio drops what a full pipe does not take */
    static int console = -1;
    if (console < 0) {
        uint32_t open_args[3] = {(uint32_t)"harness.out", 5, 11};
        console = semihost(0x01, open_args);
    }
    /* in pieces (SYS_WRITE returns the bytes not written) */
    const uint8_t *p = buf;
    int stalls = 0;
    while (len > 0 && stalls < 1000) {
        uint32_t piece = len < 4096 ? len : 4096;
        uint32_t args[3] = {(uint32_t)console, (uint32_t)p, piece};
        int left = semihost(0x05, args);
        if (left < 0 || (uint32_t)left > piece) {
            break;
        }
        uint32_t done = piece - (uint32_t)left;
        stalls = done ? 0 : stalls + 1;
        p += done;
        len -= done;
    }
}

static inline uint32_t ccount(void) {
    uint32_t c;
    __asm__ volatile("rdinstret %0" : "=r"(c));
    return c;
}

void harness_exit(int code) {
    /* SYS_EXIT: ADP_Stopped_ApplicationExit (qemu exits 0), else RunTimeErrorUnknown (exits 1) */
    semihost(0x18, (void *)(code == 0 ? 0x20026 : 0x20023));
    for (;;) {
    }
}
