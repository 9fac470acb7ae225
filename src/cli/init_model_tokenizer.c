/* init_model_tokenizer.c — the byte-level BPE tokenizer `qserve init-model` writes: a valid
 * Hugging Face tokenizer.json (BPE model, ByteLevel pre-tokenizer and decoder) whose vocabulary is
 * the 256 symbols of GPT-2's byte-to-unicode map, then merges of those symbols (pairs, then pair +
 * symbol) until the vocabulary is full, and the family's special tokens at the ids the real models
 * use (Llama 3: <|begin_of_text|> 128000 ...; Qwen: <|endoftext|> 151643 ...; Mistral: <s> 1 ...)
 * or, for tiny vocabularies, at the end (Mistral: at the start). Also tokenizer_config.json with
 * the family's chat template, and generation_config.json. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/init_model.h"
#include "util/fileio.h"

typedef struct {
    const char *content;
    int real_id;   /* id in the real vocabulary */
} special_tok;

static const special_tok LLAMA3_SPECIAL[] = {{"<|begin_of_text|>", 128000}, {"<|end_of_text|>", 128001},
                                             {"<|start_header_id|>", 128006}, {"<|end_header_id|>", 128007},
                                             {"<|eot_id|>", 128009}};
static const special_tok LLAMA4_SPECIAL[] = {{"<|begin_of_text|>", 200000}, {"<|end_of_text|>", 200001},
                                             {"<|header_start|>", 200005}, {"<|header_end|>", 200006},
                                             {"<|eot|>", 200008}};
static const special_tok QWEN_SPECIAL[] = {{"<|endoftext|>", 151643}, {"<|im_start|>", 151644}, {"<|im_end|>", 151645}};
static const special_tok MISTRAL_SPECIAL[] = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}, {"[INST]", 3}, {"[/INST]", 4}};

static const char *LLAMA3_TEMPLATE =
    "{{- bos_token }}{%- for message in messages %}{{- '<|start_header_id|>' + message['role'] + "
    "'<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{%- endfor %}{%- if "
    "add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}";
/* Llama 4's text turns: header tokens, the content untrimmed (a string, or the text parts of a list),
 * <|eot|> after each turn (the release's template, without its tool and image branches). */
static const char *LLAMA4_TEMPLATE =
    "{{- bos_token }}{%- for message in messages %}{{- '<|header_start|>' + message['role'] + '<|header_end|>\\n\\n' "
    "}}{%- if message['content'] is string %}{{- message['content'] }}{%- else %}{%- for content in "
    "message['content'] %}{%- if content['type'] == 'text' %}{{- content['text'] }}{%- endif %}{%- endfor %}{%- "
    "endif %}{{- '<|eot|>' }}{%- endfor %}{%- if add_generation_prompt %}{{- "
    "'<|header_start|>assistant<|header_end|>\\n\\n' }}{%- endif %}";
static const char *CHATML_TEMPLATE =
    "{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";
static const char *MISTRAL_TEMPLATE =
    "{{- bos_token }}{%- for message in messages %}{%- if message['role'] == 'user' %}{{- '[INST] ' + "
    "message['content'] + ' [/INST]' }}{%- elif message['role'] == 'assistant' %}{{- ' ' + message['content'] + "
    "eos_token }}{%- else %}{{- message['content'] + '\\n\\n' }}{%- endif %}{%- endfor %}";

typedef struct {
    const special_tok *sp;
    int n_sp;
    int sp_ids[8];
    int byte_base;     /* id of byte symbol 0 */
    int merge_base;    /* first merge id */
    int merge_end;     /* one past the last merge id */
    int bos, eos, eot; /* indices into sp, -1 none */
    const char *chat_template;
} tok_layout;

