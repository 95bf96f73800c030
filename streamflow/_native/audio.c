/*
 * streamflow._native._audio -- CPU audio kernels: the resampler, silence detection, spectrogram
 * windows and powers, mel bands.
 *
 *   resample(src, out, in_rate, out_rate, lookup, scale, center, lobes, out_begin)
 *       Windowed-sinc resampling of a float32 signal `src` of shape
 *       (n_in, channels) into `out` (n_out, channels) of float32, int16 or
 *       int32, output sample j taken at input position (out_begin + j) * in_rate / out_rate.
 *
 * The arithmetic follows DALI's CPU resampler (dali/kernels/signal): the
 * window is a table (`lookup`, built by audio.py) sampled at
 * `x * scale + center` with linear interpolation; the taps of an output are
 * the input samples within `lobes` of its position, clipped to the signal; the
 * position is kept as a float32 offset from a double-precision block start
 * that is recomputed every 256 outputs (the float offset then grows by the
 * float32 ratio each output, as DALI's does); taps are summed in DALI's SSE
 * order (four lanes). Integer outputs are the float result scaled to the
 * type's range, rounded half away from zero, saturated.
 *
 * Speed: DALI looks the window up for every tap (gathers). Here, where the
 * float arithmetic allows it (nearly every output; checked, see
 * tap_sum_table), the weights of an output come from contiguous phase tables,
 * so the tap loop is a plain 4-wide vector loop; the results are the same
 * bits as the per-tap computation (tests/unit/ops/test_audio_resample.py).
 *
 * Runs with the GIL released.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 256

enum { OUT_F32 = 0, OUT_I16 = 1, OUT_I32 = 2 };

/* Window value at offset x. fi is >= 0 inside the window, so truncation is floor (no libm call per tap). */
static inline float window_at(const float *lookup, Py_ssize_t size, float scale, float center, float x) {
    float fi = x * scale + center;
    if (!(fi >= 0.0f)) return 0.0f;
    Py_ssize_t i = (Py_ssize_t)fi;
    if (i + 1 >= size) return 0.0f;
    float di = fi - (float)i;
    return lookup[i] + di * (lookup[i + 1] - lookup[i]);
}

/* ceil of a non-negative float without a libm call. */
static inline Py_ssize_t ceil_pos(float x) {
    Py_ssize_t i = (Py_ssize_t)x;
    return (float)i < x ? i + 1 : i;
}

static inline void store(void *out, int kind, Py_ssize_t index, float v) {
    if (kind == OUT_F32) {
        ((float *)out)[index] = v;
    } else if (kind == OUT_I16) {
        double s = (double)v * 32767.0;
        s = s < 0 ? ceil(s - 0.5) : floor(s + 0.5);
        if (s > 32767.0) s = 32767.0;
        if (s < -32768.0) s = -32768.0;
        ((int16_t *)out)[index] = (int16_t)s;
    } else {
        double s = (double)v * 2147483647.0;
        s = s < 0 ? ceil(s - 0.5) : floor(s + 0.5);
        if (s > 2147483647.0) s = 2147483647.0;
        if (s < -2147483648.0) s = -2147483648.0;
        ((int32_t *)out)[index] = (int32_t)s;
    }
}

/* GCC/Clang vector extensions: 4-float vectors (SSE2 on x86-64, NEON on arm64) without
 * intrinsics or -march flags; other compilers (or -DSF_NO_VEC) get scalar loops, same results. */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(SF_NO_VEC)
#define SF_HAVE_VEC 1
#include "sf_simd.h"
typedef sf_v4f v4f;
typedef sf_v4i v4i;
#else
#define SF_HAVE_VEC 0
#endif

/*
 * Phase tables. The window's scale S (32 in DALI's tables) and centre C are
 * integers, so DALI's position of tap k, fi_k = S (i0 + k - pos) + C, is
 * fi_0 + S k whenever its float arithmetic is exact: every tap then reads the
 * table at j0 + S k (j0 = floor(fi_0)) with the same fraction d. Row j0 of
 * `t` holds those entries tap after tap and row j0 of `d` the differences to
 * the next entries, so the weights are contiguous vectors, w = t + d * dt
 * (the interpolation's float operations), and the loop needs no gathers.
 */
