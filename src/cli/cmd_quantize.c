/* cmd_quantize.c — `qserve quantize IN OUT_DIR --scheme S [--format F] [--shard-size GB]
 * [--calib-tokens N]`: round-to-nearest quantization of a BF16/F16/F32 checkpoint into the FP8 or
 * NVFP4 on-disk formats (quantize/quantize_checkpoint.h does the work). */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/model_source.h"
#include "cli/commands.h"
#include "quantize/quantize_checkpoint.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: qserve quantize IN OUT_DIR --scheme SCHEME [--format FORMAT] [--shard-size GB]\n"
            "                       [--calib-tokens N]\n"
            "  --scheme   fp8-dynamic  FP8 weights per channel, activations dynamic per token\n"
            "             fp8-static   FP8 weights per tensor, activations static per tensor (calibrated)\n"
            "             fp8-block    FP8 weights in 128x128 blocks, activations per token-group of 128\n"
            "             nvfp4        NVFP4 weights and activations (input global scale calibrated)\n"
            "             nvfp4-w4a16  NVFP4 weights, activations unquantized\n"
            "  --format   compressed-tensors (default), modelopt, fp8 (quant_method \"fp8\": FP8 schemes only;\n"
            "             fp8-block writes weight_scale_inv)\n"
            "  --shard-size    largest output shard in GB (default 5)\n"
            "  --calib-tokens  tokens per calibration prompt for the static schemes (default 128)\n"
            "  IN is a BF16/F32 checkpoint folder or a Hugging Face repo id ORG/NAME:\n");
    qs_cli_hub_usage(out);
}

int qs_cmd_quantize(int argc, char **argv)
{
    const char *dirs[2] = {NULL, NULL}, *scheme = NULL, *format = "compressed-tensors", *v;
    double shard_gb = 5.0;
    long calib = 0;
    int nd = 0;
    qs_cli_hub_flags hub = {0};
    for (int i = 1; i < argc; i++) {
        int r;
        if ((r = qs_cli_hub_arg(argc, argv, &i, &hub)) != 0) {
            if (r < 0) {
                fprintf(stderr, "error: %s needs a value\n", argv[i]);
                return 2;
            }
        } else if (qs_arg_is(argv[i], "--help") || qs_arg_is(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if ((r = qs_arg_value(argc, argv, &i, "--scheme", &scheme)) != 0) {
            if (r < 0)
                return 2;
        } else if ((r = qs_arg_value(argc, argv, &i, "--format", &format)) != 0) {
            if (r < 0)
                return 2;
        } else if ((r = qs_arg_value(argc, argv, &i, "--shard-size", &v)) != 0) {
            if (r < 0 || qs_arg_shard_size(v, &shard_gb))
                return 2;
        } else if ((r = qs_arg_value(argc, argv, &i, "--calib-tokens", &v)) != 0) {
            if (r < 0 || qs_arg_int("--calib-tokens", v, &calib))
                return 2;
            if (calib <= 0 || calib > 8192) {
                fprintf(stderr, "error: --calib-tokens must be in 1..8192\n");
                return 2;
            }
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "error: unknown option '%s' for quantize\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (nd < 2) {
            dirs[nd++] = argv[i];
        } else {
            fprintf(stderr, "error: unexpected argument '%s' (IN and OUT_DIR are already given)\n", argv[i]);
            return 2;
        }
    }
    if (nd < 2 || !scheme) {
        fprintf(stderr, "error: quantize needs IN, OUT_DIR and --scheme\n");
        usage(stderr);
        return 2;
    }
    int t = qs_quant_target_from_name(scheme);
    if (t < 0) {
        fprintf(stderr, "error: --scheme '%s' is not supported (supported: fp8-dynamic, fp8-static, fp8-block, nvfp4, "
                        "nvfp4-w4a16)\n", scheme);
        return 2;
    }
    int f = qs_quant_format_from_name(format);
    if (f < 0) {
        fprintf(stderr, "error: --format '%s' is not supported (supported: compressed-tensors, modelopt, fp8)\n",
                format);
        return 2;
    }
    char in_dir[4096];
    if (qs_cli_model_dir(dirs[0], &hub, QS_HUB_FILES_MODEL, in_dir, sizeof in_dir))
        return 1;
    if (!strcmp(in_dir, dirs[1])) {
        fprintf(stderr, "error: OUT_DIR must differ from IN\n");
        return 2;
    }
    qs_quantize_options opt = {.target = (qs_quant_target)t, .format = (qs_quant_format)f,
                               .shard_bytes = (size_t)(shard_gb * 1e9), .calib_tokens = (int)calib};
    qs_err err;
    if (qs_quantize_checkpoint(in_dir, dirs[1], &opt, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    printf("quantized %s to %s (%s, %s)\n", dirs[0], dirs[1], scheme, format);
    return 0;
}
