/* Element loads and saturating stores shared by brightness_contrast.cu and convolution.cu:
 * integer outputs round half away from zero (roundf) and saturate, NaN -> 0, exactly as the
 * CPU operators convert (ops/color.py convert_to, _native/filters.c store_row). */

__device__ __forceinline__ float sf_sat_round(float v, float lo, float hi) {
    if (!(v == v)) return 0.0f;
    v = roundf(v);
    return v < lo ? lo : (v > hi ? hi : v);
}

__device__ __forceinline__ float sf_load_any(const unsigned char* p, i64 i) { return (float)p[i]; }
__device__ __forceinline__ float sf_load_any(const unsigned short* p, i64 i) { return (float)p[i]; }
__device__ __forceinline__ float sf_load_any(const short* p, i64 i) { return (float)p[i]; }
__device__ __forceinline__ float sf_load_any(const float* p, i64 i) { return p[i]; }

__device__ __forceinline__ void sf_store_sat(unsigned char* p, i64 i, float v) { p[i] = (unsigned char)sf_sat_round(v, 0.0f, 255.0f); }
__device__ __forceinline__ void sf_store_sat(unsigned short* p, i64 i, float v) { p[i] = (unsigned short)sf_sat_round(v, 0.0f, 65535.0f); }
__device__ __forceinline__ void sf_store_sat(short* p, i64 i, float v) { p[i] = (short)sf_sat_round(v, -32768.0f, 32767.0f); }
__device__ __forceinline__ void sf_store_sat(float* p, i64 i, float v) { p[i] = v; }

/* int8 and float16 elements (cast.cu). float16 travels as its bits in sf_half; loads are exact,
 * stores round to nearest even (common.cuh sf_f32_to_f16), as numpy's astype(float16). */
struct sf_half { unsigned short bits; };

__device__ __forceinline__ float sf_f16_to_f32(unsigned short h) {
    const unsigned int sign = ((unsigned int)h & 0x8000u) << 16;
    const unsigned int exp = ((unsigned int)h >> 10) & 0x1Fu, mant = (unsigned int)h & 0x3FFu;
    if (exp == 0x1Fu) return __uint_as_float(sign | 0x7F800000u | (mant << 13));
    if (exp == 0u) {  /* zero or subnormal: mant * 2^-24, exact in float32 */
        const float v = (float)mant * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return __uint_as_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

__device__ __forceinline__ float sf_load_any(const signed char* p, i64 i) { return (float)p[i]; }
__device__ __forceinline__ float sf_load_any(const sf_half* p, i64 i) { return sf_f16_to_f32(p[i].bits); }
__device__ __forceinline__ void sf_store_sat(signed char* p, i64 i, float v) { p[i] = (signed char)sf_sat_round(v, -128.0f, 127.0f); }
__device__ __forceinline__ void sf_store_sat(sf_half* p, i64 i, float v) { p[i].bits = sf_f32_to_f16(v); }
