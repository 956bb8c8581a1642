/* The kernels' test harness for qemu-system-xtensa (built and driven by harness.py): runs the jobs
 * harness.py writes, on kernels.c compiled exactly as for the ESP32 module.
 *
 * A job is loaded at JOB_ADDR by qemu's loader device:
 *   u32 magic "MRLJ", u32 number of op words, u32 data bytes, u32 ops[], data (4-byte aligned)
 * An op is an opcode and its arguments (one u32 each): arrays are byte offsets into the data
 * (NO_ARRAY for NULL), ints are ints, floats their bits. The kernels work in place on the data;
 * at the end the harness writes to the semihosting console:
 *   "MRLX", u32 data bytes, u32 number of ops, u32 calibration ticks, u32 ticks per op, the data,
 *   "END!"
 * Ticks are CCOUNT differences; under `qemu -icount shift=N` they count instructions, scaled by
 * the calibration loop (CALIBRATION_INSNS instructions). To test another kernel: an opcode here
 * and its method in harness.py's Job. */
#include <stdint.h>

#include "../kernels.h"
#include "../mrl_math.h"

#if !defined(__riscv) && !defined(__arm__)
#define JOB_ADDR 0x00400000u
#endif

#define JOB_MAGIC 0x4A4C524Du /* "MRLJ" */
#define NO_ARRAY 0xFFFFFFFFu
#define MAX_OPS 4096
#define CALIBRATION_LOOPS 10000 /* two instructions each */

enum {
    OP_DENSE = 1,          /* W b x y z n n_out n_in act */
    OP_DENSE_BACKWARD = 2, /* W x y z dy n n_out n_in act dW db dx */
    OP_ADAM = 3,           /* p g m v n lr beta1 beta2 eps step */
    OP_POLYAK = 4,         /* target source n tau */
    OP_COPY = 5,           /* target source n */
    OP_DIV = 6,            /* a b out n: out = mrl_divf(a, b) elementwise */
    OP_SQRT = 7,           /* x out n: out = mrl_sqrtf(x) */
    OP_MATH = 8,           /* fn x out n: fn 0 mrl_expf, 1 mrl_tanhf, 2 mrl_normal_cdff, 3 mrl_expm1f */
    OP_DENSE_INT16 = 9,    /* W b x y n_in n_out act s_out s_14 s_14_out T P (int16 W x y T P, int32 b) */
};

#if defined(__riscv) || defined(__arm__)
#if defined(__riscv)
#include "../riscv/harness_arch.h" /* the same jobs on a RISC-V core: riscv/harness_rv.py */
#else
#include "../arm/harness_arch.h" /* and on Cortex-M cores: arm/harness_arm.py */
#endif
/* their semihosting calls are ARM's (RISC-V's are the same numbers) */
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

void harness_exit(int code) {
    /* SYS_EXIT: ADP_Stopped_ApplicationExit (qemu exits 0), else RunTimeErrorUnknown (exits 1) */
    semihost(0x18, (void *)(code == 0 ? 0x20026 : 0x20023));
    for (;;) {
    }
}
#else
static int semihost(int call, int a, int b, int c) {
    register int a2 __asm__("a2") = call;
    register int a3 __asm__("a3") = a; /* errno comes back in a3 */
    register int a4 __asm__("a4") = b;
    register int a5 __asm__("a5") = c;
    __asm__ volatile(".byte 0x00, 0x51, 0x00" : "+r"(a2), "+r"(a3) : "r"(a4), "r"(a5) : "memory");
    return a2;
}

static void emit(const void *buf, uint32_t len) {
    const char *p = buf;
    while (len > 0) {
        int n = semihost(4, 1, (int)p, (int)len); /* SYS_write to stdout */
        if (n <= 0) {
            break;
        }
        p += n;
        len -= (uint32_t)n;
    }
}

static inline uint32_t ccount(void) {
    uint32_t c;
    __asm__ volatile("rsr %0, ccount" : "=r"(c));
    return c;
}
#endif

