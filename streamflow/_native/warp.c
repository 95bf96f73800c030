/*
 * streamflow._native._warp -- CPU kernels of the geometric warps: warp_affine and rotate
 * (images and DHWC volumes), experimental.warp_perspective and experimental.remap, called
 * through streamflow/_native/warp.py, which validates the arguments and allocates the outputs.
 *
 *   affine2d(src, out, matrix6, linear, fill, copy)
 *   affine3d(src, out, matrix12, linear, fill, copy)
 *       DALI's warp kernels in float32, exactly the operations of the numpy code they replace
 *       (ops/warp_affine.py, ops/volume.py), in the same order, so the results are the same
 *       bits: destination-to-source coordinates of pixel centres; LINEAR: x = sx - 0.5,
 *       x0 = floor(x), qx = x - x0, s0 = s00 (1 - qx) + s01 qx, s1 likewise,
 *       out = s0 + (s1 - s0) qy (3-D: once more along z); NN: floor(sx). A tap outside the
 *       source is `fill` (one pixel of the source type) or, when `fill` is None, the clamped
 *       edge pixel. Integer outputs: floor(v + 0.5) (v >= 0) or ceil(v - 0.5), saturated,
 *       all in float32 (numpy's order); NaN becomes 0. `copy`: NN into the source's own type,
 *       element bytes copied (any element type).
 *       2-D source coordinates as DALI's CPU kernel makes them: per row from
 *       M (0.5, i + 0.5, 1), then M[:, 0] added column after column in float32, restarting
 *       every 256 columns from the row start plus a multiple of 256 M[:, 0] (itself summed
 *       tile after tile). 3-D: ((m0 x + m1 y) + m2 z) + m3 per voxel.
 *
 *   perspective(src, out, matrix9 | None, mapx | None, mapy | None, half, linear, border, fill)
 *       Source points in double precision (ops/warp_perspective.py): a homography
 *       sx = ((m0 x + m1 y) + m2) / w - half, w = (m6 x + m7 y) + m8 (1 / w taken as 0 where
 *       w == 0), x = j + half; or given maps, sx = mapx - half. Sampled in double: NN rounds
 *       half to even (rint), LINEAR top = g00 (1 - ax) + g01 ax, out = top (1 - ay) + bottom ay;
 *       coordinates clipped to +-2^30 first. Borders: 0 constant (`fill`, one double per
 *       channel, unconverted), 1 edge, 2 reflect_1001, 3 reflect_101, 4 wrap. Output of the
 *       source's type: integers rint and saturate (NaN -> 0), floats cast.
 *
 * Images are C-contiguous HWC (volumes DHWC), any channel count. Types: uint8, int8, uint16,
 * int16, uint32, int32, float32, float64 in; out of affine: uint8, int8, uint16, int16,
 * float32 (others go through float32 in warp.py, or numpy). Built with -ffp-contract=off (no
 * fused multiply-add), so each operation rounds like numpy's. All pixel work runs with the
 * GIL released.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sf_common.h"
#include "sf_simd.h"

/* Where the AVX2 clones are built, a few paths are AVX2 intrinsics, chosen at import */
#if SF_HAVE_CLONES
#define SF_DISPATCH_AVX2 1
#include <immintrin.h>
#endif

/* GCC / clang: vector extensions and forced inlining are used throughout */
#define SF_INLINE static inline __attribute__((always_inline))
typedef sf_v4f v4f;
typedef sf_v4i v4i;
#define vsel sf_select

enum { B_CONSTANT, B_EDGE, B_REFLECT_1001, B_REFLECT_101, B_WRAP };

/* The kernels' element types: sf_common.h's DT_U8 .. DT_F64 (not float16) */
static int dtype_of(const Py_buffer *b) {
    const int dt = sf_dtype_of(b);
    return dt <= DT_F64 ? dt : -1;
}

/* floorf / ceilf of |x| < 2^31 with SSE2 operations only (truncate, then step), so the loops
 * that use them vectorize without -march; the result equals floorf / ceilf except that
 * floor(-0.0) is +0.0, which never reaches a result (see where they are used). */
SF_INLINE float floor_small(float x) {
    const float t = (float)(int)x;
    return t > x ? t - 1.0f : t;
}

SF_INLINE float ceil_small(float x) {
    const float t = (float)(int)x;
    return t < x ? t + 1.0f : t;
}

/* floor_small and clipping to [lo, hi] (NaN stays NaN) on 4 lanes */
SF_INLINE v4f floor4_small(v4f x) {
    const v4f t = __builtin_convertvector(__builtin_convertvector(x, v4i), v4f);
    return vsel(t > x, t - 1.0f, t);
}

SF_INLINE v4f clamp4(v4f v, v4f lo, v4f hi) {
    v = vsel(v < lo, lo, v);
    return vsel(v > hi, hi, v);
}

/* ------------------------------------------------------------------------------------------ */
/* float32 -> output type, as numpy's _convert_sat: round half away from zero as              */
/* floor(v + 0.5) / ceil(v - 0.5) in float32, then clip; NaN -> 0                              */
/* ------------------------------------------------------------------------------------------ */

/* Clipping v to [LO - 1, HI + 1] first changes no result (rounding is monotonic) and keeps
 * it in int range; a NaN becomes 0. */
SF_INLINE int round_sat(float v, float lo, float hi) {
    v = v == v ? v : 0.0f;
    v = v < lo - 1.0f ? lo - 1.0f : v;
    v = v > hi + 1.0f ? hi + 1.0f : v;
    float r = v >= 0.0f ? floor_small(v + 0.5f) : ceil_small(v - 0.5f);
    r = r < lo ? lo : r;
    r = r > hi ? hi : r;
    return (int)r;
}

/* round_sat on 8 lanes (AVX in the avx2 clone, SSE2 pairs elsewhere): the same operations
 * lane by lane, into int32 lanes. Through pointers: a 32-byte vector is no argument without AVX. */
SF_INLINE void round8_sat(sf_v8i *out, const float *src, float LO, float HI) {
    typedef sf_v8f v8f;
    typedef sf_v8i v8i;
    v8f v;
    memcpy(&v, src, sizeof v);
    const v8f zero = {0, 0, 0, 0, 0, 0, 0, 0};
    const v8f lo = zero + LO, hi = zero + HI, one = zero + 1.0f, half = zero + 0.5f;
    const v8f lo1 = lo - one, hi1 = hi + one;
#define SEL8(m, a, b) ((v8f)(((v8i)(a) & (m)) | ((v8i)(b) & ~(m))))
    v = (v8f)((v8i)v & (v == v));
    v = SEL8(v < lo1, lo1, v);
    v = SEL8(v > hi1, hi1, v);
    const v8f a = v + half, b = v - half;
    const v8f ta = __builtin_convertvector(__builtin_convertvector(a, v8i), v8f);
    const v8f tb = __builtin_convertvector(__builtin_convertvector(b, v8i), v8f);
    const v8f fa = SEL8(ta > a, ta - one, ta), cb = SEL8(tb < b, tb + one, tb);
    v8f r = SEL8(v >= zero, fa, cb);
    r = SEL8(r < lo, lo, r);
    r = SEL8(r > hi, hi, r);
#undef SEL8
    *out = __builtin_convertvector(r, v8i);
}

/* 16 values at a time, packed to the 8- or 16-bit type, the rest one by one (sf_simd.h) */
#define STORE_INT(T, KIND, LO, HI) SF_STORE_NARROW(T, KIND, dst, src, n, sf_v8i, round8_sat, round_sat, LO, HI)

