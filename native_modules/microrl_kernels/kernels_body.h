/* The kernel bodies, included by kernels.c once per element type with REAL, SFX and the math
 * functions (EXP, TANH, NORMAL_CDF, SQRT, DIV) defined. */
#define MRL_CAT_(a, b) a##b
#define MRL_CAT(a, b) MRL_CAT_(a, b)
#define MRL_FN(name) MRL_CAT(name, SFX)

static REAL MRL_FN(act_value_)(int act, REAL v) {
    switch (act) {
        case MRL_RELU:
            return v > (REAL)0 ? v : (REAL)0;
        case MRL_TANH:
            return TANH(v);
        case MRL_SIGMOID:
            if (v >= (REAL)0) {
                return DIV((REAL)1, (REAL)1 + EXP(-v));
            } else {
                REAL e = EXP(v);
                return DIV(e, (REAL)1 + e);
            }
        case MRL_GELU:
            return v * NORMAL_CDF(v);
        default:
            return v;
    }
}

void MRL_FN(mrl_dense_)(const REAL *W, const REAL *b, const REAL *x, REAL *y, REAL *z,
                         int n, int n_out, int n_in, int act) {
    for (int s = 0; s < n; s++) {
        const REAL *xs = x + s * n_in;
        REAL *ys = y + s * n_out;
        const REAL *w = W;
        for (int o = 0; o < n_out; o++) {
            /* four partial sums: breaks the add dependency chain so the FPU pipelines */
            REAL a0 = 0, a1 = 0, a2 = 0, a3 = 0;
            int i = 0;
            for (; i + 4 <= n_in; i += 4) {
                a0 += w[i] * xs[i];
                a1 += w[i + 1] * xs[i + 1];
                a2 += w[i + 2] * xs[i + 2];
                a3 += w[i + 3] * xs[i + 3];
            }
            for (; i < n_in; i++) {
                a0 += w[i] * xs[i];
            }
            REAL acc = b[o] + ((a0 + a1) + (a2 + a3));
            w += n_in;
            if (z) {
                z[s * n_out + o] = acc;
            }
            if (act == MRL_RELU) {
                ys[o] = acc > (REAL)0 ? acc : (REAL)0;
            } else {
                ys[o] = MRL_FN(act_value_)(act, acc);
            }
        }
    }
}

void MRL_FN(mrl_dense_backward_)(const REAL *W, const REAL *x, const REAL *y, const REAL *z,
                                  REAL *dy, int n, int n_out, int n_in, int act,
                                  REAL *dW, REAL *db, REAL *dx) {
    int m = n * n_out;
    switch (act) {
        case MRL_RELU:
            for (int k = 0; k < m; k++) {
                if (y[k] <= (REAL)0) {
                    dy[k] = 0;
                }
            }
            break;
        case MRL_TANH:
            for (int k = 0; k < m; k++) {
                dy[k] *= (REAL)1 - y[k] * y[k];
            }
            break;
        case MRL_SIGMOID:
            for (int k = 0; k < m; k++) {
                dy[k] *= y[k] * ((REAL)1 - y[k]);
            }
            break;
        case MRL_GELU:
            for (int k = 0; k < m; k++) {
                REAL v = z[k];
                REAL cdf = NORMAL_CDF(v);
                REAL pdf = (REAL)0.3989422804014327 * EXP((REAL)-0.5 * v * v);
                dy[k] *= cdf + v * pdf;
            }
            break;
        default:
            break;
    }
    if (dW) {
        /* row by row of the batch: contiguous reads and writes, no strided sum over s */
        for (int k = 0; k < n_out * n_in; k++) {
            dW[k] = 0;
        }
        for (int s = 0; s < n; s++) {
            const REAL *xs = x + s * n_in;
            const REAL *gs = dy + s * n_out;
            REAL *row = dW;
            for (int o = 0; o < n_out; o++) {
                REAL g = gs[o];
                if (g != (REAL)0) {
                    for (int i = 0; i < n_in; i++) {
                        row[i] += g * xs[i];
                    }
                }
                row += n_in;
            }
        }
    }
    if (db) {
        for (int o = 0; o < n_out; o++) {
            db[o] = 0;
        }
        for (int s = 0; s < n; s++) {
            const REAL *gs = dy + s * n_out;
            for (int o = 0; o < n_out; o++) {
                db[o] += gs[o];
            }
        }
    }
    if (dx) {
        for (int s = 0; s < n; s++) {
            const REAL *gs = dy + s * n_out;
            REAL *xs = dx + s * n_in;
            for (int i = 0; i < n_in; i++) {
                xs[i] = 0;
            }
            const REAL *w = W;
            for (int o = 0; o < n_out; o++) {
                REAL g = gs[o];
                if (g != (REAL)0) {
                    for (int i = 0; i < n_in; i++) {
                        xs[i] += g * w[i];
                    }
                }
                w += n_in;
            }
        }
    }
}

void MRL_FN(mrl_adam_)(REAL *p, const REAL *g, REAL *m, REAL *v, int n,
                        mrl_hyper_t lr, mrl_hyper_t beta1, mrl_hyper_t beta2, mrl_hyper_t eps, int step) {
    /* bias corrections in mrl_hyper_t (double but on the ESP32), as the plain path does them in
     * Python floats */
    mrl_hyper_t b1t = mrl_hyper_powi(beta1, step), b2t = mrl_hyper_powi(beta2, step);
    REAL step_size = (REAL)mrl_hyper_div(lr, 1 - b1t);
    REAL inv_bc2_sqrt = (REAL)mrl_hyper_div(1, mrl_hyper_sqrt(1 - b2t));
    REAL b1 = (REAL)beta1, b2 = (REAL)beta2, c1 = (REAL)(1 - beta1), c2 = (REAL)(1 - beta2);
    REAL e = (REAL)eps;
    for (int k = 0; k < n; k++) {
        REAL gk = g[k];
        REAL mk = b1 * m[k] + c1 * gk;
        REAL vk = b2 * v[k] + c2 * gk * gk;
        m[k] = mk;
        v[k] = vk;
        p[k] -= DIV(step_size * mk, SQRT(vk) * inv_bc2_sqrt + e);
    }
}

void MRL_FN(mrl_polyak_)(REAL *target, const REAL *source, int n, mrl_hyper_t tau) {
    REAL t = (REAL)tau, keep = (REAL)(1 - tau);
    for (int k = 0; k < n; k++) {
        target[k] = keep * target[k] + t * source[k];
    }
}

void MRL_FN(mrl_copy_)(REAL *target, const REAL *source, int n) {
    if (target == source) {
        return;
    }
    for (int k = 0; k < n; k++) {
        target[k] = source[k];
    }
}

#undef MRL_FN
