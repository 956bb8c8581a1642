/* What the compiler calls and no library here provides (there is no Xtensa compiler-rt or libc
 * for the windowed ABI in Debian): float division, as the kernels compute it (mrl_math.h: the
 * FPU's fused multiply-add, correctly rounded), and 64-bit integer division. */
#include <stdint.h>

#include "mrl_math.h"

float __divsf3(float a, float b) {
    return mrl_divf(a, b);
}

static uint64_t udivmod64(uint64_t n, uint64_t d, uint64_t *rem) {
    uint64_t q = 0, r = 0;
    for (int i = 63; i >= 0; i--) {
        r = (r << 1) | ((n >> i) & 1);
        if (r >= d) {
            r -= d;
            q |= (uint64_t)1 << i;
        }
    }
    *rem = r;
    return q;
}

uint64_t __udivdi3(uint64_t n, uint64_t d) {
    uint64_t r;
    return udivmod64(n, d, &r);
}

uint64_t __umoddi3(uint64_t n, uint64_t d) {
    uint64_t r;
    udivmod64(n, d, &r);
    return r;
}

int64_t __divdi3(int64_t n, int64_t d) {
    uint64_t r, q = udivmod64(n < 0 ? -(uint64_t)n : (uint64_t)n, d < 0 ? -(uint64_t)d : (uint64_t)d, &r);
    return (n < 0) != (d < 0) ? -(int64_t)q : (int64_t)q;
}

int64_t __moddi3(int64_t n, int64_t d) {
    uint64_t r;
    udivmod64(n < 0 ? -(uint64_t)n : (uint64_t)n, d < 0 ? -(uint64_t)d : (uint64_t)d, &r);
    return n < 0 ? -(int64_t)r : (int64_t)r;
}

/* lib/libm's nearbyintf does not compile with LLVM 22 (see the Makefile): round to nearest even
 * by adding and taking away 2^23, which leaves no fraction bits (the FPU rounds to nearest) */
float nearbyintf(float x) {
    float a = __builtin_fabsf(x);
    if (!(a < 8388608.0f)) {
        return x; /* already an integer, or NaN */
    }
    volatile float big = 8388608.0f;
    float r = (a + big) - big;
    return __builtin_copysignf(r, x);
}

/* -ffreestanding calls these rather than expanding them: the FPU's abs.s, madd.s (fused) */
float fabsf(float x) {
    return __builtin_fabsf(x);
}

float copysignf(float x, float y) {
    return __builtin_copysignf(x, y);
}

float fmaf(float a, float b, float c) {
    return __builtin_fmaf(a, b, c);
}

float nanf(const char *tag) {
    return __builtin_nanf("");
}

/* The few double conversions MicroPython's float32 build still makes (struct 'd', printing,
 * native glue), on the bits: no double arithmetic is linked. */
typedef union { double d; uint64_t u; } dbits;
typedef union { float f; uint32_t u; } fbits;

double __extendsfdf2(float f) {
    fbits in = { .f = f };
    uint64_t sign = (uint64_t)(in.u >> 31) << 63;
    int exp = (in.u >> 23) & 0xFF;
    uint64_t man = in.u & 0x7FFFFF;
    dbits out;
    if (exp == 0xFF) { /* inf, NaN */
        out.u = sign | ((uint64_t)0x7FF << 52) | (man << 29);
    } else if (exp == 0) {
        if (man == 0) {
            out.u = sign;
        } else { /* denormal: normalise */
            int shift = __builtin_clz((uint32_t)man) - 8;
            man = (man << shift) & 0x7FFFFF;
            out.u = sign | ((uint64_t)(1 - shift - 127 + 1023) << 52) | (man << 29);
        }
    } else {
        out.u = sign | ((uint64_t)(exp - 127 + 1023) << 52) | (man << 29);
    }
    return out.d;
}

float __truncdfsf2(double d) {
    dbits in = { .d = d };
    uint32_t sign = (uint32_t)(in.u >> 63) << 31;
    int exp = (int)((in.u >> 52) & 0x7FF);
    uint64_t man = in.u & 0xFFFFFFFFFFFFFull;
    fbits out;
    if (exp == 0x7FF) {
        out.u = sign | 0x7F800000u | (man ? 0x400000u | (uint32_t)(man >> 29) : 0);
        return out.f;
    }
    int e = exp - 1023 + 127;
    if (e >= 0xFF) {
        out.u = sign | 0x7F800000u;
        return out.f;
    }
    uint64_t sig = man | ((uint64_t)(exp != 0) << 52); /* 53 bits */
    int shift = 29;
    if (e <= 0) { /* float denormal or zero */
        shift += 1 - e;
        e = 0;
        if (shift > 63) {
            out.u = sign;
            return out.f;
        }
    }
    uint32_t m = (uint32_t)(sig >> shift);
    uint64_t rest = sig & (((uint64_t)1 << shift) - 1), half = (uint64_t)1 << (shift - 1);
    if (rest > half || (rest == half && (m & 1))) {
        m++; /* may carry into the exponent: still right */
    }
    if (e == 0) {
        out.u = sign | m;
    } else {
        out.u = sign | (((uint32_t)e << 23) + (m - 0x800000u));
    }
    return out.f;
}

double __floatsidf(int i) {
    dbits out;
    if (i == 0) {
        out.u = 0;
        return out.d;
    }
    uint64_t sign = i < 0 ? (uint64_t)1 << 63 : 0;
    uint32_t a = i < 0 ? -(uint32_t)i : (uint32_t)i;
    int lz = __builtin_clz(a);
    uint64_t man = ((uint64_t)a << (lz + 21)) & 0xFFFFFFFFFFFFFull; /* 52 bits below the leading 1 */
    out.u = sign | ((uint64_t)(31 - lz + 1023) << 52) | man;
    return out.d;
}

/* 64-bit product (without MULUH, which this core lacks): the low word's full product by halves */
uint64_t __muldi3(uint64_t a, uint64_t b) {
    uint32_t al = (uint32_t)a, bl = (uint32_t)b;
    uint32_t a0 = al & 0xFFFF, a1 = al >> 16, b0 = bl & 0xFFFF, b1 = bl >> 16;
    uint32_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint32_t mid = (p00 >> 16) + (p01 & 0xFFFF) + (p10 & 0xFFFF);
    uint32_t lo = (p00 & 0xFFFF) | (mid << 16);
    uint32_t hi = p11 + (p01 >> 16) + (p10 >> 16) + (mid >> 16);
    hi += (uint32_t)(a >> 32) * bl + al * (uint32_t)(b >> 32);
    return ((uint64_t)hi << 32) | lo;
}
