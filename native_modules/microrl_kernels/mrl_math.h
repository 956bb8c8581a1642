/* The few math functions the kernels need, self-contained: a native module cannot link glibc's
 * libm (it needs errno and CPU-feature tables), and newlib's differs by port. Float versions use
 * float arithmetic only (Cortex-M4F has no double FPU); double versions are for host-side gradient
 * checks. Accuracy: float within a few ulp; double within about 1e-14 relative (erf: 1e-13). */
#ifndef MRL_MATH_H
#define MRL_MATH_H

#include <stdint.h>

/* 2^k as a float/double, for k inside the normal exponent range */
static inline float mrl_pow2f(int k) {
    union { uint32_t u; float f; } v;
    v.u = (uint32_t)(k + 127) << 23;
    return v.f;
}

static inline double mrl_pow2(int k) {
    union { uint64_t u; double d; } v;
    v.u = (uint64_t)(k + 1023) << 52;
    return v.d;
}

static inline float mrl_inff(void) {
    union { uint32_t u; float f; } v;
    v.u = 0x7f800000u;
    return v.f;
}

static inline double mrl_inf(void) {
    union { uint64_t u; double d; } v;
    v.u = 0x7ff0000000000000ull;
    return v.d;
}

/* +-0.5 with the sign of x, to round x to the nearest integer by truncation. LLVM 22's Xtensa
 * backend turns `x >= 0 ? 0.5f : -0.5f` into a two-float constant table it then cannot select
 * (a crash in llc), so there it copies the sign bit; k below is the same for every x either way. */
#if defined(__XTENSA__) && defined(__clang__)
#define MRL_HALF_SIGNED(x) __builtin_copysignf(0.5f, (x))
#else
#define MRL_HALF_SIGNED(x) ((x) >= 0.0f ? 0.5f : -0.5f)
#endif

/* x = k ln2 + r with |r| <= ln2/2; returns expm1(r) by Taylor series (no cancellation) */
static inline float mrl_expm1_reduced_f(float x, int *k_out) {
    int k = (int)(x * 1.44269504f + MRL_HALF_SIGNED(x));
    float r = (x - (float)k * 0.693145751953125f) - (float)k * 1.428606765330187e-06f;
    float p = r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720 + r * (1.0f / 5040)))))));
    *k_out = k;
    return p;
}

static inline double mrl_expm1_reduced(double x, int *k_out) {
    int k = (int)(x * 1.4426950408889634 + (x >= 0.0 ? 0.5 : -0.5));
    double r = (x - (double)k * 6.93147180369123816490e-01) - (double)k * 1.90821492927058770002e-10;
    /* Horner over 1/n! for n = 1..13 */
    double p = 1.0 / 6227020800.0;
    static const double inv_fact[12] = {1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
        1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0};
    for (int i = 0; i < 12; i++) {
        p = p * r + inv_fact[i];
    }
    *k_out = k;
    return p * r;
}

static inline float mrl_expf(float x) {
    if (x > 88.7f) {
        return mrl_inff();
    }
    if (x < -87.3f) {
        return 0.0f;
    }
    int k;
    float p = mrl_expm1_reduced_f(x, &k);
    return (1.0f + p) * mrl_pow2f(k);
}

static inline double mrl_exp(double x) {
    if (x > 709.7) {
        return mrl_inf();
    }
    if (x < -708.0) {
        return 0.0;
    }
    int k;
    double p = mrl_expm1_reduced(x, &k);
    return (1.0 + p) * mrl_pow2(k);
}

static inline float mrl_expm1f(float x) {
    int k;
    float p = mrl_expm1_reduced_f(x, &k);
    return k == 0 ? p : (1.0f + p) * mrl_pow2f(k) - 1.0f;
}

static inline double mrl_expm1(double x) {
    int k;
    double p = mrl_expm1_reduced(x, &k);
    return k == 0 ? p : (1.0 + p) * mrl_pow2(k) - 1.0;
}

/* Float division. Where the FPU has fused multiply-add but no divide instruction (MRL_FMA_DIV_SQRT:
 * the ESP32's, ARCH=xtensawin, where LLVM would call __divsf3 and no library provides it) it is
 * computed here: Newton-Raphson on the significands from a linear first guess (4 bits, then 8 and
 * 16), a quotient step that squares the error again, then the remainder a - b q, exact with fmaf,
 * decides the last bit. The result is the
 * correctly rounded quotient, as IEEE division gives, for every pair of floats whose quotient is
 * normal, zero, infinite or NaN (tests/test_native_kernels.py checks it against the host's
 * division); a quotient below 1.2e-38 is rounded from the 24-bit quotient with the remainder's
 * sign as sticky bit, which is correct rounding too (it is checked less widely). NaN results are
 * quiet NaNs without the operands' payloads. */
