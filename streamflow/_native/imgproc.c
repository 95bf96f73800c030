/*
 * streamflow._native._imgproc -- fast CPU image kernels.
 *
 * Two entry points, both called through streamflow/_native/imgproc.py (which
 * validates the arguments and allocates the outputs):
 *
 *   resample(src, out, out_h, out_w, win_y0, win_x0,
 *            roi_y0, roi_x0, roi_y1, roi_x1, interp, mag_interp, antialias, order)
 *       Separable resampling of an HWC image (uint8 or float32, any number of
 *       channels) to a virtual output of out_h x out_w, of which only the
 *       window [win_y0, win_y0 + out.shape[0]) x [win_x0, win_x0 + out.shape[1])
 *       is computed and written to `out` (uint8 or float32, HWC). `interp`
 *       filters the axes that are downscaled, `mag_interp` the others.
 *
 *   resample_normalize(src, out, out_h, out_w, win_y0, win_x0,
 *                      roi_y0, roi_x0, roi_y1, roi_x1, interp, mag_interp, antialias, order,
 *                      round_u8, mirror, mean, mul, shift, chw)
 *       resample followed by crop_mirror_normalize's arithmetic in the last
 *       pass, into float32 `out` (CHW or HWC): each resampled value is
 *       rounded to the uint8 grid first when `round_u8` (a uint8 resize), then
 *       out = (v - mean) * mul + shift, mirrored horizontally when `mirror`.
 *       Bit-identical to resample(uint8 or float32) + crop_mirror_normalize,
 *       without the intermediate image.
 *
 *   crop_mirror_normalize(src, out, y0, x0, mirror, mean, mul, shift, fill,
 *                         layout_chw, out_dtype)
 *       out = (src - mean) * mul + shift over a window (that may leave the
 *       image: fill values there), optional horizontal mirror, HWC -> CHW,
 *       extra output channels (pad_output) set to their fill value.
 *
 * uint8 resample output rounds half to even (as DALI 2.4's resize does);
 * crop_mirror_normalize's uint8 output rounds half away from zero (as DALI's
 * crop_mirror_normalize does).
 *
 * The filters follow DALI's CPU resampler (dali/kernels/imgproc/resample):
 * tabulated filter shapes, linearly interpolated, rescaled to the support;
 * source centre of output pixel d is roi0 + (d + 0.5) * scale - 0.5, edges
 * clamped; weights normalised to sum 1; float32 intermediate between passes.
 *
 * All pixel work runs with the GIL released.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#ifndef M_SQRT2
#define M_SQRT2 1.41421356237309504880
#endif

/* The row loops get AVX2 clones (sf_common.h), with the same results. */
#include "sf_common.h"

#if defined(__GNUC__) || defined(__clang__)
#define SF_HAVE_VEC 1
#include "sf_simd.h"
typedef sf_v4f v4f;
typedef sf_v4i v4i;
typedef uint8_t v4u8 __attribute__((vector_size(4)));
#define SF_RESTRICT __restrict__
#else
#define SF_HAVE_VEC 0
#define SF_RESTRICT
#endif

/* ------------------------------------------------------------------------- */
/* Filters                                                                   */
/* ------------------------------------------------------------------------- */

enum {
    INTERP_NN = 0,
    INTERP_LINEAR = 1,
    INTERP_CUBIC = 2,
    INTERP_LANCZOS3 = 3,
    INTERP_GAUSSIAN = 4,
    INTERP_TRIANGULAR = 5
};

#define TRI_N 3
#define GAUSS_N 65
#define CUBIC_N 129
#define LANCZOS_N 193 /* 2 * 3 * 32 + 1 */

static float tri_tab[TRI_N];
static float gauss_tab[GAUSS_N];
static float cubic_tab[CUBIC_N];
static float lanczos_tab[LANCZOS_N];

static float sinc_f(float x) {
    if (x == 0.0f) return 1.0f;
    x *= (float)M_PI;
    return sinf(x) / x;
}

static float cubic_window(float x) {
    x = fabsf(x);
    if (x >= 2) return 0;
    float x2 = x * x, x3 = x2 * x;
    if (x > 1) return -0.5f * x3 + 2.5f * x2 - 4.0f * x + 2.0f;
    return 1.5f * x3 - 2.5f * x2 + 1.0f;
}

static void init_tables(void) {
    tri_tab[0] = 0.0f;
    tri_tab[1] = 1.0f;
    tri_tab[2] = 0.0f;
    for (int i = 0; i < GAUSS_N; i++) {
        float x = 4 * (i - (GAUSS_N - 1) * 0.5f) / (GAUSS_N - 1);
        gauss_tab[i] = expf(-x * x);
    }
    for (int i = 0; i < CUBIC_N; i++) {
        float x = 4 * (i - (CUBIC_N - 1) * 0.5f) / (CUBIC_N - 1);
        cubic_tab[i] = cubic_window(x);
    }
    for (int i = 0; i < LANCZOS_N; i++) {
        float x = 2 * 3.0f * (i - (LANCZOS_N - 1) * 0.5f) / (LANCZOS_N - 1);
        lanczos_tab[i] = fabsf(x) >= 3.0f ? 0.0f : sinc_f(x) * sinc_f(x / 3.0f);
    }
}

typedef struct {
    const float *coeffs;
    int n;
    float anchor; /* in source pixels */
    float scale;  /* table entries per source pixel */
} Filter;

static Filter make_filter(const float *tab, int n, float support) {
    Filter f;
    f.coeffs = tab;
    f.n = n;
    f.scale = (float)(n - 1) / support;
    f.anchor = ((float)(n - 1) * 0.5f) / f.scale;
    return f;
}

static int filter_support(const Filter *f) {
    return (int)ceilf((float)(f->n - 1) / f->scale);
}

static inline float filter_eval(const Filter *f, float x) {
    if (!(x > -1)) return 0.0f;
    if (x >= f->n) return 0.0f;
    int x0 = (int)floorf(x);
    int x1 = x0 + 1;
    float d = x - (float)x0;
    float f0 = x0 < 0 ? 0.0f : f->coeffs[x0];
    float f1 = x1 >= f->n ? 0.0f : f->coeffs[x1];
    return f0 + d * (f1 - f0);
}

/* DALI's choice of filter for one axis (FilterDesc + DefaultFilterRadius +
 * GetResamplingFilter). */
static Filter choose_filter(int interp, int antialias, float in_size, float out_size) {
    int down = out_size < in_size;
    int aa = antialias && down;
    float ratio = in_size / out_size;
    switch (interp) {
        case INTERP_CUBIC: {
            float radius = aa ? 2 * in_size / out_size : 2.0f;
            return make_filter(cubic_tab, CUBIC_N, 2.0f * (radius > 2.0f ? radius : 2.0f));
        }
        case INTERP_LANCZOS3: {
            float radius = aa ? 3 * in_size / out_size : 3.0f;
            return make_filter(lanczos_tab, LANCZOS_N, 2.0f * (radius > 3.0f ? radius : 3.0f));
        }
        case INTERP_GAUSSIAN: {
            float radius = aa ? ratio : 1.0f;
            float sigma = (float)(radius * 0.5f / M_SQRT2);
            float s = (float)(4 * M_SQRT2) * sigma;
            return make_filter(gauss_tab, GAUSS_N, s > 1.0f ? s : 1.0f);
        }
        case INTERP_LINEAR:
        case INTERP_TRIANGULAR:
        default: {
            float radius = aa ? ratio : 1.0f;
            float s = 2 * radius;
            return make_filter(tri_tab, TRI_N, s > 1.0f ? s : 1.0f);
        }
    }
}