SF_CLONES static void store_f32(char *restrict dst, int dt, const float *restrict src, int n) {
    switch (dt) {
        SF_NARROW_CASES(STORE_INT)
        default: memcpy(dst, src, (size_t)n * sizeof(float)); break;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* affine, 2-D                                                                                */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    const char *src;
    const char *end;  /* one past the source's last byte */
    const char *fill; /* one source pixel (with room for 4 elements), or NULL: clamp to the edge */
    int H, W, C, D;   /* D: depth of a volume (1 for images) */
    int OH, OW, OD;
    int in_dt, out_dt;
    size_t item, out_item;
} Warp;

/* The source coordinates of output rows i0 .. i0 + 3 (see the header), row r of them at
 * sx + r * OW, sy + r * OW. The four rows' float32 sums are independent: one vector each. */
SF_CLONES static void block_coords(const float m[6], int i0, int OW, float *restrict sx, float *restrict sy) {
    const v4f y = (v4f){(float)i0, (float)(i0 + 1), (float)(i0 + 2), (float)(i0 + 3)} + 0.5f;
    v4f start[2], step[2], tile_step[2];
    for (int r = 0; r < 2; r++) {
        const float a = m[3 * r] * 0.5f;
        const v4f b = m[3 * r + 1] * y;
        start[r] = (a + b) + m[3 * r + 2];
        step[r] = (v4f){0, 0, 0, 0} + m[3 * r];
        tile_step[r] = (v4f){0, 0, 0, 0} + 256.0f * m[3 * r];
    }
    for (int t0 = 0; t0 < OW; t0 += 256) {
        if (t0) {
            start[0] = start[0] + tile_step[0];
            start[1] = start[1] + tile_step[1];
        }
        v4f ax = start[0], ay = start[1];
        const int end = OW < t0 + 256 ? OW : t0 + 256;
        for (int j = t0; j < end; j++) {
            for (int r = 0; r < 4; r++) {
                sx[(size_t)r * OW + j] = ax[r];
                sy[(size_t)r * OW + j] = ay[r];
            }
            ax = ax + step[0];
            ay = ay + step[1];
        }
    }
}

/* Bilinear taps: x = clip(s, -1e6, 1e6) - 0.5; index floor(x) (a NaN gives an index below
 * every border, as numpy's int conversion does), weight x - floor(x). */
SF_INLINE void lin_coord(float s, int *i0, float *q) {
    s = s < -1e6f ? -1e6f : (s > 1e6f ? 1e6f : s);
    const float x = s - 0.5f; /* never -0.0: floor_small is floorf here */
    const float f = x == x ? floor_small(x) : -4.0f;
    *q = x - f;
    *i0 = (int)f;
}

/* lin_coord over a row, 4 lanes at a time. */
SF_CLONES static void lin_coords(const float *restrict s, int n, int *restrict i0, float *restrict q) {
    const v4f lo = {-1e6f, -1e6f, -1e6f, -1e6f}, hi = -lo, nan_i = {-4, -4, -4, -4};
    int j = 0;
    for (; j + 4 <= n; j += 4) {
        const v4f x = clamp4(sf_load4(s + j), lo, hi) - 0.5f;
        const v4f f = vsel(x == x, floor4_small(x), nan_i);
        const v4f qq = x - f;
        const v4i ii = __builtin_convertvector(f, v4i);
        memcpy(q + j, &qq, sizeof qq);
        memcpy(i0 + j, &ii, sizeof ii);
    }
    for (; j < n; j++) lin_coord(s[j], &i0[j], &q[j]);
}

/* Nearest: floor(clip(s, -2, n + 1)); NaN -> -2. */
SF_INLINE int nn_coord(float s, int n) {
    const float hi = (float)(n + 1);
    s = s < -2.0f ? -2.0f : (s > hi ? hi : s);
    return s == s ? (int)floor_small(s) : -2; /* the sign of a zero does not matter here */
}

/* A tap index along an axis of n: clamped into [0, n), or -1 (outside, with a fill). */
SF_INLINE int tap(int i, int n, int has_fill) {
    if ((unsigned)i < (unsigned)n) return i;
    if (has_fill) return -1;
    return i < 0 ? 0 : n - 1;
}

/* tap(nn_coord(s[j], size), size, has_fill) for a row, 4 lanes at a time (the same values:
 * floor of the clipped coordinate, NaN -> -2, then the border). */
SF_CLONES static void nn_taps(const float *restrict s, int n, int size, int has_fill, int *restrict idx) {
    const v4f zero = {0, 0, 0, 0}, lo = zero - 2.0f, hi = zero + (float)(size + 1);
    const v4f last = zero + (float)(size - 1), outside = has_fill ? zero - 1.0f : zero;
    int j = 0;
    for (; j + 4 <= n; j += 4) {
        const v4f v = clamp4(sf_load4(s + j), lo, hi);
        v4f f = vsel(v == v, floor4_small(v), lo);
        const v4i inside = (f >= zero) & (f <= last);
        const v4f edge = has_fill ? outside : vsel(f < zero, zero, last);
        f = vsel(inside, f, edge);
        const v4i ii = __builtin_convertvector(f, v4i);
        memcpy(idx + j, &ii, sizeof ii);
    }
    for (; j < n; j++) idx[j] = tap(nn_coord(s[j], size), size, has_fill);
}

/* uint8 / int8 values as floats: a table load instead of a conversion per tap */
static float U8F[256], I8F[256];
#define LOAD_U8(p, c) U8F[(p)[c]]
#define LOAD_I8(p, c) I8F[(uint8_t)(p)[c]]
#define LOAD_CAST(p, c) ((float)(p)[c])

/* The four taps of output pixel j of a bilinear row. */
#define LIN_TAPS(T, CC)                                                                   \
    const int x0 = xi[j], y0 = yi[j];                                                     \
    const T *p00, *p01, *p10, *p11;                                                       \
    if ((unsigned)x0 < (unsigned)(W - 1) && (unsigned)y0 < (unsigned)(H - 1)) {           \
        p00 = src + (size_t)y0 * rs + (size_t)x0 * (CC);                                  \
        p01 = p00 + (CC);                                                                 \
        p10 = p00 + rs;                                                                   \
        p11 = p10 + (CC);                                                                 \
    } else {                                                                              \
        const int ya = tap(y0, H, has_fill), yb = tap(y0 + 1, H, has_fill);               \
        const int xa = tap(x0, W, has_fill), xb = tap(x0 + 1, W, has_fill);               \
        p00 = ya < 0 || xa < 0 ? fill : src + (size_t)ya * rs + (size_t)xa * (CC);        \
        p01 = ya < 0 || xb < 0 ? fill : src + (size_t)ya * rs + (size_t)xb * (CC);        \
        p10 = yb < 0 || xa < 0 ? fill : src + (size_t)yb * rs + (size_t)xa * (CC);        \
        p11 = yb < 0 || xb < 0 ? fill : src + (size_t)yb * rs + (size_t)xb * (CC);        \
    }

/* One output row of a bilinear 2-D warp, as floats (before the conversion), element by element. */
#define DEF_LIN_ROW(SUF, T, LOAD)                                                                \
    SF_INLINE void lin_row_##SUF##_c(const Warp *w, const int *restrict xi, const int *restrict yi, \
                                     const float *restrict qxs, const float *restrict qys,       \
                                     float *restrict o, const int CC) {                          \
        const T *src = (const T *)w->src, *fill = (const T *)w->fill;                            \
        const int H = w->H, W = w->W, has_fill = fill != NULL;                                   \
        const size_t rs = (size_t)W * CC;                                                        \
        for (int j = 0; j < w->OW; j++, o += CC) {                                               \
            LIN_TAPS(T, CC)                                                                      \
            const float qx = qxs[j], qy = qys[j], px = 1.0f - qx;                                \
            for (int c = 0; c < CC; c++) {                                                       \
                const float s0 = LOAD(p00, c) * px + LOAD(p01, c) * qx;                          \
                const float s1 = LOAD(p10, c) * px + LOAD(p11, c) * qx;                          \
                o[c] = s0 + (s1 - s0) * qy;                                                      \
            }                                                                                    \
        }                                                                                        \
    }

