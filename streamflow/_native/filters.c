/*
 * streamflow._native._filters -- CPU kernels of the augmentation operators: convolutions
 * (gaussian_blur, laplacian, filter, median_blur) and point operations (brightness/contrast,
 * equalize's histograms and lookup tables, grid_mask), called through
 * streamflow/_native/filters.py, which validates the arguments and allocates the outputs.
 *
 *   separable(src, out, terms, border, fill)
 *       out = sum over terms (ky, kx, scale) of scale * (ky (x) kx correlated with src),
 *       every kernel centred (anchor len // 2). One term is a gaussian blur; two are the
 *       laplacian's partial derivatives. Per term: a horizontal pass of every source row
 *       into a float32 image, then a vertical pass over it.
 *
 *   filter2d(src, out, kernel, anchor_y, anchor_x, border, fill)
 *       out[y, x] = sum_{dy, dx} kernel[dy, dx] * src[y + dy - anchor_y, x + dx - anchor_x]
 *       (a correlation, as DALI's filter). `out` may be smaller than `src` ("valid" mode:
 *       anchor 0 and out = src - kernel + 1, so no tap leaves the image).
 *
 *   median(src, out, win_h, win_w)
 *       the median of the win_h x win_w window around each element, per channel, edges
 *       replicated (odd windows).
 *
 * Images are HWC with contiguous pixels (row stride free); C >= 1. Types: uint8, int8,
 * uint16, int16, uint32, int32, float32 in and out (median: not the 32-bit integers).
 * Arithmetic is float32, summed tap by tap in kernel order (acc = w0 * v0, then
 * acc += wk * vk; filter2d starts from 0 and runs dy, then dx), no fused multiply-add
 * (-ffp-contract=off): the CUDA kernels (gpu/kernels/convolution.cu) repeat exactly these
 * operations, so both give the same bits. Integer outputs round half away from zero
 * (as roundf) and saturate; NaN becomes 0.
 *
 * Out-of-image taps follow `border`: 0 reflect_101 (dcb|abcd|cba), 1 reflect_1001
 * (cba|abcd|dcb), 2 wrap, 3 clamp, 4 constant (`fill`), applied as often as needed (a
 * kernel larger than the image reflects again).
 *
 * All pixel work runs with the GIL released.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sf_common.h"
#include "sf_simd.h"

/* Table lookups stay scalar: GCC's "vectorized" lookups (lanes spilled and reloaded one by one)
 * run at a third of the speed; and their few-instruction loops start a cache line (measured:
 * a loop across a 64-byte boundary ran at half speed). */
#if defined(__GNUC__) && !defined(__clang__)
#define SF_NO_VECTORIZE __attribute__((noinline, aligned(64), optimize("no-tree-vectorize")))
#else
#define SF_NO_VECTORIZE __attribute__((noinline, aligned(64)))
#endif

enum { B_REFLECT_101, B_REFLECT_1001, B_WRAP, B_CLAMP, B_CONSTANT };

/* The kernels' element types: uint8 ... int32 and float32 (sf_common.h's DT_U8 .. DT_F32) */
static int dtype_of(const Py_buffer *b) {
    const int dt = sf_dtype_of(b);
    return dt <= DT_F32 ? dt : -1;
}

/* The source index of position i (may lie outside [0, n)) under border mode b; -1: constant. */
static inline int border_index(int i, int n, int b) {
    if (i >= 0 && i < n) return i;
    switch (b) {
        case B_REFLECT_101: {
            if (n == 1) return 0;
            int p = 2 * n - 2;
            i %= p;
            if (i < 0) i += p;
            return i >= n ? p - i : i;
        }
        case B_REFLECT_1001: {
            int p = 2 * n;
            i %= p;
            if (i < 0) i += p;
            return i >= n ? p - 1 - i : i;
        }
        case B_WRAP: {
            i %= n;
            return i < 0 ? i + n : i;
        }
        case B_CLAMP: return i < 0 ? 0 : n - 1;
        default: return -1;
    }
}

SF_CLONES static void load_row(float *restrict dst, const char *restrict src, int dt, int n) {
    switch (dt) {
        case DT_U8: for (int i = 0; i < n; i++) dst[i] = (float)((const uint8_t *)src)[i]; break;
        case DT_I8: for (int i = 0; i < n; i++) dst[i] = (float)((const int8_t *)src)[i]; break;
        case DT_U16: for (int i = 0; i < n; i++) dst[i] = (float)((const uint16_t *)src)[i]; break;
        case DT_I16: for (int i = 0; i < n; i++) dst[i] = (float)((const int16_t *)src)[i]; break;
        case DT_U32: for (int i = 0; i < n; i++) dst[i] = (float)((const uint32_t *)src)[i]; break;
        case DT_I32: for (int i = 0; i < n; i++) dst[i] = (float)((const int32_t *)src)[i]; break;
        default: memcpy(dst, src, (size_t)n * sizeof(float)); break;
    }
}

/* round half away from zero (exactly roundf) */
static inline float round_away(float v) {
    float t = truncf(v);
    return t + (fabsf(v - t) >= 0.5f ? copysignf(1.0f, v) : 0.0f);
}

/* Saturated to [lo, hi] (|lo|, |hi| < 2^23), then rounded half away from zero; NaN -> 0.
 * Branch-free with SSE2 operations only (the int conversion truncates; v - i is exact),
 * so the 8- and 16-bit row loops vectorize in every clone. */
static inline int sat_round_small(float v, float lo, float hi) {
    v = v == v ? v : 0.0f;
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
    int i = (int)v;
    float d = v - (float)i;
    return i + (d >= 0.5f) - (d <= -0.5f);
}

/* 32-bit integers: the bounds are not floats, saturate in double */
static inline double sat_round_d(float v, double lo, double hi) {
    if (!(v == v)) return 0.0;
    double r = (double)round_away(v);
    return r < lo ? lo : (r > hi ? hi : r);
}

/* sat_round_small on 8 lanes with GCC vector extensions (AVX in the avx2 clone, SSE2 pairs
 * elsewhere): the same operations lane by lane. */
