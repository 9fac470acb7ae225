/* backends_report.c — renders `qserve backends` (see backends_report.h): the registry itself
 * (kernels built in, priority lists) when no model is given, then for each layer kind and scheme
 * the candidates in priority order with their status and reason and the kernel chosen, and which
 * q/k/v and gate/up projections run fused. The text and JSON renderings carry the same facts;
 * JSON is built with cJSON. */
#include "cli/backends_report.h"

#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"

static void schemes_text(uint32_t schemes, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int s = 0; s < QS_SCHEME_COUNT && len < cap; s++)
        if (schemes & (1u << s))
            len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", qs_scheme_name((qs_scheme)s));
}

static void kernel_config_text(const qs_kernel_config *kc, char *buf, size_t cap)
{
    size_t len = (size_t)snprintf(buf, cap, "linear_backend=%s moe_backend=%s", kc->linear_backend, kc->moe_backend);
    for (int s = 0; s < QS_SCHEME_COUNT && len < cap; s++)
        if (kc->linear_backend_per_quant[s][0])
            len += (size_t)snprintf(buf + len, cap - len, " linear_backend_per_quant[%s]=%s",
                                    qs_scheme_name((qs_scheme)s), kc->linear_backend_per_quant[s]);
    if (kc->batch_invariant && len < cap)
        len += (size_t)snprintf(buf + len, cap - len, " batch_invariant=true");
    for (int i = 0; i < kc->n_disabled && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? "," : " disabled=", kc->disabled_kernels[i]);
}

static void print_registry(FILE *out)
{
    int n;
    const qs_kernel *const *all = qs_registry_kernels(&n);
    fprintf(out, "kernels built into this binary:\n");
    fprintf(out, "  %-10s %-8s %-7s %-16s %s\n", "name", "platform", "kind", "batch-invariant", "schemes");
    for (int i = 0; i < n; i++) {
        char schemes[160];
        schemes_text(all[i]->schemes, schemes, sizeof schemes);
        fprintf(out, "  %-10s %-8s %-7s %-16s %s\n", all[i]->name, qs_platform_name(all[i]->platform),
                qs_layer_kind_name(all[i]->kind), all[i]->batch_invariant ? "yes" : "no", schemes);
    }
    fprintf(out, "\npriority lists (first that passes wins; * = not built into this binary):\n");
    for (int p = QS_PLATFORM_CUDA; p >= QS_PLATFORM_CPU; p--)
        for (int k = QS_KIND_LINEAR; k <= QS_KIND_MOE; k++)
            for (int s = 0; s < QS_SCHEME_COUNT; s++) {
                int c;
                const char *const *l = qs_registry_priority_list((qs_platform)p, (qs_layer_kind)k, (qs_scheme)s, &c);
                fprintf(out, "  %-4s %-6s %-15s", qs_platform_name((qs_platform)p), qs_layer_kind_name((qs_layer_kind)k),
                        qs_scheme_name((qs_scheme)s));
                for (int i = 0; i < c; i++) {
                    bool built = qs_registry_find_for_scheme(l[i], (qs_platform)p, (qs_layer_kind)k, (qs_scheme)s);
                    fprintf(out, "%s%s%s", i ? " -> " : " ", l[i], built ? "" : "*");
                }
                fprintf(out, "\n");
            }
    fprintf(out, "  weight-only schemes (w8a16_fp8, nvfp4_w4a16) accept only: marlin, emulation (reference on CPU)\n");
}