/* 3 or 4 channels of uint8 or float32: the channels of a pixel as one vector (the same
 * operations lane by lane). A 3-channel pixel is read as 4 elements where the 4th exists
 * (below `end`), else element by element; 4 floats are written, the 4th overwritten by the
 * next pixel (the last pixel of the row writes 3). */
/* The 4 bytes at p (3 and a zero where the 4th does not exist), widened to int32 lanes. */
#if defined(__SSE2__)
SF_INLINE __m128i ld4_u8_i32(const uint8_t *p, int CC, const char *end) {
    int32_t w;
    if (CC == 4 || (const char *)p + 4 <= end) memcpy(&w, p, 4);
    else w = (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16);
    const __m128i zero = _mm_setzero_si128();
    return _mm_unpacklo_epi16(_mm_unpacklo_epi8(_mm_cvtsi32_si128(w), zero), zero);
}
#endif

SF_INLINE v4f ld4_u8(const uint8_t *p, int CC, const char *end) {
#if defined(__SSE2__)
    return (v4f)_mm_cvtepi32_ps(ld4_u8_i32(p, CC, end));
#else
    if (CC == 4 || (const char *)p + 4 <= end) {
        uint8_t b[4];
        memcpy(b, p, 4);
        return (v4f){U8F[b[0]], U8F[b[1]], U8F[b[2]], U8F[b[3]]};
    }
    return (v4f){U8F[p[0]], U8F[p[1]], U8F[p[2]], 0.0f};
#endif
}

SF_INLINE v4f ld4_f32(const float *p, int CC, const char *end) {
    v4f v = {0, 0, 0, 0};
    memcpy(&v, p, (CC == 4 || (const char *)(p + 4) <= end) ? 16 : 12);
    return v;
}

#define DEF_LIN_ROW_VEC(SUF, T, LD)                                                              \
    SF_INLINE void lin_row_##SUF##_v(const Warp *w, const int *restrict xi, const int *restrict yi, \
                                     const float *restrict qxs, const float *restrict qys,       \
                                     float *restrict o, const int CC) {                          \
        const T *src = (const T *)w->src, *fill = (const T *)w->fill;                            \
        const int H = w->H, W = w->W, OW = w->OW, has_fill = fill != NULL;                       \
        const size_t rs = (size_t)W * CC;                                                        \
        const char *end = w->end;                                                                \
        for (int j = 0; j < OW; j++, o += CC) {                                                  \
            LIN_TAPS(T, CC)                                                                      \
            const float qx = qxs[j], qy = qys[j], px = 1.0f - qx;                                \
            const v4f s0 = LD(p00, CC, end) * px + LD(p01, CC, end) * qx;                        \
            const v4f s1 = LD(p10, CC, end) * px + LD(p11, CC, end) * qx;                        \
            const v4f r = s0 + (s1 - s0) * qy;                                                   \
            memcpy(o, &r, (CC == 4 || j + 1 < OW) ? 16 : 12);                                    \
        }                                                                                        \
    }

DEF_LIN_ROW_VEC(u8, uint8_t, ld4_u8)
DEF_LIN_ROW_VEC(f32, float, ld4_f32)

#define DEF_LIN_DISPATCH(SUF, VEC)                                                               \
    static void lin_row_##SUF(const Warp *w, const int *xi, const int *yi, const float *qx,      \
                              const float *qy, float *o) {                                       \
        switch (w->C) {                                                                          \
            case 1: lin_row_##SUF##_c(w, xi, yi, qx, qy, o, 1); break;                           \
            case 2: lin_row_##SUF##_c(w, xi, yi, qx, qy, o, 2); break;                           \
            case 3: VEC(w, xi, yi, qx, qy, o, 3); break;                                         \
            case 4: VEC(w, xi, yi, qx, qy, o, 4); break;                                         \
            default: lin_row_##SUF##_c(w, xi, yi, qx, qy, o, w->C); break;                       \
        }                                                                                        \
    }

DEF_LIN_ROW(u8, uint8_t, LOAD_U8)
DEF_LIN_ROW(i8, int8_t, LOAD_I8)
DEF_LIN_ROW(u16, uint16_t, LOAD_CAST)
DEF_LIN_ROW(i16, int16_t, LOAD_CAST)
DEF_LIN_ROW(u32, uint32_t, LOAD_CAST)
DEF_LIN_ROW(i32, int32_t, LOAD_CAST)
DEF_LIN_ROW(f32, float, LOAD_CAST)
DEF_LIN_ROW(f64, double, LOAD_CAST)
DEF_LIN_DISPATCH(u8, lin_row_u8_v)
DEF_LIN_DISPATCH(i8, lin_row_i8_c)
DEF_LIN_DISPATCH(u16, lin_row_u16_c)
DEF_LIN_DISPATCH(i16, lin_row_i16_c)
DEF_LIN_DISPATCH(u32, lin_row_u32_c)
DEF_LIN_DISPATCH(i32, lin_row_i32_c)
DEF_LIN_DISPATCH(f32, lin_row_f32_v)
DEF_LIN_DISPATCH(f64, lin_row_f64_c)

typedef void (*lin_fn)(const Warp *, const int *, const int *, const float *, const float *, float *);
static const lin_fn LIN_ROWS[] = {lin_row_u8, lin_row_i8, lin_row_u16, lin_row_i16,
                                  lin_row_u32, lin_row_i32, lin_row_f32, lin_row_f64};

/* Nearest neighbour, converted through float32. */
#define DEF_NN_ROW(SUF, T)                                                                       \
    static void nn_row_##SUF(const Warp *w, const int *xi, const int *yi, float *o) {           \
        const T *src = (const T *)w->src, *fill = (const T *)w->fill;                            \
        const int W = w->W, C = w->C;                                                            \
        for (int j = 0; j < w->OW; j++, o += C) {                                                \
            const int y = yi[j], x = xi[j];                                                      \
            const T *p = y < 0 || x < 0 ? fill : src + ((size_t)y * W + (size_t)x) * C;          \
            for (int c = 0; c < C; c++) o[c] = (float)p[c];                                      \
        }                                                                                        \
    }

DEF_NN_ROW(u8, uint8_t)
DEF_NN_ROW(i8, int8_t)
DEF_NN_ROW(u16, uint16_t)
DEF_NN_ROW(i16, int16_t)
DEF_NN_ROW(u32, uint32_t)
DEF_NN_ROW(i32, int32_t)
DEF_NN_ROW(f32, float)
DEF_NN_ROW(f64, double)

typedef void (*row_fn)(const Warp *, const int *, const int *, float *);
static const row_fn NN_ROWS[] = {nn_row_u8, nn_row_i8, nn_row_u16, nn_row_i16,
                                 nn_row_u32, nn_row_i32, nn_row_f32, nn_row_f64};

/* Nearest neighbour into the source's own type: the pixel's bytes. */
#define NN_COPY(PIX)                                                                            \
    for (int j = 0; j < OW; j++) {                                                              \
        const int y = yi[j], x = xi[j];                                                         \
        const char *p = y < 0 || x < 0 ? fill : src + ((size_t)y * W + (size_t)x) * (PIX);      \
        memcpy(out + (size_t)j * (PIX), p, (PIX));                                              \
    }

static void nn_copy_row(const Warp *w, const int *xi, const int *yi, char *out) {
    const char *src = w->src, *fill = w->fill;
    const int W = w->W, OW = w->OW;
    const size_t pix = (size_t)w->C * w->item;
    switch (pix) {
        case 1: NN_COPY(1); break;
        case 2: NN_COPY(2); break;
        case 3: NN_COPY(3); break;
        case 4: NN_COPY(4); break;
        case 6: NN_COPY(6); break;
        case 8: NN_COPY(8); break;
        case 12: NN_COPY(12); break;
        case 16: NN_COPY(16); break;
        default: NN_COPY(pix); break;
    }
}

