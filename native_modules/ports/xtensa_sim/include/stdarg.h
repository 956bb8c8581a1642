/* stdarg.h for LLVM 22's Xtensa target, which gets the windowed ABI's va_list wrong in two ways:
 * its va_start points __va_reg at the first unnamed register argument where its own va_arg (and
 * GCC's convention) expect the address of a2's slot, so every va_arg read the wrong word; and a
 * by-value va_list made callers move the stack pointer (MOVSP) through a frame pointer in a7,
 * clobbering the sixth register argument before va_start saved it. Here va_list is an array (passed
 * as a pointer), va_start moves __va_reg back, and va_arg follows GCC's rules. */
#ifndef XTENSA_SIM_STDARG_H
#define XTENSA_SIM_STDARG_H

struct __xt_va {
    char *stk; /* incoming stack arguments - 32 */
    char *reg; /* where a2 would be saved */
    int ndx;   /* bytes of arguments taken so far */
};
typedef __builtin_va_list va_list[1];
typedef va_list __gnuc_va_list;

static inline void __xt_va_fix(va_list ap) {
    struct __xt_va *v = (struct __xt_va *)ap;
    v->reg -= v->ndx;
}

static inline void *__xt_va_arg(va_list ap, unsigned size, unsigned align) {
    struct __xt_va *v = (struct __xt_va *)ap;
    int sz = (int)((size + 3) & ~3u);
    int orig = v->ndx;
    if (align > 4) {
        orig = (orig + (int)align - 1) & -(int)align;
    }
    v->ndx = orig + sz;
    if (v->ndx <= 24) {
        return v->reg + v->ndx - sz;
    }
    if (orig <= 24) { /* never split between registers and stack */
        v->ndx = 32 + sz;
    }
    return v->stk + v->ndx - sz;
}

#define va_start(ap, last) (__builtin_va_start((ap)[0], last), __xt_va_fix(ap))
#define va_arg(ap, type) (*(type *)__xt_va_arg((ap), sizeof(type), __alignof__(type)))
#define va_end(ap) ((void)0)
#define va_copy(dest, src) ((dest)[0] = (src)[0])
#define __va_copy(dest, src) va_copy(dest, src)

#endif