static void print_row(FILE *out, const qs_backends_report *r, const qs_backends_row *row)
{
    const qs_selection *s = &row->sel;
    fprintf(out, "\n%s %s", qs_layer_kind_name(s->kind), qs_scheme_name(s->scheme));
    if (r->model_dir && row->n_fused)
        fprintf(out, ": %d layer%s, %d of them fused (e.g. %s)", row->n_layers, row->n_layers == 1 ? "" : "s",
                row->n_fused, row->first_layer);
    else if (r->model_dir)
        fprintf(out, ": %d layer%s (e.g. %s)", row->n_layers, row->n_layers == 1 ? "" : "s", row->first_layer);
    if (!strcmp(s->requested, "auto") || !s->requested[0])
        fprintf(out, ", backend auto\n");
    else
        fprintf(out, ", backend %s from %s\n", s->requested, s->requested_by);
    for (int i = 0; i < s->n_warnings; i++)
        fprintf(out, "  warning: %s\n", s->warnings[i]);
    for (int i = 0; i < s->n_candidates; i++) {
        const qs_candidate *c = &s->candidates[i];
        if (c->reason[0])
            fprintf(out, "  %d. %-10s %-9s %s\n", i + 1, c->name, qs_candidate_status_name(c->status), c->reason);
        else
            fprintf(out, "  %d. %-10s %s\n", i + 1, c->name, qs_candidate_status_name(c->status));
    }
    if (row->failed) {
        fprintf(out, "  -> no kernel: %s\n", row->error);
        return;
    }
    const qs_plan *p = &row->plan;
    if (p->n_rows > 1)
        fprintf(out, "  -> %s; steps of at most %lld tokens on %s (per-step dispatch, a second weight copy)\n",
                s->kernel->name, (long long)p->rows[0].max_tokens, p->rows[0].kernel->name);
    else
        fprintf(out, "  -> %s\n", s->kernel->name);
    fprintf(out, "  plan (tokens per step):");
    for (int i = 0; i < p->n_rows; i++) {
        long long from = i ? p->rows[i - 1].max_tokens + 1 : 1;
        if (p->rows[i].max_tokens == INT64_MAX)
            fprintf(out, "%s %lld+ %s", i ? "," : "", from, p->rows[i].kernel->name);
        else
            fprintf(out, "%s %lld-%lld %s", i ? "," : "", from, (long long)p->rows[i].max_tokens, p->rows[i].kernel->name);
    }
    if (p->n_rows > 1 && row->fewest_small_tokens && row->fewest_small_tokens < p->rows[0].max_tokens)
        fprintf(out, " (layers with one weight and one input scale: %s up to %d)", p->rows[0].kernel->name,
                row->fewest_small_tokens);
    fprintf(out, "\n");
}

void qs_backends_print_text(FILE *out, const qs_backends_report *r)
{
    char dev[256], kc[1024];
    qs_device_describe(r->dev, dev, sizeof dev);
    kernel_config_text(r->kc, kc, sizeof kc);
    if (r->model_dir)
        fprintf(out, "model: %s (%s; %s)\n", r->model_dir, r->architecture, r->quantization);
    else
        print_registry(out);
    fprintf(out, "%sdevice: %s\nkernel config: %s\n", r->model_dir ? "" : "\n", dev, kc);
    if (r->model_dir && r->fusion) {
        char fusion[1024];
        fprintf(out, "fused projections: %s\n", qs_fusion_summary_format(r->fusion, fusion, sizeof fusion));
    }
    if (!r->model_dir)
        fprintf(out, "\nselection on this device for every layer kind and scheme (no model given):\n");
    for (int i = 0; i < r->n_rows; i++)
        print_row(out, r, &r->rows[i]);
}

static cJSON *schemes_json(uint32_t schemes)
{
    cJSON *a = cJSON_CreateArray();
    for (int s = 0; s < QS_SCHEME_COUNT; s++)
        if (schemes & (1u << s))
            cJSON_AddItemToArray(a, cJSON_CreateString(qs_scheme_name((qs_scheme)s)));
    return a;
}

