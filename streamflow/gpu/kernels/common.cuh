/* Shared helpers of streamflow's CUDA kernels.
 *
 * Every kernel takes one argument, an int64 parameter array: SF_NP slots per
 * sample, sample = blockIdx.y. Floats travel bit-cast in the low 32 bits of a
 * slot (PF), pointers as addresses. No shared memory, no __syncthreads, no
 * atomics, no warp intrinsics: every thread is independent, so the same source
 * also builds as host C++ (see _native/host_build.py) for CI.
 *
 * Grids: blockIdx.x strides over output rows, threadIdx.x over the elements
 * of a row; 32-bit index arithmetic (the host refuses samples whose extents
 * do not fit). */
typedef long long i64;
#define PF(P, k) __int_as_float((int)((P)[k]))
#define SF_ROW_LOOP(r, rows) for (int r = (int)blockIdx.x; r < (rows); r += (int)gridDim.x)
#define SF_COL_LOOP(c, cols) for (int c = (int)threadIdx.x; c < (cols); c += (int)blockDim.x)

__device__ __forceinline__ const i64* sf_params(const i64* params) {
    return params + (i64)blockIdx.y * SF_NP;
}

__device__ __forceinline__ float sf_load(const unsigned char* p, i64 i) { return (float)p[i]; }
__device__ __forceinline__ float sf_load(const float* p, i64 i) { return p[i]; }

/* uint8 resize output: clip (NaN -> 0), round half to even (imgproc.c store_row) */
__device__ __forceinline__ void sf_store(unsigned char* p, i64 i, float v) {
    v = v > 0.0f ? v : 0.0f;
    v = v > 255.0f ? 255.0f : v;
    p[i] = (unsigned char)(int)rintf(v);
}
__device__ __forceinline__ void sf_store(float* p, i64 i, float v) { p[i] = v; }

/* The value a uint8 resize output would hold, as a float (imgproc.c grid_u8). */
__device__ __forceinline__ float sf_grid_u8(float v) {
    v = v > 0.0f ? v : 0.0f;
    v = v > 255.0f ? 255.0f : v;
    return rintf(v);
}

/* float32 -> float16 bits, round to nearest even (imgproc.c f32_to_f16) */
__device__ __forceinline__ unsigned short sf_f32_to_f16(float f) {
    unsigned int x = __float_as_uint(f);
    unsigned int sign = (x >> 16) & 0x8000u;
    unsigned int mant = x & 0x007FFFFFu;
    int exp = (int)((x >> 23) & 0xFF);
    if (exp == 0xFF) return (unsigned short)(sign | 0x7C00u | (mant ? 0x200u : 0u));
    int e = exp - 127 + 15;
    if (e >= 0x1F) return (unsigned short)(sign | 0x7C00u);
    if (e <= 0) {
        if (e < -10) return (unsigned short)sign;
        mant |= 0x00800000u;
        int shift = 14 - e;
        unsigned int half = mant >> shift;
        unsigned int rem = mant & ((1u << shift) - 1u);
        unsigned int mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u))) half++;
        return (unsigned short)(sign | half);
    }
    unsigned int half = sign | ((unsigned int)e << 10) | (mant >> 13);
    unsigned int rem = mant & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) half++;
    return (unsigned short)half;
}

/* crop_mirror_normalize outputs: float32, float16 (RNE), uint8 (half away from zero, imgproc.c sat_u8) */
__device__ __forceinline__ void sf_put(float* p, i64 i, float v) { p[i] = v; }
__device__ __forceinline__ void sf_put(unsigned short* p, i64 i, float v) { p[i] = sf_f32_to_f16(v); }
__device__ __forceinline__ void sf_put(unsigned char* p, i64 i, float v) {
    unsigned char r;
    if (!(v > 0.0f)) r = 0;
    else if (v >= 255.0f) r = 255;
    else r = (unsigned char)(v + 0.5f);
    p[i] = r;
}