#if MRL_FMA_DIV_SQRT
static inline uint32_t mrl_f2u(float f) {
    union { float f; uint32_t u; } v;
    v.f = f;
    return v.u;
}

static inline float mrl_u2f(uint32_t u) {
    union { float f; uint32_t u; } v;
    v.u = u;
    return v.f;
}

/* a float's significand as a float in [1, 2) and its unbiased exponent; subnormals normalised */
static inline float mrl_significand(uint32_t u, int *e) {
    int biased = (int)((u >> 23) & 0xffu);
    uint32_t m = u & 0x7fffffu;
    if (biased == 0) {
        int shift = __builtin_clz(m) - 8;
        m = (m << shift) & 0x7fffffu;
        biased = 1 - shift;
    }
    *e = biased - 127;
    return mrl_u2f(0x3f800000u | m);
}

/* q = RN(am / bm) for am, bm in [1, 2): q in (0.5, 2). *rem gets am - bm q (exact) */
static inline float mrl_div_significands(float am, float bm, float *rem) {
    float y = __builtin_fmaf(-0.47058824f, bm, 1.4117647f); /* 1/bm within 1/17 (24/17 - 8/17 bm) */
    for (int i = 0; i < 2; i++) {
        float e = __builtin_fmaf(-bm, y, 1.0f);
        y = __builtin_fmaf(y, e, y);
    }
    float q = am * y;
    float r = __builtin_fmaf(-bm, q, am);
    q = __builtin_fmaf(r, y, q); /* within one unit in the last place */
    r = __builtin_fmaf(-bm, q, am);
    /* the true quotient is q + r/bm; round to nearest (ties cannot happen in division) */
    uint32_t qu = mrl_f2u(q);
    float half_up = bm * mrl_u2f((qu & 0x7f800000u) - (24u << 23)); /* bm * ulp(q) / 2 */
    float half_down = (qu & 0x7fffffu) ? half_up : 0.5f * half_up;  /* below a power of two the gap halves */
    if (r > half_up) {
        q = mrl_u2f(qu + 1);
        r = __builtin_fmaf(-bm, q, am);
    } else if (r < -half_down) {
        q = mrl_u2f(qu - 1);
        r = __builtin_fmaf(-bm, q, am);
    }
    *rem = r;
    return q;
}

static inline float mrl_divf(float a, float b) {
    uint32_t ua = mrl_f2u(a), ub = mrl_f2u(b);
    uint32_t sign = (ua ^ ub) & 0x80000000u;
    uint32_t aa = ua & 0x7fffffffu, ab = ub & 0x7fffffffu;
    if (aa >= 0x7f800000u || ab >= 0x7f800000u || aa == 0 || ab == 0) {
        if (aa > 0x7f800000u || ab > 0x7f800000u || (aa == ab && (aa == 0 || aa == 0x7f800000u))) {
            return mrl_u2f(0x7fc00000u); /* NaN in, 0/0 or inf/inf */
        }
        if (aa == 0x7f800000u || ab == 0) {
            return mrl_u2f(sign | 0x7f800000u);
        }
        return mrl_u2f(sign); /* 0/b or a/inf */
    }
    int ea, eb;
    float am = mrl_significand(ua, &ea), bm = mrl_significand(ub, &eb);
    float r;
    float q = mrl_div_significands(am, bm, &r);
    uint32_t qu = mrl_f2u(q);
    int e = (int)(qu >> 23) + ea - eb; /* the quotient's biased exponent */
    if (e >= 1 && e <= 254) {
        return mrl_u2f(sign | ((uint32_t)e << 23) | (qu & 0x7fffffu));
    }
    if (e > 254) {
        return mrl_u2f(sign | 0x7f800000u);
    }
    /* subnormal or zero: shift the 24-bit significand right and round once, the remainder's sign
     * telling on which side of q the true quotient lies */
    int shift = 1 - e;
    if (shift > 25) {
        return mrl_u2f(sign);
    }
    uint32_t m = (qu & 0x7fffffu) | 0x800000u;
    uint32_t rest = m & ((1u << shift) - 1), half = 1u << (shift - 1), base = m >> shift;
    if (rest > half || (rest == half && (r > 0.0f || (r == 0.0f && (base & 1u))))) {
        base += 1; /* may carry into the smallest normal number: the encoding is the same */
    }
    return mrl_u2f(sign | base);
}

