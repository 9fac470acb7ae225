/* kernel_config.c — fills struct qs_kernel_config (registry/kernel_choice.h) from the environment
 * (QSERVE_DISABLED_KERNELS, QSERVE_BATCH_INVARIANT), the --kernel-config JSON object (cJSON) and
 * the single-key setters that the CLI, YAML and JSON all go through, so every source normalises
 * and validates names alike. */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "registry/registry.h"

/* Copies a normalised backend name into dst after checking it against the registry. */
static int set_backend(char dst[QS_NAME_MAX], const char *value, qs_layer_kind kind, const char *source, qs_err *err)
{
    if (!value)
        return qs_errf(err, "%s: expected a backend name", source);
    if (strlen(value) >= QS_NAME_MAX)
        return qs_errf(err, "%s: backend name '%.32s...' is too long", source, value);
    char norm[QS_NAME_MAX];
    snprintf(norm, sizeof norm, "%s", value);
    qs_normalize_name(norm);
    if (qs_registry_check_backend_name(norm, kind, source, err))
        return -1;
    memcpy(dst, norm, QS_NAME_MAX);
    return 0;
}

int qs_kernel_config_add_disabled(qs_kernel_config *kc, const char *list, const char *source, qs_err *err)
{
    const char *p = list ? list : "";
    while (*p) {
        while (*p == ',' || *p == ' ')
            p++;
        size_t len = strcspn(p, ", ");
        if (!len)
            break;
        if (len >= QS_NAME_MAX)
            return qs_errf(err, "%s: kernel name '%.*s...' is too long", source, 32, p);
        char name[QS_NAME_MAX];
        memcpy(name, p, len);
        name[len] = '\0';
        qs_normalize_name(name);
        p += len;
        if (qs_registry_check_kernel_name(name, source, err))
            return -1;
        if (qs_kernel_config_is_disabled(kc, name))
            continue;
        if (kc->n_disabled >= QS_MAX_DISABLED)
            return qs_errf(err, "%s: more than %d disabled kernels", source, QS_MAX_DISABLED);
        memcpy(kc->disabled_kernels[kc->n_disabled++], name, QS_NAME_MAX);
    }
    return 0;
}

int qs_kernel_config_apply_env(qs_kernel_config *kc, qs_err *err)
{
    const char *disabled = getenv("QSERVE_DISABLED_KERNELS");
    if (disabled && qs_kernel_config_add_disabled(kc, disabled, "QSERVE_DISABLED_KERNELS", err))
        return -1;
    const char *bi = getenv("QSERVE_BATCH_INVARIANT");
    if (bi && *bi) {
        bool v;
        if (qs_parse_bool(bi, &v))
            return qs_errf(err, "QSERVE_BATCH_INVARIANT: expected 1 or 0 (or true/false), got '%s'", bi);
        kc->batch_invariant = v;
    }
    return 0;
}

int qs_kernel_config_set_per_quant(qs_kernel_config *kc, const char *scheme, const char *backend, qs_err *err)
{
    char key[QS_NAME_MAX];
    snprintf(key, sizeof key, "%s", scheme ? scheme : "");
    qs_normalize_name(key);
    int s = qs_scheme_from_name(key);
    if (s < 0)
        return qs_errf(err, "linear_backend_per_quant: unknown scheme '%s'; qserve's schemes are: %s", key,
                       "bf16, fp8_w8a8, fp8_block_w8a8, w8a16_fp8, nvfp4_w4a4, nvfp4_w4a16");
    char source[96];
    snprintf(source, sizeof source, "linear_backend_per_quant[%s]", key);
    if (!backend || !*backend) { /* null / "" clears the override */
        kc->linear_backend_per_quant[s][0] = '\0';
        return 0;
    }
    return set_backend(kc->linear_backend_per_quant[s], backend, QS_KIND_LINEAR, source, err);
}

static const char *const KERNEL_CONFIG_KEYS = "linear_backend, moe_backend, linear_backend_per_quant, "
                                              "batch_invariant, disabled_kernels";

