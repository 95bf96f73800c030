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
