/* model_weights.c — finds a model's tensors by their Hugging Face names, checks their shapes
 * against config.json, uploads the small float weights (norms, embeddings, biases) through the
 * ops, and describes each linear layer for the kernels. Every failure names the tensor. */
#include "model/model_weights.h"

#include "quant/linear_desc.h"

#include <stdio.h>
#include <string.h>

const qs_tensor *qs_weights_find(const qs_checkpoint *ck, const char *name, int64_t d0, int64_t d1, qs_err *err)
{
    const qs_tensor *t = qs_checkpoint_find(ck, name);
    if (!t) {
        qs_errf(err, "tensor %s is missing from the checkpoint", name);
        return NULL;
    }
    int want_dims = d1 > 0 ? 2 : 1;
    if (t->ndim != want_dims || t->shape[0] != d0 || (want_dims == 2 && t->shape[1] != d1)) {
        char got[96] = "";
        size_t o = 0;
        for (int i = 0; i < t->ndim && o < sizeof(got) - 24; i++)
            o += (size_t)snprintf(got + o, sizeof(got) - o, i ? ", %lld" : "%lld", (long long)t->shape[i]);
        if (want_dims == 2)
            qs_errf(err, "tensor %s has shape [%s], config.json implies [%lld, %lld]", name, got, (long long)d0,
                    (long long)d1);
        else
            qs_errf(err, "tensor %s has shape [%s], config.json implies [%lld]", name, got, (long long)d0);
        return NULL;
    }
    return t;
}

void *qs_weights_upload(const qs_ops *ops, const qs_checkpoint *ck, const char *name, int64_t d0, int64_t d1,
                        qs_err *err)
{
    const qs_tensor *t = qs_weights_find(ck, name, d0, d1, err);
    if (!t)
        return NULL;
    return ops->upload_tensor(t, err);
}

int qs_weights_linear_desc(const qs_checkpoint *ck, const qs_quant_config *qc, const char *module, int64_t n,
                           int64_t k, bool bias, qs_linear_desc *d, qs_err *err)
{
    if (qs_linear_desc_build(ck, qc, module, d, err) != 0)
        return -1;
    if (d->n != n || d->k != k)
        return qs_errf(err, "%s: weight is [%lld, %lld], config.json implies [%lld, %lld]", module, (long long)d->n,
                       (long long)d->k, (long long)n, (long long)k);
    if (bias && !d->bias)
        return qs_errf(err, "tensor %s.bias is missing (config.json says the projection has a bias)", module);
    if (!bias)
        d->bias = NULL; /* transformers ignores a bias the config does not declare */
    return 0;
}
