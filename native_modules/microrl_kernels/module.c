/* microrl_kernels: the MicroPython dynamic native module around kernels.c.
 *
 * Same API as device/microrl/_plain.py, on the same views: a matrix view is the tuple
 * (array, offset, rows, cols), a vector view (array, offset, n), offsets and sizes in elements.
 * Kernels work in place on the arrays; a call allocates nothing (errors aside).
 *
 *   dense(W, b, x, y, n, act, z=None)
 *   dense_backward(W, x, y, z, dy, n, act, dW=None, db=None, dx=None)
 *   adam(p, g, m, v, lr, beta1, beta2, eps, step)
 *   polyak(target, source, tau)
 *   copy(target, source)
 *   dense_int16(W, b, x, y, n_in, n_out, act, s_out, s_14, s_14_out, T, P)
 *       fixedpoint.py's integer layer (layer_plain's arguments and integers) over arrays:
 *       W, x, y, T, P array('h'), b array('i')
 *   load_input(obs, x, n, mean, std, scale) -> -1, or the index of the first value that is not
 *       finite: a policy's input from obs (a list, tuple or array of n numbers), normalised by
 *       (obs - mean) / std when mean is not None, in the port's float arithmetic; into
 *       array('f') x as float32, or into array('h') x quantised as fixedpoint.py does (times
 *       scale, rounded half away from zero, saturated at +-32767). NaN, inf or beyond float32's
 *       range after normalisation stops it there (the caller raises, naming the index)
 *   typecode(array) -> int; double_kernels: whether array('d') works here (x64 builds)
 *   SOURCE_HASH: the hash of the C sources this file was built from (build_dist.py sets it;
 *   the manifest beside the shipped files records the same, tests/test_native_shipped.py checks)
 *
 * Float kernels' arrays must all be array('f') (or all array('d') where the build has double
 * kernels). */
#include "py/dynruntime.h"

#include "kernels.h"
#include "mrl_math.h"

/* the port's float division: mrl_divf is a / b, correctly rounded also where the FPU has no divide
 * (the ESP32 build computes it with fused multiply-add) */
#if MICROPY_FLOAT_IMPL == MICROPY_FLOAT_IMPL_FLOAT
#define MRL_FLOAT_DIV mrl_divf
#else
#define MRL_FLOAT_DIV mrl_div
#endif

#ifndef MICRORL_SOURCE_HASH
#define MICRORL_SOURCE_HASH "dev"
#endif

typedef struct {
    void *data;     /* first element of the view */
    char typecode;  /* 'f' or 'd' */
    mp_int_t rows;  /* 1 for a vector */
    mp_int_t cols;  /* n for a vector */
} view_t;

/* A ValueError/TypeError whose message is "<function>: <argument> <problem>" */
static MP_NORETURN void view_error(const mp_obj_type_t *type, const char *fn, const char *arg, const char *problem) {
    char msg[200];
    size_t k = 0;
    const char *parts[5] = {fn, ": ", arg, " ", problem};
    for (int p = 0; p < 5; p++) {
        for (const char *c = parts[p]; *c && k < sizeof(msg) - 1; c++) {
            msg[k++] = *c;
        }
    }
    mp_raise_type_arg(type, mp_obj_new_str(msg, k));
}

/* Unpack a view tuple into v, checking the buffer's type and that the view lies inside it.
 * dims: 2 for a matrix view (4-tuple), 1 for a vector view (3-tuple). */