static void layout(const qs_init_shape *s, tok_layout *L)
{
    memset(L, 0, sizeof *L);
    switch (s->tokens) {
    case QS_TOKFAM_LLAMA3:
        L->sp = LLAMA3_SPECIAL, L->n_sp = 5, L->bos = 0, L->eos = 1, L->eot = 4, L->chat_template = LLAMA3_TEMPLATE;
        break;
    case QS_TOKFAM_LLAMA4:
        L->sp = LLAMA4_SPECIAL, L->n_sp = 5, L->bos = 0, L->eos = 1, L->eot = 4, L->chat_template = LLAMA4_TEMPLATE;
        break;
    case QS_TOKFAM_QWEN:
        L->sp = QWEN_SPECIAL, L->n_sp = 3, L->bos = -1, L->eos = 0, L->eot = 2, L->chat_template = CHATML_TEMPLATE;
        break;
    case QS_TOKFAM_MISTRAL:
        L->sp = MISTRAL_SPECIAL, L->n_sp = 5, L->bos = 1, L->eos = 2, L->eot = 2, L->chat_template = MISTRAL_TEMPLATE;
        break;
    }
    bool real = s->vocab > L->sp[L->n_sp - 1].real_id;
    if (s->tokens == QS_TOKFAM_MISTRAL) {
        for (int i = 0; i < L->n_sp; i++)
            L->sp_ids[i] = i;
        L->byte_base = L->n_sp;
        L->merge_base = L->n_sp + 256;
        L->merge_end = s->vocab;
    } else {
        for (int i = 0; i < L->n_sp; i++)
            L->sp_ids[i] = real ? L->sp[i].real_id : s->vocab - L->n_sp + i;
        L->byte_base = 0;
        L->merge_base = 256;
        L->merge_end = L->sp_ids[0];
    }
}

void qs_init_special_ids(const qs_init_shape *s, int *bos, int *eos, int *eot)
{
    tok_layout L;
    layout(s, &L);
    /* Qwen configs carry <|endoftext|> as bos_token_id although the tokenizer adds none */
    *bos = L.bos >= 0 ? L.sp_ids[L.bos] : L.sp_ids[L.eos];
    *eos = L.sp_ids[L.eos];
    *eot = L.sp_ids[L.eot];
}

/* GPT-2 bytes_to_unicode: printable bytes map to themselves, the rest to 256 + n. */
static void byte_symbol(int b, char out[4])
{
    int cp;
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) {
        cp = b;
    } else {
        int n = 0;
        for (int x = 0; x < b; x++)
            if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255)))
                n++;
        cp = 256 + n;
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        out[1] = 0;
    } else {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        out[2] = 0;
    }
}

/* Bytes in a rough English frequency order, so the first merges look like real ones. */
static void byte_order(int order[256])
{
    const char *common = " etaoinshrdlucmfwypvbgkjqxzETAOINSHRDLUCMFWYPVBGKJQXZ0123456789.,'\"-!?:;()\n";
    bool used[256] = {false};
    int n = 0;
    for (const char *p = common; *p; p++) {
        order[n++] = (unsigned char)*p;
        used[(unsigned char)*p] = true;
    }
    for (int b = 0; b < 256; b++)
        if (!used[b])
            order[n++] = b;
}

static cJSON *added_token(const char *content, int id)
{
    cJSON *t = cJSON_CreateObject();
    cJSON_AddNumberToObject(t, "id", id);
    cJSON_AddStringToObject(t, "content", content);
    cJSON_AddBoolToObject(t, "single_word", false);
    cJSON_AddBoolToObject(t, "lstrip", false);
    cJSON_AddBoolToObject(t, "rstrip", false);
    cJSON_AddBoolToObject(t, "normalized", false);
    cJSON_AddBoolToObject(t, "special", true);
    return t;
}

static cJSON *byte_level(bool add_prefix_space, bool trim_offsets, bool use_regex)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "ByteLevel");
    cJSON_AddBoolToObject(o, "add_prefix_space", add_prefix_space);
    cJSON_AddBoolToObject(o, "trim_offsets", trim_offsets);
    cJSON_AddBoolToObject(o, "use_regex", use_regex);
    return o;
}

