/* projection_fusion.h — which projections of a decoder layer run as one linear layer: q/k/v as
 * `self_attn.qkv_proj` and a dense MLP's gate/up as `mlp.gate_up_proj` (vLLM's names), so a decode
 * step runs one GEMM of q+k+v rows and one of 2 x intermediate rows instead of five. MoE experts
 * are never fused here. Projection fusion is three files of one name: this plan
 * (projection_fusion.c), the loader's fusing (projection_fusion_load.c) and exactness with the
 * building of the fused tensors (quant/projection_fusion_exact.h). On top of exactness the registry
 * is asked: a fusion is made only if no kernel of the device's platform built into this binary that
 * can run all the parts refuses the fused layer (per-tensor FP8 scales spread into a per-channel
 * vector included), so fusing never takes a kernel away from a layer. The model loader
 * (projection_fusion_load.c) and `qserve backends` plan through here, so they agree for a device.
 * QSERVE_NO_FUSE=1 turns fusion off. */
#ifndef QS_MODEL_PROJECTION_FUSION_H
#define QS_MODEL_PROJECTION_FUSION_H

#include <stdbool.h>
#include <stddef.h>

#include "core/kernel.h"
#include "quant/projection_fusion_exact.h"

typedef enum { QS_FUSION_QKV, QS_FUSION_GATE_UP, QS_FUSION_KINDS } qs_fusion_kind;

/* True when QSERVE_NO_FUSE is set to anything but "", "0", "false" or "no". */
bool qs_projection_fusion_disabled_by_env(void);
/* "model.layers.3" -> "model.layers.3.self_attn.qkv_proj" / "model.layers.3.mlp.gate_up_proj". */
void qs_projection_fusion_name(const char *layer_prefix, qs_fusion_kind kind, char *out, size_t cap);
/* qs_linear_fuse_plan, with per-channel scales allowed exactly when every linear kernel of
 * `platform` that runs the parts also runs the per-channel fused layer, and refused when any such
 * kernel cannot run the fused layer at all. */
qs_fuse_verdict qs_projection_fusion_plan(const qs_linear_desc *const *parts, int n, const char *name,
                                          qs_platform platform, qs_fused_linear *f, char *why, size_t cap);

/* What a model's fusion came to, for the load log, `qserve backends` and tests. */
typedef struct qs_fusion_summary {
    bool disabled;                 /* QSERVE_NO_FUSE=1 (or the config) */
    int fused[QS_FUSION_KINDS];    /* groups that run as one layer */
    int groups[QS_FUSION_KINDS];   /* groups there are: every layer's q/k/v, dense layers' gate/up */
    int if_scales_agree;           /* of the fused, those resting on scalar scales not read (headers only) */
    int scales_spread;             /* of the fused, those whose differing per-tensor FP8 scales became per-channel */
    char first_refusal[400];       /* "model.layers.0.self_attn.qkv_proj: the static input scales differ ..." */
} qs_fusion_summary;

/* Counts one group's verdict on plan f (IF_SCALES_AGREE counts as fused); keeps the first
 * refusal's reason. */
void qs_fusion_summary_add(qs_fusion_summary *s, qs_fusion_kind kind, qs_fuse_verdict v, const qs_fused_linear *f,
                           const char *name, const char *why);
/* "q/k/v -> qkv_proj in 2 of 2 layers, gate/up -> gate_up_proj in 0 of 2 layers (model.layers.0...: why)";
 * returns buf. */
char *qs_fusion_summary_format(const qs_fusion_summary *s, char *buf, size_t cap);

#endif