/* ------------------------------------------------------------------------- */
/* Per-axis plan: for each computed output index, `support` clamped source   */
/* indices and their weights.                                                */
/* ------------------------------------------------------------------------- */

typedef struct {
    int n;       /* number of output indices planned (window length) */
    int support; /* taps per output */
    int *idx;    /* n * support, clamped to [0, in_len - 1] */
    float *w;    /* n * support */
    int lo, hi;  /* range of source indices referenced, inclusive */
} AxisPlan;

static void plan_free(AxisPlan *p) {
    free(p->idx);
    free(p->w);
    p->idx = NULL;
    p->w = NULL;
}

static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* DALI picks the filter of an axis by its scale: the minification filter
 * when the output is shorter than the source window, else the magnification
 * filter (never antialiased). */
static inline int axis_interp(int min_interp, int mag_interp, float roi0, float roi1, int out_full) {
    return (float)out_full < fabsf(roi1 - roi0) ? min_interp : mag_interp;
}

/* Returns 0 on success, -1 on allocation failure. */
static int plan_axis(AxisPlan *p, int min_interp, int mag_interp, int antialias, int in_len,
                     int out_full, int d0, int n, float roi0, float roi1, int nn_accumulate) {
    float in_size = fabsf(roi1 - roi0);
    float scale = (roi1 - roi0) / (float)out_full;
    int interp = axis_interp(min_interp, mag_interp, roi0, roi1, out_full);
    p->n = n;
    p->idx = NULL;
    p->w = NULL;
    if (interp == INTERP_NN) {
        p->support = 1;
        p->idx = (int *)malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
        p->w = (float *)malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
        if (!p->idx || !p->w) return -1;
        if (nn_accumulate) {
            /* DALI's NN resampler steps the row coordinate by adding `scale`
             * in float32, row after row; reproduce it (it differs from the
             * closed form when (d + 0.5) * scale is an exact integer). */
            float s = roi0 + 0.5f * scale;
            for (int d = 0; d < d0; d++) s += scale;
            for (int i = 0; i < n; i++, s += scale) {
                p->idx[i] = clampi((int)floorf(s), 0, in_len - 1);
                p->w[i] = 1.0f;
            }
        } else {
            for (int i = 0; i < n; i++) {
                float s = roi0 + ((float)(d0 + i) + 0.5f) * scale;
                p->idx[i] = clampi((int)floorf(s), 0, in_len - 1);
                p->w[i] = 1.0f;
            }
        }
    } else {
        Filter f = choose_filter(interp, antialias, in_size, (float)out_full);
        int support = filter_support(&f);
        if (support < 1) support = 1;
        int *idx = (int *)malloc(sizeof(int) * (size_t)n * support + sizeof(int));
        float *w = (float *)malloc(sizeof(float) * (size_t)n * support + sizeof(float));
        if (!idx || !w) {
            free(idx);
            free(w);
            return -1;
        }
        float srcx_0 = roi0 + (0.5f * scale - 0.5f - f.anchor);
        for (int i = 0; i < n; i++) {
            int x = d0 + i;
            float sx0f = (float)x * scale + srcx_0;
            int sx0 = (int)ceilf(sx0f);
            float f0 = (float)sx0 - sx0f;
            float sum = 0;
            float *wr = w + (size_t)i * support;
            for (int k = 0; k < support; k++) {
                float c = filter_eval(&f, (f0 + (float)k) * f.scale);
                wr[k] = c;
                sum += c;
            }
            if (sum != 0.0f)
                for (int k = 0; k < support; k++) wr[k] /= sum;
            for (int k = 0; k < support; k++)
                idx[(size_t)i * support + k] = clampi(sx0 + k, 0, in_len - 1);
        }
        /* Drop taps whose weight is exactly zero for every planned output
         * (leading or trailing). Exact: they add +0 to every sum. */
        int first = 0, last = support - 1;
        while (first < last) {
            int allzero = 1;
            for (int i = 0; i < n && allzero; i++)
                if (w[(size_t)i * support + first] != 0.0f) allzero = 0;
            if (!allzero) break;
            first++;
        }
        while (last > first) {
            int allzero = 1;
            for (int i = 0; i < n && allzero; i++)
                if (w[(size_t)i * support + last] != 0.0f) allzero = 0;
            if (!allzero) break;
            last--;
        }
        int ns = last - first + 1;
        if (ns != support) {
            for (int i = 0; i < n; i++)
                for (int k = 0; k < ns; k++) {
                    w[(size_t)i * ns + k] = w[(size_t)i * support + first + k];
                    idx[(size_t)i * ns + k] = idx[(size_t)i * support + first + k];
                }
            support = ns;
        }
        p->support = support;
        p->idx = idx;
        p->w = w;
    }
    int lo = in_len - 1, hi = 0;
    for (size_t j = 0; j < (size_t)n * p->support; j++) {
        if (p->idx[j] < lo) lo = p->idx[j];
        if (p->idx[j] > hi) hi = p->idx[j];
    }
    if (n == 0) {
        lo = 0;
        hi = 0;
    }
    p->lo = lo;
    p->hi = hi;
    return 0;
}

/* ------------------------------------------------------------------------- */
/* Passes                                                                    */
/* ------------------------------------------------------------------------- */

/* Vertical pass for one output row: dst[j] = sum_k w[k] * rows[k][j],
 * j in [0, len), float32 source rows. The taps are added one at a time in
 * tap order, (((w0 a0 + w1 a1) + w2 a2) + w3 a3) ..., as DALI's CPU resampler
 * adds them (the same float32 roundings, so the same values next to a .5);
 * two taps per sweep keep the memory traffic low. */
SF_CLONES static void vrow_f32(float *SF_RESTRICT dst, const float *const *rows, const float *w,
                     int support, int len) {
    int k = 0;
    if (support >= 2) {
        const float *SF_RESTRICT a = rows[0];
        const float *SF_RESTRICT b = rows[1];
        float wa = w[0], wb = w[1];
        for (int j = 0; j < len; j++) dst[j] = wa * a[j] + wb * b[j];
        k = 2;
    } else {
        const float *SF_RESTRICT a = rows[0];
        float wa = w[0];
        for (int j = 0; j < len; j++) dst[j] = wa * a[j];
        k = 1;
    }
    for (; k + 1 < support; k += 2) {
        const float *SF_RESTRICT a = rows[k];
        const float *SF_RESTRICT b = rows[k + 1];
        float wa = w[k], wb = w[k + 1];
        for (int j = 0; j < len; j++) dst[j] = (dst[j] + wa * a[j]) + wb * b[j];
    }
    for (; k < support; k++) {
        const float *SF_RESTRICT a = rows[k];
        float wa = w[k];
        for (int j = 0; j < len; j++) dst[j] += wa * a[j];
    }
}

