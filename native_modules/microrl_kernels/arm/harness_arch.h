/* harness.c's machine-dependent part on qemu-system-arm's MPS2 boards (Cortex-M3 AN385, M4 AN386,
 * M7 AN500): semihosting and an instruction counter (harness.c has the console and the exit over
 * them). Cortex-M has no instruction counter qemu models; under `qemu -icount shift=0` the
 * SysTick timer, clocked by the CPU clock, counts emulated time, one tick per fixed number of
 * instructions, which harness.c's calibration loop measures. SysTick has 24 bits: its interrupt
 * counts the wraps (start.S's vector table), which make the counter's upper 8 bits. */
#define JOB_ADDR 0x20000000u /* the boards' SSRAM2/3 (the harness is in the 4 MB at 0) */
#define CALIBRATION_STEP "subs %0, %0, #1\n\tbne 1b"

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)

static int semihost(int call, void *args) {
    register int r0 __asm__("r0") = call;
    register void *r1 __asm__("r1") = args;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

static volatile uint32_t systick_wraps;

void systick_handler(void) {
    systick_wraps++;
}

static inline uint32_t ccount(void) {
    if (!(SYST_CSR & 1u)) {
        SYST_RVR = 0x00FFFFFFu;
        SYST_CVR = 0;
        SYST_CSR = 7u; /* enabled, interrupt on each wrap, CPU clock */
        while (SYST_CVR == 0) { /* until it has loaded RVR: counting starts from there */
        }
        systick_wraps = 0;
    }
    uint32_t wraps, now;
    do { /* a wrap between the two reads: read again */
        wraps = systick_wraps;
        now = 0x00FFFFFFu - SYST_CVR; /* counts up */
    } while (wraps != systick_wraps);
    return (wraps << 24) | now;
}