typedef struct {
    float *t;          /* (S + 1) rows of `stride`: lookup[j + S k] (0 past the table) */
    float *d;          /* lookup[j + S k + 1] - lookup[j + S k] */
    Py_ssize_t stride; /* taps per row: 2 lobes + 4 */
    int S;
    /* By the exponent bits of an output's position: the first tap's table position fi_0 must be
     * below this for DALI's per-tap arithmetic to be exact (see phase_table_init); -1: never. */
    float fi_limit[256];
} PhaseTable;

/* Builds the tables; returns 0 when the window does not allow them (or memory is short). */
static int phase_table_init(PhaseTable *pt, const float *lookup, Py_ssize_t size, float scale, float center,
                            int lobes) {
    pt->t = pt->d = NULL;
    int S = (int)scale;
    if ((float)S != scale || S < 1 || S > 4096 || (S & (S - 1)) || (float)(Py_ssize_t)center != center ||
        center < 0.0f || lobes > 4096)
        return 0;
    pt->S = S;
    pt->stride = 2 * (Py_ssize_t)lobes + 4;
    size_t n = (size_t)(S + 1) * (size_t)pt->stride;
    pt->t = (float *)malloc(2 * n * sizeof(float));
    if (!pt->t) return 0;
    pt->d = pt->t + n;
    for (int j = 0; j <= S; j++) {
        for (Py_ssize_t k = 0; k < pt->stride; k++) {
            Py_ssize_t i = j + S * k;
            int inside = i + 1 < size;
            pt->t[(size_t)j * pt->stride + k] = inside ? lookup[i] : 0.0f;
            pt->d[(size_t)j * pt->stride + k] = inside ? lookup[i + 1] - lookup[i] : 0.0f;
        }
    }
    /* For pos in [2^e, 2^(e+1)), u = ulp(pos) = 2^(e-23). DALI's offsets x = i - pos, |x| <= lobes + 1,
     * and their steps by 4 and by 1 are multiples of u, exact when lobes + 1 <= 2^24 u. The positions
     * fi = S x + C are multiples of min(S u, 1) (S a power of 2, C an integer), exact below
     * 2^24 min(S u, 1); the last tap's is fi_0 + S (2 lobes - 1). Then every tap has fi_0 + S k. */
    for (int E = 0; E < 256; E++) {
        int e = E - 127;
        pt->fi_limit[E] = -1.0f;
        if (E == 0 || E == 255 || e > 100 || (double)lobes + 1.0 > ldexp(1.0, e + 1)) continue;
        double g = ldexp((double)S, e - 23);
        double limit = ldexp(g < 1.0 ? g : 1.0, 24) - (double)S * (2.0 * lobes - 1.0);
        pt->fi_limit[E] = limit > 1e30 ? 1e30f : (float)limit;
    }
    return 1;
}

/* Whether DALI's per-tap arithmetic is exact for an output at `pos` whose first tap sits at fi0. */
static inline int table_exact(const PhaseTable *pt, float pos, float fi0) {
    uint32_t bits;
    memcpy(&bits, &pos, sizeof bits);
    return fi0 < pt->fi_limit[(bits >> 23) & 0xff];
}

/*
 * One output from the phase tables: taps i0..i1 (exclusive; relative to s) of
 * the window whose unclipped first tap is `a`, summed in DALI's order (four
 * lanes over groups of four taps, lanes added pairwise, then the remaining
 * taps). With `check` (where table_exact does not hold and DALI's arithmetic may
 * round), each tap's position is also computed as DALI does and the result is
 * kept only if every tap has the table's entry and fraction. Returns 0 when
 * the table path does not apply; the caller then takes tap_sum_exact.
 */