static inline __attribute__((always_inline)) void round8_small(sf_v8i *out, const float *src, float LO, float HI) {
    sf_v8f v;
    memcpy(&v, src, sizeof v);
    const sf_v8f zero = {0, 0, 0, 0, 0, 0, 0, 0};
    const sf_v8f lo = zero + LO, hi = zero + HI, half = zero + 0.5f, mhalf = zero - 0.5f;
    v = (sf_v8f)((sf_v8i)v & (v == v)); /* NaN -> 0 */
    v = (sf_v8f)(((sf_v8i)lo & (v < lo)) | ((sf_v8i)v & ~(v < lo)));
    v = (sf_v8f)(((sf_v8i)hi & (v > hi)) | ((sf_v8i)v & ~(v > hi)));
    sf_v8i t = __builtin_convertvector(v, sf_v8i);       /* truncates */
    sf_v8f d = v - __builtin_convertvector(t, sf_v8f);   /* exact */
    *out = t - (d >= half) + (d <= mhalf);               /* true is -1 */
}

/* 16 values at a time, packed to the 8- or 16-bit type, the rest one by one (sf_simd.h) */
#define STORE_SMALL(T, KIND, LO, HI) \
    SF_STORE_NARROW(T, KIND, dst, src, n, sf_v8i, round8_small, sat_round_small, LO, HI)

SF_CLONES static void store_row(char *restrict dst, int dt, const float *restrict src, int n) {
    switch (dt) {
        SF_NARROW_CASES(STORE_SMALL)
        case DT_U32: for (int i = 0; i < n; i++) ((uint32_t *)dst)[i] = (uint32_t)sat_round_d(src[i], 0, 4294967295.0); break;
        case DT_I32: for (int i = 0; i < n; i++) ((int32_t *)dst)[i] = (int32_t)sat_round_d(src[i], -2147483648.0, 2147483647.0); break;
        default: memcpy(dst, src, (size_t)n * sizeof(float)); break;
    }
}

/* One source row as floats, padded by `lo` pixels on the left and `hi` on the right
 * following the border (constant: `fill`). `row` holds W * C floats of the row. */
static void pad_row(float *restrict dst, const float *restrict row, int W, int C, int lo, int hi,
                    int border, float fill) {
    memcpy(dst + (size_t)lo * C, row, (size_t)W * C * sizeof(float));
    for (int p = 0; p < lo + hi; p++) {
        int xi = p < lo ? p - lo : W + (p - lo);
        int pos = p < lo ? p : W + p;
        int sx = border_index(xi, W, border);
        for (int c = 0; c < C; c++) dst[(size_t)pos * C + c] = sx < 0 ? fill : row[(size_t)sx * C + c];
    }
}

/* acc[e] = w[0] * pad[e] + w[1] * pad[e + C] + ... over the n = W * C outputs of a row. */
SF_CLONES static void hconv(float *restrict acc, const float *restrict pad, const float *w, int taps,
                            int n, int C) {
    const float w0 = w[0];
    for (int e = 0; e < n; e++) acc[e] = w0 * pad[e];
    for (int k = 1; k < taps; k++) {
        const float wk = w[k];
        const float *p = pad + (size_t)k * C;
        for (int e = 0; e < n; e++) acc[e] += wk * p[e];
    }
}

SF_CLONES static void axpy(float *restrict acc, const float *restrict v, float w, int n) {
    for (int e = 0; e < n; e++) acc[e] += w * v[e];
}

SF_CLONES static void scale_row(float *restrict acc, const float *restrict v, float w, int n) {
    for (int e = 0; e < n; e++) acc[e] = w * v[e];
}

SF_CLONES static void scale_in_place(float *acc, float w, int n) {
    for (int e = 0; e < n; e++) acc[e] = w * acc[e];
}

typedef struct {
    const char *src;
    Py_ssize_t src_stride;
    int in_dt;
    char *out;
    Py_ssize_t out_stride;
    int out_dt;
    int H, W, C, OH, OW;
    int border;
    float fill;
} Job;

/* The float rows of the source (each padded by lo/hi pixels), plus one constant row. Each row
 * is converted in place and its border pixels filled from it (pad_row's values). */
static void padded_row(const Job *J, float *dst, int y, int lo, int hi) {
    const int W = J->W, C = J->C;
    const float *row = dst + (size_t)lo * C;
    load_row(dst + (size_t)lo * C, J->src + (size_t)y * J->src_stride, J->in_dt, W * C);
    for (int p = 0; p < lo + hi; p++) {
        int xi = p < lo ? p - lo : W + (p - lo);
        int pos = p < lo ? p : W + p;
        int sx = border_index(xi, W, J->border);
        for (int c = 0; c < C; c++) dst[(size_t)pos * C + c] = sx < 0 ? J->fill : row[(size_t)sx * C + c];
    }
}

static float *padded_source(const Job *J, int lo, int hi) {
    size_t len = (size_t)(J->W + lo + hi) * J->C;
    float *rows = (float *)malloc(((size_t)J->H + 1) * len * sizeof(float));
    if (!rows) return NULL;
    for (int y = 0; y < J->H; y++) padded_row(J, rows + (size_t)y * len, y, lo, hi);
    for (size_t e = 0; e < len; e++) rows[(size_t)J->H * len + e] = J->fill;
    return rows;
}

typedef struct {
    const float *ky, *kx;
    int ny, nx;
    float scale;
} Term;

