/* Separable convolution (gaussian_blur) over a batch, in two launches that repeat
 * _native/filters.c's arithmetic: each sample is P planes of H x W x C elements.
 *
 *   sf_conv_h_<in>: TMP[p, y, e] = KX[0] * src(x - rx) + KX[1] * src(x + 1 - rx) + ...
 *                   (float32, tap by tap in kernel order; x = e / C, rx = NX / 2)
 *   sf_conv_v_<out>: out[p, y, e] = KY[0] * TMP(y - ry) + ... , rounded half away from zero
 *                   and saturated for integer outputs.
 *
 * Taps outside the image reflect without repeating the edge (reflect_101), as often as
 * needed. Compiled with --fmad=false: no fused multiply-adds, as the C code. */

__device__ __forceinline__ int sf_reflect101(int i, int n) {
    if (i >= 0 && i < n) return i;
    if (n == 1) return 0;
    const int p = 2 * n - 2;
    i %= p;
    if (i < 0) i += p;
    return i >= n ? p - i : i;
}

template <typename Tin>
__device__ void sf_conv_h(const i64* params) {
    const i64* P = sf_params(params);
    const Tin* src = (const Tin*)P[CV_SRC];
    float* tmp = (float*)P[CV_TMP];
    const float* kx = (const float*)P[CV_KX];
    const int H = (int)P[CV_H], W = (int)P[CV_W], C = (int)P[CV_C], nx = (int)P[CV_NX];
    const int rows = (int)P[CV_P] * H, row_len = W * C, rx = nx / 2;
    SF_ROW_LOOP(r, rows) {
        const Tin* srow = src + (i64)r * row_len;
        float* trow = tmp + (i64)r * row_len;
        SF_COL_LOOP(e, row_len) {
            const int x = e / C, c = e - x * C;
            float acc = kx[0] * sf_load_any(srow, (i64)sf_reflect101(x - rx, W) * C + c);
            for (int k = 1; k < nx; k++) acc += kx[k] * sf_load_any(srow, (i64)sf_reflect101(x + k - rx, W) * C + c);
            trow[e] = acc;
        }
    }
}

template <typename Tout>
__device__ void sf_conv_v(const i64* params) {
    const i64* P = sf_params(params);
    const float* tmp = (const float*)P[CV_TMP];
    Tout* dst = (Tout*)P[CV_DST];
    const float* ky = (const float*)P[CV_KY];
    const int H = (int)P[CV_H], W = (int)P[CV_W], C = (int)P[CV_C], ny = (int)P[CV_NY];
    const int rows = (int)P[CV_P] * H, row_len = W * C, ry = ny / 2;
    SF_ROW_LOOP(r, rows) {
        const int plane = r / H, y = r - plane * H;
        const float* tplane = tmp + (i64)plane * H * row_len;
        SF_COL_LOOP(e, row_len) {
            float acc = ky[0] * tplane[(i64)sf_reflect101(y - ry, H) * row_len + e];
            for (int k = 1; k < ny; k++) acc += ky[k] * tplane[(i64)sf_reflect101(y + k - ry, H) * row_len + e];
            sf_store_sat(dst, (i64)r * row_len + e, acc);
        }
    }
}
