/* selection_log.c — the one log line per (layer kind, scheme) that DESIGN.md asks for: the chosen
 * kernel, how many layers use it (and how many of those are fused q/k/v or gate/up layers) and who
 * asked for it, then every refused or filtered candidate with its reason. Warnings of the
 * selection (fallbacks, overrides) are logged just before. */
#include <stdio.h>
#include <string.h>

#include "registry/registry.h"
#include "util/log.h"

const char *qs_candidate_status_name(qs_candidate_status s)
{
    switch (s) {
    case QS_CAND_CHOSEN: return "chosen";
    case QS_CAND_PASSED: return "passed";
    case QS_CAND_FILTERED: return "filtered";
    default: return "refused";
    }
}

char *qs_selection_format(const qs_selection *sel, int n_layers, char *buf, size_t cap)
{
    return qs_selection_format_fused(sel, n_layers, 0, buf, cap);
}

char *qs_selection_format_fused(const qs_selection *sel, int n_layers, int n_fused, char *buf, size_t cap)
{
    char fused[48] = "";
    if (n_fused > 0)
        snprintf(fused, sizeof fused, ", %d of them fused", n_fused);
    size_t len = (size_t)snprintf(buf, cap, "%s %s (%d layer%s%s): %s", qs_layer_kind_name(sel->kind),
                                  qs_scheme_name(sel->scheme), n_layers, n_layers == 1 ? "" : "s", fused,
                                  sel->kernel ? sel->kernel->name : "no kernel");
    if (len < cap) {
        if (!strcmp(sel->requested, "auto"))
            len += (size_t)snprintf(buf + len, cap - len, " [auto]");
        else if (!strcmp(sel->used, "auto"))
            len += (size_t)snprintf(buf + len, cap - len, " [auto; %s=%s not applied]", sel->requested_by,
                                    sel->requested);
        else
            len += (size_t)snprintf(buf + len, cap - len, " [%s=%s]", sel->requested_by, sel->requested);
    }
    int refused = 0;
    for (int i = 0; i < sel->n_candidates && len < cap; i++) {
        const qs_candidate *c = &sel->candidates[i];
        if (c->status != QS_CAND_REFUSED && c->status != QS_CAND_FILTERED)
            continue;
        int rl = (int)strlen(c->reason);
        if (rl > 0 && c->reason[rl - 1] == '.')
            rl--; /* sentences joined by ';', one period at the end of the line */
        len += (size_t)snprintf(buf + len, cap - len, "%s %s: %.*s", refused++ ? ";" : "; refused:", c->name, rl,
                                c->reason);
    }
    if (refused && len < cap)
        snprintf(buf + len, cap - len, ".");
    return buf;
}

void qs_selection_log(const qs_selection *sel, qs_layer_kind kind, qs_scheme scheme, int n_layers)
{
    qs_selection_log_fused(sel, kind, scheme, n_layers, 0);
}

void qs_selection_log_fused(const qs_selection *sel, qs_layer_kind kind, qs_scheme scheme, int n_layers, int n_fused)
{
    for (int i = 0; i < sel->n_warnings; i++)
        qs_warn("%s", sel->warnings[i]);
    if (sel->kind != kind || sel->scheme != scheme)
        qs_warn("kernel selection log: the selection is for %s %s, not %s %s", qs_layer_kind_name(sel->kind),
                qs_scheme_name(sel->scheme), qs_layer_kind_name(kind), qs_scheme_name(scheme));
    char line[2048];
    qs_selection_format_fused(sel, n_layers, n_fused, line, sizeof line);
    if (sel->kernel)
        qs_info("kernel %s", line);
    else
        qs_error("kernel %s", line);
}