static int run_affine2d(const Warp *w, const float m[6], int linear, int copy, char *out) {
    const size_t n = (size_t)w->OW * w->C, OW = (size_t)w->OW;
    float *sx = (float *)malloc(4 * OW * sizeof(float));
    float *sy = (float *)malloc(4 * OW * sizeof(float));
    float *buf = (float *)malloc((n + 1) * sizeof(float));
    float *q = (float *)malloc(2 * OW * sizeof(float));
    int *xy = (int *)malloc(2 * OW * sizeof(int));
    int ok = sx && sy && buf && q && xy;
    if (ok) {
        const size_t out_row = n * w->out_item;
        for (int i = 0; i < w->OH; i++) {
            const int r = i % 4;
            if (r == 0) block_coords(m, i, w->OW, sx, sy);
            const float *rx = sx + r * OW, *ry = sy + r * OW;
            char *o = out + (size_t)i * out_row;
            if (!linear) {
                nn_taps(rx, w->OW, w->W, w->fill != NULL, xy);
                nn_taps(ry, w->OW, w->H, w->fill != NULL, xy + OW);
            }
            if (copy) {
                nn_copy_row(w, xy, xy + OW, o);
                continue;
            }
            float *dst = w->out_dt == DT_F32 ? (float *)o : buf;
            if (linear) {
                lin_coords(rx, w->OW, xy, q);
                lin_coords(ry, w->OW, xy + OW, q + OW);
                LIN_ROWS[w->in_dt](w, xy, xy + OW, q, q + OW, dst);
            } else {
                NN_ROWS[w->in_dt](w, xy, xy + OW, dst);
            }
            if (dst == buf) store_f32(o, w->out_dt, buf, (int)n);
        }
    }
    free(sx);
    free(sy);
    free(buf);
    free(q);
    free(xy);
    return ok ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* affine, 3-D (DHWC)                                                                         */
/* ------------------------------------------------------------------------------------------ */

#define DEF_VOL_ROW(SUF, T)                                                                      \
    static void vol_lin_##SUF(const Warp *w, const float *sx, const float *sy, const float *sz,  \
                              float *o) {                                                        \
        const T *src = (const T *)w->src, *fill = (const T *)w->fill;                            \
        const int D = w->D, H = w->H, W = w->W, C = w->C, has_fill = fill != NULL;               \
        for (int j = 0; j < w->OW; j++, o += C) {                                                \
            int x0, y0, z0;                                                                      \
            float qx, qy, qz;                                                                    \
            lin_coord(sx[j], &x0, &qx);                                                          \
            lin_coord(sy[j], &y0, &qy);                                                          \
            lin_coord(sz[j], &z0, &qz);                                                          \
            const float px = 1.0f - qx;                                                          \
            const int xs[2] = {tap(x0, W, has_fill), tap(x0 + 1, W, has_fill)};                  \
            const int ys[2] = {tap(y0, H, has_fill), tap(y0 + 1, H, has_fill)};                  \
            const int zs[2] = {tap(z0, D, has_fill), tap(z0 + 1, D, has_fill)};                  \
            const T *p[2][2][2];                                                                 \
            for (int a = 0; a < 2; a++)                                                          \
                for (int b = 0; b < 2; b++)                                                      \
                    for (int e = 0; e < 2; e++)                                                  \
                        p[a][b][e] = zs[a] < 0 || ys[b] < 0 || xs[e] < 0                         \
                                         ? fill                                                  \
                                         : src + (((size_t)zs[a] * H + ys[b]) * W + xs[e]) * C;  \
            for (int c = 0; c < C; c++) {                                                        \
                float plane[2];                                                                  \
                for (int a = 0; a < 2; a++) {                                                    \
                    const float s0 = (float)p[a][0][0][c] * px + (float)p[a][0][1][c] * qx;      \
                    const float s1 = (float)p[a][1][0][c] * px + (float)p[a][1][1][c] * qx;      \
                    plane[a] = s0 + (s1 - s0) * qy;                                              \
                }                                                                                \
                o[c] = plane[0] + (plane[1] - plane[0]) * qz;                                    \
            }                                                                                    \
        }                                                                                        \
    }                                                                                            \
    static void vol_nn_##SUF(const Warp *w, const float *sx, const float *sy, const float *sz,   \
                             float *o) {                                                         \
        const T *src = (const T *)w->src, *fill = (const T *)w->fill;                            \
        const int D = w->D, H = w->H, W = w->W, C = w->C, has_fill = fill != NULL;               \
        for (int j = 0; j < w->OW; j++, o += C) {                                                \
            const int z = tap(nn_coord(sz[j], D), D, has_fill);                                  \
            const int y = tap(nn_coord(sy[j], H), H, has_fill);                                  \
            const int x = tap(nn_coord(sx[j], W), W, has_fill);                                  \
            const T *p = z < 0 || y < 0 || x < 0 ? fill : src + (((size_t)z * H + y) * W + x) * C; \
            for (int c = 0; c < C; c++) o[c] = (float)p[c];                                      \
        }                                                                                        \
    }

DEF_VOL_ROW(u8, uint8_t)
DEF_VOL_ROW(i8, int8_t)
DEF_VOL_ROW(u16, uint16_t)
DEF_VOL_ROW(i16, int16_t)
DEF_VOL_ROW(u32, uint32_t)
DEF_VOL_ROW(i32, int32_t)
DEF_VOL_ROW(f32, float)
DEF_VOL_ROW(f64, double)

typedef void (*vol_fn)(const Warp *, const float *, const float *, const float *, float *);
static const vol_fn VOL_LIN[] = {vol_lin_u8, vol_lin_i8, vol_lin_u16, vol_lin_i16,
                                 vol_lin_u32, vol_lin_i32, vol_lin_f32, vol_lin_f64};
static const vol_fn VOL_NN[] = {vol_nn_u8, vol_nn_i8, vol_nn_u16, vol_nn_i16,
                                vol_nn_u32, vol_nn_i32, vol_nn_f32, vol_nn_f64};

static void vol_copy_row(const Warp *w, const float *sx, const float *sy, const float *sz, char *out) {
    const int D = w->D, H = w->H, W = w->W, has_fill = w->fill != NULL;
    const size_t pix = (size_t)w->C * w->item;
    for (int j = 0; j < w->OW; j++) {
        const int z = tap(nn_coord(sz[j], D), D, has_fill);
        const int y = tap(nn_coord(sy[j], H), H, has_fill);
        const int x = tap(nn_coord(sx[j], W), W, has_fill);
        const char *p = z < 0 || y < 0 || x < 0 ? w->fill : w->src + (((size_t)z * H + y) * W + x) * pix;
        memcpy(out + (size_t)j * pix, p, pix);
    }
}

static int run_affine3d(const Warp *w, const float m[12], int linear, int copy, char *out) {
    const size_t n = (size_t)w->OW * w->C;
    float *s = (float *)malloc(3 * (size_t)(w->OW ? w->OW : 1) * sizeof(float));
    float *buf = (float *)malloc((n ? n : 1) * sizeof(float));
    int ok = s && buf;
    if (ok) {
        float *sx = s, *sy = s + w->OW, *sz = s + 2 * (size_t)w->OW;
        const size_t out_row = n * w->out_item;
        for (int d = 0; d < w->OD; d++) {
            const float z = (float)d + 0.5f;
            for (int i = 0; i < w->OH; i++) {
                const float y = (float)i + 0.5f;
                for (int j = 0; j < w->OW; j++) {
                    const float x = (float)j + 0.5f;
                    for (int r = 0; r < 3; r++) {
                        const float *mr = m + 4 * r;
                        float a = mr[0] * x, b = mr[1] * y;
                        float v = a + b;
                        b = mr[2] * z;
                        v = v + b;
                        s[(size_t)r * w->OW + j] = v + mr[3];
                    }
                }
                char *o = out + ((size_t)d * w->OH + i) * out_row;
                if (copy) {
                    vol_copy_row(w, sx, sy, sz, o);
                    continue;
                }
                float *dst = w->out_dt == DT_F32 ? (float *)o : buf;
                (linear ? VOL_LIN : VOL_NN)[w->in_dt](w, sx, sy, sz, dst);
                if (dst == buf) store_f32(o, w->out_dt, buf, (int)n);
            }
        }
    }
    free(s);
    free(buf);
    return ok ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* perspective and remap (double precision)                                                   */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    const char *src;
    const char *end; /* one past the source's last byte */
    int H, W, C, dt;
    int border;
    const double *fill; /* C values */
} Sampler;