static inline int tap_sum_table(const PhaseTable *pt, const float *s, Py_ssize_t a, Py_ssize_t i0, Py_ssize_t i1,
                                float pos, float scale, float center, int check, float *result) {
    float fi0 = ((float)a - pos) * scale + center;
    if (!(fi0 >= 0.0f) || fi0 >= (float)(pt->S + 1)) return 0; /* not one of the rows */
    int j0 = (int)fi0;
    float d = fi0 - (float)j0;
    const float *T = pt->t + (size_t)j0 * pt->stride - a;
    const float *D = pt->d + (size_t)j0 * pt->stride - a;
    Py_ssize_t i = i0;
    float sum;
#if SF_HAVE_VEC
    v4f acc = sf_splat4(0.0f);
    const v4f dv = sf_splat4(d);
    if (check) {
        if ((i1 - i0) & 3) return 0;
        const int32_t S = pt->S, jf = j0 + S * (int32_t)(i0 - a);
        v4f x4 = {(float)i0 - pos, (float)(i0 + 1) - pos, (float)(i0 + 2) - pos, (float)(i0 + 3) - pos};
        v4i jexp = {jf, jf + S, jf + 2 * S, jf + 3 * S};
        v4i same = {-1, -1, -1, -1};
        const v4i step = {4 * S, 4 * S, 4 * S, 4 * S};
        const v4f vs = sf_splat4(scale), vc = sf_splat4(center), four = sf_splat4(4.0f);
        for (; i < i1; i += 4) {
            v4f fi = x4 * vs + vc;
            v4i j = __builtin_convertvector(fi, v4i);
            same &= (j == jexp) & (fi - __builtin_convertvector(j, v4f) == dv);
            acc += sf_load4(s + i) * (sf_load4(T + i) + dv * sf_load4(D + i));
            x4 += four;
            jexp += step;
        }
        if (!(same[0] & same[1] & same[2] & same[3])) return 0;
    } else {
        for (; i + 3 < i1; i += 4) acc += sf_load4(s + i) * (sf_load4(T + i) + dv * sf_load4(D + i));
    }
    sum = (acc[0] + acc[2]) + (acc[1] + acc[3]);
#else
    if (check) return 0;
    float lane[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (; i + 3 < i1; i += 4)
        for (int k = 0; k < 4; k++) lane[k] += s[i + k] * (T[i + k] + d * D[i + k]);
    sum = (lane[0] + lane[2]) + (lane[1] + lane[3]);
#endif
    for (; i < i1; i++) sum += s[i] * (T[i] + d * D[i]);
    *result = sum;
    return 1;
}

#if SF_HAVE_VEC
/* Two consecutive outputs for which table_exact holds, whose taps all lie inside the signal (sa, sb point
 * at the first tap of each): tap_sum_table's sums, the two accumulations interleaved so that one's
 * additions fill the other's latency. `ntaps` is 2 lobes (a constant at the call for 16 lobes, so
 * the loop unrolls). */
static inline void tap_sum_pair(const PhaseTable *pt, const float *sa, const float *sb, float fa, float fb,
                                Py_ssize_t ntaps, float *ra, float *rb) {
    int ja = (int)fa, jb = (int)fb;
    float da = fa - (float)ja, db = fb - (float)jb;
    const v4f dva = sf_splat4(da), dvb = sf_splat4(db);
    const float *Ta = pt->t + (size_t)ja * pt->stride, *Da = pt->d + (size_t)ja * pt->stride;
    const float *Tb = pt->t + (size_t)jb * pt->stride, *Db = pt->d + (size_t)jb * pt->stride;
    v4f acc_a = sf_splat4(0.0f), acc_b = sf_splat4(0.0f);
    Py_ssize_t k = 0;
    for (; k + 3 < ntaps; k += 4) {
        acc_a += sf_load4(sa + k) * (sf_load4(Ta + k) + dva * sf_load4(Da + k));
        acc_b += sf_load4(sb + k) * (sf_load4(Tb + k) + dvb * sf_load4(Db + k));
    }
    float a = (acc_a[0] + acc_a[2]) + (acc_a[1] + acc_a[3]);
    float b = (acc_b[0] + acc_b[2]) + (acc_b[1] + acc_b[3]);
    for (; k < ntaps; k++) {
        a += sa[k] * (Ta[k] + da * Da[k]);
        b += sb[k] * (Tb[k] + db * Db[k]);
    }
    *ra = a;
    *rb = b;
}
#endif

/* One output with DALI's per-tap arithmetic (window position and table lookups for every tap):
 * four lanes over groups of four taps, lane offsets advanced by 4, summed pairwise, then the
 * remaining taps. */
static inline float tap_sum_exact(const float *s, Py_ssize_t i0, Py_ssize_t i1, float pos, const float *lookup,
                                  Py_ssize_t lookup_size, float wscale, float wcenter) {
    Py_ssize_t i = i0;
    float sum;
#if SF_HAVE_VEC
    v4f x4 = {(float)i0 - pos, (float)(i0 + 1) - pos, (float)(i0 + 2) - pos, (float)(i0 + 3) - pos};
    v4f acc = sf_splat4(0.0f);
    const v4f vs = sf_splat4(wscale), vc = sf_splat4(wcenter), zero = sf_splat4(0.0f), four = sf_splat4(4.0f);
    const int32_t m = (int32_t)(lookup_size - 2);
    const v4i last = {m, m, m, m};
    for (; i + 3 < i1; i += 4) {
        v4f fi = x4 * vs + vc;
        v4i j = __builtin_convertvector(fi, v4i); /* truncation, as cvttps */
        v4f di = fi - __builtin_convertvector(j, v4f);
        v4i ok = (fi >= zero) & (j <= last); /* window_at's range checks, without branches */
        v4i jc = j & ok;
        v4f cur = {lookup[jc[0]], lookup[jc[1]], lookup[jc[2]], lookup[jc[3]]};
        v4f nxt = {lookup[jc[0] + 1], lookup[jc[1] + 1], lookup[jc[2] + 1], lookup[jc[3] + 1]};
        v4f w = cur + di * (nxt - cur);
        acc += sf_load4(s + i) * (v4f)((v4i)w & ok);
        x4 += four;
    }
    sum = (acc[0] + acc[2]) + (acc[1] + acc[3]);
#else
    float lane[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    float xl[4];
    for (int k = 0; k < 4; k++) xl[k] = (float)(i0 + k) - pos;
    for (; i + 3 < i1; i += 4) {
        for (int k = 0; k < 4; k++) {
            lane[k] += s[i + k] * window_at(lookup, lookup_size, wscale, wcenter, xl[k]);
            xl[k] += 4.0f;
        }
    }
    sum = (lane[0] + lane[2]) + (lane[1] + lane[3]);
#endif
    for (float x = (float)i - pos; i < i1; i++, x += 1.0f)
        sum += s[i] * window_at(lookup, lookup_size, wscale, wcenter, x);
    return sum;
}

static void resample_impl(const float *in, Py_ssize_t n_in, int channels, void *out, int kind,
                          Py_ssize_t n_out, Py_ssize_t out_begin, double in_rate, double out_rate,
                          const float *lookup, Py_ssize_t lookup_size, float wscale, float wcenter,
                          int lobes) {
    double ratio = in_rate / out_rate;
    float fratio = (float)ratio;
    float acc[64];
    PhaseTable pt;
    memset(&pt, 0, sizeof pt);
    int fast = channels == 1 && phase_table_init(&pt, lookup, lookup_size, wscale, wcenter, lobes);
    for (Py_ssize_t block = 0; block < n_out; block += BLOCK) {
        Py_ssize_t block_end = block + BLOCK < n_out ? block + BLOCK : n_out;
        double start = (double)(out_begin + block) * ratio;
        Py_ssize_t base = (Py_ssize_t)floor(start);
        float pos = (float)(start - (double)base);
        for (Py_ssize_t o = block; o < block_end; o++, pos += fratio) {
#if SF_HAVE_VEC
            if (fast && o + 1 < block_end) {
                /* two outputs at a time where both take the unchecked table path in full */
                float pos_b = pos + fratio;
                Py_ssize_t a = ceil_pos(pos) - lobes, b = ceil_pos(pos_b) - lobes;
                if (a + base >= 0 && b + base + 2 * lobes <= n_in) {
                    float fa = ((float)a - pos) * wscale + wcenter, fb = ((float)b - pos_b) * wscale + wcenter;
                    if (table_exact(&pt, pos, fa) && table_exact(&pt, pos_b, fb) && fa < (float)(pt.S + 1) &&
                        fb < (float)(pt.S + 1)) {
                        float ra, rb;
                        if (lobes == 16) /* DALI's default quality, 50 */
                            tap_sum_pair(&pt, in + base + a, in + base + b, fa, fb, 32, &ra, &rb);
                        else
                            tap_sum_pair(&pt, in + base + a, in + base + b, fa, fb, 2 * lobes, &ra, &rb);
                        store(out, kind, o, ra);
                        store(out, kind, o + 1, rb);
                        o++;
                        pos = pos_b;
                        continue;
                    }
                }
            }
#endif
            Py_ssize_t a = ceil_pos(pos) - lobes;
            Py_ssize_t i0 = a;
            Py_ssize_t i1 = ceil_pos(pos) + lobes; /* exclusive */
            if (i0 + base < 0) i0 = -base;
            if (i1 + base > n_in) i1 = n_in - base;
            if (channels == 1) {
                float sum;
                if (!fast || !tap_sum_table(&pt, in + base, a, i0, i1, pos, wscale, wcenter,
                                            !table_exact(&pt, pos, ((float)a - pos) * wscale + wcenter), &sum))
                    sum = tap_sum_exact(in + base, i0, i1, pos, lookup, lookup_size, wscale, wcenter);
                store(out, kind, o, sum);
                continue;
            }
            for (int c = 0; c < channels; c++) acc[c] = 0.0f;
            float x = (float)i0 - pos;
            for (Py_ssize_t i = i0; i < i1; i++, x += 1.0f) {
                float w = window_at(lookup, lookup_size, wscale, wcenter, x);
                const float *s = in + (base + i) * channels;
                for (int c = 0; c < channels; c++) acc[c] += s[c] * w;
            }
            for (int c = 0; c < channels; c++) store(out, kind, o * channels + c, acc[c]);
        }
    }
    if (fast) free(pt.t);
}

static PyObject *py_resample(PyObject *self, PyObject *args) {
    Py_buffer src, dst, table;
    double in_rate, out_rate;
    float scale, center;
    int lobes, kind, channels;
    Py_ssize_t out_begin;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*w*iiddy*ffin", &src, &dst, &channels, &kind, &in_rate, &out_rate,
                          &table, &scale, &center, &lobes, &out_begin))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t item = kind == OUT_I16 ? 2 : 4;
    if (channels < 1 || channels > 64) {
        PyErr_SetString(PyExc_ValueError, "resample: 1 to 64 channels");
    } else if (src.len % (4 * channels) || dst.len % (item * channels) || table.len % 4) {
        PyErr_SetString(PyExc_ValueError, "resample: buffer sizes do not match the channels");
    } else if (!(in_rate > 0) || !(out_rate > 0) || lobes < 1) {
        PyErr_SetString(PyExc_ValueError, "resample: rates must be positive");
    } else {
        Py_ssize_t n_in = src.len / (4 * channels), n_out = dst.len / (item * channels);
        Py_BEGIN_ALLOW_THREADS
        if (n_in > 0) {
            resample_impl((const float *)src.buf, n_in, channels, dst.buf, kind, n_out, out_begin, in_rate,
                          out_rate, (const float *)table.buf, table.len / 4, scale, center, lobes);
        } else {
            memset(dst.buf, 0, (size_t)dst.len);
        }
        Py_END_ALLOW_THREADS
        result = Py_None;
        Py_INCREF(result);
    }
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    PyBuffer_Release(&table);
    return result;
}

