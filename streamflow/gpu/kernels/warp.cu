/* warp_affine and rotate over a batch of HWC images: ops/warp_affine.py's arithmetic, bit for bit.
 *
 * Output pixel (i, j) samples the source at (sx, sy) = M @ (j + 0.5, i + 0.5, 1), with the
 * coordinates produced as DALI's CPU kernel (and warp_affine.source_coordinates) produces them:
 * row start (M[r][0] * 0.5 + M[r][1] * (i + 0.5)) + M[r][2], then M[r][0] added column after
 * column in float32, restarting from start + t * (256 * M[r][0]) (accumulated) every 256 columns.
 * A thread handles WA_RUN columns of one tile, so it repeats those additions itself.
 *
 * Sampling: WA_INTERP 0 = nearest (floor of the clipped coordinate), 1 = bilinear
 * (s0 = s00 (1 - qx) + s01 qx, s1 likewise, out = s0 + (s1 - s0) qy). A tap outside the image
 * reads FILL[c] (float32 per channel, already in the input type's values) or, when FILL is 0,
 * the clamped edge pixel. Integer outputs: v >= 0 ? floor(v + 0.5) : ceil(v - 0.5), saturated
 * (NaN -> 0). Every tap and product is float32 and there is no FMA (--fmad=false). */

#define WA_TILE 256
#define WA_RUN 8

/* integer outputs: v >= 0 ? floor(v + 0.5) : ceil(v - 0.5), saturated; NaN -> 0 */
__device__ __forceinline__ float sf_warp_round(float v, float lo, float hi) {
    if (!(v == v)) return 0.0f;
    v = v >= 0.0f ? floorf(v + 0.5f) : ceilf(v - 0.5f);
    return v < lo ? lo : (v > hi ? hi : v);
}
__device__ __forceinline__ void sf_warp_store(unsigned char* p, i64 i, float v) { p[i] = (unsigned char)sf_warp_round(v, 0.0f, 255.0f); }
__device__ __forceinline__ void sf_warp_store(unsigned short* p, i64 i, float v) { p[i] = (unsigned short)sf_warp_round(v, 0.0f, 65535.0f); }
__device__ __forceinline__ void sf_warp_store(short* p, i64 i, float v) { p[i] = (short)sf_warp_round(v, -32768.0f, 32767.0f); }
__device__ __forceinline__ void sf_warp_store(float* p, i64 i, float v) { p[i] = v; }

/* a coordinate clipped to [lo, hi]; NaN (only from overflowing matrices) -> lo */
__device__ __forceinline__ float sf_warp_clip(float v, float lo, float hi) {
    return v > lo ? (v < hi ? v : hi) : lo;
}

/* the source value of tap (y, x), channel c: inside, FILL, or the clamped edge */
template <typename Tin>
__device__ __forceinline__ float sf_warp_tap(const Tin* src, int H, int W, int C, const float* fill, int y, int x, int c) {
    if (fill) {
        if (y < 0 || y >= H || x < 0 || x >= W) return fill[c];
    } else {
        y = y < 0 ? 0 : (y >= H ? H - 1 : y);
        x = x < 0 ? 0 : (x >= W ? W - 1 : x);
    }
    return sf_load_any(src, ((i64)y * W + x) * C + c);
}

/* the coordinate of column `col0` (the start of a run) in the row starting at `row0` */
__device__ __forceinline__ float sf_warp_coord(float row0, float step, int col0) {
    const float tile_step = (float)WA_TILE * step;
    float v = row0;
    for (int t = 0; t < col0 / WA_TILE; t++) v = v + tile_step;
    for (int k = 0; k < col0 % WA_TILE; k++) v = v + step;
    return v;
}

template <typename Tin, typename Tout>
__device__ void sf_warp_affine(const i64* params) {
    const i64* P = sf_params(params);
    const Tin* src = (const Tin*)P[WA_SRC];
    Tout* dst = (Tout*)P[WA_DST];
    const float* fill = (const float*)P[WA_FILL];
    const int H = (int)P[WA_H], W = (int)P[WA_W], C = (int)P[WA_C], OH = (int)P[WA_OH], OW = (int)P[WA_OW];
    const int linear = (int)P[WA_INTERP];
    float m[6];
    for (int k = 0; k < 6; k++) m[k] = PF(P, WA_M + k);
    const int runs = (OW + WA_RUN - 1) / WA_RUN;
    const float fH = (float)H, fW = (float)W;
    SF_ROW_LOOP(i, OH) {
        const float y = (float)i + 0.5f;
        const float row0x = (m[0] * 0.5f + m[1] * y) + m[2];
        const float row0y = (m[3] * 0.5f + m[4] * y) + m[5];
        SF_COL_LOOP(run, runs) {
            const int col0 = run * WA_RUN;
            const int col1 = col0 + WA_RUN < OW ? col0 + WA_RUN : OW;
            float sx = sf_warp_coord(row0x, m[0], col0);
            float sy = sf_warp_coord(row0y, m[3], col0);
            for (int j = col0; j < col1; j++) {
                if (j > col0) {
                    sx = sx + m[0];
                    sy = sy + m[3];
                }
                Tout* out = dst + ((i64)i * OW + j) * C;
                if (!linear) {
                    const int ix = (int)floorf(sf_warp_clip(sx, -2.0f, fW + 1.0f));
                    const int iy = (int)floorf(sf_warp_clip(sy, -2.0f, fH + 1.0f));
                    for (int c = 0; c < C; c++) sf_warp_store(out, c, sf_warp_tap(src, H, W, C, fill, iy, ix, c));
                } else {
                    const float x = sf_warp_clip(sx, -1e6f, 1e6f) - 0.5f;
                    const float yy = sf_warp_clip(sy, -1e6f, 1e6f) - 0.5f;
                    const float fx = floorf(x), fy = floorf(yy);
                    const float qx = x - fx, qy = yy - fy;
                    const float px = 1.0f - qx;
                    const int x0 = (int)fx, y0 = (int)fy;
                    for (int c = 0; c < C; c++) {
                        const float s00 = sf_warp_tap(src, H, W, C, fill, y0, x0, c);
                        const float s01 = sf_warp_tap(src, H, W, C, fill, y0, x0 + 1, c);
                        const float s0 = s00 * px + s01 * qx;
                        const float s10 = sf_warp_tap(src, H, W, C, fill, y0 + 1, x0, c);
                        const float s11 = sf_warp_tap(src, H, W, C, fill, y0 + 1, x0 + 1, c);
                        const float s1 = s10 * px + s11 * qx;
                        sf_warp_store(out, c, s0 + (s1 - s0) * qy);
                    }
                }
            }
        }
    }
}
