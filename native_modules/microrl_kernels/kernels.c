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
