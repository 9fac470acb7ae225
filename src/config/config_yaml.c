/* config_yaml.c — `--config FILE.yaml` (libyaml's document API). The file is one mapping whose
 * keys are the serve flag names (with '-' or '_'); values are scalars, a sequence for
 * disabled-kernels, and kernel_config may be a nested mapping with the --kernel-config keys (or a
 * JSON string). Any unknown key or wrong type is an error naming the file, line and key. */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "config/config.h"

typedef struct {
    const char *path;
    yaml_document_t *doc;
} yaml_ctx;

static int line_of(const yaml_node_t *n) { return (int)n->start_mark.line + 1; }

static const char *scalar(const yaml_node_t *n) { return (const char *)n->data.scalar.value; }

static const char *node_type(const yaml_node_t *n)
{
    return n->type == YAML_MAPPING_NODE ? "a mapping" : n->type == YAML_SEQUENCE_NODE ? "a list" : "a scalar";
}

static int kernel_config_mapping(const yaml_ctx *y, const yaml_node_t *map, qs_kernel_config *kc, qs_err *err)
{
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(y->doc, p->key), *v = yaml_document_get_node(y->doc, p->value);
        if (!k || !v || k->type != YAML_SCALAR_NODE)
            return qs_errf(err, "%s:%d: kernel_config: keys must be plain names", y->path, k ? line_of(k) : 0);
        char key[QS_NAME_MAX];
        snprintf(key, sizeof key, "%s", scalar(k));
        qs_normalize_name(key);
        int rc = 0;
        if (!strcmp(key, "linear_backend_per_quant")) {
            if (v->type != YAML_MAPPING_NODE)
                return qs_errf(err, "%s:%d: kernel_config.linear_backend_per_quant: expected a mapping {scheme: backend}, got %s",
                               y->path, line_of(v), node_type(v));
            for (yaml_node_pair_t *q = v->data.mapping.pairs.start; q < v->data.mapping.pairs.top && !rc; q++) {
                yaml_node_t *sk = yaml_document_get_node(y->doc, q->key), *sv = yaml_document_get_node(y->doc, q->value);
                if (!sk || !sv || sk->type != YAML_SCALAR_NODE || sv->type != YAML_SCALAR_NODE)
                    return qs_errf(err, "%s:%d: kernel_config.linear_backend_per_quant: expected scheme: backend pairs",
                                   y->path, sk ? line_of(sk) : line_of(v));
                if ((rc = qs_kernel_config_set_per_quant(kc, scalar(sk), scalar(sv), err)) != 0)
                    qs_err_prefix(err, "%s:%d: kernel_config: ", y->path, line_of(sk));
            }
        } else if (!strcmp(key, "disabled_kernels") && v->type == YAML_SEQUENCE_NODE) {
            for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top && !rc; it++) {
                yaml_node_t *e = yaml_document_get_node(y->doc, *it);
                if (!e || e->type != YAML_SCALAR_NODE)
                    return qs_errf(err, "%s:%d: kernel_config.disabled_kernels: expected kernel names", y->path, line_of(v));
                if ((rc = qs_kernel_config_add_disabled(kc, scalar(e), "disabled_kernels", err)) != 0)
                    qs_err_prefix(err, "%s:%d: kernel_config: ", y->path, line_of(e));
            }
        } else if (v->type != YAML_SCALAR_NODE) {
            return qs_errf(err, "%s:%d: kernel_config.%s: expected a scalar, got %s", y->path, line_of(v), key, node_type(v));
        } else if ((rc = qs_kernel_config_set(kc, key, scalar(v), err)) != 0) {
            qs_err_prefix(err, "%s:%d: kernel_config: ", y->path, line_of(k));
        }
        if (rc)
            return -1;
    }
    return 0;
}

/* A YAML list for served-model-name (the names) or for a JSON-list flag such as allowed-origins
 * (written as that JSON list). */
static int apply_list(const yaml_ctx *y, yaml_node_t *v, const qs_option *opt, qs_config *cfg, const char *source,
                      qs_err *err)
{
    bool names = opt->type == QS_OPT_NAMES;
    cJSON *arr = cJSON_CreateArray();
    char joined[QS_MAX_SERVED_NAMES * 256 + 16] = "";
    size_t len = 0;
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
        yaml_node_t *e = yaml_document_get_node(y->doc, *it);
        if (!e || e->type != YAML_SCALAR_NODE) {
            cJSON_Delete(arr);
            return qs_errf(err, "%s: expected a list of strings", source);
        }
        if (names && len < sizeof joined)
            len += (size_t)snprintf(joined + len, sizeof joined - len, "%s%s", len ? "\n" : "", scalar(e));
        cJSON_AddItemToArray(arr, cJSON_CreateString(scalar(e)));
    }
    char *json = names ? NULL : cJSON_PrintUnformatted(arr);
    cJSON_Delete(arr);
    if (!names && !json)
        return qs_errf(err, "%s: out of memory", source);
    int rc = qs_config_set_option(cfg, opt, names ? joined : json, source, err);
    free(json);
    return rc;
}

