/* microrl dense-layer kernels in plain C99: no MicroPython, no allocation.
 * Built three ways from the same source: into the MicroPython native module (module.c),
 * into a host shared library for the tests (ctypes), and bare for Cortex-M code-size checks.
 *
 * Shapes follow the device core (device/microrl/_plain.py is the reference):
 *   W [n_out, n_in] row-major, b [n_out], x [n, n_in], y and z [n, n_out], all contiguous.
 * Activation codes are those of device/microrl/activations.py. */
#ifndef MICRORL_KERNELS_H
#define MICRORL_KERNELS_H

#include <stdint.h>

#define MRL_IDENTITY 0
#define MRL_RELU 1
#define MRL_TANH 2
#define MRL_SIGMOID 3
#define MRL_GELU 4
#define MRL_N_ACTIVATIONS 5

/* Double-precision kernels too (for gradient checks in 'd' buffers): host builds only by default;
 * microcontroller builds leave them out to save flash. */
#ifndef MICRORL_KERNELS_DOUBLE
#define MICRORL_KERNELS_DOUBLE 0
#endif

/* Hyperparameters (lr, betas, eps, tau) and Adam's bias corrections: double, as the plain path
 * computes them in Python floats; float where the module links no double arithmetic
 * (MRL_HYPER_FLOAT: the ESP32 build, whose MicroPython floats are float32 anyway). */
#if MRL_HYPER_FLOAT
typedef float mrl_hyper_t;
#else
typedef double mrl_hyper_t;
#endif

#define MRL_DECLARE(REAL, SFX)                                                                      \
    /* y[:n] = act(x[:n] @ W.T + b); z (may be NULL) gets the pre-activation */                     \
    void mrl_dense_##SFX(const REAL *W, const REAL *b, const REAL *x, REAL *y, REAL *z,             \
                         int n, int n_out, int n_in, int act);                                      \
    /* dy overwritten by dL/dz; dW, db written (not accumulated); dx = dz @ W. NULL skips one. */  \
    void mrl_dense_backward_##SFX(const REAL *W, const REAL *x, const REAL *y, const REAL *z,     \
                                  REAL *dy, int n, int n_out, int n_in, int act,                    \
                                  REAL *dW, REAL *db, REAL *dx);                                    \
    /* torch.optim.Adam (no weight decay, no amsgrad); step counts from 1 */                       \
    void mrl_adam_##SFX(REAL *p, const REAL *g, REAL *m, REAL *v, int n,                            \
                        mrl_hyper_t lr, mrl_hyper_t beta1, mrl_hyper_t beta2, mrl_hyper_t eps,      \
                        int step);                                                                  \
    /* target = (1 - tau) * target + tau * source */                                                \
    void mrl_polyak_##SFX(REAL *target, const REAL *source, int n, mrl_hyper_t tau);                \
    void mrl_copy_##SFX(REAL *target, const REAL *source, int n);

MRL_DECLARE(float, f)
#if MICRORL_KERNELS_DOUBLE
MRL_DECLARE(double, d)
#endif

/* The int16 fixed-point dense layer of device/microrl/fixedpoint.py (layer_plain there is the
 * reference; the viper kernel and this one give its integers bit for bit):
 *   y[o] = sat16(rescale(act(b[o] + sum_i W[o, i] x[i])))
 * W int16 [n_out, n_in] row-major, b int32, x and y int16, 32-bit accumulation (the policy
 * loader bounds every accumulator below 2^31). relu and identity rescale by s_out; tanh, sigmoid
 * and gelu go to Q14 by s_14, through the 513-entry Q14 tables T (tanh) and P (normal CDF), and out
 * by s_14_out. A shift s > 0 divides by 2^s rounding half up, s < 0 is a left shift that saturates
 * at +-limit; shifts in [-31, 31]. */
#define MRL_Q 14
#define MRL_TABLE_N 513
#define MRL_MAX_SHIFT 31
void mrl_dense_int16(const int16_t *W, const int32_t *b, const int16_t *x, int16_t *y, int n_in, int n_out,
                     int act, int s_out, int s_14, int s_14_out, const int16_t *T, const int16_t *P);

#endif