/* ---------------------------------------------------------------------------------------------
 * nonsilent(x, window, ratio, reference) -> (begin, length)
 *
 * The short-term power of a float32 or float64 signal: window i's power is (c[i + W] - c[i]) / W
 * with c the running sum of x^2 in double, added sample after sample (np.cumsum's order, so the
 * powers are the bits of streamflow.ops.nonsilent_region.moving_power). The threshold is
 * reference * ratio (reference < 0: the loudest window's power; a NaN power makes it NaN, as
 * numpy's max). Returns the first loud window and the span to the end of the last one, (0, 0)
 * when none is loud. Two passes over the signal, no buffer.
 */
static double sq_at(const void *x, int f64, Py_ssize_t i) {
    double v = f64 ? ((const double *)x)[i] : (double)((const float *)x)[i];
    return v * v;
}

static void nonsilent_impl(const void *x, int f64, Py_ssize_t n, Py_ssize_t w, double ratio, double reference,
                           Py_ssize_t *begin, Py_ssize_t *length) {
    /* The windows' sums diff = c[i + w] - c[i]; the power is diff / w. Division by w > 0 is monotonic,
     * so the loudest power is the largest diff / w, and the loop below divides only the sums within
     * a relative 1e-12 of threshold * w (elsewhere the comparison is decided without it). */
    double lead = 0.0;
    for (Py_ssize_t i = 0; i < w; i++) lead += sq_at(x, f64, i);
    double lead0 = lead;
    double dw = (double)w;
    Py_ssize_t count = n - w + 1;
    if (reference < 0.0) {
        double trail = 0.0, mx = -1.0;
        int nan = 0;
        for (Py_ssize_t i = 0; i < count; i++) {
            double diff = lead - trail;
            if (diff != diff)
                nan = 1;
            else if (diff > mx)
                mx = diff;
            if (i + 1 < count) {
                lead += sq_at(x, f64, i + w);
                trail += sq_at(x, f64, i);
            }
        }
        reference = nan ? NAN : mx / dw;
    }
    double threshold = reference * ratio;
    double lo = threshold * dw * (1.0 - 1e-12), hi = threshold * dw * (1.0 + 1e-12);
    if (lo > hi) { /* a negative threshold */
        double t = lo;
        lo = hi;
        hi = t;
    }
    Py_ssize_t first = -1, last = -1;
    double trail = 0.0;
    lead = lead0;
    for (Py_ssize_t i = 0; i < count; i++) {
        double diff = lead - trail;
        int loud = diff >= hi || (diff > lo && diff / dw >= threshold);
        if (loud) {
            if (first < 0) first = i;
            last = i;
        }
        if (i + 1 < count) {
            lead += sq_at(x, f64, i + w);
            trail += sq_at(x, f64, i);
        }
    }
    *begin = first < 0 ? 0 : first;
    *length = first < 0 ? 0 : last - first + w;
}