static void get_view(mp_obj_t obj, int dims, const char *fn, const char *arg, view_t *v) {
    size_t len;
    mp_obj_t *items;
    if (!mp_obj_is_type(obj, &mp_type_tuple)) {
        view_error(&mp_type_TypeError, fn, arg, dims == 2 ? "must be a matrix view (array, offset, rows, cols)" : "must be a vector view (array, offset, n)");
    }
    mp_obj_get_array(obj, &len, &items);
    if ((int)len != dims + 2) {
        view_error(&mp_type_TypeError, fn, arg, dims == 2 ? "must be a matrix view (array, offset, rows, cols)" : "must be a vector view (array, offset, n)");
    }
    mp_buffer_info_t info;
    if (!mp_get_buffer(items[0], &info, MP_BUFFER_RW)) {
        view_error(&mp_type_TypeError, fn, arg, "is not over a writable buffer: use array('f')");
    }
    size_t itemsize;
    if (info.typecode == 'f') {
        itemsize = sizeof(float);
    #if MICRORL_KERNELS_DOUBLE
    } else if (info.typecode == 'd') {
        itemsize = sizeof(double);
    #endif
    } else {
        #if MICRORL_KERNELS_DOUBLE
        view_error(&mp_type_TypeError, fn, arg, "must be over an array('f') or array('d')");
        #else
        view_error(&mp_type_TypeError, fn, arg, "must be over an array('f') (this build has no double kernels)");
        #endif
    }
    mp_int_t offset = mp_obj_get_int(items[1]);
    mp_int_t rows = 1, cols;
    if (dims == 2) {
        rows = mp_obj_get_int(items[2]);
        cols = mp_obj_get_int(items[3]);
    } else {
        cols = mp_obj_get_int(items[2]);
    }
    if (offset < 0 || rows < 0 || cols < 0) {
        view_error(&mp_type_ValueError, fn, arg, "has a negative offset or size");
    }
    size_t n_items = info.len / itemsize;
    if ((size_t)offset > n_items || (size_t)rows * (size_t)cols > n_items - (size_t)offset) {
        view_error(&mp_type_ValueError, fn, arg, "reaches past the end of its array (offset + rows * cols > len)");
    }
    v->data = (char *)info.buf + offset * itemsize;
    v->typecode = info.typecode;
    v->rows = rows;
    v->cols = cols;
}

static void same_type(const view_t *a, const view_t *b, const char *fn, const char *arg) {
    if (a->typecode != b->typecode) {
        view_error(&mp_type_TypeError, fn, arg, "has a different typecode from W (mix of array('f') and array('d'))");
    }
}

static int get_act(mp_obj_t obj, const char *fn) {
    mp_int_t act = mp_obj_get_int(obj);
    if (act < 0 || act >= MRL_N_ACTIVATIONS) {
        view_error(&mp_type_ValueError, fn, "act", "is not an activation code (0 identity, 1 relu, 2 tanh, 3 sigmoid, 4 gelu)");
    }
    return (int)act;
}