SF_INLINE int64_t pymod(int64_t a, int64_t n) {
    int64_t m = a % n;
    return m < 0 ? m + n : m;
}

/* The index of coordinate i along n under the border (ops/slice.py: border_index); -1:
 * outside with a constant border. */
SF_INLINE int64_t border_tap(int64_t i, int64_t n, int border) {
    if (i >= 0 && i < n) return i;
    switch (border) {
        case B_CONSTANT: return -1;
        case B_WRAP: return n == 1 ? 0 : pymod(i, n);
        case B_REFLECT_1001: {
            if (n == 1) return 0;
            int64_t m = pymod(i, 2 * n);
            return m < n ? m : 2 * n - 1 - m;
        }
        case B_REFLECT_101: {
            if (n == 1) return 0;
            int64_t m = pymod(i, 2 * n - 2);
            return m < n ? m : 2 * n - 2 - m;
        }
        default: return i < 0 ? 0 : n - 1;
    }
}

/* numpy's float64 -> int64 conversion of a clipped coordinate (NaN -> INT64_MIN, as on x86). */
SF_INLINE int64_t to_i64(double v) { return v == v ? (int64_t)v : INT64_MIN; }

/* rint (half to even) of |v| <= 2^51 without SSE4.1: adding and taking off 2^52 rounds to an
 * integer in the current (nearest-even) mode; exact for these magnitudes. */
SF_INLINE double rint_small(double v) {
    const double big = 4503599627370496.0; /* 2^52 */
    const double a = v < 0 ? -v : v;
    const double r = (a + big) - big;
    return v < 0 ? -r : r;
}

/* uint8 values as doubles (a table load instead of a conversion per tap) */
static double U8D[256];

typedef double v4d __attribute__((vector_size(32)));

/* Channels 0..3 of a uint8 / float32 pixel as doubles into *v (CC 3: a 4th element only where
 * it exists, as ld4_u8 / ld4_f32). Through a pointer: a 32-byte vector is no return value
 * without AVX. */
SF_INLINE void ld4d_u8(v4d *v, const uint8_t *p, int CC, const char *end) {
#if defined(__SSE2__)
    const __m128i i = ld4_u8_i32(p, CC, end);
    const __m128d lo = _mm_cvtepi32_pd(i), hi = _mm_cvtepi32_pd(_mm_shuffle_epi32(i, 0xEE));
    typedef double v2d __attribute__((vector_size(16)));
    *v = (v4d){((v2d)lo)[0], ((v2d)lo)[1], ((v2d)hi)[0], ((v2d)hi)[1]};
#else
    if (CC == 4 || (const char *)p + 4 <= end) {
        uint8_t b[4];
        memcpy(b, p, 4);
        *v = (v4d){U8D[b[0]], U8D[b[1]], U8D[b[2]], U8D[b[3]]};
    } else {
        *v = (v4d){U8D[p[0]], U8D[p[1]], U8D[p[2]], 0.0};
    }
#endif
}

SF_INLINE void ld4d_f32(v4d *v, const float *p, int CC, const char *end) {
    v4f f = {0, 0, 0, 0};
    memcpy(&f, p, (CC == 4 || (const char *)(p + 4) <= end) ? 16 : 12);
    *v = __builtin_convertvector(f, v4d);
}

/* The taps of a row of points (sx, sy), 4 lanes at a time: coordinates clipped to +-2^30;
 * bilinear: index floor(c) and weight c - floor(c); nearest: index rint(c). A NaN coordinate
 * gets the index INT32_MIN (numpy's int conversion of NaN is INT64_MIN: see idx64). floor
 * without SSE4.1: truncate, step down, and keep a zero's sign as floor does. */
SF_CLONES static void persp_taps(const double *restrict sx, const double *restrict sy, int n, int linear,
                                 int *restrict xi, int *restrict yi, double *restrict ax, double *restrict ay) {
    typedef int64_t v4l __attribute__((vector_size(32)));
    typedef int32_t v4i32 __attribute__((vector_size(16)));
#define SELD(m, a, b) ((v4d)(((v4l)(a) & (m)) | ((v4l)(b) & ~(m))))
    const v4d zero = {0, 0, 0, 0}, one = zero + 1.0, big = zero + 1073741824.0, magic = zero + 4503599627370496.0;
    const v4d nan_idx = zero - 2147483648.0;
    for (int axis = 0; axis < 2; axis++) {
        const double *src = axis ? sy : sx;
        int *idx = axis ? yi : xi;
        double *w = axis ? ay : ax;
        int j = 0;
        for (; j + 4 <= n; j += 4) {
            v4d c;
            memcpy(&c, src + j, sizeof c);
            c = SELD(c < -big, -big, c);
            c = SELD(c > big, big, c);
            const v4l ok = c == c;
            v4d f;
            if (linear) {
                const v4d t = __builtin_convertvector(__builtin_convertvector(c, v4i32), v4d);
                f = SELD(t > c, t - one, t);
                f = SELD(c == zero, c, f);
                const v4d q = c - f;
                memcpy(w + j, &q, sizeof q);
            } else {
                const v4l neg = c < zero;
                const v4d a = SELD(neg, -c, c);
                const v4d r = (a + magic) - magic;
                f = SELD(neg, -r, r);
            }
            f = SELD(ok, f, nan_idx);
            const v4i32 i = __builtin_convertvector(f, v4i32);
            memcpy(idx + j, &i, sizeof i);
        }
        for (; j < n; j++) {
            double c = src[j];
            c = c < -1073741824.0 ? -1073741824.0 : (c > 1073741824.0 ? 1073741824.0 : c);
            if (c != c) {
                idx[j] = INT32_MIN;
                if (linear) w[j] = c;
                continue;
            }
            const double f = linear ? floor(c) : rint_small(c);
            idx[j] = (int)f;
            if (linear) w[j] = c - f;
        }
    }
#undef SELD
}

/* An index of persp_taps as numpy's int64 (INT32_MIN: a NaN coordinate, INT64_MIN). */
SF_INLINE int64_t idx64(int i) { return i == INT32_MIN ? INT64_MIN : (int64_t)i; }

/* One output row from the taps of persp_taps: bilinear (double) or nearest samples, every
 * channel, as doubles in o (room for n * C + 4). CC: the channel count, a constant where
 * specialized; VEC: the 4-lane path for interior pixels of 3 or 4 channels. */