static PyObject *py_nonsilent(PyObject *self, PyObject *args) {
    Py_buffer src;
    int f64;
    Py_ssize_t w, begin = 0, length = 0;
    double ratio, reference;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*indd", &src, &f64, &w, &ratio, &reference)) return NULL;
    Py_ssize_t item = f64 ? 8 : 4;
    Py_ssize_t n = src.len / item;
    if (src.len % item || n < 1 || w < 1 || w > n) {
        PyBuffer_Release(&src);
        PyErr_SetString(PyExc_ValueError, "nonsilent: needs 1 <= window <= samples");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    nonsilent_impl(src.buf, f64, n, w, ratio, reference, &begin, &length);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&src);
    return Py_BuildValue("nn", begin, length);
}

/* ---------------------------------------------------------------------------------------------
 * mel_rows(spec, out, bins, weights, offsets, n)
 *
 * A banded matrix product along the first axis: out[f] = sum over k in [offsets[f], offsets[f+1])
 * of weights[k] * spec[bins[k]], rows of n float32, added in order (the first product, then
 * out + product: np.add.reduceat's order, the same bits). A filter without bins is zero.
 */
static void mel_rows_impl(const float *spec, float *out, const int64_t *bins, const float *weights,
                          const int64_t *offsets, Py_ssize_t nfilter, Py_ssize_t n) {
    for (Py_ssize_t f = 0; f < nfilter; f++) {
        float *o = out + f * n;
        int64_t k0 = offsets[f], k1 = offsets[f + 1];
        if (k1 <= k0) {
            memset(o, 0, (size_t)n * sizeof(float));
            continue;
        }
        const float *r = spec + bins[k0] * n;
        float w = weights[k0];
        for (Py_ssize_t t = 0; t < n; t++) o[t] = r[t] * w;
        for (int64_t k = k0 + 1; k < k1; k++) {
            r = spec + bins[k] * n;
            w = weights[k];
            for (Py_ssize_t t = 0; t < n; t++) o[t] = o[t] + r[t] * w;
        }
    }
}

