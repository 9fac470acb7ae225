/* cmd_backends.c — `qserve backends [MODEL] [--assume-compute-capability X.Y] [--device D]
 * [--linear-backend B] [--moe-backend B] [--kernel-config JSON] [--batch-invariant]
 * [--disabled-kernels A,B] [--json] [-tp N]`: runs the registry's selection exactly as `serve` would, but
 * without loading weights (headers only), and prints every candidate with its reason. Without
 * MODEL it describes the registry itself and the choice per layer kind and scheme on the
 * device. --assume-compute-capability pretends a CUDA GPU, so a user sees what an A100 (8.0),
 * L40S (8.9) or H200 (9.0) would run. Exit status: 0, 1 when a layer type of the model has no
 * kernel (serve would fail too) or the model cannot be read, 2 on a usage error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/backends_model.h"
#include "cli/backends_report.h"
#include "cli/backends_tp.h"
#include "cli/model_source.h"
#include "cli/commands.h"
#include "device/device.h"
#include "model/model.h"
#include "registry/step_plan.h"

/* The serve options this command also understands; they go through the serve option table. */
static const char *const KERNEL_FLAGS[] = {"linear-backend", "moe-backend", "kernel-config", "batch-invariant",
                                           "disabled-kernels", "device"};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: qserve backends [MODEL] [options]\n\n"
            "Shows which kernel serves each layer kind and scheme, every candidate in priority order\n"
            "and why it was taken or refused, without loading weights. Without MODEL: the whole\n"
            "registry (kernels, priority lists) and the choice for every scheme on the device.\n\n"
            "options:\n"
            "  --assume-compute-capability X.Y  pretend a CUDA GPU of that capability (8.0 A100, 8.9 L40S,\n"
            "                                   9.0 H100/H200, 10.0 B200)\n"
            "  --device auto|cpu|cuda           the device to select for (default auto)\n"
            "  --linear-backend NAME            as for serve: auto, cublaslt, marlin, emulation, reference\n"
            "  --moe-backend NAME               as for serve\n"
            "  --kernel-config JSON             as for serve (linear_backend_per_quant, batch_invariant, ...)\n"
            "  --batch-invariant                as for serve\n"
            "  --disabled-kernels A,B           as QSERVE_DISABLED_KERNELS\n"
            "  --json                           print JSON instead of text\n"
            "  -tp N, --tensor-parallel-size N  also each rank's shard shapes and kernels (docs/parallel.md)\n");
    qs_cli_hub_usage(out);
}

typedef struct {
    const char *model_dir, *assume_cc;
    qs_cli_hub_flags hub;
    bool json;
    int tp;        /* -tp N / --tensor-parallel-size N: also each rank's shards */
    qs_config cfg; /* only device and kernels are used */
} backends_args;

static const qs_option *kernel_option(const char *arg)
{
    const qs_option *o = qs_config_find_option(arg);
    for (size_t i = 0; o && i < sizeof KERNEL_FLAGS / sizeof *KERNEL_FLAGS; i++)
        if (!strcmp(o->name, KERNEL_FLAGS[i]))
            return o;
    return NULL;
}