/* sqrt from the same parts: the significand (exponent made even) in [1, 4), Goldschmidt's
 * iteration for sqrt and 1/(2 sqrt) from a bit-trick first guess (5 bits, then 10, 20), one
 * Newton step (40), then the residual x - s^2 (exact with fmaf) decides the last bit: correctly
 * rounded for every float (checked for all 2^32 of them against the host's sqrtf). */
static inline float mrl_fma_sqrtf(float x) {
    uint32_t u = mrl_f2u(x);
    if (u >= 0x7f800000u || (u << 1) == 0) {
        /* +inf, NaN, +-0, and every negative number */
        return (u == 0x7f800000u || (u << 1) == 0) ? x : mrl_u2f(0x7fc00000u);
    }
    int e;
    float xm = mrl_significand(u, &e);
    if (e & 1) {
        xm *= 2.0f;
        e -= 1;
    }
    float g = mrl_u2f(0x5f3759dfu - (mrl_f2u(xm) >> 1)); /* 1/sqrt(xm) within 3.5% */
    float h = 0.5f * g;
    g = xm * g;
    for (int i = 0; i < 2; i++) {
        float r = __builtin_fmaf(-g, h, 0.5f);
        g = __builtin_fmaf(g, r, g); /* -> sqrt(xm) */
        h = __builtin_fmaf(h, r, h); /* -> 1 / (2 sqrt(xm)) */
    }
    float d = __builtin_fmaf(-g, g, xm);
    float s = __builtin_fmaf(d, h, g); /* within one unit in the last place */
    s = s < 1.0f ? 1.0f : s >= 2.0f ? mrl_u2f(0x3fffffffu) : s; /* sqrt(xm) is in [1, 2) */
    d = __builtin_fmaf(-s, s, xm);
    /* sqrt(xm) = s + u/2 would need d = s u + u^2/4: d is a multiple of u^2 = 2^-46, so these
     * comparisons with s u decide the rounding exactly (no ties) */
    float su = s * 1.1920929e-07f; /* s * 2^-23 */
    if (d > su) {
        s = mrl_u2f(mrl_f2u(s) + 1);
    } else if (d <= -su) {
        s = mrl_u2f(mrl_f2u(s) - 1);
    }
    return mrl_u2f(mrl_f2u(s) + (uint32_t)((e / 2) * (1 << 23)));
}
#else
static inline float mrl_divf(float a, float b) {
    return a / b;
}
#endif

static inline double mrl_div(double a, double b) {
    return a / b;
}

/* tanh(x) = e / (e + 2) with e = expm1(2|x|): accurate near 0 too */
static inline float mrl_tanhf(float x) {
    float a = x < 0.0f ? -x : x;
    float t;
    if (a > 9.0f) {
        t = 1.0f;
    } else {
        float e = mrl_expm1f(2.0f * a);
        t = mrl_divf(e, e + 2.0f);
    }
    return x < 0.0f ? -t : t;
}

static inline double mrl_tanh(double x) {
    double a = x < 0.0 ? -x : x;
    double t;
    if (a > 19.0) {
        t = 1.0;
    } else {
        double e = mrl_expm1(2.0 * a);
        t = e / (e + 2.0);
    }
    return x < 0.0 ? -t : t;
}

/* erfc for x >= 0, float: Numerical Recipes' erfcc (Chebyshev fit), fractional error below
 * 1.2e-7 everywhere, so GELU keeps its relative accuracy in the far negative tail too */
static inline float mrl_erfcf_pos(float x) {
    float t = mrl_divf(1.0f, 1.0f + 0.5f * x);
    return t * mrl_expf(-x * x - 1.26551223f + t * (1.00002368f + t * (0.37409196f + t * (0.09678418f
        + t * (-0.18628806f + t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f
        + t * (-0.82215223f + t * 0.17087277f)))))))));
}

/* the standard normal CDF, 0.5 * (1 + erf(v / sqrt 2)): GELU's gate */
static inline float mrl_normal_cdff(float v) {
    return v < 0.0f ? 0.5f * mrl_erfcf_pos(-v * 0.70710678f) : 1.0f - 0.5f * mrl_erfcf_pos(v * 0.70710678f);
}