static PyObject *py_mel_rows(PyObject *self, PyObject *args) {
    Py_buffer spec, out, bins, weights, offsets;
    Py_ssize_t n;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*w*y*y*y*n", &spec, &out, &bins, &weights, &offsets, &n)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t nnz = bins.len / 8, nfilter = offsets.len / 8 - 1, rows = n > 0 ? spec.len / 4 / n : 0;
    int ok = n >= 0 && nfilter >= 0 && weights.len == 4 * nnz && out.len == 4 * nfilter * n &&
             spec.len == 4 * rows * n;
    for (Py_ssize_t k = 0; ok && n > 0 && k < nnz; k++) {
        int64_t b = ((const int64_t *)bins.buf)[k];
        ok = b >= 0 && b < rows;
    }
    for (Py_ssize_t f = 0; ok && f <= nfilter; f++) {
        int64_t o = ((const int64_t *)offsets.buf)[f];
        ok = o >= 0 && o <= nnz && (f == 0 || o >= ((const int64_t *)offsets.buf)[f - 1]);
    }
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "mel_rows: buffer sizes or indices do not match");
    } else if (n > 0) {
        Py_BEGIN_ALLOW_THREADS
        mel_rows_impl((const float *)spec.buf, (float *)out.buf, (const int64_t *)bins.buf,
                      (const float *)weights.buf, (const int64_t *)offsets.buf, nfilter, n);
        Py_END_ALLOW_THREADS
        result = Py_None;
    } else {
        result = Py_None;
    }
    Py_XINCREF(result);
    PyBuffer_Release(&spec);
    PyBuffer_Release(&out);
    PyBuffer_Release(&bins);
    PyBuffer_Release(&weights);
    PyBuffer_Release(&offsets);
    return result;
}