/* Horizontal pass over one row: `src` is a float row of interleaved pixels
 * whose first pixel is source column `col0`; it must be readable for one
 * float past its last pixel when C == 3. dst gets n pixels (C floats each)
 * and, when C == 3, one float past its end is written. */
SF_CLONES static void hrow(float *SF_RESTRICT dst, const float *SF_RESTRICT src, int C, const AxisPlan *px,
                 int col0) {
    const int S = px->support;
    const int n = px->n;
    const int *idx = px->idx;
    const float *w = px->w;
#if SF_HAVE_VEC
    if (C == 3 || C == 4) {
        switch (S) {
#define SF_HCASE(NS)                                                                   \
    case NS:                                                                           \
        for (int x = 0; x < n; x++) {                                                  \
            const int *ix = idx + (size_t)x * NS;                                      \
            const float *wx = w + (size_t)x * NS;                                      \
            v4f acc = sf_load4(src + (size_t)(ix[0] - col0) * C) * sf_splat4(wx[0]);     \
            for (int k = 1; k < NS; k++)                                               \
                acc += sf_load4(src + (size_t)(ix[k] - col0) * C) * sf_splat4(wx[k]);    \
            sf_store4(dst + (size_t)x * C, acc);                                        \
        }                                                                              \
        return;
            SF_HCASE(1)
            SF_HCASE(2)
            SF_HCASE(3)
            SF_HCASE(4)
            SF_HCASE(5)
            SF_HCASE(6)
            SF_HCASE(7)
            SF_HCASE(8)
#undef SF_HCASE
            default:
                for (int x = 0; x < n; x++) {
                    const int *ix = idx + (size_t)x * S;
                    const float *wx = w + (size_t)x * S;
                    v4f acc = sf_load4(src + (size_t)(ix[0] - col0) * C) * sf_splat4(wx[0]);
                    for (int k = 1; k < S; k++)
                        acc += sf_load4(src + (size_t)(ix[k] - col0) * C) * sf_splat4(wx[k]);
                    sf_store4(dst + (size_t)x * C, acc);
                }
                return;
        }
    }
#endif
    if (C == 1) {
        for (int x = 0; x < n; x++) {
            const int *ix = idx + (size_t)x * S;
            const float *wx = w + (size_t)x * S;
            float acc = src[ix[0] - col0] * wx[0];
            for (int k = 1; k < S; k++) acc += src[ix[k] - col0] * wx[k];
            dst[x] = acc;
        }
        return;
    }
    for (int x = 0; x < n; x++) {
        const int *ix = idx + (size_t)x * S;
        const float *wx = w + (size_t)x * S;
        float *o = dst + (size_t)x * C;
        const float *p0 = src + (size_t)(ix[0] - col0) * C;
        for (int c = 0; c < C; c++) o[c] = p0[c] * wx[0];
        for (int k = 1; k < S; k++) {
            const float *p = src + (size_t)(ix[k] - col0) * C;
            float wk = wx[k];
            for (int c = 0; c < C; c++) o[c] += p[c] * wk;
        }
    }
}

static inline uint8_t sat_u8(float v) {
    /* round half away from zero, then clip (v >= 0 after the clamp) */
    if (!(v > 0.0f)) return 0; /* also NaN -> 0 */
    if (v >= 255.0f) return 255;
    return (uint8_t)(v + 0.5f);
}

SF_CLONES static void store_row(void *out_row, int out_dt, const float *SF_RESTRICT src, int len) {
    if (out_dt == DT_U8) {
        uint8_t *SF_RESTRICT o = (uint8_t *)out_row;
        int j = 0;
#if SF_HAVE_VEC
        const v4f zero = sf_splat4(0.0f), top = sf_splat4(255.0f), magic = sf_splat4(8388608.0f);
        for (; j + 4 <= len; j += 4) {
            v4f v = sf_load4(src + j);
            v4i m = v > zero; /* NaN and negatives -> 0 */
            v = (v4f)((v4i)v & m);
            m = v > top;
            v = (v4f)(((v4i)v & ~m) | ((v4i)top & m));
            /* round half to even (DALI 2.4's uint8 output), exact for 0..2^23 */
            v = (v + magic) - magic;
            v4i iv = __builtin_convertvector(v, v4i);
            v4u8 b = __builtin_convertvector(iv, v4u8);
            memcpy(o + j, &b, 4);
        }
#endif
        for (; j < len; j++) {
            float v = src[j];
            v = v > 0.0f ? v : 0.0f; /* NaN -> 0 */
            v = v > 255.0f ? 255.0f : v;
            v = (v + 8388608.0f) - 8388608.0f;
            o[j] = (uint8_t)(int32_t)v;
        }
    } else {
        memcpy(out_row, src, sizeof(float) * (size_t)len);
    }
}

SF_CLONES static void u8_to_f32(float *SF_RESTRICT dst, const uint8_t *SF_RESTRICT src, int len) {
    for (int j = 0; j < len; j++) dst[j] = (float)src[j];
}

typedef struct {
    const char *src;
    Py_ssize_t src_row_stride; /* bytes */
    int in_h, in_w, C;
    int src_dt; /* DT_U8 / DT_F32 */
    char *out;
    Py_ssize_t out_row_stride; /* bytes */
    int out_dt;
    AxisPlan py, px;
    int order_vh; /* 1: vertical pass first */
    /* resample_normalize: the last pass stores normalized float32 */
    int norm, norm_round_u8, norm_mirror, norm_chw;
    float norm_mean[64], norm_mul[64], norm_shift;
} ResampleJob;

#define MAX_NORM_CHANNELS 64

/* uint8-grid value of a resampled float: clip to [0, 255] (NaN -> 0), round
 * half to even -- exactly what store_row writes for a uint8 output. */
static inline float grid_u8(float v) {
    v = v > 0.0f ? v : 0.0f;
    v = v > 255.0f ? 255.0f : v;
    return (v + 8388608.0f) - 8388608.0f;
}

/* Normalizing store of one output row (ow pixels of C interleaved floats).
 * The arithmetic is crop_mirror_normalize's: ((float)u8 - mean) * mul + shift,
 * so the result is bit-identical to the unfused pair. */
