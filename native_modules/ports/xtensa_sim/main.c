/* The xtensa_sim port: MicroPython on qemu-system-xtensa -M sim -cpu de233_fpu (windowed
 * registers, single-precision FPU: the ESP32's ABI and .mpy architecture, xtensawin).
 * start.S (the kernels' harness start-up, shared) sets up the windows, VECBASE, the FPU and the
 * stack, then calls port_main. The console is qemu's semihosting (simcall: stdin and stdout of the
 * qemu process); qemu's loader device puts a ROMFS image at ROMFS_ADDR, mounted at /rom. */
#include <string.h>

#include "py/compile.h"
#include "py/gc.h"
#include "py/mperrno.h"
#include "py/mphal.h"
#include "py/objarray.h"
#include "py/runtime.h"
#include "py/stackctrl.h"
#include "extmod/vfs.h"
#include "shared/runtime/pyexec.h"
#include <xtensa/config/core-isa.h>

#define SYS_EXIT 1
#define SYS_READ 3
#define SYS_WRITE 4

static int semihost(int call, int a, int b, int c) {
    register int a2 __asm__ ("a2") = call;
    register int a3 __asm__ ("a3") = a; /* errno comes back in a3 */
    register int a4 __asm__ ("a4") = b;
    register int a5 __asm__ ("a5") = c;
    __asm__ volatile (".byte 0x00, 0x51, 0x00" : "+r" (a2), "+r" (a3) : "r" (a4), "r" (a5) : "memory");
    return a2;
}

void port_exit(int code) __attribute__((noreturn));
void port_exit(int code) {
    for (;;) {
        semihost(SYS_EXIT, code, 0, 0);
    }
}

mp_uint_t mp_hal_stdout_tx_strn(const char *str, size_t len) {
    size_t left = len;
    while (left > 0) {
        int n = semihost(SYS_WRITE, 1, (int)str, (int)left);
        if (n <= 0) {
            break;
        }
        str += n;
        left -= (size_t)n;
    }
    return len;
}

int mp_hal_stdin_rx_chr(void) {
    unsigned char c;
    if (semihost(SYS_READ, 0, (int)&c, 1) != 1) {
        port_exit(0); /* stdin closed: the host is done with this board */
    }
    return c;
}

uintptr_t mp_hal_stdio_poll(uintptr_t poll_flags) {
    return 0;
}

/* CCOUNT runs at the core's clock, XTENSA_SIM_CPU_MHZ (qemu's de233_fpu: see the Makefile). */
mp_uint_t mp_hal_ticks_us(void) {
    return mp_hal_ticks_cpu() / XTENSA_SIM_CPU_MHZ;
}

mp_uint_t mp_hal_ticks_ms(void) {
    return mp_hal_ticks_cpu() / (XTENSA_SIM_CPU_MHZ * 1000);
}

void mp_hal_delay_us(mp_uint_t us) {
    uint32_t start = mp_hal_ticks_cpu();
    while (mp_hal_ticks_cpu() - start < us * XTENSA_SIM_CPU_MHZ) {
    }
}

void mp_hal_delay_ms(mp_uint_t ms) {
    while (ms--) {
        mp_hal_delay_us(1000);
    }
}

uint64_t mp_hal_time_ns(void) {
    return 0;
}

/* the ROMFS image qemu's loader device wrote */
static const MP_DEFINE_MEMORYVIEW_OBJ(romfs_obj, 'B', 0, ROMFS_SIZE, (void *)ROMFS_ADDR);

mp_obj_t mp_vfs_rom_ioctl(size_t n_args, const mp_obj_t *args) {
    switch (mp_obj_get_int(args[0])) {
        case MP_VFS_ROM_IOCTL_GET_NUMBER_OF_SEGMENTS:
            return MP_OBJ_NEW_SMALL_INT(1);
        case MP_VFS_ROM_IOCTL_GET_SEGMENT:
            return MP_OBJ_FROM_PTR(&romfs_obj);
    }
    return MP_OBJ_NEW_SMALL_INT(-MP_EINVAL);
}

static uint32_t gc_heap[MICROPY_HEAP_SIZE / sizeof(uint32_t)];
extern char _stack_top[];

int port_main(void) {
    mp_stack_set_top(_stack_top);
    mp_stack_set_limit(XTENSA_SIM_STACK_SIZE - 4096);
    gc_init(gc_heap, (char *)gc_heap + MICROPY_HEAP_SIZE);
    for (;;) {
        mp_init();
        if (*(const uint8_t *)ROMFS_ADDR == 0xd2) { /* a ROMFS header */
            mp_vfs_mount_romfs_protected();
        }
        for (;;) {
            if (pyexec_mode_kind == PYEXEC_MODE_RAW_REPL) {
                if (pyexec_raw_repl() != 0) {
                    break;
                }
            } else {
                if (pyexec_friendly_repl() != 0) {
                    break;
                }
            }
        }
        mp_printf(&mp_plat_print, "MPY: soft reboot\n");
        gc_sweep_all();
        mp_deinit();
    }
    return 0;
}

/* Every register window older than the deepest of these frames is spilled to the stack by the
 * window overflow handlers on the way down (the ESP32 port's gc_collect does the same), so the
 * stack from there up holds every root. */
static void __attribute__((noinline)) collect_spilled(int level) {
    if (level < XCHAL_NUM_AREGS / 8) {
        collect_spilled(level + 1);
        return;
    }
    volatile uint32_t here = 0;
    uintptr_t sp = (uintptr_t)&here;
    gc_collect_root((void **)sp, ((uintptr_t)MP_STATE_THREAD(stack_top) - sp) / sizeof(uint32_t));
}

void gc_collect(void) {
    gc_collect_start();
    collect_spilled(0);
    gc_collect_end();
}

void nlr_jump_fail(void *val) {
    mp_printf(&mp_plat_print, "uncaught NLR\n");
    port_exit(1);
}

void abort(void) {
    port_exit(2);
}

void exit(int code) {
    port_exit(code);
}

#ifndef NDEBUG
void __assert_func(const char *file, int line, const char *func, const char *expr) {
    mp_printf(&mp_plat_print, "assertion %s failed: %s:%d\n", expr, file, line);
    port_exit(3);
}
#endif