/* ---------------------------------------------------------------------------------------------
 * stft_frames(x, out, window, step, offset, reflect)
 *
 * The windows of a float32 signal for the spectrogram's FFT: row i of `out` (count x nfft, float64)
 * holds (float)(x[i * step - offset + t] * window[t]) for t < len(window) (a float32 product, as
 * DALI's), zeros after. Samples outside the signal are reflected without repeating the edge
 * sample (reflect) or zero.
 */
static inline Py_ssize_t fold_index(Py_ssize_t idx, Py_ssize_t n) {
    if (n == 1) return 0;
    Py_ssize_t period = 2 * (n - 1);
    idx = idx < 0 ? -idx : idx;
    idx %= period;
    return idx >= n ? period - idx : idx;
}

static void stft_frames_impl(const float *x, Py_ssize_t n, double *out, Py_ssize_t count, Py_ssize_t nfft,
                             const float *window, Py_ssize_t length, Py_ssize_t step, Py_ssize_t offset,
                             int reflect) {
    for (Py_ssize_t i = 0; i < count; i++) {
        double *row = out + i * nfft;
        Py_ssize_t start = i * step - offset;
        if (start >= 0 && start + length <= n) {
            const float *src = x + start;
            for (Py_ssize_t t = 0; t < length; t++) row[t] = (double)(src[t] * window[t]);
        } else {
            for (Py_ssize_t t = 0; t < length; t++) {
                Py_ssize_t idx = start + t;
                float v;
                if (idx >= 0 && idx < n)
                    v = x[idx];
                else
                    v = reflect ? x[fold_index(idx, n)] : 0.0f;
                row[t] = (double)(v * window[t]);
            }
        }
        memset(row + length, 0, (size_t)(nfft - length) * sizeof(double));
    }
}