static int run_separable(const Job *J, const Term *terms, int nterms) {
    const int W = J->W, H = J->H, C = J->C, n = W * C;
    int ok = 0;
    float *row_buf = (float *)malloc((size_t)n * sizeof(float));
    float *tmp = (float *)malloc((size_t)H * n * sizeof(float));
    float *acc = (float *)malloc((size_t)n * sizeof(float));
    float *total = nterms > 1 ? (float *)malloc((size_t)H * n * sizeof(float)) : NULL;
    float *pad = NULL;
    if (!row_buf || !tmp || !acc || (nterms > 1 && !total)) goto out;
    for (int t = 0; t < nterms; t++) {
        const Term *T = &terms[t];
        const int rx = T->nx / 2, ry = T->ny / 2;
        free(pad);
        pad = (float *)malloc((size_t)(W + T->nx - 1) * C * sizeof(float));
        if (!pad) goto out;
        for (int y = 0; y < H; y++) {  /* horizontal pass of every row */
            load_row(row_buf, J->src + (size_t)y * J->src_stride, J->in_dt, n);
            pad_row(pad, row_buf, W, C, rx, T->nx - 1 - rx, J->border, J->fill);
            hconv(tmp + (size_t)y * n, pad, T->kx, T->nx, n, C);
        }
        for (int y = 0; y < H; y++) {  /* vertical pass */
            for (int k = 0; k < T->ny; k++) {
                int sy = border_index(y + k - ry, H, J->border);
                if (sy < 0) {  /* constant border: the row of fill values, filtered */
                    for (int e = 0; e < n; e++) row_buf[e] = J->fill;
                    float s = 0.0f;  /* a horizontally filtered constant row */
                    for (int j = 0; j < T->nx; j++) s = j == 0 ? T->kx[0] * J->fill : s + T->kx[j] * J->fill;
                    for (int e = 0; e < n; e++) row_buf[e] = s;
                }
                const float *src = sy < 0 ? row_buf : tmp + (size_t)sy * n;
                if (k == 0) scale_row(acc, src, T->ky[0], n);
                else axpy(acc, src, T->ky[k], n);
            }
            if (nterms == 1) {
                if (T->scale != 1.0f) scale_in_place(acc, T->scale, n);
                store_row(J->out + (size_t)y * J->out_stride, J->out_dt, acc, n);
            } else if (t == 0) {
                scale_row(total + (size_t)y * n, acc, T->scale, n);
            } else {
                axpy(total + (size_t)y * n, acc, T->scale, n);
            }
        }
    }
    if (nterms > 1)
        for (int y = 0; y < H; y++) store_row(J->out + (size_t)y * J->out_stride, J->out_dt, total + (size_t)y * n, n);
    ok = 1;
out:
    free(row_buf);
    free(tmp);
    free(acc);
    free(total);
    free(pad);
    return ok ? 0 : -1;
}

/* out[e] = sum over the taps t, in order, of k[t] * rows[dy[t]][e + off[t]], starting from 0:
 * the additions of one axpy pass per tap, in that order, but 8 outputs at a time kept in a
 * vector (AVX in the avx2 clone) instead of a round trip through memory per tap. */
static inline __attribute__((always_inline)) void correlate_c(float *restrict out, const float *const *rows,
                                                              const int *dy, const int *off, const float *k,
                                                              const int nt, int on) {
    typedef float v8f __attribute__((vector_size(32)));
    int e = 0;
    for (; e + 8 <= on; e += 8) {
        v8f acc = {0, 0, 0, 0, 0, 0, 0, 0};
        for (int t = 0; t < nt; t++) {
            v8f v;
            memcpy(&v, rows[dy[t]] + e + off[t], sizeof v);
            acc = acc + k[t] * v;
        }
        memcpy(out + e, &acc, sizeof acc);
    }
    for (; e < on; e++) {
        float a = 0.0f;
        for (int t = 0; t < nt; t++) a = a + k[t] * rows[dy[t]][e + off[t]];
        out[e] = a;
    }
}

SF_CLONES static void correlate(float *restrict out, const float *const *rows, const int *dy, const int *off,
                                const float *k, int nt, int on) {
    switch (nt) { /* common tap counts unrolled */
        case 5: correlate_c(out, rows, dy, off, k, 5, on); break;
        case 9: correlate_c(out, rows, dy, off, k, 9, on); break;
        default: correlate_c(out, rows, dy, off, k, nt, on); break;
    }
}

static int is_int_type(int dt) { return dt != DT_F32; }

static int run_filter2d(const Job *J, const float *kernel, int kh, int kw, int ay, int ax) {
    const int C = J->C, on = J->OW * C;
    const size_t len = (size_t)(J->W + kw - 1) * C;
    float *acc = (float *)malloc((size_t)(on > 0 ? on : 1) * sizeof(float));
    const float **taps = (const float **)malloc((size_t)kh * sizeof(float *));
    int *tdy = (int *)malloc((size_t)kh * kw * sizeof(int));
    int *toff = (int *)malloc((size_t)kh * kw * sizeof(int));
    float *tk = (float *)malloc((size_t)kh * kw * sizeof(float));
    /* source rows converted as they are needed: kh cached rows (row sy in slot sy % kh), kh
     * spare rows for the rare second row of a slot within one output row (wrap, kernels
     * larger than the image), and the constant row */
    float *rows = (float *)malloc(((size_t)2 * kh + 1) * len * sizeof(float));
    int *tag = (int *)malloc((size_t)2 * kh * sizeof(int)), *claim = tag ? tag + kh : NULL;
    int ok = rows && acc && taps && tdy && toff && tk && tag;
    if (ok) {
        /* A zero weight adds k * v = +-0 when v is finite (integer sources), and that changes
         * no sum: the sum starts at +0, so it is never -0 (in round-to-nearest, x + y is -0
         * only for -0 + -0), and +0 + -0 is +0. Those taps are left out; float sources keep
         * them (0 * inf and 0 * NaN are NaN). */
        const int skip_zeros = is_int_type(J->in_dt);
        int nt = 0;
        for (int dy = 0; dy < kh; dy++)
            for (int dx = 0; dx < kw; dx++) {
                const float w = kernel[dy * kw + dx];
                if (skip_zeros && w == 0.0f) continue;
                tdy[nt] = dy;
                toff[nt] = dx * C;
                tk[nt++] = w;
            }
        float *constant_row = rows + (size_t)2 * kh * len;
        for (size_t e = 0; e < len; e++) constant_row[e] = J->fill;
        for (int k = 0; k < kh; k++) tag[k] = -1;
        for (int y = 0; y < J->OH; y++) {
            for (int k = 0; k < kh; k++) claim[k] = -1;
            for (int dy = 0; dy < kh; dy++) {
                int sy = border_index(y + dy - ay, J->H, J->border);
                if (sy < 0) {
                    taps[dy] = constant_row;
                    continue;
                }
                const int slot = sy % kh;
                float *dst = rows + (size_t)slot * len;
                if (claim[slot] < 0 || claim[slot] == sy) {
                    if (tag[slot] != sy) padded_row(J, dst, sy, ax, kw - 1 - ax);
                    tag[slot] = claim[slot] = sy;
                } else {
                    dst = rows + (size_t)(kh + dy) * len;
                    padded_row(J, dst, sy, ax, kw - 1 - ax);
                }
                taps[dy] = dst;
            }
            correlate(acc, taps, tdy, toff, tk, nt, on);
            store_row(J->out + (size_t)y * J->out_stride, J->out_dt, acc, on);
        }
    }
    free(acc);
    free((void *)taps);
    free(tdy);
    free(toff);
    free(tk);
    free(tag);
    free(rows);
    return ok ? 0 : -1;
}

