/* kernel_choice.c — the defaults of qs_kernel_config and the questions the registry asks of it
 * (kernel_choice.h). */
#include "registry/kernel_choice.h"

#include <stdio.h>
#include <string.h>

void qs_kernel_config_defaults(qs_kernel_config *kc)
{
    memset(kc, 0, sizeof *kc);
    snprintf(kc->linear_backend, sizeof kc->linear_backend, "auto");
    snprintf(kc->moe_backend, sizeof kc->moe_backend, "auto");
}

bool qs_kernel_config_is_disabled(const qs_kernel_config *kc, const char *name)
{
    for (int i = 0; i < kc->n_disabled; i++)
        if (!strcmp(kc->disabled_kernels[i], name))
            return true;
    return false;
}

const char *qs_kernel_config_backend_for(const qs_kernel_config *kc, bool moe, qs_scheme scheme)
{
    if (moe)
        return kc->moe_backend[0] ? kc->moe_backend : "auto";
    if ((int)scheme >= 0 && scheme < QS_SCHEME_COUNT && kc->linear_backend_per_quant[scheme][0])
        return kc->linear_backend_per_quant[scheme];
    return kc->linear_backend[0] ? kc->linear_backend : "auto";
}
