/* projection_fusion.c — the fusion plan shared by the model loader and `qserve backends` (see
 * projection_fusion.h): the exact-fusion rules of quant/projection_fusion_exact.c, checked against every
 * linear kernel the registry holds, and the summary both of them print. */
#include "model/projection_fusion.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "registry/registry.h"

bool qs_projection_fusion_disabled_by_env(void)
{
    const char *v = getenv("QSERVE_NO_FUSE");
    return v && *v && strcmp(v, "0") && strcasecmp(v, "false") && strcasecmp(v, "no");
}

void qs_projection_fusion_name(const char *layer_prefix, qs_fusion_kind kind, char *out, size_t cap)
{
    snprintf(out, cap, "%s.%s", layer_prefix, kind == QS_FUSION_QKV ? "self_attn.qkv_proj" : "mlp.gate_up_proj");
}

/* Every linear kernel of the platform serving the scheme that can run all the parts must run the
 * fused layer too. Whether the device supports a kernel is not asked: the plan must not depend on
 * which GPU of a platform runs it, and `qserve backends` plans for assumed devices. */
static int kernels_keep_fused(const qs_linear_desc *const *parts, int n, const qs_linear_desc *fused,
                              qs_platform platform, char *why, size_t cap)
{
    int count;
    const qs_kernel *const *all = qs_registry_kernels(&count);
    for (int i = 0; i < count; i++) {
        const qs_kernel *k = all[i];
        if (!k || k->kind != QS_KIND_LINEAR || k->platform != platform || !(k->schemes & (1u << fused->scheme)) ||
            !k->can_implement_linear)
            continue;
        char reason[QS_REASON_MAX] = "";
        bool runs_parts = true;
        for (int j = 0; j < n && runs_parts; j++)
            runs_parts = k->can_implement_linear(parts[j], reason, sizeof reason) != 0;
        if (!runs_parts)
            continue;
        reason[0] = '\0';
        if (!k->can_implement_linear(fused, reason, sizeof reason)) {
            snprintf(why, cap, "the %s kernel runs the separate projections but not the fused layer: %s", k->name,
                     reason[0] ? reason : "no reason given.");
            return 0;
        }
    }
    return 1;
}

qs_fuse_verdict qs_projection_fusion_plan(const qs_linear_desc *const *parts, int n, const char *name,
                                          qs_platform platform, qs_fused_linear *f, char *why, size_t cap)
{
    qs_fuse_verdict v = qs_linear_fuse_plan(parts, n, name, true, f, why, cap);
    if (v == QS_FUSE_NO || kernels_keep_fused(parts, n, &f->desc, platform, why, cap))
        return v;
    if (!f->tensor_scales_to_channel)
        return QS_FUSE_NO;
    /* Spreading per-tensor scales into a per-channel vector lost a kernel: plan again keeping
     * per-tensor scales, which fuses only if they agree. */
    v = qs_linear_fuse_plan(parts, n, name, false, f, why, cap);
    if (v == QS_FUSE_NO || kernels_keep_fused(parts, n, &f->desc, platform, why, cap))
        return v;
    return QS_FUSE_NO;
}

void qs_fusion_summary_add(qs_fusion_summary *s, qs_fusion_kind kind, qs_fuse_verdict v, const qs_fused_linear *f,
                           const char *name, const char *why)
{
    s->groups[kind]++;
    if (v != QS_FUSE_NO) {
        s->fused[kind]++;
        s->if_scales_agree += v == QS_FUSE_IF_SCALES_AGREE;
        s->scales_spread += f && f->tensor_scales_to_channel;
    } else if (!s->first_refusal[0] && why && why[0]) {
        snprintf(s->first_refusal, sizeof s->first_refusal, "%s: %s", name, why);
    }
}

char *qs_fusion_summary_format(const qs_fusion_summary *s, char *buf, size_t cap)
{
    if (s->disabled) {
        snprintf(buf, cap, "off (QSERVE_NO_FUSE=1): q/k/v and gate/up run as separate linear layers");
        return buf;
    }
    int nq = s->groups[QS_FUSION_QKV], ng = s->groups[QS_FUSION_GATE_UP];
    size_t len = (size_t)snprintf(buf, cap, "q/k/v -> qkv_proj in %d of %d layer%s", s->fused[QS_FUSION_QKV], nq,
                                  nq == 1 ? "" : "s");
    if (ng && len < cap)
        len += (size_t)snprintf(buf + len, cap - len, ", gate/up -> gate_up_proj in %d of %d dense layer%s",
                                s->fused[QS_FUSION_GATE_UP], ng, ng == 1 ? "" : "s");
    if (s->scales_spread && len < cap)
        len += (size_t)snprintf(buf + len, cap - len, "; %d with per-tensor weight scales spread into per-channel ones",
                                s->scales_spread);
    if (s->if_scales_agree && len < cap)
        len += (size_t)snprintf(buf + len, cap - len,
                                "; %d of these only if their scalar scales agree (values not read here)",
                                s->if_scales_agree);
    if (s->first_refusal[0] && len < cap)
        snprintf(buf + len, cap - len, "; kept separate: %s", s->first_refusal);
    return buf;
}
