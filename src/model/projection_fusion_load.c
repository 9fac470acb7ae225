/* projection_fusion_load.c — fuses a loaded model's projections (qs_model_fuse_projections, see
 * model_internal.h and projection_fusion.h): for each decoder layer, q/k/v become qkv_proj and a
 * dense MLP's gate/up become gate_up_proj when the plan says the result is exact. The fused layer
 * owns its concatenated tensors until its kernel has prepared them (model_load.c drops them then);
 * the parts stay in the layer only as descriptions and are never prepared. Runs after online FP8
 * quantization, whose per-channel rows concatenate like a checkpoint's, and before biases are
 * uploaded, so a fused layer uploads one concatenated bias. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_internal.h"
#include "util/log.h"

/* Whether the device's ops can consume a fused output of this kind. */
static bool ops_support(const qs_ops *ops, qs_fusion_kind kind)
{
    return kind == QS_FUSION_QKV ? ops->split_qkv != NULL : ops->swiglu_gate_up != NULL;
}

static int fuse_group(qs_model *m, const char *layer_prefix, qs_fusion_kind kind, qs_linear *const *parts, int n,
                      qs_linear *out, bool *fused, qs_err *err)
{
    qs_fusion_summary *s = &m->fusion;
    char name[160], why[QS_REASON_MAX * 2] = "";
    qs_projection_fusion_name(layer_prefix, kind, name, sizeof name);
    if (s->disabled) {
        s->groups[kind]++;
        return 0;
    }
    if (!ops_support(m->ops, kind)) {
        snprintf(why, sizeof why, "the %s ops have no %s.", m->ops->name,
                 kind == QS_FUSION_QKV ? "split_qkv" : "swiglu_gate_up");
        qs_fusion_summary_add(s, kind, QS_FUSE_NO, NULL, name, why);
        return 0;
    }
    const qs_linear_desc *descs[QS_FUSE_MAX_PARTS];
    for (int i = 0; i < n; i++)
        descs[i] = &parts[i]->desc;
    qs_fused_linear *f = calloc(1, sizeof *f);
    if (!f)
        return qs_errf(err, "out of memory fusing %s", name);
    qs_fuse_verdict v = qs_projection_fusion_plan(descs, n, name, m->dev.platform, f, why, sizeof why);
    if (v == QS_FUSE_IF_SCALES_AGREE) { /* the data is loaded, so this cannot happen; stay safe */
        snprintf(why, sizeof why, "a scale needed to decide was not loaded.");
        v = QS_FUSE_NO;
    }
    qs_fusion_summary_add(s, kind, v, f, name, why);
    if (v == QS_FUSE_NO) {
        qs_debug("%s stays separate: %s", name, why);
        free(f);
        return 0;
    }
    if (qs_linear_fuse_materialize(descs, n, f, err)) {
        free(f);
        return -1;
    }
    out->desc = f->desc;
    out->fused = f;
    *fused = true;
    /* The online FP8 copies of the parts now live, concatenated, in the fused layer. */
    for (int i = 0; i < n; i++) {
        if (!parts[i]->online)
            continue;
        qs_online_fp8_free(parts[i]->online);
        free(parts[i]->online);
        parts[i]->online = NULL;
        parts[i]->desc.weight = parts[i]->desc.weight_scale = NULL;
    }
    return 0;
}

int qs_model_fuse_projections(qs_model *m, bool disabled, qs_err *err)
{
    qs_fusion_summary *s = &m->fusion;
    memset(s, 0, sizeof *s);
    s->disabled = disabled;
    for (int i = 0; i < m->mc.num_layers; i++) {
        qs_layer *L = &m->layers[i];
        char prefix[64];
        snprintf(prefix, sizeof prefix, "model.layers.%d", i);
        qs_linear *qkv[] = {&L->q, &L->k, &L->v};
        if (fuse_group(m, prefix, QS_FUSION_QKV, qkv, 3, &L->qkv, &L->qkv_fused, err))
            return -1;
        if (L->is_moe)
            continue; /* experts run on the MoE kernel; nothing to fuse */
        qs_linear *gate_up[] = {&L->gate, &L->up};
        if (fuse_group(m, prefix, QS_FUSION_GATE_UP, gate_up, 2, &L->gate_up, &L->gate_up_fused, err))
            return -1;
    }
    char line[1024];
    qs_info("fused projections: %s", qs_fusion_summary_format(s, line, sizeof line));
    return 0;
}