/* Two passes so --kernel-config is applied before the flags that override it (as for serve). */
static int parse_args(int argc, char **argv, backends_args *a, qs_err *err)
{
    memset(a, 0, sizeof *a);
    qs_config_defaults(&a->cfg);
    if (qs_kernel_config_apply_env(&a->cfg.kernels, err))
        return -1;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 1; i < argc; i++) {
            const char *arg = argv[i];
            if (arg[0] != '-') {
                if (pass == 0 && a->model_dir)
                    return qs_errf(err, "unexpected argument '%s' (MODEL is already '%s')", arg, a->model_dir);
                a->model_dir = arg;
                continue;
            }
            int h = qs_cli_hub_arg(argc, argv, &i, &a->hub);
            if (h < 0)
                return qs_errf(err, "%s needs a value", arg);
            if (h > 0)
                continue;
            char name[96];
            snprintf(name, sizeof name, "%s", arg);
            char *eq = strchr(name, '=');
            if (eq)
                *eq = '\0';
            const char *value = eq ? arg + (eq - name) + 1 : NULL;
            if (!strcmp(name, "--json")) {
                a->json = true;
                continue;
            }
            if (!strcmp(name, "-tp") || !strcmp(name, "--tensor-parallel-size")) {
                if (!value && i + 1 >= argc)
                    return qs_errf(err, "%s needs a value (N)", name);
                const char *v = value ? value : argv[++i];
                char *end;
                long n = strtol(v, &end, 10);
                if (*end || n < 1 || n > 256)
                    return qs_errf(err, "%s: expected a rank count from 1 to 256, got '%s'", name, v);
                a->tp = (int)n;
                continue;
            }
            if (!strcmp(name, "--assume-compute-capability")) {
                if (!value && i + 1 >= argc)
                    return qs_errf(err, "--assume-compute-capability needs a value (X.Y)");
                a->assume_cc = value ? value : argv[++i];
                continue;
            }
            const qs_option *o = strncmp(name, "--", 2) ? NULL : kernel_option(name + 2);
            if (!o)
                return qs_errf(err, "unknown option '%s' (see qserve backends --help)", arg);
            bool bare = o->type == QS_OPT_BOOL;
            if (!value && !bare) {
                if (i + 1 >= argc)
                    return qs_errf(err, "--%s needs a value (%s)", o->name, o->metavar ? o->metavar : "VALUE");
                value = argv[++i];
            }
            if ((pass == 0) != (o->type == QS_OPT_KERNEL_CONFIG))
                continue;
            char source[128];
            snprintf(source, sizeof source, "--%s", o->name);
            if (qs_config_set_option(&a->cfg, o, value, source, err))
                return -1;
        }
    if (a->tp > 1 && a->json)
        return qs_errf(err, "--json and --tensor-parallel-size: the per-rank report is text only");
    if (a->tp > 1 && !a->model_dir)
        return qs_errf(err, "--tensor-parallel-size needs MODEL (the shards are cut from its shapes)");
    if (a->assume_cc && a->cfg.device == QS_DEVICE_CPU)
        return qs_errf(err, "--assume-compute-capability pretends a CUDA GPU; it cannot be combined with --device cpu");
    return qs_registry_check_kernel_config(&a->cfg.kernels, err);
}

static void select_row(const backends_args *a, const qs_device_caps *dev, qs_layer_kind kind, qs_scheme scheme,
                       const qs_linear_desc *const *lin, const qs_moe_desc *const *moe, int n, int n_fused,
                       qs_backends_row *row)
{
    qs_err e;
    memset(row, 0, sizeof *row);
    row->n_layers = n;
    row->n_fused = n_fused;
    if (n > 0)
        snprintf(row->first_layer, sizeof row->first_layer, "%s", kind == QS_KIND_MOE ? moe[0]->name : lin[0]->name);
    int rc = qs_registry_select_for_layers(&a->cfg.kernels, dev, kind, scheme, lin, kind == QS_KIND_LINEAR ? n : 0,
                                           moe, kind == QS_KIND_MOE ? n : 0, &row->sel, &e);
    if (rc) {
        row->failed = 1;
        snprintf(row->error, sizeof row->error, "%s", e.msg);
        return;
    }
    /* the plan by tokens per step serve would give these layers (registry/step_plan.h); a bad
     * variable fails like serve */
    row->plan = (qs_plan){1, {{INT64_MAX, row->sel.kernel, NULL}}};
    const qs_kernel *small = NULL;
    int tokens = kind == QS_KIND_LINEAR ? qs_step_plan_small_kernel(&a->cfg.kernels, dev, &row->sel, scheme, &small, &e)
                                        : 0;
    if (tokens < 0) {
        row->failed = 1;
        snprintf(row->error, sizeof row->error, "%s", e.msg);
    }
    if (tokens <= 0)
        return;
    if (n == 0) { /* the registry alone: the scheme's limit */
        row->plan = (qs_plan){2, {{tokens, small, NULL}, {INT64_MAX, row->sel.kernel, NULL}}};
        return;
    }
    bool orders;
    if (qs_act_orders_from_env(&orders, &e)) {
        row->failed = 1;
        snprintf(row->error, sizeof row->error, "%s", e.msg);
        return;
    }
    /* with a model: the plan of the layer with the largest small-step limit, and the smallest limit */
    for (int i = 0; i < n; i++) {
        qs_plan p;
        if (qs_step_plan_for_layer(&a->cfg.kernels, dev, &row->sel, lin[i], orders, &p, &e) || p.n_rows < 2)
            continue;
        if (row->plan.n_rows < 2 || p.rows[0].max_tokens > row->plan.rows[0].max_tokens)
            row->plan = p;
        if (!row->fewest_small_tokens || p.rows[0].max_tokens < row->fewest_small_tokens)
            row->fewest_small_tokens = (int)p.rows[0].max_tokens;
    }
}