static cJSON *registry_json(void)
{
    cJSON *reg = cJSON_CreateObject();
    cJSON *kernels = cJSON_AddArrayToObject(reg, "kernels");
    int n;
    const qs_kernel *const *all = qs_registry_kernels(&n);
    for (int i = 0; i < n; i++) {
        cJSON *k = cJSON_CreateObject();
        cJSON_AddStringToObject(k, "name", all[i]->name);
        cJSON_AddStringToObject(k, "platform", qs_platform_name(all[i]->platform));
        cJSON_AddStringToObject(k, "kind", qs_layer_kind_name(all[i]->kind));
        cJSON_AddItemToObject(k, "schemes", schemes_json(all[i]->schemes));
        cJSON_AddBoolToObject(k, "batch_invariant", all[i]->batch_invariant);
        cJSON_AddItemToArray(kernels, k);
    }
    cJSON *lists = cJSON_AddObjectToObject(reg, "priority_lists");
    for (int p = QS_PLATFORM_CUDA; p >= QS_PLATFORM_CPU; p--) {
        cJSON *plat = cJSON_AddObjectToObject(lists, qs_platform_name((qs_platform)p));
        for (int k = QS_KIND_LINEAR; k <= QS_KIND_MOE; k++) {
            cJSON *kind = cJSON_AddObjectToObject(plat, qs_layer_kind_name((qs_layer_kind)k));
            for (int s = 0; s < QS_SCHEME_COUNT; s++) {
                int c;
                const char *const *l = qs_registry_priority_list((qs_platform)p, (qs_layer_kind)k, (qs_scheme)s, &c);
                cJSON *arr = cJSON_AddArrayToObject(kind, qs_scheme_name((qs_scheme)s));
                for (int i = 0; i < c; i++) {
                    cJSON *e = cJSON_CreateObject();
                    cJSON_AddStringToObject(e, "name", l[i]);
                    cJSON_AddBoolToObject(e, "built",
                                          qs_registry_find_for_scheme(l[i], (qs_platform)p, (qs_layer_kind)k,
                                                                      (qs_scheme)s) != NULL);
                    cJSON_AddItemToArray(arr, e);
                }
            }
        }
    }
    return reg;
}

static cJSON *device_json(const qs_device_caps *d)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "platform", qs_platform_name(d->platform));
    cJSON_AddStringToObject(o, "name", d->name);
    if (d->platform == QS_PLATFORM_CUDA) {
        char cc[16];
        snprintf(cc, sizeof cc, "%d.%d", d->cc_major, d->cc_minor);
        cJSON_AddStringToObject(o, "compute_capability", cc);
        cJSON_AddNumberToObject(o, "sm_count", d->sm_count);
    }
    cJSON_AddNumberToObject(o, "memory_bytes", (double)d->memory_bytes);
    cJSON_AddBoolToObject(o, "assumed", d->assumed);
    return o;
}

static cJSON *kernel_config_json(const qs_kernel_config *kc)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "linear_backend", kc->linear_backend);
    cJSON_AddStringToObject(o, "moe_backend", kc->moe_backend);
    cJSON *pq = cJSON_AddObjectToObject(o, "linear_backend_per_quant");
    for (int s = 0; s < QS_SCHEME_COUNT; s++)
        if (kc->linear_backend_per_quant[s][0])
            cJSON_AddStringToObject(pq, qs_scheme_name((qs_scheme)s), kc->linear_backend_per_quant[s]);
    cJSON_AddBoolToObject(o, "batch_invariant", kc->batch_invariant);
    cJSON *dis = cJSON_AddArrayToObject(o, "disabled_kernels");
    for (int i = 0; i < kc->n_disabled; i++)
        cJSON_AddItemToArray(dis, cJSON_CreateString(kc->disabled_kernels[i]));
    return o;
}

static cJSON *fusion_json(const qs_fusion_summary *f)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "enabled", !f->disabled);
    cJSON_AddNumberToObject(o, "qkv_fused", f->fused[QS_FUSION_QKV]);
    cJSON_AddNumberToObject(o, "qkv_layers", f->groups[QS_FUSION_QKV]);
    cJSON_AddNumberToObject(o, "gate_up_fused", f->fused[QS_FUSION_GATE_UP]);
    cJSON_AddNumberToObject(o, "gate_up_layers", f->groups[QS_FUSION_GATE_UP]);
    cJSON_AddNumberToObject(o, "if_scales_agree", f->if_scales_agree);
    cJSON_AddNumberToObject(o, "scales_spread_per_channel", f->scales_spread);
    if (f->first_refusal[0])
        cJSON_AddStringToObject(o, "kept_separate", f->first_refusal);
    return o;
}