/* TemplateProcessing that prepends BOS (Llama 3, Mistral). */
static cJSON *bos_template(const char *bos, int bos_id)
{
    cJSON *pp = cJSON_CreateObject();
    cJSON_AddStringToObject(pp, "type", "TemplateProcessing");
    const char *keys[2] = {"single", "pair"};
    for (int k = 0; k < 2; k++) {
        cJSON *arr = cJSON_AddArrayToObject(pp, keys[k]);
        for (int part = 0; part < (k ? 2 : 1); part++) {
            cJSON *sp = cJSON_CreateObject(), *inner = cJSON_AddObjectToObject(sp, "SpecialToken");
            cJSON_AddStringToObject(inner, "id", bos);
            cJSON_AddNumberToObject(inner, "type_id", part);
            cJSON_AddItemToArray(arr, sp);
            cJSON *seq = cJSON_CreateObject(), *si = cJSON_AddObjectToObject(seq, "Sequence");
            cJSON_AddStringToObject(si, "id", part ? "B" : "A");
            cJSON_AddNumberToObject(si, "type_id", part);
            cJSON_AddItemToArray(arr, seq);
        }
    }
    cJSON *st = cJSON_AddObjectToObject(pp, "special_tokens");
    cJSON *b = cJSON_AddObjectToObject(st, bos);
    cJSON_AddStringToObject(b, "id", bos);
    cJSON *ids = cJSON_AddArrayToObject(b, "ids");
    cJSON_AddItemToArray(ids, cJSON_CreateNumber(bos_id));
    cJSON *toks = cJSON_AddArrayToObject(b, "tokens");
    cJSON_AddItemToArray(toks, cJSON_CreateString(bos));
    return pp;
}

/* Writes root to dir/name and frees it. */
static int write_json(const char *dir, const char *name, cJSON *root, qs_err *err)
{
    int rc = qs_write_json_file(dir, name, root, err);
    cJSON_Delete(root);
    return rc;
}

static int write_tokenizer_json(const char *dir, const qs_init_shape *s, const tok_layout *L, qs_err *err)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "version", "1.0");
    cJSON_AddNullToObject(root, "truncation");
    cJSON_AddNullToObject(root, "padding");
    cJSON *added = cJSON_AddArrayToObject(root, "added_tokens");
    for (int i = 0; i < L->n_sp; i++)
        cJSON_AddItemToArray(added, added_token(L->sp[i].content, L->sp_ids[i]));
    cJSON_AddNullToObject(root, "normalizer");
    cJSON_AddItemToObject(root, "pre_tokenizer", byte_level(false, true, true));
    if (L->bos >= 0)
        cJSON_AddItemToObject(root, "post_processor", bos_template(L->sp[L->bos].content, L->sp_ids[L->bos]));
    else
        cJSON_AddItemToObject(root, "post_processor", byte_level(false, false, false));
    cJSON_AddItemToObject(root, "decoder", byte_level(true, true, true));
    cJSON *model = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON_AddNullToObject(model, "dropout");
    if (s->tokens == QS_TOKFAM_MISTRAL)
        cJSON_AddStringToObject(model, "unk_token", "<unk>");
    else
        cJSON_AddNullToObject(model, "unk_token");
    cJSON_AddNullToObject(model, "continuing_subword_prefix");
    cJSON_AddNullToObject(model, "end_of_word_suffix");
    cJSON_AddBoolToObject(model, "fuse_unk", false);
    cJSON_AddBoolToObject(model, "byte_fallback", false);
    cJSON_AddBoolToObject(model, "ignore_merges", false);
    cJSON *vocab = cJSON_AddObjectToObject(model, "vocab");
    cJSON *merges = cJSON_AddArrayToObject(model, "merges");
    if (s->tokens == QS_TOKFAM_MISTRAL)
        for (int i = 0; i < L->n_sp; i++)
            cJSON_AddNumberToObject(vocab, L->sp[i].content, L->sp_ids[i]);
    char sym[256][4];
    for (int b = 0; b < 256; b++) {
        byte_symbol(b, sym[b]);
        cJSON_AddNumberToObject(vocab, sym[b], L->byte_base + b);
    }
    int order[256];
    byte_order(order);
    int n_merges = L->merge_end - L->merge_base;
    /* level 1: pairs of byte symbols; level 2: a level-1 token followed by a byte symbol */
    char tok[16], merge[24];
    int id = L->merge_base;
    for (int a = 0; a < 256 && id < L->merge_end; a++)
        for (int b = 0; b < 256 && id < L->merge_end; b++, id++) {
            snprintf(tok, sizeof tok, "%s%s", sym[order[a]], sym[order[b]]);
            snprintf(merge, sizeof merge, "%s %s", sym[order[a]], sym[order[b]]);
            cJSON_AddNumberToObject(vocab, tok, id);
            cJSON_AddItemToArray(merges, cJSON_CreateString(merge));
        }
    for (int p = 0; p < 65536 && id < L->merge_end; p++)
        for (int c = 0; c < 256 && id < L->merge_end; c++, id++) {
            int a = p / 256, b = p % 256;
            snprintf(tok, sizeof tok, "%s%s%s", sym[order[a]], sym[order[b]], sym[order[c]]);
            snprintf(merge, sizeof merge, "%s%s %s", sym[order[a]], sym[order[b]], sym[order[c]]);
            cJSON_AddNumberToObject(vocab, tok, id);
            cJSON_AddItemToArray(merges, cJSON_CreateString(merge));
        }
    (void)n_merges;
    return write_json(dir, "tokenizer.json", root, err);
}