SF_CLONES static void store_norm_row(const ResampleJob *J, int y, const float *SF_RESTRICT src) {
    const int ow = J->px.n, C = J->C, mirror = J->norm_mirror, rnd = J->norm_round_u8;
    const float sh = J->norm_shift;
    float *out = (float *)J->out;
    if (J->norm_chw) {
        const size_t plane = (size_t)J->py.n * ow;
        int x = 0;
#if SF_HAVE_VEC && defined(__GNUC__) && !defined(__clang__)
        if (C == 3) {
            float *SF_RESTRICT o0 = out + (size_t)y * ow;
            float *SF_RESTRICT o1 = o0 + plane;
            float *SF_RESTRICT o2 = o1 + plane;
            const v4f zero = sf_splat4(0.0f), top = sf_splat4(255.0f), magic = sf_splat4(8388608.0f);
            const v4f m0 = sf_splat4(J->norm_mean[0]), m1 = sf_splat4(J->norm_mean[1]),
                      m2 = sf_splat4(J->norm_mean[2]);
            const v4f k0 = sf_splat4(J->norm_mul[0]), k1 = sf_splat4(J->norm_mul[1]),
                      k2 = sf_splat4(J->norm_mul[2]);
            const v4f vsh = sf_splat4(sh);
            const v4i rev = {3, 2, 1, 0};
            for (; x + 4 <= ow; x += 4) {
                /* 4 RGB pixels -> R, G, B vectors */
                v4f a = sf_load4(src + (size_t)x * 3), b = sf_load4(src + (size_t)x * 3 + 4),
                    c = sf_load4(src + (size_t)x * 3 + 8);
                v4f r = __builtin_shuffle(__builtin_shuffle(a, b, (v4i){0, 3, 6, 0}), c, (v4i){0, 1, 2, 5});
                v4f g = __builtin_shuffle(__builtin_shuffle(a, b, (v4i){1, 4, 7, 0}), c, (v4i){0, 1, 2, 6});
                v4f bl = __builtin_shuffle(__builtin_shuffle(a, b, (v4i){2, 5, 0, 0}), c, (v4i){0, 1, 4, 7});
                v4f ch[3] = {r, g, bl};
                for (int k = 0; k < 3; k++) {
                    v4f v = ch[k];
                    if (rnd) {
                        v4i m = v > zero; /* NaN and negatives -> 0 */
                        v = (v4f)((v4i)v & m);
                        m = v > top;
                        v = (v4f)(((v4i)v & ~m) | ((v4i)top & m));
                        v = (v + magic) - magic;
                    }
                    ch[k] = v;
                }
                v4f n0 = (ch[0] - m0) * k0 + vsh, n1 = (ch[1] - m1) * k1 + vsh, n2 = (ch[2] - m2) * k2 + vsh;
                if (mirror) {
                    size_t d = (size_t)(ow - 4 - x);
                    sf_store4(o0 + d, __builtin_shuffle(n0, rev));
                    sf_store4(o1 + d, __builtin_shuffle(n1, rev));
                    sf_store4(o2 + d, __builtin_shuffle(n2, rev));
                } else {
                    sf_store4(o0 + x, n0);
                    sf_store4(o1 + x, n1);
                    sf_store4(o2 + x, n2);
                }
            }
        }
#endif
        for (; x < ow; x++) {
            size_t d = (size_t)y * ow + (size_t)(mirror ? ow - 1 - x : x);
            for (int c = 0; c < C; c++) {
                float v = src[(size_t)x * C + c];
                if (rnd) v = grid_u8(v);
                out[(size_t)c * plane + d] = (v - J->norm_mean[c]) * J->norm_mul[c] + sh;
            }
        }
    } else {
        float *row = (float *)(J->out + (Py_ssize_t)y * J->out_row_stride);
        for (int x = 0; x < ow; x++) {
            float *o = row + (size_t)(mirror ? ow - 1 - x : x) * C;
            for (int c = 0; c < C; c++) {
                float v = src[(size_t)x * C + c];
                if (rnd) v = grid_u8(v);
                o[c] = (v - J->norm_mean[c]) * J->norm_mul[c] + sh;
            }
        }
    }
}

static void store_out_row(const ResampleJob *J, int y, const float *src) {
    if (J->norm)
        store_norm_row(J, y, src);
    else
        store_row(J->out + (Py_ssize_t)y * J->out_row_stride, J->out_dt, src, J->px.n * J->C);
}

/* Returns 0 on success, -1 on allocation failure. Runs without the GIL. */
static int run_resample(ResampleJob *J) {
    const int C = J->C;
    const int oh = J->py.n, ow = J->px.n;
    const size_t in_es = J->src_dt == DT_U8 ? 1 : 4;
    if (oh == 0 || ow == 0) return 0;
    float *rowbuf = (float *)malloc(sizeof(float) * ((size_t)ow * C + 8));
    if (!rowbuf) return -1;
    const int Sy = J->py.support;

    if (J->order_vh) {
        /* for each output row: vertical pass over the needed columns into a
         * float row, then horizontal pass, then store. */
        int col0 = J->px.lo;
        int ncols = J->px.hi - J->px.lo + 1;
        size_t len = (size_t)ncols * C;
        float *vbuf = (float *)malloc(sizeof(float) * (len + 8));
        const void **rows = (const void **)malloc(sizeof(void *) * (size_t)Sy);
        if (!vbuf || !rows) {
            free(vbuf);
            free(rows);
            free(rowbuf);
            return -1;
        }
        memset(vbuf + len, 0, sizeof(float) * 8);
        /* uint8 input: each source row segment is converted to float once and
         * kept in a small ring (the rows of consecutive outputs overlap) */
        int ring_n = Sy + 2;
        float *ring = NULL;
        int *tag = NULL;
        if (J->src_dt == DT_U8) {
            ring = (float *)malloc(sizeof(float) * (len + 8) * (size_t)ring_n);
            tag = (int *)malloc(sizeof(int) * (size_t)ring_n);
            if (!ring || !tag) {
                free(ring);
                free(tag);
                free(vbuf);
                free(rows);
                free(rowbuf);
                return -1;
            }
            for (int i = 0; i < ring_n; i++) tag[i] = -1;
        }
        for (int y = 0; y < oh; y++) {
            const int *iy = J->py.idx + (size_t)y * Sy;
            const float *wy = J->py.w + (size_t)y * Sy;
            if (ring) {
                for (int k = 0; k < Sy; k++) {
                    int r = iy[k];
                    int slot = r % ring_n;
                    float *dst = ring + (size_t)slot * (len + 8);
                    if (tag[slot] != r) {
                        u8_to_f32(dst, (const uint8_t *)(J->src + (Py_ssize_t)r * J->src_row_stride +
                                                         (size_t)col0 * C),
                                  (int)len);
                        tag[slot] = r;
                    }
                    rows[k] = dst;
                }
            } else {
                for (int k = 0; k < Sy; k++)
                    rows[k] = J->src + (Py_ssize_t)iy[k] * J->src_row_stride +
                              (size_t)col0 * C * in_es;
            }
            vrow_f32(vbuf, (const float *const *)rows, wy, Sy, (int)len);
            hrow(rowbuf, vbuf, C, &J->px, col0);
            store_out_row(J, y, rowbuf);
        }
        free(ring);
        free(tag);
        free(vbuf);
        free(rows);
    } else {
        /* horizontal pass over every needed source row into a float buffer,
         * then vertical pass per output row. */
        int row0 = J->py.lo;
        int nrows = J->py.hi - J->py.lo + 1;
        int col0 = J->px.lo;
        int ncols = J->px.hi - J->px.lo + 1;
        size_t tlen = (size_t)ow * C;
        size_t tstride = tlen + 4;
        float *tmp = (float *)malloc(sizeof(float) * (tstride * (size_t)nrows + 4));
        float *cbuf = (float *)malloc(sizeof(float) * ((size_t)ncols * C + 8));
        const float **rows = (const float **)malloc(sizeof(float *) * (size_t)Sy);
        if (!tmp || !cbuf || !rows) {
            free(tmp);
            free(cbuf);
            free(rows);
            free(rowbuf);
            return -1;
        }
        memset(cbuf + (size_t)ncols * C, 0, sizeof(float) * 8);
        for (int r = 0; r < nrows; r++) {
            const char *srow =
                J->src + (Py_ssize_t)(row0 + r) * J->src_row_stride + (size_t)col0 * C * in_es;
            if (J->src_dt == DT_U8)
                u8_to_f32(cbuf, (const uint8_t *)srow, ncols * C);
            else
                memcpy(cbuf, srow, sizeof(float) * (size_t)ncols * C);
            hrow(tmp + (size_t)r * tstride, cbuf, C, &J->px, col0);
        }
        for (int y = 0; y < oh; y++) {
            const int *iy = J->py.idx + (size_t)y * Sy;
            const float *wy = J->py.w + (size_t)y * Sy;
            for (int k = 0; k < Sy; k++) rows[k] = tmp + (size_t)(iy[k] - row0) * tstride;
            vrow_f32(rowbuf, rows, wy, Sy, (int)tlen);
            store_out_row(J, y, rowbuf);
        }
        free(tmp);
        free(cbuf);
        free(rows);
    }
    free(rowbuf);
    return 0;
}