#ifndef CALIBRATION_STEP
#define CALIBRATION_STEP "addi %0, %0, -1\n\tbnez %0, 1b"
#endif

static inline float as_float(uint32_t u) {
    union { uint32_t u; float f; } v;
    v.u = u;
    return v.f;
}

static uint8_t *data;

static void *array(uint32_t offset) {
    return offset == NO_ARRAY ? (void *)0 : data + offset;
}

#define F(k) ((float *)array(a[k]))

static int run_op(uint32_t op, const uint32_t *a) {
    switch (op) {
        case OP_DENSE:
            mrl_dense_f(F(0), F(1), F(2), F(3), F(4), (int)a[5], (int)a[6], (int)a[7], (int)a[8]);
            return 9;
        case OP_DENSE_BACKWARD:
            mrl_dense_backward_f(F(0), F(1), F(2), F(3), F(4), (int)a[5], (int)a[6], (int)a[7], (int)a[8],
                F(9), F(10), F(11));
            return 12;
        case OP_ADAM:
            mrl_adam_f(F(0), F(1), F(2), F(3), (int)a[4], as_float(a[5]), as_float(a[6]), as_float(a[7]),
                as_float(a[8]), (int)a[9]);
            return 10;
        case OP_POLYAK:
            mrl_polyak_f(F(0), F(1), (int)a[2], as_float(a[3]));
            return 4;
        case OP_COPY:
            mrl_copy_f(F(0), F(1), (int)a[2]);
            return 3;
        case OP_DIV:
            for (uint32_t k = 0; k < a[3]; k++) {
                F(2)[k] = mrl_divf(F(0)[k], F(1)[k]);
            }
            return 4;
        case OP_SQRT:
            for (uint32_t k = 0; k < a[2]; k++) {
                F(1)[k] = mrl_sqrtf(F(0)[k]);
            }
            return 3;
        case OP_MATH:
            for (uint32_t k = 0; k < a[3]; k++) {
                float x = F(1)[k];
                F(2)[k] = a[0] == 0 ? mrl_expf(x) : a[0] == 1 ? mrl_tanhf(x) : a[0] == 2 ? mrl_normal_cdff(x) : mrl_expm1f(x);
            }
            return 4;
        case OP_DENSE_INT16:
            mrl_dense_int16((const int16_t *)array(a[0]), (const int32_t *)array(a[1]), (const int16_t *)array(a[2]),
                (int16_t *)array(a[3]), (int)a[4], (int)a[5], (int)a[6], (int)a[7], (int)a[8], (int)a[9],
                (const int16_t *)array(a[10]), (const int16_t *)array(a[11]));
            return 12;
        default:
            return -1;
    }
}

int harness_main(void) {
    const uint32_t *job = (const uint32_t *)JOB_ADDR;
    if (job[0] != JOB_MAGIC) {
        return 2;
    }
    uint32_t n_words = job[1], data_bytes = job[2];
    const uint32_t *ops = job + 3;
    data = (uint8_t *)(ops + n_words);
    static uint32_t ticks[MAX_OPS];
    uint32_t n_ops = 0;

    uint32_t t0 = ccount();
    int loops = CALIBRATION_LOOPS;
    __asm__ volatile("1: " CALIBRATION_STEP : "+r"(loops));
    uint32_t calibration = ccount() - t0;

    for (uint32_t w = 0; w < n_words;) {
        if (n_ops == MAX_OPS) {
            return 4;
        }
        uint32_t start = ccount();
        int used = run_op(ops[w], ops + w + 1);
        ticks[n_ops++] = ccount() - start;
        if (used < 0) {
            return 3; /* unknown opcode */
        }
        w += 1 + (uint32_t)used;
    }
    uint32_t head[4] = {0x584C524Du /* "MRLX" */, data_bytes, n_ops, calibration};
    emit(head, sizeof(head));
    emit(ticks, 4 * n_ops);
    emit(data, data_bytes);
    emit("END!", 4);
    return 0;
}
