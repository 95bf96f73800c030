/*
 * streamflow._native._audio -- the CPU audio resampler.
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
 * float32 ratio each output, as DALI's does). Integer outputs are the float
 * result scaled to the type's range, rounded half away from zero, saturated.
 *
 * Runs with the GIL released.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
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

static void resample_impl(const float *in, Py_ssize_t n_in, int channels, void *out, int kind,
                          Py_ssize_t n_out, Py_ssize_t out_begin, double in_rate, double out_rate,
                          const float *lookup, Py_ssize_t lookup_size, float wscale, float wcenter,
                          int lobes) {
    double ratio = in_rate / out_rate;
    float fratio = (float)ratio;
    float acc[64];
    for (Py_ssize_t block = 0; block < n_out; block += BLOCK) {
        Py_ssize_t block_end = block + BLOCK < n_out ? block + BLOCK : n_out;
        double start = (double)(out_begin + block) * ratio;
        Py_ssize_t base = (Py_ssize_t)floor(start);
        float pos = (float)(start - (double)base);
        for (Py_ssize_t o = block; o < block_end; o++, pos += fratio) {
            Py_ssize_t i0 = ceil_pos(pos) - lobes;
            Py_ssize_t i1 = ceil_pos(pos) + lobes; /* exclusive */
            if (i0 + base < 0) i0 = -base;
            if (i1 + base > n_in) i1 = n_in - base;
            if (channels == 1) {
                /* The common case, as DALI's SSE loop: four lanes over groups of four taps
                 * (lane offsets advanced by 4), summed pairwise, then the remaining taps. */
                const float *s = in + base;
                float lane[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                float xl[4];
                Py_ssize_t i = i0;
                for (int k = 0; k < 4; k++) xl[k] = (float)(i0 + k) - pos;
                for (; i + 3 < i1; i += 4) {
                    for (int k = 0; k < 4; k++) {
                        lane[k] += s[i + k] * window_at(lookup, lookup_size, wscale, wcenter, xl[k]);
                        xl[k] += 4.0f;
                    }
                }
                float sum = (lane[0] + lane[2]) + (lane[1] + lane[3]);
                for (float x = (float)i - pos; i < i1; i++, x += 1.0f)
                    sum += s[i] * window_at(lookup, lookup_size, wscale, wcenter, x);
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

static PyMethodDef methods[] = {
    {"resample", py_resample, METH_VARARGS,
     "resample(src, out, channels, kind, in_rate, out_rate, lookup, scale, center, lobes, out_begin)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_audio", "The CPU audio resampler of streamflow.",
                                    -1, methods};

PyMODINIT_FUNC PyInit__audio(void) { return PyModule_Create(&moddef); }