#define DEF_SAMPLE(SUF, T, VLD, HAS_VEC, ATTR, OUTER)                                                         \
    SF_INLINE double px_##SUF(const Sampler *s, int64_t y, int64_t x, int c) {                  \
        const int64_t ty = border_tap(y, s->H, s->border), tx = border_tap(x, s->W, s->border);  \
        if (ty < 0 || tx < 0) return s->fill[c];                                                 \
        return (double)((const T *)s->src)[((size_t)ty * s->W + (size_t)tx) * s->C + c];         \
    }                                                                                            \
    SF_INLINE ATTR void sample_##SUF##_c(const Sampler *s, const int *restrict xi, const int *restrict yi, \
                                    const double *restrict axs, const double *restrict ays, int n,  \
                                    int linear, double *restrict o, const int CC, const int VEC) {  \
        const T *src = (const T *)s->src;                                                        \
        const size_t rs = (size_t)s->W * CC;                                                     \
        const int W = s->W, H = s->H;                                                            \
        for (int j = 0; j < n; j++, o += CC) {                                                   \
            const int x0 = xi[j], y0 = yi[j];                                                    \
            if (!linear) {                                                                       \
                if ((unsigned)x0 < (unsigned)W && (unsigned)y0 < (unsigned)H) {                  \
                    const T *p = src + (size_t)y0 * rs + (size_t)x0 * CC;                        \
                    for (int c = 0; c < CC; c++) o[c] = (double)p[c];                            \
                } else {                                                                         \
                    for (int c = 0; c < CC; c++) o[c] = px_##SUF(s, idx64(y0), idx64(x0), c);    \
                }                                                                                \
                continue;                                                                        \
            }                                                                                    \
            const double ax = axs[j], ay = ays[j], bx = 1.0 - ax, by = 1.0 - ay;                 \
            if ((unsigned)x0 < (unsigned)(W - 1) && (unsigned)y0 < (unsigned)(H - 1)) {          \
                const T *p = src + (size_t)y0 * rs + (size_t)x0 * CC;                            \
                if (VEC) {                                                                       \
                    v4d g00, g01, g10, g11;                                                      \
                    VLD(&g00, p, CC, s->end);                                                    \
                    VLD(&g01, p + CC, CC, s->end);                                               \
                    VLD(&g10, p + rs, CC, s->end);                                               \
                    VLD(&g11, p + rs + CC, CC, s->end);                                          \
                    const v4d top = g00 * bx + g01 * ax, bottom = g10 * bx + g11 * ax;           \
                    const v4d r = top * by + bottom * ay;                                        \
                    memcpy(o, &r, sizeof r);                                                     \
                    continue;                                                                    \
                }                                                                                \
                for (int c = 0; c < CC; c++) {                                                   \
                    const double top = (double)p[c] * bx + (double)p[c + CC] * ax;               \
                    const double bottom = (double)p[rs + c] * bx + (double)p[rs + c + CC] * ax;  \
                    o[c] = top * by + bottom * ay;                                               \
                }                                                                                \
                continue;                                                                        \
            }                                                                                    \
            const int64_t X = idx64(x0), Y = idx64(y0);                                          \
            for (int c = 0; c < CC; c++) {                                                       \
                const double top = px_##SUF(s, Y, X, c) * bx + px_##SUF(s, Y, X + 1, c) * ax;     \
                const double bottom = px_##SUF(s, Y + 1, X, c) * bx + px_##SUF(s, Y + 1, X + 1, c) * ax; \
                o[c] = top * by + bottom * ay;                                                   \
            }                                                                                    \
        }                                                                                        \
    }                                                                                            \
    OUTER static void sample_##SUF(const Sampler *s, const int *xi, const int *yi, const double *ax,     \
                                       const double *ay, int n, int linear, double *o) {         \
        switch (s->C) {                                                                          \
            case 1: sample_##SUF##_c(s, xi, yi, ax, ay, n, linear, o, 1, 0); break;              \
            case 3: sample_##SUF##_c(s, xi, yi, ax, ay, n, linear, o, 3, HAS_VEC); break;        \
            case 4: sample_##SUF##_c(s, xi, yi, ax, ay, n, linear, o, 4, HAS_VEC); break;        \
            default: sample_##SUF##_c(s, xi, yi, ax, ay, n, linear, o, s->C, 0); break;          \
        }                                                                                        \
    }

/* the loader of the types without a 4-lane path (never called: HAS_VEC is 0) */
#define ld4d_none(v, p, CC, end) (*(v) = (v4d){0, 0, 0, 0})

DEF_SAMPLE(u8, uint8_t, ld4d_u8, 1, , SF_CLONES)
DEF_SAMPLE(i8, int8_t, ld4d_none, 0, , SF_CLONES)
DEF_SAMPLE(u16, uint16_t, ld4d_none, 0, , SF_CLONES)
DEF_SAMPLE(i16, int16_t, ld4d_none, 0, , SF_CLONES)
DEF_SAMPLE(u32, uint32_t, ld4d_none, 0, , SF_CLONES)
DEF_SAMPLE(i32, int32_t, ld4d_none, 0, , SF_CLONES)
DEF_SAMPLE(f32, float, ld4d_f32, 1, , SF_CLONES)
DEF_SAMPLE(f64, double, ld4d_none, 0, , SF_CLONES)

#if defined(SF_DISPATCH_AVX2)
/* uint8 pixels widened by AVX2 (vpmovzxbd, vcvtdq2pd: 3 instructions instead of 7), chosen at
 * import where the CPU has it; the same values. */
__attribute__((target("avx2"), always_inline)) static inline void ld4d_u8_avx2(v4d *v, const uint8_t *p, int CC,
                                                                              const char *end) {
    int32_t w;
    if (CC == 4 || (const char *)p + 4 <= end) memcpy(&w, p, 4);
    else w = (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16);
    const __m256d d = _mm256_cvtepi32_pd(_mm_cvtepu8_epi32(_mm_cvtsi32_si128(w)));
    memcpy(v, &d, sizeof d);
}
DEF_SAMPLE(u8_avx2, uint8_t, ld4d_u8_avx2, 1, __attribute__((target("avx2"))), __attribute__((target("avx2"))))
#endif

typedef void (*sample_fn)(const Sampler *, const int *, const int *, const double *, const double *, int, int,
                          double *);
static sample_fn SAMPLERS[] = {sample_u8, sample_i8, sample_u16, sample_i16,
                                     sample_u32, sample_i32, sample_f32, sample_f64};

/* double -> the source type: integers rint and saturate (NaN -> 0), floats cast. Clipping to
 * [LO - 1, HI + 1] before rounding changes no result and keeps rint_small exact. */
SF_INLINE double round_sat_d(double v, double lo, double hi) {
    const int nan = v != v;
    v = v < lo - 1.0 ? lo - 1.0 : (v > hi + 1.0 ? hi + 1.0 : v);
    double r = rint_small(nan ? 0.0 : v);
    return r < lo ? lo : (r > hi ? hi : r);
}

/* round_sat_d on 4 lanes (the same operations), as int32 lanes (the 8- and 16-bit types). */
SF_INLINE void round4_sat_d(v4i *out, const double *src, double LO, double HI) {
    v4d v;
    memcpy(&v, src, sizeof v);
    const v4d lo = {LO, LO, LO, LO}, hi = {HI, HI, HI, HI}, one = {1, 1, 1, 1}, zero = {0, 0, 0, 0};
    const v4d big = {4503599627370496.0, 4503599627370496.0, 4503599627370496.0, 4503599627370496.0};
    typedef int64_t v4l __attribute__((vector_size(32)));
    v = (v4d)((v4l)v & (v == v));
    const v4d lo1 = lo - one, hi1 = hi + one;
    v = (v4d)(((v4l)lo1 & (v < lo1)) | ((v4l)v & ~(v < lo1)));
    v = (v4d)(((v4l)hi1 & (v > hi1)) | ((v4l)v & ~(v > hi1)));
    const v4l neg = v < zero;
    const v4d a = (v4d)(((v4l)-v & neg) | ((v4l)v & ~neg));
    v4d r = (a + big) - big;
    r = (v4d)(((v4l)-r & neg) | ((v4l)r & ~neg));
    r = (v4d)(((v4l)lo & (r < lo)) | ((v4l)r & ~(r < lo)));
    r = (v4d)(((v4l)hi & (r > hi)) | ((v4l)r & ~(r > hi)));
    *out = __builtin_convertvector(r, v4i);
}

#define STORE_D_INT(T, LO, HI)                                                 \
    do {                                                                       \
        T *restrict o = (T *)dst;                                              \
        for (int i = 0; i < n; i++) o[i] = (T)round_sat_d(src[i], LO, HI);     \
    } while (0)

/* 16 values at a time, packed (sf_simd.h), the rest one by one. */
#define STORE_D_SMALL(T, KIND, LO, HI) \
    SF_STORE_NARROW(T, KIND, dst, src, n, v4i, round4_sat_d, round_sat_d, LO, HI)

