/* See kernels.h. One body (kernels_body.h) instantiated for float and, optionally, double;
 * math from mrl_math.h so that nothing needs the C library. */
#include "kernels.h"
#include "mrl_math.h"

#define REAL float
#define SFX f
#define EXP mrl_expf
#define TANH mrl_tanhf
#define NORMAL_CDF mrl_normal_cdff
#define SQRT mrl_sqrtf
#define DIV mrl_divf
#include "kernels_body.h"
#undef REAL
#undef SFX
#undef EXP
#undef TANH
#undef NORMAL_CDF
#undef SQRT
#undef DIV

#if MICRORL_KERNELS_DOUBLE
#define REAL double
#define SFX d
#define EXP mrl_exp
#define TANH mrl_tanh
#define NORMAL_CDF mrl_normal_cdf
#define SQRT mrl_sqrt
#define DIV mrl_div
#include "kernels_body.h"
#endif

/* ---- int16 fixed point (fixedpoint.py's layer_plain, bit for bit) ---- */

#define MRL_INT16_MAX 32767
#define MRL_X14_LIMIT (1 << 21) /* table activations' argument clamp, Q14 */

/* v * 2^-s rounded half up (s > 0), or v * 2^-s saturated at +-limit (s < 0), s in [-31, 31]:
 * Python's exact arithmetic on the values the loader allows (there v + 2^(s-1) < 2^31); outside
 * them it wraps as 32-bit viper does (unsigned: defined), and no 64-bit helper is needed */
static inline int32_t mrl_shift_round(int32_t v, int s, int32_t limit) {
    if (s > 0) {
        return (int32_t)((uint32_t)v + ((uint32_t)1 << (s - 1))) >> s;
    }
    if (s < 0) {
        int32_t m = limit >> -s;
        if (v > m) {
            return limit;
        }
        if (v < -m) {
            return -limit;
        }
        return (int32_t)((uint32_t)v << -s); /* |v| <= m: no overflow; unsigned: defined for v < 0 */
    }
    return v;
}

/* the table at a >= 0 (Q14), linear interpolation between its 1/64 steps */
static inline int32_t mrl_lookup(const int16_t *T, int32_t a) {
    int32_t k = a >> (MRL_Q - 6);
    if (k >= MRL_TABLE_N - 1) {
        return T[MRL_TABLE_N - 1];
    }
    int32_t t0 = T[k];
    return t0 + (((T[k + 1] - t0) * (a & ((1 << (MRL_Q - 6)) - 1))) >> (MRL_Q - 6));
}

/* act(x) in Q14 for x in Q14, |x| <= 2^21 */
static int32_t mrl_act14(int act, int32_t x, const int16_t *T, const int16_t *P) {
    if (act == MRL_TANH) {
        return x >= 0 ? mrl_lookup(T, x) : -mrl_lookup(T, -x);
    }
    if (act == MRL_SIGMOID) { /* (1 + tanh(x / 2)) / 2 */
        int32_t h = x >> 1;
        int32_t t = h >= 0 ? mrl_lookup(T, h) : -mrl_lookup(T, -h);
        return (16384 + t) >> 1;
    }
    /* gelu: x Phi(x) */
    if (x >= (8 << MRL_Q)) {
        return x;
    }
    if (x <= -(8 << MRL_Q)) {
        return 0;
    }
    int32_t p = x >= 0 ? mrl_lookup(P, x) : 16384 - mrl_lookup(P, -x);
    /* with fixedpoint.tables() |product| < 2^30; unsigned, so that another P wraps (as viper on
     * 32 bits does) instead of being undefined. No 64-bit multiply: the ESP8266 has no helper */
    return (int32_t)((uint32_t)(x >> 1) * (uint32_t)p) >> (MRL_Q - 1);
}

/* x86-64 (the unix port, tests): gcc -O2 vectorises the sums only with a loop count known at
 * compile time; this lets it (pmaddwd) for any n_in. Elsewhere there is no integer SIMD to use. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("tree-vectorize", "vect-cost-model=cheap")))
#endif
void mrl_dense_int16(const int16_t *W, const int32_t *b, const int16_t *x, int16_t *y, int n_in, int n_out,
                     int act, int s_out, int s_14, int s_14_out, const int16_t *T, const int16_t *P) {
    const int16_t *w = W;
    for (int o = 0; o < n_out; o++, w += n_in) {
        /* unsigned sums: a wrap (which the loader rules out) is defined, as in viper on 32 bits */
        uint32_t a0 = (uint32_t)b[o], a1 = 0;
        int i = 0;
        for (; i + 2 <= n_in; i += 2) {
            a0 += (uint32_t)((int32_t)w[i] * x[i]);
            a1 += (uint32_t)((int32_t)w[i + 1] * x[i + 1]);
        }
        if (i < n_in) {
            a0 += (uint32_t)((int32_t)w[i] * x[i]);
        }
        int32_t acc = (int32_t)(a0 + a1);
        int32_t v;
        if (act == MRL_RELU || act == MRL_IDENTITY) {
            if (act == MRL_RELU && acc < 0) {
                acc = 0;
            }
            v = mrl_shift_round(acc, s_out, MRL_INT16_MAX);
        } else {
            int32_t x14 = mrl_shift_round(acc, s_14, MRL_X14_LIMIT);
            if (x14 > MRL_X14_LIMIT) {
                x14 = MRL_X14_LIMIT;
            } else if (x14 < -MRL_X14_LIMIT) {
                x14 = -MRL_X14_LIMIT;
            }
            v = mrl_shift_round(mrl_act14(act, x14, T, P), s_14_out, MRL_INT16_MAX);
        }
        if (v > MRL_INT16_MAX) {
            v = MRL_INT16_MAX;
        } else if (v < -MRL_INT16_MAX) {
            v = -MRL_INT16_MAX;
        }
        y[o] = (int16_t)v;
    }
}