/* dense(W, b, x, y, n, act, z=None) */
static mp_obj_t dense(size_t n_args, const mp_obj_t *args) {
    static const char fn[] = "dense";
    view_t W, b, x, y, z;
    get_view(args[0], 2, fn, "W", &W);
    get_view(args[1], 1, fn, "b", &b);
    get_view(args[2], 2, fn, "x", &x);
    get_view(args[3], 2, fn, "y", &y);
    mp_int_t n = mp_obj_get_int(args[4]);
    int act = get_act(args[5], fn);
    int has_z = n_args > 6 && args[6] != mp_const_none;
    if (has_z) {
        get_view(args[6], 2, fn, "z", &z);
    }
    if (b.cols != W.rows) {
        view_error(&mp_type_ValueError, fn, "b", "length differs from W's rows");
    }
    if (x.cols != W.cols) {
        view_error(&mp_type_ValueError, fn, "x", "columns differ from W's columns (inputs)");
    }
    if (y.cols != W.rows || (has_z && z.cols != W.rows)) {
        view_error(&mp_type_ValueError, fn, "y", "(or z) columns differ from W's rows (outputs)");
    }
    if (n < 0 || n > x.rows || n > y.rows || (has_z && n > z.rows)) {
        view_error(&mp_type_ValueError, fn, "n", "exceeds the rows of x, y or z");
    }
    same_type(&W, &b, fn, "b");
    same_type(&W, &x, fn, "x");
    same_type(&W, &y, fn, "y");
    if (has_z) {
        same_type(&W, &z, fn, "z");
    }
    #if MICRORL_KERNELS_DOUBLE
    if (W.typecode == 'd') {
        mrl_dense_d(W.data, b.data, x.data, y.data, has_z ? z.data : NULL, n, W.rows, W.cols, act);
        return mp_const_none;
    }
    #endif
    mrl_dense_f(W.data, b.data, x.data, y.data, has_z ? z.data : NULL, n, W.rows, W.cols, act);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(dense_obj, 6, 7, dense);

/* dense_backward(W, x, y, z, dy, n, act, dW=None, db=None, dx=None) */
static mp_obj_t dense_backward(size_t n_args, const mp_obj_t *args) {
    static const char fn[] = "dense_backward";
    view_t W, x, y, z, dy, dW, db, dx;
    get_view(args[0], 2, fn, "W", &W);
    get_view(args[1], 2, fn, "x", &x);
    get_view(args[2], 2, fn, "y", &y);
    int has_z = args[3] != mp_const_none;
    if (has_z) {
        get_view(args[3], 2, fn, "z", &z);
    }
    get_view(args[4], 2, fn, "dy", &dy);
    mp_int_t n = mp_obj_get_int(args[5]);
    int act = get_act(args[6], fn);
    int has_dW = n_args > 7 && args[7] != mp_const_none;
    int has_db = n_args > 8 && args[8] != mp_const_none;
    int has_dx = n_args > 9 && args[9] != mp_const_none;
    if (has_dW) {
        get_view(args[7], 2, fn, "dW", &dW);
    }
    if (has_db) {
        get_view(args[8], 1, fn, "db", &db);
    }
    if (has_dx) {
        get_view(args[9], 2, fn, "dx", &dx);
    }
    if (act == MRL_GELU && !has_z) {
        view_error(&mp_type_ValueError, fn, "z", "is needed for gelu (the pre-activation of the forward pass)");
    }
    if (x.cols != W.cols || (has_dx && dx.cols != W.cols)) {
        view_error(&mp_type_ValueError, fn, "x", "(or dx) columns differ from W's columns (inputs)");
    }
    if (y.cols != W.rows || dy.cols != W.rows || (has_z && z.cols != W.rows)) {
        view_error(&mp_type_ValueError, fn, "y", "(or dy, z) columns differ from W's rows (outputs)");
    }
    if (has_dW && (dW.rows != W.rows || dW.cols != W.cols)) {
        view_error(&mp_type_ValueError, fn, "dW", "shape differs from W's");
    }
    if (has_db && db.cols != W.rows) {
        view_error(&mp_type_ValueError, fn, "db", "length differs from W's rows");
    }
    if (n < 0 || n > x.rows || n > y.rows || n > dy.rows || (has_z && n > z.rows) || (has_dx && n > dx.rows)) {
        view_error(&mp_type_ValueError, fn, "n", "exceeds the rows of x, y, z, dy or dx");
    }
    same_type(&W, &x, fn, "x");
    same_type(&W, &y, fn, "y");
    same_type(&W, &dy, fn, "dy");
    if (has_z) {
        same_type(&W, &z, fn, "z");
    }
    if (has_dW) {
        same_type(&W, &dW, fn, "dW");
    }
    if (has_db) {
        same_type(&W, &db, fn, "db");
    }
    if (has_dx) {
        same_type(&W, &dx, fn, "dx");
    }
    #if MICRORL_KERNELS_DOUBLE
    if (W.typecode == 'd') {
        mrl_dense_backward_d(W.data, x.data, y.data, has_z ? z.data : NULL, dy.data, n, W.rows, W.cols, act,
            has_dW ? dW.data : NULL, has_db ? db.data : NULL, has_dx ? dx.data : NULL);
        return mp_const_none;
    }
    #endif
    mrl_dense_backward_f(W.data, x.data, y.data, has_z ? z.data : NULL, dy.data, n, W.rows, W.cols, act,
        has_dW ? dW.data : NULL, has_db ? db.data : NULL, has_dx ? dx.data : NULL);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(dense_backward_obj, 7, 10, dense_backward);

/* Two or more vector views of the same length and typecode. */
static void get_vectors(const mp_obj_t *args, int count, const char *fn, const char *const *names, view_t *v) {
    for (int k = 0; k < count; k++) {
        get_view(args[k], 1, fn, names[k], &v[k]);
        if (k > 0 && v[k].cols != v[0].cols) {
            view_error(&mp_type_ValueError, fn, names[k], "length differs from the first argument's");
        }
        if (k > 0 && v[k].typecode != v[0].typecode) {
            view_error(&mp_type_TypeError, fn, names[k], "typecode differs from the first argument's");
        }
    }
}

/* adam(p, g, m, v, lr, beta1, beta2, eps, step) */
static mp_obj_t adam(size_t n_args, const mp_obj_t *args) {
    static const char *const names[] = {"p", "g", "m", "v"};
    view_t vs[4];
    get_vectors(args, 4, "adam", names, vs);
    mrl_hyper_t lr = mp_obj_get_float(args[4]);
    mrl_hyper_t beta1 = mp_obj_get_float(args[5]);
    mrl_hyper_t beta2 = mp_obj_get_float(args[6]);
    mrl_hyper_t eps = mp_obj_get_float(args[7]);
    mp_int_t step = mp_obj_get_int(args[8]);
    if (step < 1) {
        view_error(&mp_type_ValueError, "adam", "step", "must count from 1");
    }
    #if MICRORL_KERNELS_DOUBLE
    if (vs[0].typecode == 'd') {
        mrl_adam_d(vs[0].data, vs[1].data, vs[2].data, vs[3].data, vs[0].cols, lr, beta1, beta2, eps, step);
        return mp_const_none;
    }
    #endif
    mrl_adam_f(vs[0].data, vs[1].data, vs[2].data, vs[3].data, vs[0].cols, lr, beta1, beta2, eps, step);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(adam_obj, 9, 9, adam);

static const char *const target_source[] = {"target", "source"};

static mp_obj_t polyak(mp_obj_t target, mp_obj_t source, mp_obj_t tau_obj) {
    mp_obj_t args[2] = {target, source};
    view_t vs[2];
    get_vectors(args, 2, "polyak", target_source, vs);
    mrl_hyper_t tau = mp_obj_get_float(tau_obj);
    #if MICRORL_KERNELS_DOUBLE
    if (vs[0].typecode == 'd') {
        mrl_polyak_d(vs[0].data, vs[1].data, vs[0].cols, tau);
        return mp_const_none;
    }
    #endif
    mrl_polyak_f(vs[0].data, vs[1].data, vs[0].cols, tau);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_3(polyak_obj, polyak);

static mp_obj_t copy(mp_obj_t target, mp_obj_t source) {
    mp_obj_t args[2] = {target, source};
    view_t vs[2];
    get_vectors(args, 2, "copy", target_source, vs);
    #if MICRORL_KERNELS_DOUBLE
    if (vs[0].typecode == 'd') {
        mrl_copy_d(vs[0].data, vs[1].data, vs[0].cols);
        return mp_const_none;
    }
    #endif
    mrl_copy_f(vs[0].data, vs[1].data, vs[0].cols);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_2(copy_obj, copy);

/* Argument checking and a policy's input (a dozen values): compiled for size, not speed. Each
 * byte of a native module costs a byte of heap on the ports that load it into RAM (the unix port
 * too: the 13-64-64-4 policy must still run in a 52K heap there) */
#if defined(__GNUC__) && !defined(__clang__)
#define MRL_SMALL __attribute__((optimize("Os")))
#else
#define MRL_SMALL
#endif

/* The buffer of an array of this typecode with at least min_len items (writable if asked). */
MRL_SMALL static void *get_typed(mp_obj_t obj, char typecode, size_t itemsize, size_t min_len, int writable, const char *fn, const char *arg) {
    mp_buffer_info_t info;
    if (!mp_get_buffer(obj, &info, writable ? MP_BUFFER_RW : MP_BUFFER_READ) || info.typecode != typecode) {
        view_error(&mp_type_TypeError, fn, arg, typecode == 'h' ? "must be an array('h')" : typecode == 'i' ? "must be an array('i')" : "must be an array('f')");
    }
    if ((itemsize == 2 ? info.len >> 1 : info.len >> 2) < min_len) { /* shifts: no division helper */
        view_error(&mp_type_ValueError, fn, arg, "is shorter than the layer needs");
    }
    return info.buf;
}

static int get_shift(mp_obj_t obj, const char *fn, const char *arg) {
    mp_int_t s = mp_obj_get_int(obj);
    if (s < -MRL_MAX_SHIFT || s > MRL_MAX_SHIFT) {
        view_error(&mp_type_ValueError, fn, arg, "is outside [-31, 31]");
    }
    return (int)s;
}

/* dense_int16(W, b, x, y, n_in, n_out, act, s_out, s_14, s_14_out, T, P) */
MRL_SMALL static mp_obj_t dense_int16(size_t n_args, const mp_obj_t *args) {
    static const char fn[] = "dense_int16";
    (void)n_args;
    mp_int_t n_in = mp_obj_get_int(args[4]);
    mp_int_t n_out = mp_obj_get_int(args[5]);
    if (n_in < 0 || n_out < 0 || n_in > 65535 || n_out > 65535) {
        view_error(&mp_type_ValueError, fn, "n_in", "(or n_out) is outside 0..65535 (a layer's size)");
    }
    const int16_t *W = get_typed(args[0], 'h', 2, (size_t)n_in * (size_t)n_out, 0, fn, "W");
    const int32_t *b = get_typed(args[1], 'i', 4, n_out, 0, fn, "b");
    const int16_t *x = get_typed(args[2], 'h', 2, n_in, 0, fn, "x");
    int16_t *y = get_typed(args[3], 'h', 2, n_out, 1, fn, "y");
    int act = get_act(args[6], fn);
    int s_out = get_shift(args[7], fn, "s_out");
    int s_14 = get_shift(args[8], fn, "s_14");
    int s_14_out = get_shift(args[9], fn, "s_14_out");
    const int16_t *T = get_typed(args[10], 'h', 2, MRL_TABLE_N, 0, fn, "T");
    const int16_t *P = get_typed(args[11], 'h', 2, MRL_TABLE_N, 0, fn, "P");
    if ((const void *)y == (const void *)x) {
        view_error(&mp_type_ValueError, fn, "y", "is x (the layer reads x while it writes y)");
    }
    mrl_dense_int16(W, b, x, y, (int)n_in, (int)n_out, act, s_out, s_14, s_14_out, T, P);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(dense_int16_obj, 12, 12, dense_int16);

#define MRL_FLOAT32_MAX ((mp_float_t)3.40282346638528859812e+38)

/* load_input(obs, x, n, mean, std, scale) -> -1 or the index of the first non-finite value */
MRL_SMALL static mp_obj_t load_input(size_t n_args, const mp_obj_t *args) {
    static const char fn[] = "load_input";
    (void)n_args;
    mp_obj_t obs = args[0];
    mp_int_t n = mp_obj_get_int(args[2]);
    if (n < 0) {
        view_error(&mp_type_ValueError, fn, "n", "is negative");
    }
    mp_buffer_info_t xb;
    if (!mp_get_buffer(args[1], &xb, MP_BUFFER_RW) || (xb.typecode != 'f' && xb.typecode != 'h')) {
        view_error(&mp_type_TypeError, fn, "x", "must be an array('f') or array('h')");
    }
    if ((xb.typecode == 'f' ? xb.len / sizeof(float) : xb.len / sizeof(int16_t)) < (size_t)n) {
        view_error(&mp_type_ValueError, fn, "x", "is shorter than n");
    }
    const float *mean = NULL, *std = NULL;
    if (args[3] != mp_const_none || args[4] != mp_const_none) {
        mean = get_typed(args[3], 'f', sizeof(float), n, 0, fn, "mean");
        std = get_typed(args[4], 'f', sizeof(float), n, 0, fn, "std");
    }
    mp_float_t scale = xb.typecode == 'h' ? mp_obj_get_float(args[5]) : (mp_float_t)1;
    /* where obs[i] comes from: a list's or tuple's items, a float array's memory, or obs[i] */
    mp_obj_t *items = NULL;
    const float *obs_f = NULL;
    #if MICRORL_KERNELS_DOUBLE
    const double *obs_d = NULL;
    #endif
    size_t len;
    mp_buffer_info_t ob;
    if (mp_obj_is_type(obs, &mp_type_list) || mp_obj_is_type(obs, &mp_type_tuple)) {
        mp_obj_get_array(obs, &len, &items);
    } else if (mp_get_buffer(obs, &ob, MP_BUFFER_READ) && ob.typecode == 'f') {
        obs_f = ob.buf;
        len = ob.len / sizeof(float);
    #if MICRORL_KERNELS_DOUBLE
    } else if (mp_get_buffer(obs, &ob, MP_BUFFER_READ) && ob.typecode == 'd') {
        obs_d = ob.buf;
        len = ob.len / sizeof(double);
    #endif
    } else {
        len = (size_t)mp_obj_get_int(mp_obj_len(obs));
    }
    if (len != (size_t)n) {
        view_error(&mp_type_ValueError, fn, "obs", "length differs from n");
    }
    float *xf = xb.buf;
    int16_t *xh = xb.buf;
    for (mp_int_t i = 0; i < n; i++) {
        mp_float_t v;
        if (items) {
            v = mp_obj_get_float(items[i]);
        } else if (obs_f) {
            v = obs_f[i];
        #if MICRORL_KERNELS_DOUBLE
        } else if (obs_d) {
            v = (mp_float_t)obs_d[i];
        #endif
        } else {
            v = mp_obj_get_float(mp_obj_subscr(obs, MP_OBJ_NEW_SMALL_INT(i), MP_OBJ_SENTINEL));
        }
        if (mean) {
            v = MRL_FLOAT_DIV(v - (mp_float_t)mean[i], (mp_float_t)std[i]);
        }
        if (!(v >= -MRL_FLOAT32_MAX && v <= MRL_FLOAT32_MAX)) { /* NaN fails both */
            return MP_OBJ_NEW_SMALL_INT(i);
        }
        if (xb.typecode == 'f') {
            xf[i] = (float)v;
        } else {
            /* fixedpoint.py's rounding and saturation, in the same float arithmetic */
            v = v * scale;
            int32_t q;
            if (v >= (mp_float_t)32767) {
                q = 32767;
            } else if (v <= (mp_float_t)-32767) {
                q = -32767;
            } else if (v >= 0) {
                q = (int32_t)(v + (mp_float_t)0.5);
            } else {
                q = -(int32_t)((mp_float_t)0.5 - v);
            }
            xh[i] = (int16_t)q;
        }
    }
    return MP_OBJ_NEW_SMALL_INT(-1);
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(load_input_obj, 6, 6, load_input);

/* typecode(array) -> the buffer's typecode as an int (ord('f'), ord('d')...): MicroPython's
 * array has no .typecode, and _native.py needs it to route array('d') where there are no double
 * kernels */
static mp_obj_t typecode(mp_obj_t obj) {
    mp_buffer_info_t info;
    mp_get_buffer_raise(obj, &info, MP_BUFFER_READ);
    return MP_OBJ_NEW_SMALL_INT(info.typecode);
}
static MP_DEFINE_CONST_FUN_OBJ_1(typecode_obj, typecode);

/* A module qstr read through a pointer gcc cannot see through: on xtensa (ESP8266) gcc otherwise
 * folds "table + index" into one literal, a relocation MicroPython's linker (mpy_ld) refuses.
 * Only for the names that are not among MicroPython's static qstrs (those are plain numbers). */
#define Q(qstr_entry) (qstr_table[&(qstr_entry) - mp_native_qstr_table])

mp_obj_t mpy_init(mp_obj_fun_bc_t *self, size_t n_args, size_t n_kw, mp_obj_t *args) {
    MP_DYNRUNTIME_INIT_ENTRY

    const uint16_t *qstr_table = mp_native_qstr_table;
    __asm__("" : "+r"(qstr_table));
    mp_store_global(Q(MP_QSTR_dense), MP_OBJ_FROM_PTR(&dense_obj));
    mp_store_global(Q(MP_QSTR_dense_backward), MP_OBJ_FROM_PTR(&dense_backward_obj));
    mp_store_global(Q(MP_QSTR_adam), MP_OBJ_FROM_PTR(&adam_obj));
    mp_store_global(Q(MP_QSTR_polyak), MP_OBJ_FROM_PTR(&polyak_obj));
    mp_store_global(MP_QSTR_copy, MP_OBJ_FROM_PTR(&copy_obj));
    mp_store_global(Q(MP_QSTR_dense_int16), MP_OBJ_FROM_PTR(&dense_int16_obj));
    mp_store_global(Q(MP_QSTR_load_input), MP_OBJ_FROM_PTR(&load_input_obj));
    mp_store_global(Q(MP_QSTR_typecode), MP_OBJ_FROM_PTR(&typecode_obj));
    mp_store_global(Q(MP_QSTR_double_kernels), mp_obj_new_bool(MICRORL_KERNELS_DOUBLE));
    mp_store_global(Q(MP_QSTR_SOURCE_HASH), mp_obj_new_str(MICRORL_SOURCE_HASH, sizeof(MICRORL_SOURCE_HASH) - 1));

    MP_DYNRUNTIME_INIT_EXIT
}