SF_CLONES static void store_f64(char *restrict dst, int dt, const double *restrict src, int n) {
    switch (dt) {
        SF_NARROW_CASES(STORE_D_SMALL)
        case DT_U32: STORE_D_INT(uint32_t, 0.0, 4294967295.0); break;
        case DT_I32: STORE_D_INT(int32_t, -2147483648.0, 2147483647.0); break;
        case DT_F32:
            for (int i = 0; i < n; i++) ((float *)dst)[i] = (float)src[i];
            break;
        default: memcpy(dst, src, (size_t)n * sizeof(double)); break;
    }
}

#if defined(SF_DISPATCH_AVX2)
/* store_f64 for the 8- and 16-bit types with AVX's rounding instruction: NaN -> 0, then
 * clip to [LO, HI] and round half to even (rounding after clipping to integer bounds gives
 * the same integers as clipping after rounding). */
__attribute__((target("avx2"), always_inline)) static inline void round4_d_avx2(v4i *out, const double *src,
                                                                               double LO, double HI) {
    __m256d v = _mm256_loadu_pd(src);
    v = _mm256_and_pd(v, _mm256_cmp_pd(v, v, _CMP_ORD_Q));
    v = _mm256_min_pd(_mm256_max_pd(v, _mm256_set1_pd(LO)), _mm256_set1_pd(HI));
    v = _mm256_round_pd(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m128i r = _mm256_cvtpd_epi32(v);
    memcpy(out, &r, sizeof r);
}
#define STORE_D_AVX2(T, KIND, LO, HI) \
    SF_STORE_NARROW(T, KIND, dst, src, n, v4i, round4_d_avx2, round_sat_d, LO, HI)

__attribute__((target("avx2"))) static void store_f64_avx2(char *restrict dst, int dt, const double *restrict src,
                                                            int n) {
    switch (dt) {
        SF_NARROW_CASES(STORE_D_AVX2)
        default: store_f64(dst, dt, src, n); break;
    }
}
#endif

typedef void (*store_d_fn)(char *, int, const double *, int);
static store_d_fn STORE_F64 = store_f64;

/* The source points of output row i under the homography m (see the header). */
SF_CLONES static void persp_coords(const double m[9], int i, int OW, double half, double *restrict sx,
                                   double *restrict sy) {
    const double y = (double)i + half;
    const double wy = m[7] * y, xy = m[1] * y, yy = m[4] * y;
    typedef int64_t v4l __attribute__((vector_size(32)));
    const v4d zero = {0, 0, 0, 0}, step = {0, 1, 2, 3};
    int j = 0;
    for (; j + 4 <= OW; j += 4) { /* the same operations, 4 lanes (1 / w everywhere, kept where w != 0) */
        const v4d x = ((double)j + step) + half;
        const v4d wv = (m[6] * x + wy) + m[8];
        const v4l nz = wv != zero;
        const v4d inv = (v4d)((v4l)(1.0 / wv) & nz);
        const v4d ox = ((m[0] * x + xy) + m[2]) * inv - half;
        const v4d oy = ((m[3] * x + yy) + m[5]) * inv - half;
        memcpy(sx + j, &ox, sizeof ox);
        memcpy(sy + j, &oy, sizeof oy);
    }
    for (; j < OW; j++) {
        const double x = (double)j + half;
        const double wv = (m[6] * x + wy) + m[8];
        const double inv = wv != 0.0 ? 1.0 / wv : 0.0;
        sx[j] = ((m[0] * x + xy) + m[2]) * inv - half;
        sy[j] = ((m[3] * x + yy) + m[5]) * inv - half;
    }
}

/* Output rows OH x OW: from the homography m (maps NULL) or the maps (OH * OW doubles or
 * floats each, map_f32 saying which). */
static int run_perspective(const Sampler *s, const double *m, const char *mapx, const char *mapy, int map_f32,
                           int OH, int OW, double half, int linear, char *out, size_t out_item) {
    const size_t n = (size_t)OW * s->C;
    double *sx = (double *)malloc((size_t)(OW ? OW : 1) * sizeof(double));
    double *sy = (double *)malloc((size_t)(OW ? OW : 1) * sizeof(double));
    double *buf = (double *)malloc((n + 4) * sizeof(double));
    double *w = (double *)malloc(2 * (size_t)(OW ? OW : 1) * sizeof(double));
    int *xy = (int *)malloc(2 * (size_t)(OW ? OW : 1) * sizeof(int));
    int ok = sx && sy && buf && w && xy;
    if (ok) {
        for (int i = 0; i < OH; i++) {
            if (m) {
                persp_coords(m, i, OW, half, sx, sy);
            } else {
                const size_t base = (size_t)i * OW;
                for (int j = 0; j < OW; j++) {
                    const double mx = map_f32 ? (double)((const float *)mapx)[base + j] : ((const double *)mapx)[base + j];
                    const double my = map_f32 ? (double)((const float *)mapy)[base + j] : ((const double *)mapy)[base + j];
                    sx[j] = mx - half;
                    sy[j] = my - half;
                }
            }
            persp_taps(sx, sy, OW, linear, xy, xy + OW, w, w + OW);
            SAMPLERS[s->dt](s, xy, xy + OW, w, w + OW, OW, linear, buf);
            STORE_F64(out + (size_t)i * n * out_item, s->dt, buf, (int)n);
        }
    }
    free(sx);
    free(sy);
    free(buf);
    free(w);
    free(xy);
    return ok ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Python bindings                                                                            */
/* ------------------------------------------------------------------------------------------ */

/* A C-contiguous float buffer of exactly n values (float32 or float64 as `want_double`). */
static int read_values(PyObject *obj, int want_double, void *dst, Py_ssize_t n, const char *what) {
    Py_buffer b;
    if (PyObject_GetBuffer(obj, &b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    int dt = dtype_of(&b);
    int ok = dt == (want_double ? DT_F64 : DT_F32) && b.len == n * (Py_ssize_t)b.itemsize;
    if (ok) memcpy(dst, b.buf, (size_t)b.len);
    PyBuffer_Release(&b);
    if (!ok) PyErr_Format(PyExc_ValueError, "%s must be %zd %s values", what, n, want_double ? "float64" : "float32");
    return ok ? 0 : -1;
}

/* Shared by affine2d and affine3d: dims = 3 (HWC) or 4 (DHWC). */
static PyObject *affine_common(PyObject *args, int dims) {
    PyObject *src_obj, *out_obj, *m_obj, *fill_obj;
    int linear, copy;
    if (!PyArg_ParseTuple(args, "OOOpOp", &src_obj, &out_obj, &m_obj, &linear, &fill_obj, &copy)) return NULL;
    float m[12];
    if (read_values(m_obj, 0, m, dims == 3 ? 6 : 12, "matrix") < 0) return NULL;
    Py_buffer sb, ob, fb;
    int have_fill = fill_obj != Py_None;
    if (sf_get_buffers(src_obj, &sb, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_ND,
                       out_obj, &ob, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_ND | PyBUF_WRITABLE) < 0)
        return NULL;
    if (have_fill && PyObject_GetBuffer(fill_obj, &fb, PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&sb);
        PyBuffer_Release(&ob);
        return NULL;
    }
    PyObject *ret = NULL;
    char *fill_px = NULL;
    Warp w;
    memset(&w, 0, sizeof w);
    int in_dt = dtype_of(&sb), out_dt = dtype_of(&ob);
    int ok = sb.ndim == dims && ob.ndim == dims && sb.shape[dims - 1] == ob.shape[dims - 1];
    for (int d = 0; ok && d < dims; d++) ok = sb.shape[d] > 0 && ob.shape[d] > 0 && sb.shape[d] < INT_MAX / 4 && ob.shape[d] < INT_MAX / 4;
    if (ok && copy) ok = sb.itemsize == ob.itemsize;
    if (ok && !copy) ok = in_dt >= 0 && (out_dt == DT_U8 || out_dt == DT_I8 || out_dt == DT_U16 || out_dt == DT_I16 || out_dt == DT_F32);
    if (ok && have_fill) ok = fb.len == sb.shape[dims - 1] * sb.itemsize;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "warp: unsupported types, shapes or fill");
    } else {
        const int o = dims - 3; /* offset of H in the shape */
        const size_t pix = (size_t)sb.shape[dims - 1] * sb.itemsize;
        fill_px = have_fill ? (char *)calloc(1, pix + 4 * sb.itemsize) : NULL; /* room for 4 elements */
        if (fill_px) memcpy(fill_px, fb.buf, pix);
        w.src = (const char *)sb.buf;
        w.end = (const char *)sb.buf + sb.len;
        w.fill = fill_px;
        w.D = dims == 4 ? (int)sb.shape[0] : 1;
        w.H = (int)sb.shape[o];
        w.W = (int)sb.shape[o + 1];
        w.C = (int)sb.shape[o + 2];
        w.OD = dims == 4 ? (int)ob.shape[0] : 1;
        w.OH = (int)ob.shape[o];
        w.OW = (int)ob.shape[o + 1];
        w.in_dt = in_dt;
        w.out_dt = out_dt;
        w.item = (size_t)sb.itemsize;
        w.out_item = (size_t)ob.itemsize;
        int rc = -1;
        Py_BEGIN_ALLOW_THREADS;
        if (!have_fill || fill_px)
            rc = dims == 3 ? run_affine2d(&w, m, linear, copy, (char *)ob.buf) : run_affine3d(&w, m, linear, copy, (char *)ob.buf);
        Py_END_ALLOW_THREADS;
        if (rc < 0) PyErr_NoMemory();
        else ret = Py_NewRef(Py_None);
    }
    free(fill_px);
    if (have_fill) PyBuffer_Release(&fb);
    PyBuffer_Release(&sb);
    PyBuffer_Release(&ob);
    return ret;
}

static PyObject *py_affine2d(PyObject *self, PyObject *args) { return affine_common(args, 3); }
static PyObject *py_affine3d(PyObject *self, PyObject *args) { return affine_common(args, 4); }

static PyObject *py_perspective(PyObject *self, PyObject *args) {
    PyObject *src_obj, *out_obj, *m_obj, *mx_obj, *my_obj, *fill_obj;
    double half;
    int linear, border;
    if (!PyArg_ParseTuple(args, "OOOOOdpiO", &src_obj, &out_obj, &m_obj, &mx_obj, &my_obj, &half, &linear, &border,
                          &fill_obj))
        return NULL;
    double m[9];
    const int use_maps = m_obj == Py_None;
    if (!use_maps && read_values(m_obj, 1, m, 9, "matrix") < 0) return NULL;
    Py_buffer sb, ob, xb, yb;
    memset(&xb, 0, sizeof xb);
    memset(&yb, 0, sizeof yb);
    if (sf_get_buffers(src_obj, &sb, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_ND,
                       out_obj, &ob, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_ND | PyBUF_WRITABLE) < 0)
        return NULL;
    PyObject *ret = NULL;
    double *fill = NULL;
    int ok = 1;
    if (use_maps) {
        if (PyObject_GetBuffer(mx_obj, &xb, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) ok = -1;
        else if (PyObject_GetBuffer(my_obj, &yb, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
            PyBuffer_Release(&xb);
            ok = -1;
        }
    }
    if (ok < 0) {
        PyBuffer_Release(&sb);
        PyBuffer_Release(&ob);
        return NULL;
    }
    int dt = dtype_of(&sb);
    ok = sb.ndim == 3 && ob.ndim == 3 && dt >= 0 && dtype_of(&ob) == dt && sb.shape[2] == ob.shape[2] &&
         sb.shape[0] > 0 && sb.shape[1] > 0 && sb.shape[2] > 0 && sb.shape[0] < INT_MAX / 4 &&
         sb.shape[1] < INT_MAX / 4 && ob.shape[0] < INT_MAX / 4 && ob.shape[1] < INT_MAX / 4 && border >= 0 &&
         border <= B_WRAP;
    int map_f32 = 0;
    if (ok && use_maps) {
        int xdt = dtype_of(&xb), ydt = dtype_of(&yb);
        map_f32 = xdt == DT_F32;
        ok = xdt == ydt && (xdt == DT_F32 || xdt == DT_F64) && xb.len == yb.len &&
             xb.len == ob.shape[0] * ob.shape[1] * xb.itemsize;
    }
    if (ok) {
        fill = (double *)malloc((size_t)sb.shape[2] * sizeof(double));
        if (!fill) {
            PyErr_NoMemory();
            ok = -1;
        } else if (read_values(fill_obj, 1, fill, sb.shape[2], "fill") < 0) {
            ok = -1;
        }
    }
    if (ok == 0) PyErr_SetString(PyExc_ValueError, "perspective: unsupported types, shapes, maps or border");
    if (ok == 1) {
        Sampler s = {(const char *)sb.buf, (const char *)sb.buf + sb.len, (int)sb.shape[0], (int)sb.shape[1],
                     (int)sb.shape[2], dt, border, fill};
        int rc;
        Py_BEGIN_ALLOW_THREADS;
        rc = run_perspective(&s, use_maps ? NULL : m, (const char *)xb.buf, (const char *)yb.buf, map_f32,
                             (int)ob.shape[0], (int)ob.shape[1], half, linear, (char *)ob.buf, (size_t)ob.itemsize);
        Py_END_ALLOW_THREADS;
        if (rc < 0) PyErr_NoMemory();
        else ret = Py_NewRef(Py_None);
    }
    free(fill);
    if (use_maps) {
        PyBuffer_Release(&xb);
        PyBuffer_Release(&yb);
    }
    PyBuffer_Release(&sb);
    PyBuffer_Release(&ob);
    return ret;
}

/* use_avx2(flag) -> bool: take the AVX2 paths (where the CPU has AVX2) or the SSE2 ones;
 * returns whether they were taken before. For tests, which check both paths give the same bits. */
static int avx2_on = 0;

static void select_paths(int avx2) {
    SAMPLERS[DT_U8] = sample_u8;
    STORE_F64 = store_f64;
    avx2_on = 0;
#if defined(SF_DISPATCH_AVX2)
    if (avx2 && __builtin_cpu_supports("avx2")) {
        SAMPLERS[DT_U8] = sample_u8_avx2;
        STORE_F64 = store_f64_avx2;
        avx2_on = 1;
    }
#else
    (void)avx2;
#endif
}

static PyObject *py_use_avx2(PyObject *self, PyObject *args) {
    int flag;
    if (!PyArg_ParseTuple(args, "p:use_avx2", &flag)) return NULL;
    const int before = avx2_on;
    select_paths(flag);
    return PyBool_FromLong(before);
}

static PyMethodDef methods[] = {
    {"use_avx2", py_use_avx2, METH_VARARGS, "use_avx2(flag) -> bool: AVX2 paths on or off (where available)"},
    {"affine2d", py_affine2d, METH_VARARGS,
     "affine2d(src, out, matrix6_f32, linear, fill_pixel|None, copy): 2-D affine warp of an HWC image"},
    {"affine3d", py_affine3d, METH_VARARGS,
     "affine3d(src, out, matrix12_f32, linear, fill_pixel|None, copy): 3-D affine warp of a DHWC volume"},
    {"perspective", py_perspective, METH_VARARGS,
     "perspective(src, out, matrix9_f64|None, mapx|None, mapy|None, half, linear, border, fill_f64): "
     "homography or remap of an HWC image in double precision"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_warp", "CPU kernels of streamflow's geometric warps.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__warp(void) {
#if defined(SF_DISPATCH_AVX2)
    __builtin_cpu_init();
#endif
    select_paths(1);
    for (int v = 0; v < 256; v++) {
        U8D[v] = (double)v;
        U8F[v] = (float)v;
        I8F[v] = (float)(int8_t)v;
    }
    return PyModule_Create(&moddef);
}