/* ------------------------------------------------------------------------- */
/* Buffer helpers                                                            */
/* ------------------------------------------------------------------------- */

/* The element types here: uint8, float32, float16 (sf_common.h's DT_U8, DT_F32, DT_F16) */
static int dtype_of(const Py_buffer *b) {
    const int dt = sf_dtype_of(b);
    return dt == DT_U8 || dt == DT_F32 || dt == DT_F16 ? dt : -1;
}

/* Checks an HWC buffer whose pixels are contiguous (row stride free). */
static int check_hwc(const Py_buffer *b, const char *what) {
    if (b->ndim != 3) {
        PyErr_Format(PyExc_ValueError, "%s must be 3-D (HWC), got %d dimensions", what, b->ndim);
        return -1;
    }
    if (b->strides[2] != b->itemsize || b->strides[1] != b->itemsize * b->shape[2]) {
        PyErr_Format(PyExc_ValueError, "%s must have contiguous pixels (HWC rows)", what);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------- */
/* resample                                                                  */
/* ------------------------------------------------------------------------- */

static float cost_order(int vh, double in_h, double in_w, double out_h, double out_w, int C,
                        int Sy, int Sx) {
    /* Rough cost in vector operations: vertical passes run over flat rows
     * (4 floats per op), horizontal passes one pixel per op (C <= 4). */
    double hc = C <= 4 ? 1.0 : (double)C / 4.0;
    if (C == 1) hc = 1.0;
    if (vh) {
        double v = out_h * in_w * C * Sy / 4.0;
        double h = out_h * out_w * Sx * hc;
        return (float)(v + h + out_h * in_w * C / 4.0);
    } else {
        double conv = in_h * in_w * C / 4.0;
        double h = in_h * out_w * Sx * hc;
        double v = out_h * out_w * C * Sy / 4.0;
        return (float)(conv + h + v + in_h * out_w * C / 4.0);
    }
}

/* The automatic pass order: decided from the full geometry (never from the
 * window), so a window equals the slice of the full output. 1: vertical first. */
static int auto_order_vh(int src_h, int src_w, int C, int out_h, int out_w, float ry0, float rx0,
                         float ry1, float rx1, int min_interp, int mag_interp, int antialias) {
    int iy = axis_interp(min_interp, mag_interp, ry0, ry1, out_h);
    int ix = axis_interp(min_interp, mag_interp, rx0, rx1, out_w);
    double in_h = fabs((double)ry1 - ry0), in_w = fabs((double)rx1 - rx0);
    if (in_h > src_h) in_h = src_h;
    if (in_w > src_w) in_w = src_w;
    if (in_h < 1) in_h = 1;
    if (in_w < 1) in_w = 1;
    Filter fy = choose_filter(iy, antialias, fabsf(ry1 - ry0), (float)out_h);
    Filter fx = choose_filter(ix, antialias, fabsf(rx1 - rx0), (float)out_w);
    int Sy = iy == INTERP_NN ? 1 : filter_support(&fy);
    int Sx = ix == INTERP_NN ? 1 : filter_support(&fx);
    float c_vh = cost_order(1, in_h, in_w, out_h, out_w, C, Sy, Sx);
    float c_hv = cost_order(0, in_h, in_w, out_h, out_w, C, Sy, Sx);
    return c_vh <= c_hv;
}

/* The checks resample and resample_plan share: the wh x ww window at (wy0, wx0) inside the
 * out_h x out_w output, known filters. 0, or -1 with the exception set. */
static int check_window(int out_h, int out_w, int wy0, int wx0, int wh, int ww, int interp, int mag_interp) {
    if (wy0 < 0 || wx0 < 0 || wy0 + wh > out_h || wx0 + ww > out_w) {
        PyErr_SetString(PyExc_ValueError, "window outside the output");
        return -1;
    }
    if (interp < 0 || interp > 5 || mag_interp < 0 || mag_interp > 5) {
        PyErr_SetString(PyExc_ValueError, "bad interpolation code");
        return -1;
    }
    return 0;
}

/* The shared body of resample and resample_normalize: `J` arrives with the
 * normalize fields set (J->norm == 0 for a plain resample). */
static PyObject *resample_impl(PyObject *src_obj, PyObject *out_obj, int out_h, int out_w, int wy0,
                               int wx0, float ry0, float rx0, float ry1, float rx1, int interp,
                               int mag_interp, int antialias, int order, ResampleJob *J) {
    Py_buffer sb, ob;
    if (sf_get_buffers(src_obj, &sb, PyBUF_RECORDS_RO, out_obj, &ob, PyBUF_RECORDS) < 0) return NULL;
    PyObject *ret = NULL;
    int oh, ow;
    if (check_hwc(&sb, "src") < 0) goto done;
    J->src_dt = dtype_of(&sb);
    J->out_dt = dtype_of(&ob);
    if (J->src_dt != DT_U8 && J->src_dt != DT_F32) {
        PyErr_SetString(PyExc_ValueError, "src must be uint8 or float32");
        goto done;
    }
    J->in_h = (int)sb.shape[0];
    J->in_w = (int)sb.shape[1];
    J->C = (int)sb.shape[2];
    if (J->norm) {
        if (J->out_dt != DT_F32 || ob.ndim != 3 || !PyBuffer_IsContiguous(&ob, 'C')) {
            PyErr_SetString(PyExc_ValueError, "out must be a C-contiguous 3-D float32 array");
            goto done;
        }
        if (J->C > MAX_NORM_CHANNELS) {
            PyErr_SetString(PyExc_ValueError, "at most 64 channels");
            goto done;
        }
        int oc = (int)(J->norm_chw ? ob.shape[0] : ob.shape[2]);
        oh = (int)(J->norm_chw ? ob.shape[1] : ob.shape[0]);
        ow = (int)(J->norm_chw ? ob.shape[2] : ob.shape[1]);
        if (oc != J->C) {
            PyErr_SetString(PyExc_ValueError, "src and out channel counts differ");
            goto done;
        }
    } else {
        if (check_hwc(&ob, "out") < 0) goto done;
        if (J->out_dt != DT_U8 && J->out_dt != DT_F32) {
            PyErr_SetString(PyExc_ValueError, "out must be uint8 or float32");
            goto done;
        }
        if (ob.shape[2] != J->C) {
            PyErr_SetString(PyExc_ValueError, "src and out channel counts differ");
            goto done;
        }
        oh = (int)ob.shape[0];
        ow = (int)ob.shape[1];
    }
    if (J->in_h <= 0 || J->in_w <= 0 || J->C <= 0 || out_h <= 0 || out_w <= 0) {
        PyErr_SetString(PyExc_ValueError, "sizes must be positive");
        goto done;
    }
    if (check_window(out_h, out_w, wy0, wx0, oh, ow, interp, mag_interp) < 0) goto done;
    J->src = (const char *)sb.buf;
    J->src_row_stride = sb.strides[0];
    J->out = (char *)ob.buf;
    J->out_row_stride = ob.strides[J->norm && J->norm_chw ? 1 : 0];

    int fail = 0;
    Py_BEGIN_ALLOW_THREADS;
    if (plan_axis(&J->py, interp, mag_interp, antialias, J->in_h, out_h, wy0, oh, ry0, ry1, 1) < 0 ||
        plan_axis(&J->px, interp, mag_interp, antialias, J->in_w, out_w, wx0, ow, rx0, rx1, 0) < 0) {
        fail = 1;
    } else {
        J->order_vh = order == 0 ? auto_order_vh(J->in_h, J->in_w, J->C, out_h, out_w, ry0, rx0, ry1,
                                                  rx1, interp, mag_interp, antialias)
                                 : order == 1;
        if (run_resample(J) < 0) fail = 1;
    }
    plan_free(&J->py);
    plan_free(&J->px);
    Py_END_ALLOW_THREADS;
    if (fail) {
        PyErr_NoMemory();
        goto done;
    }
    ret = PyLong_FromLong(J->order_vh ? 1 : 2);
done:
    PyBuffer_Release(&sb);
    PyBuffer_Release(&ob);
    return ret;
}

static PyObject *py_resample(PyObject *self, PyObject *args) {
    PyObject *src_obj, *out_obj;
    int out_h, out_w, wy0, wx0, interp, mag_interp, antialias, order;
    float ry0, rx0, ry1, rx1;
    if (!PyArg_ParseTuple(args, "OOiiiiffffiiii:resample", &src_obj, &out_obj, &out_h, &out_w,
                          &wy0, &wx0, &ry0, &rx0, &ry1, &rx1, &interp, &mag_interp, &antialias,
                          &order))
        return NULL;
    ResampleJob J;
    memset(&J, 0, sizeof J);
    return resample_impl(src_obj, out_obj, out_h, out_w, wy0, wx0, ry0, rx0, ry1, rx1, interp,
                         mag_interp, antialias, order, &J);
}

static int read_floats(PyObject *seq, float *dst, int n, const char *what);

static PyObject *py_resample_normalize(PyObject *self, PyObject *args) {
    PyObject *src_obj, *out_obj, *mean_obj, *mul_obj;
    int out_h, out_w, wy0, wx0, interp, mag_interp, antialias, order, round_u8, mirror, chw;
    float ry0, rx0, ry1, rx1, shift;
    if (!PyArg_ParseTuple(args, "OOiiiiffffiiiippOOfp:resample_normalize", &src_obj, &out_obj,
                          &out_h, &out_w, &wy0, &wx0, &ry0, &rx0, &ry1, &rx1, &interp,
                          &mag_interp, &antialias, &order, &round_u8, &mirror, &mean_obj,
                          &mul_obj, &shift, &chw))
        return NULL;
    ResampleJob J;
    memset(&J, 0, sizeof J);
    J.norm = 1;
    J.norm_round_u8 = round_u8;
    J.norm_mirror = mirror;
    J.norm_chw = chw;
    J.norm_shift = shift;
    Py_ssize_t n = PySequence_Size(mean_obj);
    if (n < 0) return NULL;
    if (n < 1 || n > MAX_NORM_CHANNELS) {
        PyErr_SetString(PyExc_ValueError, "mean must have 1 to 64 values (one per channel)");
        return NULL;
    }
    if (read_floats(mean_obj, J.norm_mean, (int)n, "mean") < 0 ||
        read_floats(mul_obj, J.norm_mul, (int)n, "mul") < 0)
        return NULL;
    /* the channel count must match the source's */
    Py_buffer sb;
    if (PyObject_GetBuffer(src_obj, &sb, PyBUF_RECORDS_RO) < 0) return NULL;
    int C = sb.ndim == 3 ? (int)sb.shape[2] : -1;
    PyBuffer_Release(&sb);
    if (C != (int)n) {
        PyErr_Format(PyExc_ValueError, "mean and mul must have one value per source channel (%d)", C);
        return NULL;
    }
    return resample_impl(src_obj, out_obj, out_h, out_w, wy0, wx0, ry0, rx0, ry1, rx1, interp,
                         mag_interp, antialias, order, &J);
}

/* ------------------------------------------------------------------------- */
/* crop_mirror_normalize                                                     */
/* ------------------------------------------------------------------------- */

static uint16_t f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t mant = x & 0x007FFFFFu;
    int exp = (int)((x >> 23) & 0xFF);
    if (exp == 0xFF) { /* inf / nan */
        return (uint16_t)(sign | 0x7C00u | (mant ? 0x200u : 0));
    }
    int e = exp - 127 + 15;
    if (e >= 0x1F) return (uint16_t)(sign | 0x7C00u); /* overflow -> inf */
    if (e <= 0) {                                      /* subnormal or zero */
        if (e < -10) return (uint16_t)sign;
        mant |= 0x00800000u;
        int shift = 14 - e;
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)e << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) half++; /* may carry into exp: ok */
    return (uint16_t)half;
}