/* Applies one top-level key; kernel_config_pass selects kernel_config (first) or the others. */
static int apply_pair(const yaml_ctx *y, yaml_node_t *k, yaml_node_t *v, qs_config *cfg, bool kernel_config_pass,
                      qs_err *err)
{
    if (k->type != YAML_SCALAR_NODE)
        return qs_errf(err, "%s:%d: keys must be option names, got %s", y->path, line_of(k), node_type(k));
    const qs_option *opt = qs_config_find_option(scalar(k));
    if (!opt) {
        char hint[1024];
        qs_config_suggest(scalar(k), hint, sizeof hint);
        return qs_errf(err, "%s:%d: unknown key '%s'; %s", y->path, line_of(k), scalar(k), hint);
    }
    if ((opt->type == QS_OPT_KERNEL_CONFIG) != kernel_config_pass)
        return 0;
    char source[1200];
    snprintf(source, sizeof source, "%s:%d: %s", y->path, line_of(k), scalar(k));
    if (opt->type == QS_OPT_CONFIG_FILE)
        return qs_errf(err, "%s: a config file cannot name another config file", source);
    if (opt->type == QS_OPT_KERNEL_CONFIG && v->type == YAML_MAPPING_NODE) {
        qs_kernel_config tmp = cfg->kernels;
        if (kernel_config_mapping(y, v, &tmp, err))
            return -1;
        cfg->kernels = tmp;
        return 0;
    }
    if (opt->type == QS_OPT_NAME_LIST && v->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
            yaml_node_t *e = yaml_document_get_node(y->doc, *it);
            if (!e || e->type != YAML_SCALAR_NODE)
                return qs_errf(err, "%s: expected a list of kernel names", source);
            if (qs_config_set_option(cfg, opt, scalar(e), source, err))
                return -1;
        }
        return 0;
    }
    if (v->type == YAML_SEQUENCE_NODE && (opt->type == QS_OPT_NAMES || !strncmp(opt->name, "allowed-", 8)))
        return apply_list(y, v, opt, cfg, source, err);
    if (v->type != YAML_SCALAR_NODE)
        return qs_errf(err, "%s: expected %s, got %s", source,
                       opt->type == QS_OPT_KERNEL_CONFIG ? "a mapping or a JSON string" : "a scalar value",
                       node_type(v));
    return qs_config_set_option(cfg, opt, scalar(v), source, err);
}

int qs_config_load_yaml(const char *path, qs_config *cfg, qs_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return qs_errf(err, "--config %s: cannot open the file", path);
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser)) {
        fclose(f);
        return qs_errf(err, "--config %s: out of memory", path);
    }
    yaml_parser_set_input_file(&parser, f);
    int rc = 0;
    if (!yaml_parser_load(&parser, &doc)) {
        rc = qs_errf(err, "%s:%d: invalid YAML: %s", path, (int)parser.problem_mark.line + 1,
                     parser.problem ? parser.problem : "parse error");
        yaml_parser_delete(&parser);
        fclose(f);
        return rc;
    }
    yaml_ctx y = {path, &doc};
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root) {
        /* An empty file sets nothing. */
    } else if (root->type != YAML_MAPPING_NODE) {
        rc = qs_errf(err, "%s:%d: expected a mapping of option names to values, got %s", path, line_of(root),
                     node_type(root));
    } else {
        qs_config tmp = *cfg;
        for (int pass = 0; pass < 2 && !rc; pass++)
            for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top && !rc; p++) {
                yaml_node_t *k = yaml_document_get_node(&doc, p->key), *v = yaml_document_get_node(&doc, p->value);
                if (!k || !v)
                    rc = qs_errf(err, "%s: malformed mapping", path);
                else
                    rc = apply_pair(&y, k, v, &tmp, pass == 0, err);
            }
        if (!rc)
            *cfg = tmp;
    }
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    fclose(f);
    return rc;
}