/* k-th smallest of v[0..n) (partially reorders v). */
static float select_kth(float *v, int n, int k) {
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        float pivot = v[(lo + hi) / 2];
        int i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot) i++;
            while (v[j] > pivot) j--;
            if (i <= j) {
                float t = v[i];
                v[i] = v[j];
                v[j] = t;
                i++;
                j--;
            }
        }
        if (k <= j) hi = j;
        else if (k >= i) lo = i;
        else return v[k];
    }
    return v[k];
}

#define SF_SORT2(a, b) do { float lo_ = b < a ? b : a; b = b < a ? a : b; a = lo_; } while (0)

/* The median of 3x3 windows of one output row: a 19-exchange median network on every element
 * (branch-free, so the loop vectorizes). r0..r2 are the padded source rows (one pixel each side). */
SF_CLONES static void median3x3_row(float *restrict out, const float *r0, const float *r1, const float *r2, int n,
                                    int C) {
    for (int e = 0; e < n; e++) {
        float p0 = r0[e], p1 = r0[e + C], p2 = r0[e + 2 * C];
        float p3 = r1[e], p4 = r1[e + C], p5 = r1[e + 2 * C];
        float p6 = r2[e], p7 = r2[e + C], p8 = r2[e + 2 * C];
        SF_SORT2(p1, p2); SF_SORT2(p4, p5); SF_SORT2(p7, p8);
        SF_SORT2(p0, p1); SF_SORT2(p3, p4); SF_SORT2(p6, p7);
        SF_SORT2(p1, p2); SF_SORT2(p4, p5); SF_SORT2(p7, p8);
        SF_SORT2(p0, p3); SF_SORT2(p5, p8); SF_SORT2(p4, p7);
        SF_SORT2(p3, p6); SF_SORT2(p1, p4); SF_SORT2(p2, p5);
        SF_SORT2(p4, p7); SF_SORT2(p4, p2); SF_SORT2(p6, p4);
        SF_SORT2(p4, p2);
        out[e] = p4;
    }
}

