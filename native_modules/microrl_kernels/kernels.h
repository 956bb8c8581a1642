/* microrl dense-layer kernels in plain C99: no MicroPython, no allocation.
 * Built three ways from the same source: into the MicroPython native module (module.c),
 * into a host shared library for the tests (ctypes), and bare for Cortex-M code-size checks.
 *
 * Shapes follow the device core (device/microrl/_plain.py is the reference):
 *   W [n_out, n_in] row-major, b [n_out], x [n, n_in], y and z [n, n_out], all contiguous.
 * Activation codes are those of device/microrl/activations.py. */
#ifndef MICRORL_KERNELS_H
#define MICRORL_KERNELS_H

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

#endif