typedef struct {
    const char *src;
    Py_ssize_t src_row_stride;
    int H, W, C, src_dt;
    char *out;
    int oh, ow, oc, out_dt, chw;
    int y0, x0, mirror;
    float mean[64], mul[64], fill[64];
    float shift;
} CmnJob;

static inline void put(char *base, size_t i, int dt, float v) {
    if (dt == DT_F32)
        ((float *)base)[i] = v;
    else if (dt == DT_F16)
        ((uint16_t *)base)[i] = f32_to_f16(v);
    else
        ((uint8_t *)base)[i] = sat_u8(v);
}

/* Fast path: uint8 HWC, 3 channels, window inside the image, float32 CHW. */
SF_CLONES static void cmn_u8c3_chw_f32(const CmnJob *J) {
    const int oh = J->oh, ow = J->ow;
    const size_t plane = (size_t)oh * ow;
    const float m0 = J->mean[0], m1 = J->mean[1], m2 = J->mean[2];
    const float k0 = J->mul[0], k1 = J->mul[1], k2 = J->mul[2], sh = J->shift;
    float *SF_RESTRICT o0 = (float *)J->out;
    float *SF_RESTRICT o1 = o0 + plane;
    float *SF_RESTRICT o2 = o1 + plane;
    for (int y = 0; y < oh; y++) {
        const uint8_t *SF_RESTRICT s =
            (const uint8_t *)(J->src + (Py_ssize_t)(J->y0 + y) * J->src_row_stride) +
            (size_t)J->x0 * 3;
        float *SF_RESTRICT a = o0 + (size_t)y * ow;
        float *SF_RESTRICT b = o1 + (size_t)y * ow;
        float *SF_RESTRICT c = o2 + (size_t)y * ow;
        if (!J->mirror) {
            for (int x = 0; x < ow; x++) {
                a[x] = ((float)s[3 * x] - m0) * k0 + sh;
                b[x] = ((float)s[3 * x + 1] - m1) * k1 + sh;
                c[x] = ((float)s[3 * x + 2] - m2) * k2 + sh;
            }
        } else {
            const uint8_t *SF_RESTRICT e = s + (size_t)(ow - 1) * 3;
            for (int x = 0; x < ow; x++) {
                a[x] = ((float)e[-3 * x] - m0) * k0 + sh;
                b[x] = ((float)e[-3 * x + 1] - m1) * k1 + sh;
                c[x] = ((float)e[-3 * x + 2] - m2) * k2 + sh;
            }
        }
    }
}

