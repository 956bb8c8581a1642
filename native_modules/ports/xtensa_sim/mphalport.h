#include <stddef.h>
#include "shared/runtime/interrupt_char.h"

/* CCOUNT: under qemu -icount it advances with emulated instructions (see main.c) */
static inline mp_uint_t mp_hal_ticks_cpu(void) {
    uint32_t c;
    __asm__ volatile ("rsr %0, ccount" : "=r" (c));
    return c;
}
