/* resize: one separable resampling pass over a batch (two launches per resize).
 *
 * The taps and weights of every output coordinate come from the C resampler's
 * own planner (imgproc.resample_plan): the GPU only sums, in the C code's
 * order, so it reproduces the CPU bit for bit:
 *   horizontal pass (hrow):    acc = p0 * w0;  acc += pk * wk
 *   vertical pass (vrow_f32):  acc = wa * a + wb * b;  acc = (acc + wa * a) + wb * b  (pairs), then singles
 *
 * A pass reads SRC (rows of SRC_STRIDE elements, C interleaved channels) and
 * writes OUT_LEN outputs along its axis for OTHER_LEN lines of the other axis.
 * Tap t of output d is source line IDX[d * SUPPORT + t] - TAP0; line o of the
 * other axis is source line OTHER0 + o. Any channel count: channels go in
 * groups of SF_MAXC. */

template <typename S>
__device__ __forceinline__ void sf_taps(const i64* P, int d, int o, int c0, int nc, float* acc) {
    const S* src = (const S*)P[RS_SRC];
    const i64 stride = P[RS_SRC_STRIDE];
    const int C = (int)P[RS_C];
    const int S_ = (int)P[RS_SUPPORT];
    const int* idx = (const int*)P[RS_IDX] + (i64)d * S_;
    const float* w = (const float*)P[RS_W] + (i64)d * S_;
    const int tap0 = (int)P[RS_TAP0];
    const int line = (int)P[RS_OTHER0] + o;
    if (P[RS_AXIS] == 1) {
        const i64 row = (i64)line * stride + c0;
        const i64 at0 = row + (i64)(idx[0] - tap0) * C;
        for (int c = 0; c < SF_MAXC; c++)
            if (c < nc) acc[c] = sf_load(src, at0 + c) * w[0];
        for (int k = 1; k < S_; k++) {
            const i64 at = row + (i64)(idx[k] - tap0) * C;
            const float wk = w[k];
            for (int c = 0; c < SF_MAXC; c++)
                if (c < nc) acc[c] += sf_load(src, at + c) * wk;
        }
    } else {
        const i64 col = (i64)line * C + c0;
        int k;
        if (S_ >= 2) {
            const i64 a = (i64)(idx[0] - tap0) * stride + col, b = (i64)(idx[1] - tap0) * stride + col;
            const float wa = w[0], wb = w[1];
            for (int c = 0; c < SF_MAXC; c++)
                if (c < nc) acc[c] = wa * sf_load(src, a + c) + wb * sf_load(src, b + c);
            k = 2;
        } else {
            const i64 a = (i64)(idx[0] - tap0) * stride + col;
            const float wa = w[0];
            for (int c = 0; c < SF_MAXC; c++)
                if (c < nc) acc[c] = wa * sf_load(src, a + c);
            k = 1;
        }
        for (; k + 1 < S_; k += 2) {
            const i64 a = (i64)(idx[k] - tap0) * stride + col, b = (i64)(idx[k + 1] - tap0) * stride + col;
            const float wa = w[k], wb = w[k + 1];
            for (int c = 0; c < SF_MAXC; c++)
                if (c < nc) acc[c] = (acc[c] + wa * sf_load(src, a + c)) + wb * sf_load(src, b + c);
        }
        for (; k < S_; k++) {
            const i64 a = (i64)(idx[k] - tap0) * stride + col;
            const float wa = w[k];
            for (int c = 0; c < SF_MAXC; c++)
                if (c < nc) acc[c] += wa * sf_load(src, a + c);
        }
    }
}

/* One pass over a batch: output rows are lines of the vertical axis. */
template <typename S, typename D>
__device__ void sf_resample_pass(const i64* params) {
    const i64* P = sf_params(params);
    const int axis = (int)P[RS_AXIS], C = (int)P[RS_C];
    const int n = (int)P[RS_OUT_LEN], other = (int)P[RS_OTHER_LEN];
    const int rows = axis == 0 ? n : other, cols = axis == 0 ? other : n;
    D* dst = (D*)P[RS_DST];
    const i64 dstride = P[RS_DST_STRIDE];
    SF_ROW_LOOP(y, rows) {
        SF_COL_LOOP(x, cols) {
            const int d = axis == 0 ? y : x, o = axis == 0 ? x : y;
            const i64 at = (i64)y * dstride + (i64)x * C;
            for (int c0 = 0; c0 < C; c0 += SF_MAXC) {
                const int nc = C - c0 < SF_MAXC ? C - c0 : SF_MAXC;
                float acc[SF_MAXC];
                sf_taps<S>(P, d, o, c0, nc, acc);
                for (int c = 0; c < SF_MAXC; c++)
                    if (c < nc) sf_store(dst, at + c0 + c, acc[c]);
            }
        }
    }
}

/* The second pass of a fused resize + crop_mirror_normalize: each output
 * pixel of the crop window is resampled (when it lies in the resized region
 * [RY0, RY0 + RH) x [RX0, RX0 + RW)), rounded to the uint8 grid when the
 * resize output is uint8, then normalized as crop_mirror_normalize does;
 * outside pixels and padded channels get the fill values. CHAN points at
 * [mean x C, mul x C, fill x OC] floats. */
template <typename D>
__device__ void sf_resample_cmn(const i64* params) {
    const i64* P = sf_params(params);
    const int oh = (int)P[CM_OH], ow = (int)P[CM_OW], oc = (int)P[CM_OC], C = (int)P[RS_C];
    const int chw = (int)P[CM_CHW], mirror = (int)P[CM_MIRROR], round_u8 = (int)P[CM_ROUND_U8];
    const int y0 = (int)P[CM_Y0], x0 = (int)P[CM_X0];
    const int ry0 = (int)P[CM_RY0], rx0 = (int)P[CM_RX0], rh = (int)P[CM_RH], rw = (int)P[CM_RW];
    const float shift = PF(P, CM_SHIFT);
    const float* mean = (const float*)P[CM_CHAN];
    const float* mul = mean + C;
    const float* fill = mul + C;
    const int axis = (int)P[RS_AXIS];
    D* out = (D*)P[CM_OUT];
    SF_ROW_LOOP(y, oh) {
        SF_COL_LOOP(x, ow) {
            const int wy = y0 + y, wx = x0 + (mirror ? ow - 1 - x : x);
            const bool inside = wy >= ry0 && wy < ry0 + rh && wx >= rx0 && wx < rx0 + rw;
            for (int c0 = 0; c0 < oc; c0 += SF_MAXC) {
                float v[SF_MAXC];
                const int nc = c0 >= C ? 0 : (C - c0 < SF_MAXC ? C - c0 : SF_MAXC);
                if (inside && nc > 0) {
                    if (axis == 0) sf_taps<float>(P, wy - ry0, wx - rx0, c0, nc, v);
                    else sf_taps<float>(P, wx - rx0, wy - ry0, c0, nc, v);
                }
                for (int c = 0; c < SF_MAXC && c0 + c < oc; c++) {
                    const int ch = c0 + c;
                    float r;
                    if (inside && c < nc) {
                        const float u = round_u8 ? sf_grid_u8(v[c]) : v[c];
                        r = (u - mean[ch]) * mul[ch] + shift;
                    } else {
                        r = fill[ch];
                    }
                    const i64 at = chw ? ((i64)ch * oh + y) * ow + x : ((i64)y * ow + x) * oc + ch;
                    sf_put(out, at, r);
                }
            }
        }
    }
}