static int run_median(const Job *J, int wh, int ww) {
    const int C = J->C, n = J->W * C, ry = wh / 2, rx = ww / 2;
    const size_t len = (size_t)(J->W + ww - 1) * C;
    float *acc = (float *)malloc((size_t)n * sizeof(float));
    float *win = (float *)malloc((size_t)wh * ww * sizeof(float));
    Job Jc = *J;
    Jc.border = B_CLAMP;
    float *rows = padded_source(&Jc, rx, ww - 1 - rx);
    int ok = rows && acc && win;
    if (ok) {
        const float **src = (const float **)malloc((size_t)wh * sizeof(float *));
        ok = src != NULL;
        for (int y = 0; ok && y < J->H; y++) {
            for (int k = 0; k < wh; k++) src[k] = rows + (size_t)border_index(y + k - ry, J->H, B_CLAMP) * len;
            if (wh == 3 && ww == 3) {
                median3x3_row(acc, src[0], src[1], src[2], n, C);
                store_row(J->out + (size_t)y * J->out_stride, J->out_dt, acc, n);
                continue;
            }
            for (int e = 0; e < n; e++) {
                int m = 0;
                for (int k = 0; k < wh; k++)
                    for (int d = 0; d < ww; d++) win[m++] = src[k][e + (size_t)d * C];
                acc[e] = select_kth(win, m, m / 2);
            }
            store_row(J->out + (size_t)y * J->out_stride, J->out_dt, acc, n);
        }
        free((void *)src);
    }
    free(acc);
    free(win);
    free(rows);
    return ok ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */

static int check_image(const Py_buffer *b, const char *what) {
    if (b->ndim != 3) {
        PyErr_Format(PyExc_ValueError, "%s must be 3-D (HWC), got %d dimensions", what, b->ndim);
        return -1;
    }
    if (b->strides[2] != b->itemsize || b->strides[1] != b->itemsize * b->shape[2] || b->strides[0] < 0) {
        PyErr_Format(PyExc_ValueError, "%s must have contiguous pixels (HWC rows)", what);
        return -1;
    }
    if (dtype_of(b) < 0) {
        PyErr_Format(PyExc_ValueError, "%s has an unsupported type", what);
        return -1;
    }
    if (b->shape[0] <= 0 || b->shape[1] <= 0 || b->shape[2] <= 0) {
        PyErr_Format(PyExc_ValueError, "%s must not be empty", what);
        return -1;
    }
    if ((double)b->shape[0] * b->shape[1] * b->shape[2] > 2147483647.0) {
        PyErr_Format(PyExc_ValueError, "%s is too large", what);
        return -1;
    }
    return 0;
}

/* Opens src (read) and out (write) and fills the Job; 0 on success. */
static int open_job(Job *J, PyObject *src_obj, PyObject *out_obj, Py_buffer *sb, Py_buffer *ob,
                    int border, float fill) {
    if (sf_get_buffers(src_obj, sb, PyBUF_RECORDS_RO, out_obj, ob, PyBUF_RECORDS) < 0) return -1;
    if (check_image(sb, "src") < 0 || check_image(ob, "out") < 0) goto fail;
    if (ob->shape[2] != sb->shape[2]) {
        PyErr_SetString(PyExc_ValueError, "src and out channel counts differ");
        goto fail;
    }
    if (border < 0 || border > B_CONSTANT) {
        PyErr_SetString(PyExc_ValueError, "bad border code");
        goto fail;
    }
    J->src = (const char *)sb->buf;
    J->src_stride = sb->strides[0];
    J->in_dt = dtype_of(sb);
    J->out = (char *)ob->buf;
    J->out_stride = ob->strides[0];
    J->out_dt = dtype_of(ob);
    J->H = (int)sb->shape[0];
    J->W = (int)sb->shape[1];
    J->C = (int)sb->shape[2];
    J->OH = (int)ob->shape[0];
    J->OW = (int)ob->shape[1];
    J->border = border;
    J->fill = fill;
    return 0;
fail:
    PyBuffer_Release(sb);
    PyBuffer_Release(ob);
    return -1;
}

/* A 1-D (or 2-D) float32 buffer: returns its element count, -1 on error. */
static Py_ssize_t float_buffer(PyObject *obj, Py_buffer *b, const char *what) {
    if (PyObject_GetBuffer(obj, b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    const char *f = b->format ? b->format : "B";
    if (*f == '<' || *f == '=' || *f == '@') f++;
    if (strcmp(f, "f") != 0 || b->itemsize != 4 || b->len < 4) {
        PyErr_Format(PyExc_ValueError, "%s must be a non-empty C-contiguous float32 array", what);
        PyBuffer_Release(b);
        return -1;
    }
    return b->len / 4;
}

static PyObject *py_separable(PyObject *self, PyObject *args) {
    PyObject *src_obj, *out_obj, *terms_obj;
    int border;
    float fill;
    if (!PyArg_ParseTuple(args, "OOO!if:separable", &src_obj, &out_obj, &PyList_Type, &terms_obj, &border, &fill))
        return NULL;
    Py_ssize_t nterms = PyList_GET_SIZE(terms_obj);
    if (nterms < 1 || nterms > 3) {
        PyErr_SetString(PyExc_ValueError, "separable takes 1 to 3 terms");
        return NULL;
    }
    Py_buffer kb[6];
    Term terms[3];
    int opened = 0;
    PyObject *ret = NULL;
    for (Py_ssize_t t = 0; t < nterms; t++) {
        PyObject *item = PyList_GET_ITEM(terms_obj, t);
        PyObject *ky, *kx;
        float scale;
        if (!PyArg_ParseTuple(item, "OOf:term", &ky, &kx, &scale)) goto done;
        Py_ssize_t ny = float_buffer(ky, &kb[opened], "ky");
        if (ny < 0) goto done;
        opened++;
        Py_ssize_t nx = float_buffer(kx, &kb[opened], "kx");
        if (nx < 0) goto done;
        opened++;
        terms[t].ky = (const float *)kb[opened - 2].buf;
        terms[t].kx = (const float *)kb[opened - 1].buf;
        terms[t].ny = (int)ny;
        terms[t].nx = (int)nx;
        terms[t].scale = scale;
    }
    Py_buffer sb, ob;
    Job J;
    if (open_job(&J, src_obj, out_obj, &sb, &ob, border, fill) < 0) goto done;
    if (J.OH != J.H || J.OW != J.W) {
        PyErr_SetString(PyExc_ValueError, "out must have the shape of src");
    } else {
        int rc;
        Py_BEGIN_ALLOW_THREADS;
        rc = run_separable(&J, terms, (int)nterms);
        Py_END_ALLOW_THREADS;
        if (rc < 0) PyErr_NoMemory();
        else ret = Py_NewRef(Py_None);
    }
    PyBuffer_Release(&sb);
    PyBuffer_Release(&ob);
done:
    for (int i = 0; i < opened; i++) PyBuffer_Release(&kb[i]);
    return ret;
}

static PyObject *py_filter2d(PyObject *self, PyObject *args) {
    PyObject *src_obj, *out_obj, *k_obj;
    int kh, kw, ay, ax, border;
    float fill;
    if (!PyArg_ParseTuple(args, "OOOiiiiif:filter2d", &src_obj, &out_obj, &k_obj, &kh, &kw, &ay, &ax, &border, &fill))
        return NULL;
    Py_buffer kb;
    Py_ssize_t nk = float_buffer(k_obj, &kb, "kernel");
    if (nk < 0) return NULL;
    PyObject *ret = NULL;
    if (kh <= 0 || kw <= 0 || (Py_ssize_t)kh * kw != nk || ay < 0 || ay >= kh || ax < 0 || ax >= kw) {
        PyErr_SetString(PyExc_ValueError, "kernel size or anchor do not fit");
        PyBuffer_Release(&kb);
        return NULL;
    }
    Py_buffer sb, ob;
    Job J;
    if (open_job(&J, src_obj, out_obj, &sb, &ob, border, fill) == 0) {
        if (J.OH > J.H || J.OW > J.W) {
            PyErr_SetString(PyExc_ValueError, "out must not be larger than src");
        } else {
            int rc;
            Py_BEGIN_ALLOW_THREADS;
            rc = run_filter2d(&J, (const float *)kb.buf, kh, kw, ay, ax);
            Py_END_ALLOW_THREADS;
            if (rc < 0) PyErr_NoMemory();
            else ret = Py_NewRef(Py_None);
        }
        PyBuffer_Release(&sb);
        PyBuffer_Release(&ob);
    }
    PyBuffer_Release(&kb);
    return ret;
}

static PyObject *py_median(PyObject *self, PyObject *args) {
    PyObject *src_obj, *out_obj;
    int wh, ww;
    if (!PyArg_ParseTuple(args, "OOii:median", &src_obj, &out_obj, &wh, &ww)) return NULL;
    if (wh <= 0 || ww <= 0 || wh % 2 == 0 || ww % 2 == 0 || (long)wh * ww > 1 << 20) {
        PyErr_SetString(PyExc_ValueError, "the window must be odd and positive");
        return NULL;
    }
    Py_buffer sb, ob;
    Job J;
    if (open_job(&J, src_obj, out_obj, &sb, &ob, B_CLAMP, 0.0f) < 0) return NULL;
    PyObject *ret = NULL;
    if (J.OH != J.H || J.OW != J.W || J.in_dt != J.out_dt || J.in_dt == DT_U32 || J.in_dt == DT_I32) {
        PyErr_SetString(PyExc_ValueError, "out must match src; 32-bit integers are not supported");
    } else {
        int rc;
        Py_BEGIN_ALLOW_THREADS;
        rc = run_median(&J, wh, ww);
        Py_END_ALLOW_THREADS;
        if (rc < 0) PyErr_NoMemory();
        else ret = Py_NewRef(Py_None);
    }
    PyBuffer_Release(&sb);
    PyBuffer_Release(&ob);
    return ret;
}


/* ------------------------------------------------------------------------------------------ */
/* Point operations: linear (brightness/contrast), histograms and lookup tables (equalize),    */
/* grid_mask                                                                                  */
/* ------------------------------------------------------------------------------------------ */

/* out = in * mul + add (float32, two roundings), stored like the filters (round half away
 * from zero, saturate); n elements, C-contiguous, any shape. */
static void run_linear_blocks(const char *src, int in_dt, Py_ssize_t in_item, char *dst, int out_dt,
                              Py_ssize_t out_item, Py_ssize_t n, float mul, float add);

SF_CLONES static void linear_f32(const float *restrict src, float *restrict dst, Py_ssize_t n, float mul, float add) {
    for (Py_ssize_t i = 0; i < n; i++) {
        const float v = src[i] * mul;
        dst[i] = v + add;
    }
}

/* out[i] = table[src[i]] for 8-bit sources: an element's result depends on its value only
 * (scalar: SF_NO_VECTORIZE). */
#define DEF_LOOKUP(NAME, T)                                                                      \
    static SF_NO_VECTORIZE void NAME(const uint8_t *restrict s, T *restrict o, const T *restrict t, \
                                     Py_ssize_t n) {                                             \
        for (Py_ssize_t i = 0; i < n; i++) o[i] = t[s[i]];                                       \
    }
DEF_LOOKUP(lookup8, uint8_t)
DEF_LOOKUP(lookup16, uint16_t)
DEF_LOOKUP(lookup32, uint32_t)

static void run_linear(const char *src, int in_dt, Py_ssize_t in_item, char *dst, int out_dt, Py_ssize_t out_item,
                       Py_ssize_t n, float mul, float add) {
    if ((in_dt == DT_U8 || in_dt == DT_I8) && n >= 4096) {
        /* the 256 results of the very same steps, indexed by the byte: identical, and one load each */
        uint8_t values[256];
        _Alignas(16) char table[256 * sizeof(float)];
        for (int v = 0; v < 256; v++) values[v] = (uint8_t)v;
        run_linear_blocks((const char *)values, in_dt, 1, table, out_dt, out_item, 256, mul, add);
        const uint8_t *restrict s = (const uint8_t *)src;
        switch (out_item) {
            case 1: lookup8(s, (uint8_t *)dst, (const uint8_t *)table, n); return;
            case 2: lookup16(s, (uint16_t *)dst, (const uint16_t *)table, n); return;
            case 4: lookup32(s, (uint32_t *)dst, (const uint32_t *)table, n); return;
            default: break;
        }
    }
    if (in_dt == DT_F32 && out_dt == DT_F32) { /* no conversions: straight through */
        linear_f32((const float *)src, (float *)dst, n, mul, add);
        return;
    }
    run_linear_blocks(src, in_dt, in_item, dst, out_dt, out_item, n, mul, add);
}

static void run_linear_blocks(const char *src, int in_dt, Py_ssize_t in_item, char *dst, int out_dt,
                              Py_ssize_t out_item, Py_ssize_t n, float mul, float add) {
    enum { BLK = 4096 };
    float buf[BLK];
    for (Py_ssize_t start = 0; start < n; start += BLK) {
        int len = (int)(n - start < BLK ? n - start : BLK);
        load_row(buf, src + start * in_item, in_dt, len);
        for (int i = 0; i < len; i++) {
            float v = buf[i] * mul;
            buf[i] = v + add;
        }
        store_row(dst + start * out_item, out_dt, buf, len);
    }
}

static PyObject *py_linear(PyObject *self, PyObject *args) {
    PyObject *src_obj, *out_obj;
    float mul, add;
    if (!PyArg_ParseTuple(args, "OOff:linear", &src_obj, &out_obj, &mul, &add)) return NULL;
    Py_buffer sb, ob;
    if (sf_get_buffers(src_obj, &sb, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT,
                       out_obj, &ob, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0)
        return NULL;
    PyObject *ret = NULL;
    int in_dt = dtype_of(&sb), out_dt = dtype_of(&ob);
    Py_ssize_t n = sb.itemsize ? sb.len / sb.itemsize : 0;
    if (in_dt < 0 || out_dt < 0 || ob.len / ob.itemsize != n) {
        PyErr_SetString(PyExc_ValueError, "linear: unsupported types or sizes differ");
    } else {
        Py_BEGIN_ALLOW_THREADS;
        run_linear((const char *)sb.buf, in_dt, sb.itemsize, (char *)ob.buf, out_dt, ob.itemsize, n, mul, add);
        Py_END_ALLOW_THREADS;
        ret = Py_NewRef(Py_None);
    }
    PyBuffer_Release(&sb);
    PyBuffer_Release(&ob);
    return ret;
}

/* Per-channel counts of the values of `pixels` pixels of C uint8 channels into h (C x 256):
 * 4 partial histograms (pixel i into i % 4), so runs of equal values do not wait on one
 * counter, with 32-bit counters summed into h every 2^30 pixels. */
static inline __attribute__((always_inline)) void count_c(const uint8_t *p, Py_ssize_t pixels, const int C,
                                                          uint32_t *part, int64_t *h) {
    const Py_ssize_t block = (Py_ssize_t)1 << 30;
    for (Py_ssize_t start = 0; start < pixels; start += block) {
        const Py_ssize_t end = pixels - start < block ? pixels : start + block;
        memset(part, 0, (size_t)4 * C * 256 * sizeof(uint32_t));
        Py_ssize_t i = start;
        for (; i + 4 <= end; i += 4)
            for (int k = 0; k < 4; k++)
                for (int c = 0; c < C; c++) part[(k * C + c) * 256 + p[(i + k) * C + c]]++;
        for (; i < end; i++)
            for (int c = 0; c < C; c++) part[c * 256 + p[i * C + c]]++;
        for (int k = 0; k < 4; k++)
            for (int e = 0; e < C * 256; e++) h[e] += part[k * C * 256 + e];
    }
}

static int count_values(const uint8_t *p, Py_ssize_t pixels, int C, int64_t *h) {
    uint32_t *part = (uint32_t *)malloc((size_t)4 * C * 256 * sizeof(uint32_t));
    if (!part) return -1;
    memset(h, 0, (size_t)C * 256 * sizeof(int64_t));
    switch (C) {
        case 1: count_c(p, pixels, 1, part, h); break;
        case 3: count_c(p, pixels, 3, part, h); break;
        case 4: count_c(p, pixels, 4, part, h); break;
        default: count_c(p, pixels, C, part, h); break;
    }
    free(part);
    return 0;
}

/* out[i] = lut[channel of i][src[i]] over `pixels` pixels of C channels. */
static inline __attribute__((always_inline)) void lookup_c(const uint8_t *restrict p, uint8_t *restrict o,
                                                           Py_ssize_t pixels, const int C, const uint8_t *lut) {
    for (Py_ssize_t i = 0; i < pixels; i++)
        for (int c = 0; c < C; c++) o[i * C + c] = lut[c * 256 + p[i * C + c]];
}

static SF_NO_VECTORIZE void lookup(const uint8_t *p, uint8_t *o, Py_ssize_t pixels, int C, const uint8_t *lut) {
    switch (C) {
        case 1: lookup_c(p, o, pixels, 1, lut); break;
        case 3: lookup_c(p, o, pixels, 3, lut); break;
        case 4: lookup_c(p, o, pixels, 4, lut); break;
        default: lookup_c(p, o, pixels, C, lut); break;
    }
}

/* Per-channel histograms of a C-contiguous uint8 array whose last axis has `channels` entries:
 * hist is int64 (channels, 256). */
static PyObject *py_histograms(PyObject *self, PyObject *args) {
    PyObject *src_obj, *hist_obj;
    int C;
    if (!PyArg_ParseTuple(args, "OOi:histograms", &src_obj, &hist_obj, &C)) return NULL;
    Py_buffer sb, hb;
    if (sf_get_buffers(src_obj, &sb, PyBUF_C_CONTIGUOUS,
                       hist_obj, &hb, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        return NULL;
    PyObject *ret = NULL;
    if (C <= 0 || sb.len % C != 0 || hb.len != (Py_ssize_t)C * 256 * 8) {
        PyErr_SetString(PyExc_ValueError, "histograms: bad channel count or histogram size");
    } else {
        const uint8_t *p = (const uint8_t *)sb.buf;
        int64_t *h = (int64_t *)hb.buf;
        Py_ssize_t pixels = sb.len / C;
        int rc;
        Py_BEGIN_ALLOW_THREADS;
        rc = count_values(p, pixels, C, h);
        Py_END_ALLOW_THREADS;
        if (rc < 0) PyErr_NoMemory();
        else ret = Py_NewRef(Py_None);
    }
    PyBuffer_Release(&sb);
    PyBuffer_Release(&hb);
    return ret;
}

/* out[i] = lut[channel of i][src[i]] for C-contiguous uint8 arrays; lut is uint8 (channels, 256). */
static PyObject *py_apply_luts(PyObject *self, PyObject *args) {
    PyObject *src_obj, *out_obj, *lut_obj;
    int C;
    if (!PyArg_ParseTuple(args, "OOOi:apply_luts", &src_obj, &out_obj, &lut_obj, &C)) return NULL;
    Py_buffer sb, ob, lb;
    if (sf_get_buffers(src_obj, &sb, PyBUF_C_CONTIGUOUS,
                       out_obj, &ob, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(lut_obj, &lb, PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&sb);
        PyBuffer_Release(&ob);
        return NULL;
    }
    PyObject *ret = NULL;
    if (C <= 0 || sb.len % C != 0 || ob.len != sb.len || lb.len != (Py_ssize_t)C * 256) {
        PyErr_SetString(PyExc_ValueError, "apply_luts: bad sizes");
    } else {
        const uint8_t *p = (const uint8_t *)sb.buf, *lut = (const uint8_t *)lb.buf;
        uint8_t *o = (uint8_t *)ob.buf;
        Py_ssize_t pixels = sb.len / C;
        Py_BEGIN_ALLOW_THREADS;
        lookup(p, o, pixels, C, lut);
        Py_END_ALLOW_THREADS;
        ret = Py_NewRef(Py_None);
    }
    PyBuffer_Release(&sb);
    PyBuffer_Release(&ob);
    PyBuffer_Release(&lb);
    return ret;
}

/* grid_mask over an HWC image (rows C-contiguous, row stride free), any element size: pixel
 * (y, x) is kept when frac(fx) >= ratio or frac(fy) >= ratio, with fx = (-sx - y * sa) + x * ca,
 * fy = (-sy + y * ca) + x * sa in float32 (the operations of DALI's CPU kernel), else zeroed. */
static PyObject *py_grid_mask(PyObject *self, PyObject *args) {
    PyObject *src_obj, *out_obj;
    float ca, sa, sx, sy, ratio;
    if (!PyArg_ParseTuple(args, "OOfffff:grid_mask", &src_obj, &out_obj, &ca, &sa, &sx, &sy, &ratio)) return NULL;
    Py_buffer sb, ob;
    if (sf_get_buffers(src_obj, &sb, PyBUF_RECORDS_RO, out_obj, &ob, PyBUF_RECORDS) < 0) return NULL;
    PyObject *ret = NULL;
    if (sb.ndim != 3 || ob.ndim != 3 || sb.shape[0] != ob.shape[0] || sb.shape[1] != ob.shape[1] ||
        sb.shape[2] != ob.shape[2] || sb.itemsize != ob.itemsize || sb.strides[2] != sb.itemsize ||
        sb.strides[1] != sb.itemsize * sb.shape[2] || ob.strides[2] != ob.itemsize ||
        ob.strides[1] != ob.itemsize * ob.shape[2]) {
        PyErr_SetString(PyExc_ValueError, "grid_mask: src and out must be HWC images of one shape and type");
    } else {
        const int H = (int)sb.shape[0], W = (int)sb.shape[1];
        const size_t pix = (size_t)sb.itemsize * (size_t)sb.shape[2];
        Py_BEGIN_ALLOW_THREADS;
        for (int y = 0; y < H; y++) {
            const char *s = (const char *)sb.buf + (Py_ssize_t)y * sb.strides[0];
            char *o = (char *)ob.buf + (Py_ssize_t)y * ob.strides[0];
            float t = (float)y * -sa;
            const float fxy = -sx + t;
            t = (float)y * ca;
            const float fyy = -sy + t;
            for (int x = 0; x < W; x++) {
                float u = (float)x * ca;
                const float fx = fxy + u;
                u = (float)x * sa;
                const float fy = fyy + u;
                const int keep = (fx - floorf(fx) >= ratio) || (fy - floorf(fy) >= ratio);
                if (keep) memcpy(o + x * pix, s + x * pix, pix);
                else memset(o + x * pix, 0, pix);
            }
        }
        Py_END_ALLOW_THREADS;
        ret = Py_NewRef(Py_None);
    }
    PyBuffer_Release(&sb);
    PyBuffer_Release(&ob);
    return ret;
}


SF_CLONES static void color_pixels(const float *restrict in, float *restrict out, int len, const float *m,
                                   float offset) {
    for (int p = 0; p < len; p += 3) {
        const float x0 = in[p], x1 = in[p + 1], x2 = in[p + 2];
        for (int i = 0; i < 3; i++) {
            float acc = x0 * m[3 * i];
            float t = x1 * m[3 * i + 1];
            acc = acc + t;
            t = x2 * m[3 * i + 2];
            acc = acc + t;
            out[p + i] = acc + offset;
        }
    }
}

/* out[..., i] = ((x0 * m[i][0] + x1 * m[i][1]) + x2 * m[i][2]) + offset for 3-channel pixels, in
 * float32 in exactly this order (ops/color.py apply_linear), stored like the filters. */
static PyObject *py_color_matrix(PyObject *self, PyObject *args) {
    PyObject *src_obj, *out_obj, *m_obj;
    float offset;
    if (!PyArg_ParseTuple(args, "OOOf:color_matrix", &src_obj, &out_obj, &m_obj, &offset)) return NULL;
    Py_buffer sb, ob, mb;
    if (sf_get_buffers(src_obj, &sb, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT,
                       out_obj, &ob, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0)
        return NULL;
    Py_ssize_t nm = float_buffer(m_obj, &mb, "matrix");
    if (nm < 0) {
        PyBuffer_Release(&sb);
        PyBuffer_Release(&ob);
        return NULL;
    }
    PyObject *ret = NULL;
    int in_dt = dtype_of(&sb), out_dt = dtype_of(&ob);
    Py_ssize_t n = sb.itemsize ? sb.len / sb.itemsize : 0;
    if (in_dt < 0 || out_dt < 0 || nm != 9 || n % 3 != 0 || ob.len / ob.itemsize != n) {
        PyErr_SetString(PyExc_ValueError, "color_matrix: unsupported types, sizes or matrix");
    } else {
        float m[9];
        memcpy(m, mb.buf, sizeof m);
        Py_BEGIN_ALLOW_THREADS;
        enum { BLK = 3 * 1365 };
        float in[BLK], out[BLK];
        for (Py_ssize_t start = 0; start < n; start += BLK) {
            int len = (int)(n - start < BLK ? n - start : BLK);
            load_row(in, (const char *)sb.buf + start * sb.itemsize, in_dt, len);
            char *dst = (char *)ob.buf + start * ob.itemsize;
            color_pixels(in, out_dt == DT_F32 ? (float *)dst : out, len, m, offset); /* float32: in place */
            if (out_dt != DT_F32) store_row(dst, out_dt, out, len);
        }
        Py_END_ALLOW_THREADS;
        ret = Py_NewRef(Py_None);
    }
    PyBuffer_Release(&sb);
    PyBuffer_Release(&ob);
    PyBuffer_Release(&mb);
    return ret;
}

static PyMethodDef methods[] = {
    {"separable", py_separable, METH_VARARGS,
     "separable(src, out, [(ky, kx, scale), ...], border, fill): sum of scaled separable correlations"},
    {"filter2d", py_filter2d, METH_VARARGS,
     "filter2d(src, out, kernel, kh, kw, anchor_y, anchor_x, border, fill): 2-D correlation"},
    {"median", py_median, METH_VARARGS, "median(src, out, win_h, win_w): median filter, edges replicated"},
    {"linear", py_linear, METH_VARARGS, "linear(src, out, mul, add): out = in * mul + add, saturated"},
    {"histograms", py_histograms, METH_VARARGS, "histograms(src_u8, hist_i64, channels): per-channel histograms"},
    {"apply_luts", py_apply_luts, METH_VARARGS, "apply_luts(src_u8, out_u8, luts, channels): per-channel lookup"},
    {"color_matrix", py_color_matrix, METH_VARARGS, "color_matrix(src, out, m3x3, offset): 3-channel linear map"},
    {"grid_mask", py_grid_mask, METH_VARARGS, "grid_mask(src, out, ca, sa, sx, sy, ratio): GridMask"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_filters",
                                    "CPU kernels of streamflow's augmentation operators.", -1, methods};

PyMODINIT_FUNC PyInit__filters(void) { return PyModule_Create(&moddef); }
