/* crop over a batch, any element size: the window (Y0, X0, OH, OW) of each
 * image (H x W x C, rows of SRC_STRIDE elements); elements outside the image
 * take FILL[c] (raw element bits, C of them). */
template <typename T>
__device__ void sf_crop(const i64* params) {
    const i64* P = sf_params(params);
    const T* src = (const T*)P[CR_SRC];
    T* dst = (T*)P[CR_DST];
    const T* fill = (const T*)P[CR_FILL];
    const i64 stride = P[CR_SRC_STRIDE];
    const int H = (int)P[CR_H], W = (int)P[CR_W], C = (int)P[CR_C];
    const int oh = (int)P[CR_OH], ow = (int)P[CR_OW], y0 = (int)P[CR_Y0], x0 = (int)P[CR_X0];
    const int row_len = ow * C;
    SF_ROW_LOOP(y, oh) {
        const int sy = y0 + y;
        T* drow = dst + (i64)y * row_len;
        SF_COL_LOOP(e, row_len) {
            const int x = e / C, c = e - x * C;
            const int sx = x0 + x;
            drow[e] = (sy >= 0 && sy < H && sx >= 0 && sx < W) ? src[(i64)sy * stride + (i64)sx * C + c] : fill[c];
        }
    }
}