static PyObject *py_stft_frames(PyObject *self, PyObject *args) {
    Py_buffer src, dst, win;
    Py_ssize_t count, nfft, step, offset;
    int reflect;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*w*y*nnnni", &src, &dst, &win, &count, &nfft, &step, &offset, &reflect))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = src.len / 4, length = win.len / 4;
    if (n < 1 || length < 1 || nfft < length || step < 1 || count < 0 || count * nfft * 8 != dst.len) {
        PyErr_SetString(PyExc_ValueError, "stft_frames: bad sizes");
    } else {
        Py_BEGIN_ALLOW_THREADS
        stft_frames_impl((const float *)src.buf, n, (double *)dst.buf, count, nfft, (const float *)win.buf, length,
                         step, offset, reflect);
        Py_END_ALLOW_THREADS
        result = Py_None;
        Py_INCREF(result);
    }
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    PyBuffer_Release(&win);
    return result;
}

/* ---------------------------------------------------------------------------------------------
 * stft_power(spectrum, out, power, transpose)
 *
 * |X|^2 (power 2) or |X| (power 1) of a (count, bins) complex128 spectrum, computed in double and
 * rounded to float32, into `out`: (bins, count) with transpose ("ft"), else (count, bins).
 */
static void stft_power_impl(const double *spec, float *out, Py_ssize_t count, Py_ssize_t bins, int power,
                            int transpose) {
    /* tiles of 32 windows keep the transposed writes within a few cache lines */
    for (Py_ssize_t i0 = 0; i0 < count; i0 += 32) {
        Py_ssize_t i1 = i0 + 32 < count ? i0 + 32 : count;
        for (Py_ssize_t b = 0; b < bins; b++) {
            for (Py_ssize_t i = i0; i < i1; i++) {
                double re = spec[2 * (i * bins + b)], im = spec[2 * (i * bins + b) + 1];
                double m = re * re + im * im;
                if (power == 1) m = sqrt(m);
                out[transpose ? b * count + i : i * bins + b] = (float)m;
            }
        }
    }
}

static PyObject *py_stft_power(PyObject *self, PyObject *args) {
    Py_buffer src, dst;
    Py_ssize_t count, bins;
    int power, transpose;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*w*nnii", &src, &dst, &count, &bins, &power, &transpose)) return NULL;
    PyObject *result = NULL;
    if (count < 0 || bins < 0 || src.len != 16 * count * bins || dst.len != 4 * count * bins) {
        PyErr_SetString(PyExc_ValueError, "stft_power: buffer sizes do not match");
    } else {
        Py_BEGIN_ALLOW_THREADS
        stft_power_impl((const double *)src.buf, (float *)dst.buf, count, bins, power, transpose);
        Py_END_ALLOW_THREADS
        result = Py_None;
        Py_INCREF(result);
    }
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    return result;
}

static PyMethodDef methods[] = {
    {"resample", py_resample, METH_VARARGS,
     "resample(src, out, channels, kind, in_rate, out_rate, lookup, scale, center, lobes, out_begin)"},
    {"nonsilent", py_nonsilent, METH_VARARGS, "nonsilent(x, is_float64, window, ratio, reference) -> (begin, length)"},
    {"mel_rows", py_mel_rows, METH_VARARGS, "mel_rows(spec, out, bins, weights, offsets, n)"},
    {"stft_frames", py_stft_frames, METH_VARARGS, "stft_frames(x, out, window, count, nfft, step, offset, reflect)"},
    {"stft_power", py_stft_power, METH_VARARGS, "stft_power(spectrum, out, count, bins, power, transpose)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_audio", "The CPU audio kernels of streamflow.",
                                    -1, methods};

PyMODINIT_FUNC PyInit__audio(void) { return PyModule_Create(&moddef); }
