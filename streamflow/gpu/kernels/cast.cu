/* cast over a batch: each sample is N elements of any shape, BC_ROW at a time. The value goes
 * through float32 (exact for every element type here: 8- and 16-bit integers, float16, float32)
 * and is stored as convert.cuh stores: integers rounded half away from zero and saturated,
 * NaN -> 0; float16 rounded to nearest even. That is ops/cast.py's cast_array for these types. */

template <typename Tin, typename Tout>
__device__ void sf_cast(const i64* params) {
    const i64* P = sf_params(params);
    const Tin* src = (const Tin*)P[CA_SRC];
    Tout* dst = (Tout*)P[CA_DST];
    const i64 n = P[CA_N];
    const int rows = (int)((n + BC_ROW - 1) / BC_ROW);
    SF_ROW_LOOP(r, rows) {
        const i64 base = (i64)r * BC_ROW;
        const int len = (int)(n - base < BC_ROW ? n - base : BC_ROW);
        SF_COL_LOOP(e, len) sf_store_sat(dst, base + e, sf_load_any(src, base + e));
    }
}