static cJSON *row_json(const qs_backends_report *r, const qs_backends_row *row)
{
    const qs_selection *s = &row->sel;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kind", qs_layer_kind_name(s->kind));
    cJSON_AddStringToObject(o, "scheme", qs_scheme_name(s->scheme));
    if (r->model_dir) {
        cJSON_AddNumberToObject(o, "layers", row->n_layers);
        cJSON_AddNumberToObject(o, "fused_layers", row->n_fused);
        cJSON_AddStringToObject(o, "example_layer", row->first_layer);
    }
    cJSON_AddStringToObject(o, "requested", s->requested[0] ? s->requested : "auto");
    cJSON_AddStringToObject(o, "requested_by", s->requested_by[0] ? s->requested_by : "auto");
    cJSON_AddStringToObject(o, "applied", s->used[0] ? s->used : "auto");
    if (row->failed) {
        cJSON_AddNullToObject(o, "chosen");
        cJSON_AddStringToObject(o, "error", row->error);
    } else {
        cJSON_AddStringToObject(o, "chosen", s->kernel->name);
        const qs_plan *p = &row->plan;
        if (p->n_rows > 1 && !strcmp(p->rows[0].kernel->name, "marlin"))
            cJSON_AddNumberToObject(o, "marlin_up_to_tokens", (double)p->rows[0].max_tokens);
        cJSON *plan = cJSON_AddArrayToObject(o, "plan");
        for (int i = 0; i < p->n_rows; i++) {
            cJSON *pr = cJSON_CreateObject();
            if (p->rows[i].max_tokens == INT64_MAX)
                cJSON_AddNullToObject(pr, "max_tokens");
            else
                cJSON_AddNumberToObject(pr, "max_tokens", (double)p->rows[i].max_tokens);
            cJSON_AddStringToObject(pr, "kernel", p->rows[i].kernel->name);
            cJSON_AddItemToArray(plan, pr);
        }
    }
    cJSON *w = cJSON_AddArrayToObject(o, "warnings");
    for (int i = 0; i < s->n_warnings; i++)
        cJSON_AddItemToArray(w, cJSON_CreateString(s->warnings[i]));
    cJSON *cands = cJSON_AddArrayToObject(o, "candidates");
    for (int i = 0; i < s->n_candidates; i++) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "name", s->candidates[i].name);
        cJSON_AddStringToObject(c, "status", qs_candidate_status_name(s->candidates[i].status));
        cJSON_AddBoolToObject(c, "built", s->candidates[i].kernel != NULL);
        if (s->candidates[i].reason[0])
            cJSON_AddStringToObject(c, "reason", s->candidates[i].reason);
        cJSON_AddItemToArray(cands, c);
    }
    return o;
}

int qs_backends_print_json(FILE *out, const qs_backends_report *r, qs_err *err)
{
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return qs_errf(err, "out of memory building JSON");
    if (r->model_dir) {
        cJSON *m = cJSON_AddObjectToObject(root, "model");
        cJSON_AddStringToObject(m, "path", r->model_dir);
        cJSON_AddStringToObject(m, "architecture", r->architecture);
        cJSON_AddStringToObject(m, "quantization", r->quantization);
        if (r->fusion)
            cJSON_AddItemToObject(root, "fusion", fusion_json(r->fusion));
    } else {
        cJSON_AddItemToObject(root, "registry", registry_json());
    }
    cJSON_AddItemToObject(root, "device", device_json(r->dev));
    cJSON_AddItemToObject(root, "kernel_config", kernel_config_json(r->kc));
    cJSON *rows = cJSON_AddArrayToObject(root, "layer_types");
    for (int i = 0; i < r->n_rows; i++)
        cJSON_AddItemToArray(rows, row_json(r, &r->rows[i]));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return qs_errf(err, "out of memory printing JSON");
    fprintf(out, "%s\n", text);
    free(text);
    return 0;
}
