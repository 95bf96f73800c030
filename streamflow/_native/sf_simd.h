/*
 * Small vector helpers shared by the C extensions: 4-lane float / int32 vectors (GCC
 * vector extensions: SSE2 on x86-64 without -march flags, NEON on arm64) and the narrowing
 * of 16 int32 lanes, already inside the target type's range, to 8- or 16-bit integers
 * (SSE2 pack instructions where available; the generic conversion elsewhere), with the row
 * store built on it (filters.c, warp.c). The values are never changed: these only move bits
 * faster than a lane-by-lane conversion.
 */
#ifndef SF_SIMD_H
#define SF_SIMD_H

#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

typedef float sf_v4f __attribute__((vector_size(16)));
typedef int32_t sf_v4i __attribute__((vector_size(16)));
/* 8 lanes: one AVX register in the avx2 clones, two SSE2 registers elsewhere */
typedef float sf_v8f __attribute__((vector_size(32)));
typedef int32_t sf_v8i __attribute__((vector_size(32)));

/* Unaligned loads and stores of 4 floats, and 4 copies of one */
static inline sf_v4f sf_load4(const float *p) {
    sf_v4f r;
    memcpy(&r, p, sizeof r);
    return r;
}
static inline void sf_store4(float *p, sf_v4f v) { memcpy(p, &v, sizeof v); }
static inline sf_v4f sf_splat4(float x) {
    sf_v4f r = {x, x, x, x};
    return r;
}

/* m ? a : b lane by lane (m: all ones or all zeros per lane, as vector comparisons give) */
static inline __attribute__((always_inline)) sf_v4f sf_select(sf_v4i m, sf_v4f a, sf_v4f b) {
    return (sf_v4f)(((sf_v4i)a & m) | ((sf_v4i)b & ~m));
}

enum { SF_U8, SF_I8, SF_U16, SF_I16 };

/* Store 16 int32 lanes (a, b, c, d in order), each within the range of `kind`, as 16
 * elements of that type at `out`. */
static inline __attribute__((always_inline)) void sf_narrow16(int kind, void *out, sf_v4i a, sf_v4i b, sf_v4i c,
                                                              sf_v4i d) {
#if defined(__SSE2__)
    const __m128i A = (__m128i)a, B = (__m128i)b, C = (__m128i)c, D = (__m128i)d;
    char *o = (char *)out;
    switch (kind) {
        case SF_U8:
            _mm_storeu_si128((__m128i *)o, _mm_packus_epi16(_mm_packs_epi32(A, B), _mm_packs_epi32(C, D)));
            return;
        case SF_I8:
            _mm_storeu_si128((__m128i *)o, _mm_packs_epi16(_mm_packs_epi32(A, B), _mm_packs_epi32(C, D)));
            return;
        case SF_I16:
            _mm_storeu_si128((__m128i *)o, _mm_packs_epi32(A, B));
            _mm_storeu_si128((__m128i *)(o + 16), _mm_packs_epi32(C, D));
            return;
        default: { /* uint16: shift into int16's range, pack with signed saturation, shift back */
            const __m128i bias = _mm_set1_epi32(32768), flip = _mm_set1_epi16((short)0x8000);
            const __m128i lo = _mm_packs_epi32(_mm_sub_epi32(A, bias), _mm_sub_epi32(B, bias));
            const __m128i hi = _mm_packs_epi32(_mm_sub_epi32(C, bias), _mm_sub_epi32(D, bias));
            _mm_storeu_si128((__m128i *)o, _mm_xor_si128(lo, flip));
            _mm_storeu_si128((__m128i *)(o + 16), _mm_xor_si128(hi, flip));
            return;
        }
    }
#else
    const sf_v4i v[4] = {a, b, c, d};
    for (int k = 0; k < 4; k++) {
        switch (kind) {
            case SF_U8: {
                typedef uint8_t t4 __attribute__((vector_size(4)));
                t4 t = __builtin_convertvector(v[k], t4);
                memcpy((uint8_t *)out + 4 * k, &t, sizeof t);
                break;
            }
            case SF_I8: {
                typedef int8_t t4 __attribute__((vector_size(4)));
                t4 t = __builtin_convertvector(v[k], t4);
                memcpy((int8_t *)out + 4 * k, &t, sizeof t);
                break;
            }
            case SF_I16: {
                typedef int16_t t4 __attribute__((vector_size(8)));
                t4 t = __builtin_convertvector(v[k], t4);
                memcpy((int16_t *)out + 4 * k, &t, sizeof t);
                break;
            }
            default: {
                typedef uint16_t t4 __attribute__((vector_size(8)));
                t4 t = __builtin_convertvector(v[k], t4);
                memcpy((uint16_t *)out + 4 * k, &t, sizeof t);
                break;
            }
        }
    }
#endif
}

/* Store the n values at src (float or double) as T, an 8- or 16-bit integer type (KIND of
 * sf_narrow16), at dst: 16 at a time, rounded and saturated by ROUNDV(&r, p, LO, HI) into the
 * int32 lanes of one VT (sf_v4i or sf_v8i: 4 or 8 values from p) and packed by sf_narrow16;
 * the rest one by one as (T)ROUND1(v, LO, HI), which gives the same values as ROUNDV. */
#define SF_STORE_NARROW(T, KIND, dst, src, n, VT, ROUNDV, ROUND1, LO, HI)                    \
    do {                                                                                     \
        T *restrict sf_o = (T *)(dst);                                                       \
        int sf_i = 0;                                                                        \
        for (; sf_i + 16 <= (n); sf_i += 16) {                                               \
            sf_v4i sf_q[4];                                                                  \
            for (int sf_k = 0; sf_k < (int)(sizeof sf_q / (sizeof(VT))); sf_k++) {           \
                VT sf_r;                                                                     \
                ROUNDV(&sf_r, (src) + sf_i + sf_k * (int)(sizeof(VT) / 4), LO, HI);          \
                memcpy((char *)sf_q + sf_k * sizeof(VT), &sf_r, sizeof(VT));                 \
            }                                                                                \
            sf_narrow16(KIND, sf_o + sf_i, sf_q[0], sf_q[1], sf_q[2], sf_q[3]);              \
        }                                                                                    \
        for (; sf_i < (n); sf_i++) sf_o[sf_i] = (T)ROUND1((src)[sf_i], LO, HI);              \
    } while (0)

/* The switch cases of the types SF_STORE_NARROW writes, each `STORE(T, KIND, LO, HI); break;`
 * with the type's range (DT_*: sf_common.h). */
#define SF_NARROW_CASES(STORE)                                         \
    case DT_U8: STORE(uint8_t, SF_U8, 0.0, 255.0); break;              \
    case DT_I8: STORE(int8_t, SF_I8, -128.0, 127.0); break;            \
    case DT_U16: STORE(uint16_t, SF_U16, 0.0, 65535.0); break;         \
    case DT_I16: STORE(int16_t, SF_I16, -32768.0, 32767.0); break;

#endif /* SF_SIMD_H */
