/* slice (and paste) over a batch, any element size: an N-D region (NDIM <= 6
 * dimensions, C-contiguous source and output) of each sample. Coordinates
 * outside the source follow POLICY: 0 constant (FILL, raw element bits,
 * NFILL values indexed by the output coordinate of dimension CDIM when
 * NFILL > 1), 1 edge, 2 reflect_1001, 3 reflect_101, 4 wrap.
 * Rows are all dimensions but the last (blockIdx.x), columns the last. */
__device__ __forceinline__ int sf_border(int c, int n, int policy, bool* outside) {
    if (c >= 0 && c < n) return c;
    if (policy == 0) { *outside = true; return 0; }
    if (policy == 1 || n == 1) return c < 0 ? 0 : n - 1;
    if (policy == 4) { int m = c % n; return m < 0 ? m + n : m; }
    if (policy == 2) {
        int p = 2 * n, m = c % p;
        if (m < 0) m += p;
        return m < n ? m : p - 1 - m;
    }
    int p = 2 * n - 2, m = c % p;
    if (m < 0) m += p;
    return m < n ? m : p - m;
}

template <typename T>
__device__ void sf_slice(const i64* params) {
    const i64* P = sf_params(params);
    const T* src = (const T*)P[SL_SRC];
    T* dst = (T*)P[SL_DST];
    const T* fill = (const T*)P[SL_FILL];
    const int nd = (int)P[SL_NDIM], policy = (int)P[SL_POLICY], cdim = (int)P[SL_CDIM];
    const int nfill = (int)P[SL_NFILL];
    int in[6], out[6], start[6];
    for (int d = 0; d < 6; ++d) {
        in[d] = (int)P[SL_IN0 + d];
        out[d] = (int)P[SL_OUT0 + d];
        start[d] = (int)P[SL_START0 + d];
    }
    const int last = nd - 1;
    int rows = 1;
    for (int d = 0; d < last; ++d) rows *= out[d];
    const int cols = out[last];
    SF_ROW_LOOP(r, rows) {
        int idx[6];
        int rest = r;
        for (int d = last - 1; d >= 0; --d) {
            idx[d] = rest % out[d];
            rest /= out[d];
        }
        bool row_outside = false;
        i64 off = 0;
        for (int d = 0; d < last; ++d) off = off * in[d] + sf_border(start[d] + idx[d], in[d], policy, &row_outside);
        T* drow = dst + (i64)r * cols;
        SF_COL_LOOP(e, cols) {
            bool outside = row_outside;
            const int c = sf_border(start[last] + e, in[last], policy, &outside);
            if (outside) {
                const int k = nfill > 1 ? (cdim == last ? e : idx[cdim]) : 0;
                drow[e] = fill[k];
            } else {
                drow[e] = src[off * in[last] + c];
            }
        }
    }
}
