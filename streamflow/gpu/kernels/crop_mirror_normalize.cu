/* crop_mirror_normalize over a batch: the window (Y0, X0, OH, OW) of each
 * source image (H x W x C, rows of SRC_STRIDE elements), mirrored within the
 * window when MIRROR, ((v - mean) * mul + shift) per channel in float32 as
 * imgproc.c run_cmn, CHW or HWC, padded channels and outside pixels = fill.
 * CHAN points at [mean x C, mul x C, fill x OC] floats. */
template <typename S, typename D>
__device__ void sf_cmn(const i64* params) {
    const i64* P = sf_params(params);
    const S* src = (const S*)P[RS_SRC];
    const i64 stride = P[RS_SRC_STRIDE];
    const int H = (int)P[CM_H], W = (int)P[CM_W], C = (int)P[RS_C];
    const int oh = (int)P[CM_OH], ow = (int)P[CM_OW], oc = (int)P[CM_OC];
    const int chw = (int)P[CM_CHW], mirror = (int)P[CM_MIRROR];
    const int y0 = (int)P[CM_Y0], x0 = (int)P[CM_X0];
    const float shift = PF(P, CM_SHIFT);
    const float* mean = (const float*)P[CM_CHAN];
    const float* mul = mean + C;
    const float* fill = mul + C;
    D* out = (D*)P[CM_OUT];
    SF_ROW_LOOP(y, oh) {
        const int sy = y0 + y;
        SF_COL_LOOP(x, ow) {
            const int sx = x0 + (mirror ? ow - 1 - x : x);
            const bool inside = sy >= 0 && sy < H && sx >= 0 && sx < W;
            const i64 px = (i64)sy * stride + (i64)sx * C;
            for (int ch = 0; ch < oc; ch++) {
                const float r = (inside && ch < C) ? (sf_load(src, px + ch) - mean[ch]) * mul[ch] + shift : fill[ch];
                const i64 at = chw ? ((i64)ch * oh + y) * ow + x : ((i64)y * ow + x) * oc + ch;
                sf_put(out, at, r);
            }
        }
    }
}