int qs_init_write_tokenizer(const char *dir, const qs_init_shape *s, qs_err *err)
{
    tok_layout L;
    layout(s, &L);
    if (write_tokenizer_json(dir, s, &L, err))
        return -1;
    cJSON *tc = cJSON_CreateObject();
    cJSON_AddBoolToObject(tc, "add_bos_token", L.bos >= 0);
    cJSON_AddBoolToObject(tc, "add_eos_token", false);
    cJSON *dec = cJSON_AddObjectToObject(tc, "added_tokens_decoder");
    for (int i = 0; i < L.n_sp; i++) {
        char key[16];
        snprintf(key, sizeof key, "%d", L.sp_ids[i]);
        cJSON *t = added_token(L.sp[i].content, L.sp_ids[i]);
        cJSON_DeleteItemFromObject(t, "id");
        cJSON_AddItemToObject(dec, key, t);
    }
    if (L.bos >= 0)
        cJSON_AddStringToObject(tc, "bos_token", L.sp[L.bos].content);
    else
        cJSON_AddNullToObject(tc, "bos_token");
    cJSON_AddStringToObject(tc, "chat_template", L.chat_template);
    cJSON_AddBoolToObject(tc, "clean_up_tokenization_spaces", false);
    cJSON_AddStringToObject(tc, "eos_token", L.sp[L.eot].content);
    cJSON_AddNumberToObject(tc, "model_max_length", s->max_pos);
    if (s->tokens == QS_TOKFAM_MISTRAL)
        cJSON_AddStringToObject(tc, "unk_token", "<unk>");
    cJSON_AddNullToObject(tc, "pad_token");
    cJSON_AddStringToObject(tc, "tokenizer_class", "PreTrainedTokenizerFast");
    if (write_json(dir, "tokenizer_config.json", tc, err))
        return -1;
    cJSON *gc = cJSON_CreateObject();
    int bos, eos, eot;
    qs_init_special_ids(s, &bos, &eos, &eot);
    cJSON_AddNumberToObject(gc, "bos_token_id", bos);
    if (eos == eot) {
        cJSON_AddNumberToObject(gc, "eos_token_id", eos);
    } else {
        cJSON *e = cJSON_AddArrayToObject(gc, "eos_token_id");
        cJSON_AddItemToArray(e, cJSON_CreateNumber(eot));
        cJSON_AddItemToArray(e, cJSON_CreateNumber(eos));
    }
    cJSON_AddStringToObject(gc, "transformers_version", "4.51.0");
    return write_json(dir, "generation_config.json", gc, err);
}
