/*
 * Pieces shared by the C extensions filters.c, warp.c and imgproc.c: the AVX2 function
 * clones, the element type of a buffer, and taking a source and an output buffer.
 * Include after <Python.h> (with PY_SSIZE_T_CLEAN).
 */
#ifndef SF_COMMON_H
#define SF_COMMON_H

#include <Python.h>

/* On x86-64 Linux (GCC) the row loops get an AVX2 clone chosen at load time (ifunc); the
 * default clone is plain SSE2, so the modules run on any x86-64. Every element sees the same
 * float operations in the same order in both clones (no FMA contraction: -ffp-contract=off),
 * so results are identical. -DSF_NO_CLONES builds the default clone only. */
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(SF_NO_CLONES)
#define SF_CLONES __attribute__((target_clones("avx2", "default")))
#define SF_HAVE_CLONES 1
#else
#define SF_CLONES
#define SF_HAVE_CLONES 0
#endif

/* Element types; each module takes a subset (its dtype_of turns the others into -1). */
enum { DT_U8, DT_I8, DT_U16, DT_I16, DT_U32, DT_I32, DT_F32, DT_F64, DT_F16 };

/* The element type of a buffer by its struct format (native byte order; no format: bytes),
 * or -1 for any other. */
static inline int sf_dtype_of(const Py_buffer *b) {
    const char *f = b->format ? b->format : "B";
    if (*f == '<' || *f == '=' || *f == '@') f++;
    if (f[0] == 0 || f[1] != 0) return -1;
    switch (f[0]) {
        case 'B': return b->itemsize == 1 ? DT_U8 : -1;
        case 'b': return b->itemsize == 1 ? DT_I8 : -1;
        case 'H': return b->itemsize == 2 ? DT_U16 : -1;
        case 'h': return b->itemsize == 2 ? DT_I16 : -1;
        case 'I': return b->itemsize == 4 ? DT_U32 : -1;
        case 'i': return b->itemsize == 4 ? DT_I32 : -1;
        case 'f': return b->itemsize == 4 ? DT_F32 : -1;
        case 'd': return b->itemsize == 8 ? DT_F64 : -1;
        case 'e': return b->itemsize == 2 ? DT_F16 : -1;
        default: return -1;
    }
}

/* The buffers of `src` (src_flags) and `out` (out_flags, which ask for a writable one): 0, or
 * -1 with the exception set and neither buffer held. */
static inline int sf_get_buffers(PyObject *src, Py_buffer *sb, int src_flags, PyObject *out, Py_buffer *ob,
                                 int out_flags) {
    if (PyObject_GetBuffer(src, sb, src_flags) < 0) return -1;
    if (PyObject_GetBuffer(out, ob, out_flags) < 0) {
        PyBuffer_Release(sb);
        return -1;
    }
    return 0;
}

#endif /* SF_COMMON_H */