/* One row per (kind, scheme) present in the model, linear first, in scheme order. */
static int model_rows(const backends_args *a, const qs_device_caps *dev, const qs_backends_model *m,
                      qs_backends_row *rows, qs_err *err)
{
    int n_rows = 0;
    int cap = m->n_linears > m->n_moes ? m->n_linears : m->n_moes;
    const qs_linear_desc **lin = calloc((size_t)cap + 1, sizeof *lin);
    const qs_moe_desc **moe = calloc((size_t)cap + 1, sizeof *moe);
    if (!lin || !moe) {
        free(lin);
        free(moe);
        return qs_errf(err, "out of memory");
    }
    for (int s = 0; s < QS_SCHEME_COUNT; s++) {
        int n = 0, fused = 0;
        for (int i = 0; i < m->n_linears; i++)
            if ((int)m->linears[i].scheme == s) {
                lin[n++] = &m->linears[i];
                fused += m->linear_is_fused[i];
            }
        if (n)
            select_row(a, dev, QS_KIND_LINEAR, (qs_scheme)s, lin, NULL, n, fused, &rows[n_rows++]);
    }
    for (int s = 0; s < QS_SCHEME_COUNT; s++) {
        int n = 0;
        for (int i = 0; i < m->n_moes; i++)
            if ((int)m->moes[i].scheme == s)
                moe[n++] = &m->moes[i];
        if (n)
            select_row(a, dev, QS_KIND_MOE, (qs_scheme)s, NULL, moe, n, 0, &rows[n_rows++]);
    }
    free(lin);
    free(moe);
    return n_rows;
}

int qs_cmd_backends(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
    backends_args a;
    qs_err err;
    if (parse_args(argc, argv, &a, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 2;
    }
    qs_device_caps dev;
    if (a.assume_cc ? qs_device_assume(a.assume_cc, &dev, &err) : qs_device_detect(a.cfg.device, &dev, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return a.assume_cc ? 2 : 1;
    }
    qs_backends_row rows[2 * QS_SCHEME_COUNT];
    qs_backends_report r = {.dev = &dev, .kc = &a.cfg.kernels, .rows = rows};
    qs_backends_model m;
    bool have_model = false;
    char model_dir[4096];
    if (a.model_dir) {
        if (qs_cli_model_dir(a.model_dir, &a.hub, QS_HUB_FILES_MODEL, model_dir, sizeof model_dir))
            return 1;
        if (qs_backends_model_open(model_dir, dev.platform, qs_projection_fusion_disabled_by_env(), &m, &err)) {
            fprintf(stderr, "error: %s\n", err.msg);
            return 1;
        }
        have_model = true;
        r.model_dir = a.model_dir;
        r.architecture = m.mc.arch_name;
        r.quantization = m.qc.description[0] ? m.qc.description : qs_quant_method_name(m.qc.method);
        r.fusion = &m.fusion;
        r.n_rows = model_rows(&a, &dev, &m, rows, &err);
        if (r.n_rows < 0) {
            fprintf(stderr, "error: %s\n", err.msg);
            qs_backends_model_close(&m);
            return 1;
        }
    } else {
        for (int k = QS_KIND_LINEAR; k <= QS_KIND_MOE; k++)
            for (int s = 0; s < QS_SCHEME_COUNT; s++)
                select_row(&a, &dev, (qs_layer_kind)k, (qs_scheme)s, NULL, NULL, 0, 0, &rows[r.n_rows++]);
    }
    int rc = 0;
    if (a.json) {
        if (qs_backends_print_json(stdout, &r, &err)) {
            fprintf(stderr, "error: %s\n", err.msg);
            rc = 1;
        }
    } else {
        qs_backends_print_text(stdout, &r);
        if (have_model && a.tp > 1 && qs_backends_print_tp(stdout, &a.cfg.kernels, &dev, &m, a.tp))
            rc = 1;
    }
    for (int i = 0; have_model && i < r.n_rows; i++)
        if (rows[i].failed)
            rc = 1;
    if (have_model)
        qs_backends_model_close(&m);
    return rc;
}
