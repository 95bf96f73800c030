/* flip over a batch, any element size: each sample is P contiguous planes of
 * H x W x C elements; rows and/or columns reversed. */
template <typename T>
__device__ void sf_flip(const i64* params) {
    const i64* P = sf_params(params);
    const T* src = (const T*)P[FL_SRC];
    T* dst = (T*)P[FL_DST];
    const int H = (int)P[FL_H], W = (int)P[FL_W], C = (int)P[FL_C];
    const int hf = (int)P[FL_HFLIP], vf = (int)P[FL_VFLIP];
    const int rows = (int)P[FL_P] * H, row_len = W * C;
    SF_ROW_LOOP(r, rows) {
        const int plane = r / H, y = r - plane * H;
        const int sy = vf ? H - 1 - y : y;
        const T* srow = src + ((i64)plane * H + sy) * row_len;
        T* drow = dst + (i64)r * row_len;
        SF_COL_LOOP(e, row_len) {
            const int x = e / C, c = e - x * C;
            const int sx = hf ? W - 1 - x : x;
            drow[e] = srow[(i64)sx * C + c];
        }
    }
}
