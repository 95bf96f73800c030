/* Colour kernels over a batch; each sample is N pixels, CT_ROW pixels per grid row.
 *
 * sf_color_twist<in, out> (color_twist, hue, saturation, hsv): 3-channel pixels,
 *   out[i] = ((x0 * M[i][0] + x1 * M[i][1]) + x2 * M[i][2]) + OFFSET in float32, then the
 *   saturating store of convert.cuh: exactly _native/filters.c color_matrix (and the numpy
 *   fallback of ops/color.py apply_linear), no FMA (--fmad=false).
 *
 * sf_csc (color_space_conversion, uint8 only): DALI's BT.601 formulas as ops/color_space_conversion.py
 *   computes them, step for step in float32, with its float32 constants (CSC_K: the table of
 *   color_space_conversion.csc_constants()); REV_IN reads the input's 3 channels reversed (BGR),
 *   REV_OUT writes them reversed; CIN, COUT: 1 or 3 channels. Modes (CSC_MODE): 0 copy channels, 1 RGB->GRAY, 2 RGB->YCbCr,
 *   3 GRAY->RGB, 4 GRAY->YCbCr, 5 YCbCr->GRAY, 6 YCbCr->RGB. */

template <typename Tin, typename Tout>
__device__ void sf_color_twist(const i64* params) {
    const i64* P = sf_params(params);
    const Tin* src = (const Tin*)P[CT_SRC];
    Tout* dst = (Tout*)P[CT_DST];
    const i64 n = P[CT_N];
    float m[9];
    for (int k = 0; k < 9; k++) m[k] = PF(P, CT_M + k);
    const float offset = PF(P, CT_OFFSET);
    const int rows = (int)((n + CT_ROW - 1) / CT_ROW);
    SF_ROW_LOOP(r, rows) {
        const i64 base = (i64)r * CT_ROW;
        const int len = (int)(n - base < CT_ROW ? n - base : CT_ROW);
        SF_COL_LOOP(e, len) {
            const i64 p = (base + e) * 3;
            const float x0 = sf_load_any(src, p), x1 = sf_load_any(src, p + 1), x2 = sf_load_any(src, p + 2);
            for (int i = 0; i < 3; i++) {
                float acc = x0 * m[3 * i];
                float t = x1 * m[3 * i + 1];
                acc = acc + t;
                t = x2 * m[3 * i + 2];
                acc = acc + t;
                sf_store_sat(dst, p + i, acc + offset);
            }
        }
    }
}

/* uint8 value of a float: round half away from zero, saturate (ops/color.py convert_to) */
__device__ __forceinline__ unsigned char sf_csc_u8(float v) { return (unsigned char)sf_sat_round(v, 0.0f, 255.0f); }

__device__ void sf_csc_impl(const i64* params) {
    const i64* P = sf_params(params);
    const unsigned char* src = (const unsigned char*)P[CSC_SRC];
    unsigned char* dst = (unsigned char*)P[CSC_DST];
    const i64 n = P[CSC_N];
    const int mode = (int)P[CSC_MODE], rev_in = (int)P[CSC_REV_IN], rev_out = (int)P[CSC_REV_OUT];
    const int cin = (int)P[CSC_CIN], cout = (int)P[CSC_COUT];
    const float* k = (const float*)P[CSC_K];
    const int rows = (int)((n + CT_ROW - 1) / CT_ROW);
    SF_ROW_LOOP(r, rows) {
        const i64 base = (i64)r * CT_ROW;
        const int len = (int)(n - base < CT_ROW ? n - base : CT_ROW);
        SF_COL_LOOP(e, len) {
            const unsigned char* s = src + (base + e) * cin;
            unsigned char* d = dst + (base + e) * cout;
            unsigned char a = s[0], b = a, c = a;
            if (cin == 3) {
                b = s[1];
                c = rev_in ? s[0] : s[2];
                a = rev_in ? s[2] : s[0];
            }
            unsigned char o0 = a, o1 = b, o2 = c;
            const float x0 = (float)a, x1 = (float)b, x2 = (float)c;
            if (mode == 1) {
                o0 = sf_csc_u8(x0 * k[0] + x1 * k[1] + x2 * k[2]);
            } else if (mode == 2) {
                o0 = sf_csc_u8((x0 * k[3] + x1 * k[4] + x2 * k[5]) + 16.0f);
                if (a == b && a == c) {
                    o1 = o2 = 128;
                } else {
                    o1 = sf_csc_u8((x0 * k[6] + x1 * k[7] + x2 * k[8]) + 128.0f);
                    o2 = sf_csc_u8((x0 * k[9] + x1 * k[10] + x2 * k[11]) + 128.0f);
                }
            } else if (mode == 4) {
                o0 = sf_csc_u8(x0 * k[17] + 16.0f);
                o1 = o2 = 128;
            } else if (mode == 5) {
                o0 = sf_csc_u8((x0 - 16.0f) * k[18]);
            } else if (mode == 6) {
                const float ty = k[12] * (x0 - 16.0f);
                const float tb = x1 - 128.0f, tr = x2 - 128.0f;
                o0 = sf_csc_u8(ty + k[13] * tr);
                o1 = sf_csc_u8(ty - k[14] * tr - k[15] * tb);
                o2 = sf_csc_u8(ty + k[16] * tb);
            }
            if (cout == 1) {
                d[0] = o0;
            } else {
                d[0] = rev_out ? o2 : o0;
                d[1] = o1;
                d[2] = rev_out ? o0 : o2;
            }
        }
    }
}
