/* rope.c — the rotary-embedding frequencies of a model: theta^(-2i/head_dim) per pair, and the
 * Llama-3.1 rescaling (rope_type "llama3": long wavelengths divided by factor, short ones kept,
 * a smooth blend between low_freq_factor and high_freq_factor), as transformers computes them.
 * The rotation itself is the ops' rope (rotate-half layout). */
#include <math.h>

#include "model/model_internal.h"

void qs_rope_inv_freq(const qs_model_config *mc, float *inv_freq)
{
    int half = mc->head_dim / 2;
    for (int i = 0; i < half; i++) {
        /* float32 as transformers: base ** (arange(0, dim, 2).float() / dim) */
        float expo = (float)(2 * i) / (float)mc->head_dim;
        float f = 1.0f / powf((float)mc->rope_theta, expo);
        if (mc->rope_type == QS_ROPE_LLAMA3 && mc->rope_factor > 0) {
            double old_ctx = mc->rope_original_max_position > 0 ? mc->rope_original_max_position : 8192;
            double low = mc->rope_low_freq_factor > 0 ? mc->rope_low_freq_factor : 1.0;
            double high = mc->rope_high_freq_factor > 0 ? mc->rope_high_freq_factor : 4.0;
            double low_wavelen = old_ctx / low, high_wavelen = old_ctx / high;
            double wavelen = 2 * M_PI / f;
            if (wavelen > low_wavelen) {
                f = (float)(f / mc->rope_factor);
            } else if (wavelen >= high_wavelen && high > low) { /* (Llama 4 Scout: low == high, no blend) */
                double smooth = (old_ctx / wavelen - low) / (high - low);
                f = (float)((1 - smooth) * f / mc->rope_factor + smooth * f);
            }
        }
        inv_freq[i] = f;
    }
}