static void run_cmn(CmnJob *J) {
    const int oh = J->oh, ow = J->ow, oc = J->oc, C = J->C;
    const size_t plane = (size_t)oh * ow;
    if (J->src_dt == DT_U8 && C == 3 && oc == 3 && J->chw && J->out_dt == DT_F32 &&
        J->y0 >= 0 && J->x0 >= 0 && J->y0 + oh <= J->H && J->x0 + ow <= J->W) {
        cmn_u8c3_chw_f32(J);
        return;
    }
    float *row = (float *)malloc(sizeof(float) * (size_t)ow * (C > 0 ? C : 1));
    /* out-of-image columns of the window, in output coordinates */
    int xa = 0, xb = ow; /* [xa, xb) maps inside the image */
    for (int y = 0; y < oh; y++) {
        int sy = J->y0 + y;
        int inside_row = sy >= 0 && sy < J->H;
        /* compute normalized row (C interleaved) for in-image columns */
        if (inside_row && row) {
            const char *srow = J->src + (Py_ssize_t)sy * J->src_row_stride;
            xa = ow;
            xb = 0;
            for (int x = 0; x < ow; x++) {
                int sx = J->mirror ? J->x0 + ow - 1 - x : J->x0 + x;
                if (sx >= 0 && sx < J->W) {
                    if (x < xa) xa = x;
                    xb = x + 1;
                }
            }
            if (xa < xb) {
                if (J->src_dt == DT_U8) {
                    const uint8_t *s = (const uint8_t *)srow;
                    if (C == 3) {
                        float m0 = J->mean[0], m1 = J->mean[1], m2 = J->mean[2];
                        float k0 = J->mul[0], k1 = J->mul[1], k2 = J->mul[2], sh = J->shift;
                        for (int x = xa; x < xb; x++) {
                            int sx = J->mirror ? J->x0 + ow - 1 - x : J->x0 + x;
                            const uint8_t *p = s + (size_t)sx * 3;
                            float *r = row + (size_t)x * 3;
                            r[0] = ((float)p[0] - m0) * k0 + sh;
                            r[1] = ((float)p[1] - m1) * k1 + sh;
                            r[2] = ((float)p[2] - m2) * k2 + sh;
                        }
                    } else {
                        for (int x = xa; x < xb; x++) {
                            int sx = J->mirror ? J->x0 + ow - 1 - x : J->x0 + x;
                            for (int c = 0; c < C; c++)
                                row[(size_t)x * C + c] =
                                    ((float)s[(size_t)sx * C + c] - J->mean[c]) * J->mul[c] +
                                    J->shift;
                        }
                    }
                } else {
                    const float *s = (const float *)srow;
                    for (int x = xa; x < xb; x++) {
                        int sx = J->mirror ? J->x0 + ow - 1 - x : J->x0 + x;
                        for (int c = 0; c < C; c++)
                            row[(size_t)x * C + c] =
                                (s[(size_t)sx * C + c] - J->mean[c]) * J->mul[c] + J->shift;
                    }
                }
            }
        } else {
            xa = 0;
            xb = 0;
        }
        /* scatter into the output */
        if (J->chw) {
            for (int c = 0; c < oc; c++) {
                size_t base = (size_t)c * plane + (size_t)y * ow;
                float fv = J->fill[c];
                if (c >= C) {
                    for (int x = 0; x < ow; x++) put(J->out, base + x, J->out_dt, fv);
                    continue;
                }
                for (int x = 0; x < xa; x++) put(J->out, base + x, J->out_dt, fv);
                if (J->out_dt == DT_F32) {
                    float *o = (float *)J->out + base;
                    if (C == 3) {
                        for (int x = xa; x < xb; x++) o[x] = row[(size_t)x * 3 + c];
                    } else {
                        for (int x = xa; x < xb; x++) o[x] = row[(size_t)x * C + c];
                    }
                } else {
                    for (int x = xa; x < xb; x++)
                        put(J->out, base + x, J->out_dt, row[(size_t)x * C + c]);
                }
                for (int x = xb; x < ow; x++) put(J->out, base + x, J->out_dt, fv);
            }
        } else {
            size_t base = (size_t)y * ow * oc;
            for (int x = 0; x < ow; x++) {
                int in = x >= xa && x < xb;
                for (int c = 0; c < oc; c++) {
                    float v = (in && c < C) ? row[(size_t)x * C + c] : J->fill[c];
                    put(J->out, base + (size_t)x * oc + c, J->out_dt, v);
                }
            }
        }
    }
    free(row);
}

static int read_floats(PyObject *seq, float *dst, int n, const char *what) {
    PyObject *fast = PySequence_Fast(seq, what);
    if (!fast) return -1;
    if (PySequence_Fast_GET_SIZE(fast) != n) {
        PyErr_Format(PyExc_ValueError, "%s must have %d values", what, n);
        Py_DECREF(fast);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        double v = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(fast, i));
        if (v == -1.0 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
        dst[i] = (float)v;
    }
    Py_DECREF(fast);
    return 0;
}