int qs_kernel_config_set(qs_kernel_config *kc, const char *key_in, const char *value, qs_err *err)
{
    char key[QS_NAME_MAX];
    snprintf(key, sizeof key, "%s", key_in ? key_in : "");
    qs_normalize_name(key);
    if (!strcmp(key, "linear_backend"))
        return set_backend(kc->linear_backend, value, QS_KIND_LINEAR, "linear_backend", err);
    if (!strcmp(key, "moe_backend"))
        return set_backend(kc->moe_backend, value, QS_KIND_MOE, "moe_backend", err);
    if (!strcmp(key, "batch_invariant")) {
        bool v;
        if (qs_parse_bool(value, &v))
            return qs_errf(err, "batch_invariant: expected true or false, got '%s'", value ? value : "");
        kc->batch_invariant = v;
        return 0;
    }
    if (!strcmp(key, "disabled_kernels"))
        return qs_kernel_config_add_disabled(kc, value, "disabled_kernels", err);
    if (!strcmp(key, "linear_backend_per_quant"))
        return qs_errf(err, "linear_backend_per_quant: expected a mapping {scheme: backend}");
    return qs_errf(err, "unknown kernel_config key '%s'; valid keys: %s", key, KERNEL_CONFIG_KEYS);
}

static const char *json_type(const cJSON *v)
{
    if (cJSON_IsString(v))
        return "a string";
    if (cJSON_IsBool(v))
        return "a boolean";
    if (cJSON_IsNumber(v))
        return "a number";
    if (cJSON_IsArray(v))
        return "an array";
    if (cJSON_IsObject(v))
        return "an object";
    return "null";
}

static int apply_json_member(qs_kernel_config *kc, const cJSON *item, qs_err *err)
{
    char key[QS_NAME_MAX];
    snprintf(key, sizeof key, "%s", item->string ? item->string : "");
    qs_normalize_name(key);
    if (!strcmp(key, "linear_backend_per_quant")) {
        if (cJSON_IsNull(item))
            return 0;
        if (!cJSON_IsObject(item))
            return qs_errf(err, "linear_backend_per_quant: expected an object {scheme: backend}, got %s",
                           json_type(item));
        const cJSON *e;
        cJSON_ArrayForEach(e, item)
        {
            if (!cJSON_IsString(e) && !cJSON_IsNull(e))
                return qs_errf(err, "linear_backend_per_quant.%s: expected a backend name, got %s", e->string,
                               json_type(e));
            if (qs_kernel_config_set_per_quant(kc, e->string, cJSON_IsString(e) ? e->valuestring : NULL, err))
                return -1;
        }
        return 0;
    }
    if (!strcmp(key, "batch_invariant")) {
        if (!cJSON_IsBool(item))
            return qs_errf(err, "batch_invariant: expected true or false, got %s", json_type(item));
        kc->batch_invariant = cJSON_IsTrue(item);
        return 0;
    }
    if (!strcmp(key, "disabled_kernels")) {
        if (cJSON_IsString(item))
            return qs_kernel_config_add_disabled(kc, item->valuestring, "disabled_kernels", err);
        if (!cJSON_IsArray(item))
            return qs_errf(err, "disabled_kernels: expected an array of kernel names, got %s", json_type(item));
        const cJSON *e;
        cJSON_ArrayForEach(e, item)
        {
            if (!cJSON_IsString(e))
                return qs_errf(err, "disabled_kernels: expected kernel names, got %s", json_type(e));
            if (qs_kernel_config_add_disabled(kc, e->valuestring, "disabled_kernels", err))
                return -1;
        }
        return 0;
    }
    if (!strcmp(key, "linear_backend") || !strcmp(key, "moe_backend")) {
        if (!cJSON_IsString(item))
            return qs_errf(err, "%s: expected a backend name, got %s", key, json_type(item));
        return qs_kernel_config_set(kc, key, item->valuestring, err);
    }
    return qs_errf(err, "unknown kernel_config key '%s'; valid keys: %s", item->string ? item->string : "",
                   KERNEL_CONFIG_KEYS);
}

int qs_kernel_config_apply_json(qs_kernel_config *kc, const char *json, qs_err *err)
{
    cJSON *root = cJSON_Parse(json ? json : "");
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        return qs_errf(err, "--kernel-config: invalid JSON near '%.20s'", at && *at ? at : "(end)");
    }
    int rc = 0;
    if (!cJSON_IsObject(root)) {
        rc = qs_errf(err, "--kernel-config: expected a JSON object such as {\"linear_backend\": \"marlin\"}, got %s",
                     json_type(root));
    } else {
        /* Work on a copy so a failing member leaves kc untouched. */
        qs_kernel_config tmp = *kc;
        const cJSON *item;
        cJSON_ArrayForEach(item, root)
        {
            if ((rc = apply_json_member(&tmp, item, err)) != 0) {
                qs_err_prefix(err, "--kernel-config: ");
                break;
            }
        }
        if (!rc)
            *kc = tmp;
    }
    cJSON_Delete(root);
    return rc;
}