/* erf, double: Maclaurin series below 3 (about 4 digits lost to cancellation at 3), above it
 * erfc by its continued fraction (modified Lentz). */
static inline double mrl_erf(double x) {
    double s = 1.0;
    if (x < 0.0) {
        s = -1.0;
        x = -x;
    }
    if (x > 6.0) {
        return s;
    }
    if (x < 3.0) {
        double x2 = x * x, term = x, sum = x;
        for (int n = 1; n < 120; n++) {
            term *= -x2 / n;
            double add = term / (2 * n + 1);
            sum += add;
            if ((add < 0 ? -add : add) < 1e-17 * (sum < 0 ? -sum : sum)) {
                break;
            }
        }
        return s * 1.1283791670955126 * sum;
    }
    /* erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + ...))))) */
    double tiny = 1e-300;
    double f = x, C = x, D = 0.0;
    for (int n = 1; n < 300; n++) {
        double a = 0.5 * n;
        D = x + a * D;
        D = D == 0.0 ? tiny : D;
        C = x + a / C;
        C = C == 0.0 ? tiny : C;
        D = 1.0 / D;
        double delta = C * D;
        f *= delta;
        if (delta - 1.0 < 1e-16 && 1.0 - delta < 1e-16) {
            break;
        }
    }
    double erfc = mrl_exp(-x * x) * 0.5641895835477563 / f;
    return s * (1.0 - erfc);
}

/* sqrt: one instruction where the FPU has it (with -fno-math-errno), else Newton's method.
 * 32-bit x86 with x87 math is left out: gcc calls libm's sqrtf there (x87's fsqrt rounds in
 * extended precision), and a native module has no libm. */
#if defined(__x86_64__) || defined(__SSE_MATH__) || (defined(__ARM_FP) && (__ARM_FP & 4))
#define MRL_HW_SQRTF 1
#endif
#if defined(__x86_64__) || defined(__SSE2_MATH__) || (defined(__ARM_FP) && (__ARM_FP & 8))
#define MRL_HW_SQRT 1
#endif

static inline float mrl_sqrtf(float x) {
    #if MRL_FMA_DIV_SQRT
    return mrl_fma_sqrtf(x);
    #elif defined(MRL_HW_SQRTF)
    return __builtin_sqrtf(x);
    #else
    if (x <= 0.0f) {
        return 0.0f;
    }
    union { uint32_t u; float f; } v;
    v.f = x;
    v.u = (v.u >> 1) + 0x1fc00000u; /* halve the exponent: within 6% */
    float y = v.f;
    for (int i = 0; i < 4; i++) {
        y = 0.5f * (y + x / y);
    }
    return y;
    #endif
}

static inline double mrl_normal_cdf(double v) {
    return 0.5 * (1.0 + mrl_erf(v * 0.7071067811865476));
}

static inline double mrl_sqrt(double x) {
    #ifdef MRL_HW_SQRT
    return __builtin_sqrt(x);
    #else
    if (x <= 0.0) {
        return 0.0;
    }
    union { uint64_t u; double d; } v;
    v.d = x;
    v.u = (v.u >> 1) + 0x1ff8000000000000ull;
    double y = v.d;
    for (int i = 0; i < 6; i++) {
        y = 0.5 * (y + x / y);
    }
    return y;
    #endif
}

/* base^n for n >= 0 by squaring (Adam's bias corrections: no libm pow), double and float */
#define MRL_DEFINE_POWI(NAME, T)                \
    static inline T NAME(T base, long n) {      \
        T result = 1;                           \
        while (n > 0) {                         \
            if (n & 1) {                        \
                result *= base;                 \
            }                                   \
            base *= base;                       \
            n >>= 1;                            \
        }                                       \
        return result;                          \
    }
MRL_DEFINE_POWI(mrl_powi, double)
MRL_DEFINE_POWI(mrl_powif, float)

/* arithmetic on mrl_hyper_t (kernels.h): hyperparameters and Adam's bias corrections */
#if MRL_HYPER_FLOAT
#define mrl_hyper_powi mrl_powif
#define mrl_hyper_sqrt mrl_sqrtf
#define mrl_hyper_div mrl_divf
#else
#define mrl_hyper_powi mrl_powi
#define mrl_hyper_sqrt mrl_sqrt
#define mrl_hyper_div mrl_div
#endif

#endif
