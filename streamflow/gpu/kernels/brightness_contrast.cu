/* brightness_contrast (and brightness, contrast) over a batch: out = in * M + A in float32 (two
 * roundings, no FMA: --fmad=false), integer outputs rounded half away from zero and saturated,
 * as ops/color.py computes them (convert_to; see convert.cuh). Each sample is N elements of any
 * shape, taken BC_ROW at a time (a "row" of the grid). */

template <typename Tin, typename Tout>
__device__ void sf_brightness_contrast(const i64* params) {
    const i64* P = sf_params(params);
    const Tin* src = (const Tin*)P[BC_SRC];
    Tout* dst = (Tout*)P[BC_DST];
    const i64 n = P[BC_N];
    const float m = PF(P, BC_MUL), a = PF(P, BC_ADD);
    const int rows = (int)((n + BC_ROW - 1) / BC_ROW);
    SF_ROW_LOOP(r, rows) {
        const i64 base = (i64)r * BC_ROW;
        const int len = (int)(n - base < BC_ROW ? n - base : BC_ROW);
        SF_COL_LOOP(e, len) {
            const float v = sf_load_any(src, base + e) * m;
            sf_store_sat(dst, base + e, v + a);
        }
    }
}