static PyObject *py_cmn(PyObject *self, PyObject *args) {
    PyObject *src_obj, *out_obj, *mean_obj, *mul_obj, *fill_obj;
    int y0, x0, mirror, chw;
    float shift;
    if (!PyArg_ParseTuple(args, "OOiipOOfOp:crop_mirror_normalize", &src_obj, &out_obj, &y0, &x0,
                          &mirror, &mean_obj, &mul_obj, &shift, &fill_obj, &chw))
        return NULL;
    Py_buffer sb, ob;
    if (sf_get_buffers(src_obj, &sb, PyBUF_RECORDS_RO, out_obj, &ob, PyBUF_RECORDS) < 0) return NULL;
    PyObject *ret = NULL;
    CmnJob J;
    memset(&J, 0, sizeof J);
    if (check_hwc(&sb, "src") < 0) goto done;
    if (!PyBuffer_IsContiguous(&ob, 'C') || ob.ndim != 3) {
        PyErr_SetString(PyExc_ValueError, "out must be a C-contiguous 3-D array");
        goto done;
    }
    J.src_dt = dtype_of(&sb);
    J.out_dt = dtype_of(&ob);
    if (J.src_dt != DT_U8 && J.src_dt != DT_F32) {
        PyErr_SetString(PyExc_ValueError, "src must be uint8 or float32");
        goto done;
    }
    if (J.out_dt < 0) {
        PyErr_SetString(PyExc_ValueError, "out must be float32, float16 or uint8");
        goto done;
    }
    J.H = (int)sb.shape[0];
    J.W = (int)sb.shape[1];
    J.C = (int)sb.shape[2];
    J.chw = chw;
    if (chw) {
        J.oc = (int)ob.shape[0];
        J.oh = (int)ob.shape[1];
        J.ow = (int)ob.shape[2];
    } else {
        J.oh = (int)ob.shape[0];
        J.ow = (int)ob.shape[1];
        J.oc = (int)ob.shape[2];
    }
    if (J.C > 64 || J.oc > 64 || J.oc < J.C) {
        PyErr_SetString(PyExc_ValueError, "bad channel counts (at most 64, out >= src)");
        goto done;
    }
    if (read_floats(mean_obj, J.mean, J.C, "mean") < 0 ||
        read_floats(mul_obj, J.mul, J.C, "mul") < 0 ||
        read_floats(fill_obj, J.fill, J.oc, "fill") < 0)
        goto done;
    J.src = (const char *)sb.buf;
    J.src_row_stride = sb.strides[0];
    J.out = (char *)ob.buf;
    J.y0 = y0;
    J.x0 = x0;
    J.mirror = mirror;
    J.shift = shift;
    Py_BEGIN_ALLOW_THREADS;
    run_cmn(&J);
    Py_END_ALLOW_THREADS;
    ret = Py_None;
    Py_INCREF(ret);
done:
    PyBuffer_Release(&sb);
    PyBuffer_Release(&ob);
    return ret;
}

/* ------------------------------------------------------------------------- */
/* resample_plan: the taps and weights of both axes, for the GPU passes      */
/* ------------------------------------------------------------------------- */

static PyObject *axis_tuple(const AxisPlan *p) {
    Py_ssize_t n = (Py_ssize_t)p->n * p->support;
    return Py_BuildValue("(iy#y#ii)", p->support, (const char *)p->idx, n * (Py_ssize_t)sizeof(int),
                         (const char *)p->w, n * (Py_ssize_t)sizeof(float), p->lo, p->hi);
}

static PyObject *py_resample_plan(PyObject *self, PyObject *args) {
    int src_h, src_w, C, out_h, out_w, wy0, wx0, wh, ww, interp, mag_interp, antialias;
    float ry0, rx0, ry1, rx1;
    if (!PyArg_ParseTuple(args, "iiiiiiiiiffffiii:resample_plan", &src_h, &src_w, &C, &out_h,
                          &out_w, &wy0, &wx0, &wh, &ww, &ry0, &rx0, &ry1, &rx1, &interp,
                          &mag_interp, &antialias))
        return NULL;
    if (src_h <= 0 || src_w <= 0 || C <= 0 || out_h <= 0 || out_w <= 0 || wh <= 0 || ww <= 0) {
        PyErr_SetString(PyExc_ValueError, "sizes must be positive");
        return NULL;
    }
    if (check_window(out_h, out_w, wy0, wx0, wh, ww, interp, mag_interp) < 0) return NULL;
    AxisPlan py, px;
    memset(&py, 0, sizeof py);
    memset(&px, 0, sizeof px);
    if (plan_axis(&py, interp, mag_interp, antialias, src_h, out_h, wy0, wh, ry0, ry1, 1) < 0 ||
        plan_axis(&px, interp, mag_interp, antialias, src_w, out_w, wx0, ww, rx0, rx1, 0) < 0) {
        plan_free(&py);
        plan_free(&px);
        return PyErr_NoMemory();
    }
    int vh = auto_order_vh(src_h, src_w, C, out_h, out_w, ry0, rx0, ry1, rx1, interp, mag_interp,
                           antialias);
    PyObject *ty = axis_tuple(&py), *tx = axis_tuple(&px);
    plan_free(&py);
    plan_free(&px);
    PyObject *ret = (ty && tx) ? Py_BuildValue("(iOO)", vh, ty, tx) : NULL;
    Py_XDECREF(ty);
    Py_XDECREF(tx);
    return ret;
}

/* ------------------------------------------------------------------------- */

static PyObject *py_filter_table(PyObject *self, PyObject *args) {
    int interp;
    if (!PyArg_ParseTuple(args, "i:filter_table", &interp)) return NULL;
    const float *t;
    int n;
    switch (interp) {
        case INTERP_CUBIC: t = cubic_tab; n = CUBIC_N; break;
        case INTERP_LANCZOS3: t = lanczos_tab; n = LANCZOS_N; break;
        case INTERP_GAUSSIAN: t = gauss_tab; n = GAUSS_N; break;
        default: t = tri_tab; n = TRI_N; break;
    }
    PyObject *l = PyList_New(n);
    if (!l) return NULL;
    for (int i = 0; i < n; i++) PyList_SET_ITEM(l, i, PyFloat_FromDouble(t[i]));
    return l;
}

static PyMethodDef methods[] = {
    {"resample", py_resample, METH_VARARGS,
     "resample(src, out, out_h, out_w, win_y0, win_x0, roi_y0, roi_x0, roi_y1, roi_x1, "
     "interp, mag_interp, antialias, order) -> order used (1: vertical first, 2: horizontal first)"},
    {"resample_normalize", py_resample_normalize, METH_VARARGS,
     "resample_normalize(src, out, out_h, out_w, win_y0, win_x0, roi_y0, roi_x0, roi_y1, roi_x1, "
     "interp, mag_interp, antialias, order, round_u8, mirror, mean, mul, shift, chw) -> order used"},
    {"crop_mirror_normalize", py_cmn, METH_VARARGS,
     "crop_mirror_normalize(src, out, y0, x0, mirror, mean, mul, shift, fill, chw)"},
    {"resample_plan", py_resample_plan, METH_VARARGS,
     "resample_plan(src_h, src_w, C, out_h, out_w, win_y0, win_x0, win_h, win_w, roi_y0, roi_x0, "
     "roi_y1, roi_x1, interp, mag_interp, antialias) -> (vertical_first, y_axis, x_axis); an axis is "
     "(support, int32 taps, float32 weights, lowest tap, highest tap)"},
    {"filter_table", py_filter_table, METH_VARARGS,
     "filter_table(interp) -> list of the tabulated filter coefficients"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_imgproc",
                                    "Fast CPU image kernels for streamflow.", -1, methods};

PyMODINIT_FUNC PyInit__imgproc(void) {
    init_tables();
    return PyModule_Create(&moddef);
}
