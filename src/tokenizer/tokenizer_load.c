/* tokenizer_load.c — reads tokenizer.json (cJSON) into a qs_tokenizer: the BPE model (vocab,
 * merges as "a b" strings or ["a","b"] pairs, byte_fallback, unk), added tokens, normalizer,
 * pre-tokenizer, post-processor and decoder. Anything we do not implement is an error that names
 * the component and its type, never a silent approximation. tokenizer_config.json is read by
 * tokenizer_config.c. */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_config.h"
#include "tokenizer/tokenizer_internal.h"
#include "util/fileio.h"

static const char *type_of(const cJSON *o)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
    return cJSON_IsString(t) ? t->valuestring : NULL;
}

static bool flag(const cJSON *o, const char *key, bool dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : dflt;
}

static const char *str_field(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}


/* ---------------- model ---------------- */

static int load_vocab(qs_tokenizer *tok, const cJSON *vocab, qs_err *err)
{
    if (!cJSON_IsObject(vocab))
        return qs_errf(err, "model.vocab: expected an object of token -> id");
    if (qs_vocab_reserve(&tok->vocab, (size_t)cJSON_GetArraySize(vocab) + 1024))
        return qs_errf(err, "model.vocab: out of memory");
    for (const cJSON *e = vocab->child; e; e = e->next) {
        if (!cJSON_IsNumber(e) || e->valuedouble != (double)(int32_t)e->valuedouble)
            return qs_errf(err, "model.vocab: token '%s' has no integer id", e->string);
        if (qs_vocab_set(&tok->vocab, (int32_t)e->valuedouble, e->string, strlen(e->string), err))
            return qs_err_prefix(err, "model.vocab: ");
    }
    return 0;
}

static int merge_ids(qs_tokenizer *tok, size_t rank, const char *a, size_t al, const char *b, size_t bl, qs_err *err)
{
    int32_t l = qs_vocab_find(&tok->vocab, a, al), r = qs_vocab_find(&tok->vocab, b, bl);
    char joined[1024];
    if (al + bl >= sizeof joined)
        return qs_errf(err, "model.merges[%zu]: tokens too long", rank);
    memcpy(joined, a, al);
    memcpy(joined + al, b, bl);
    int32_t m = qs_vocab_find(&tok->vocab, joined, al + bl);
    if (l < 0 || r < 0 || m < 0)
        return qs_errf(err, "model.merges[%zu]: '%.*s' + '%.*s' uses a token missing from the vocab", rank, (int)al, a,
                       (int)bl, b);
    if (qs_merges_add(&tok->merges, l, r, (int32_t)rank, m))
        return qs_errf(err, "model.merges: out of memory");
    return 0;
}

static int load_merges(qs_tokenizer *tok, const cJSON *merges, qs_err *err)
{
    if (!merges)
        return 0;
    if (!cJSON_IsArray(merges))
        return qs_errf(err, "model.merges: expected an array");
    if (qs_merges_reserve(&tok->merges, (size_t)cJSON_GetArraySize(merges)))
        return qs_errf(err, "model.merges: out of memory");
    size_t rank = 0;
    for (const cJSON *m = merges->child; m; m = m->next, rank++) {
        if (cJSON_IsString(m)) {
            const char *s = m->valuestring, *sp = strchr(s, ' ');
            if (!sp || strchr(sp + 1, ' '))
                return qs_errf(err, "model.merges[%zu]: '%s' is not two tokens separated by one space", rank, s);
            if (merge_ids(tok, rank, s, (size_t)(sp - s), sp + 1, strlen(sp + 1), err))
                return -1;
        } else if (cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2 && cJSON_IsString(m->child) &&
                   cJSON_IsString(m->child->next)) {
            const char *a = m->child->valuestring, *b = m->child->next->valuestring;
            if (merge_ids(tok, rank, a, strlen(a), b, strlen(b), err))
                return -1;
        } else {
            return qs_errf(err, "model.merges[%zu]: expected \"a b\" or [\"a\", \"b\"]", rank);
        }
    }
    return 0;
}

static int load_model(qs_tokenizer *tok, const cJSON *model, qs_err *err)
{
    if (!cJSON_IsObject(model))
        return qs_errf(err, "model: missing");
    const char *type = type_of(model);
    if (type && strcmp(type, "BPE"))
        return qs_errf(err, "model type '%s' is not supported (supported: BPE)", type);
    if (!type && !cJSON_GetObjectItemCaseSensitive(model, "merges"))
        return qs_errf(err, "model: no type and no merges; only BPE is supported");
    const cJSON *dropout = cJSON_GetObjectItemCaseSensitive(model, "dropout");
    if (cJSON_IsNumber(dropout) && dropout->valuedouble > 0)
        return qs_errf(err, "model.dropout %g is not supported (inference uses no dropout)", dropout->valuedouble);
    const char *csp = str_field(model, "continuing_subword_prefix"), *eow = str_field(model, "end_of_word_suffix");
    if ((csp && *csp) || (eow && *eow))
        return qs_errf(err, "model: continuing_subword_prefix / end_of_word_suffix ('%s' / '%s') are not supported",
                       csp ? csp : "", eow ? eow : "");
    tok->byte_fallback = flag(model, "byte_fallback", false);
    tok->fuse_unk = flag(model, "fuse_unk", false);
    tok->ignore_merges = flag(model, "ignore_merges", false);
    if (load_vocab(tok, cJSON_GetObjectItemCaseSensitive(model, "vocab"), err))
        return -1;
    const char *unk = str_field(model, "unk_token");
    tok->unk_id = unk ? qs_vocab_find(&tok->vocab, unk, strlen(unk)) : -1;
    if (unk && tok->unk_id < 0)
        return qs_errf(err, "model.unk_token '%s' is not in the vocab", unk);
    return 0;
}

/* ---------------- added tokens ---------------- */

static int load_added(qs_tokenizer *tok, const cJSON *arr, qs_err *err)
{
    if (!arr || cJSON_IsNull(arr))
        return 0;
    if (!cJSON_IsArray(arr))
        return qs_errf(err, "added_tokens: expected an array");
    size_t n = (size_t)cJSON_GetArraySize(arr), i = 0;
    tok->added = calloc(n ? n : 1, sizeof *tok->added);
    if (!tok->added)
        return qs_errf(err, "added_tokens: out of memory");
    for (const cJSON *a = arr->child; a; a = a->next, i++) {
        const char *content = str_field(a, "content");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(a, "id");
        if (!content || !cJSON_IsNumber(id))
            return qs_errf(err, "added_tokens[%zu]: needs \"id\" and \"content\"", i);
        qs_added_token *t = &tok->added[tok->n_added++];
        t->content = strdup(content);
        t->len = strlen(content);
        t->id = (int32_t)id->valuedouble;
        t->special = flag(a, "special", false);
        t->lstrip = flag(a, "lstrip", false);
        t->rstrip = flag(a, "rstrip", false);
        t->normalized = flag(a, "normalized", !t->special);
        t->single_word = flag(a, "single_word", false);
        if (!t->content)
            return qs_errf(err, "added_tokens: out of memory");
        /* An added token may repeat a vocab entry with the same id; otherwise it takes its id. */
        int32_t have = qs_vocab_find(&tok->vocab, content, t->len);
        if (have >= 0 && have != t->id)
            return qs_errf(err, "added_tokens[%zu]: '%s' has id %d but the vocab says %d", i, content, t->id, have);
        if (have < 0 && qs_vocab_set(&tok->vocab, t->id, content, t->len, err))
            return qs_err_prefix(err, "added_tokens[%zu]: ", i);
    }
    if (qs_added_set_build(&tok->added_raw, tok->added, tok->n_added, false) ||
        qs_added_set_build(&tok->added_norm, tok->added, tok->n_added, true))
        return qs_errf(err, "added_tokens: out of memory");
    return 0;
}

/* ---------------- normalizer ---------------- */

static int add_norm(qs_tokenizer *tok, qs_norm_step st, qs_err *err)
{
    qs_norm_step *n = realloc(tok->norm, (tok->n_norm + 1) * sizeof *n);
    if (!n)
        return qs_errf(err, "normalizer: out of memory");
    tok->norm = n;
    tok->norm[tok->n_norm++] = st;
    return 0;
}

static int load_normalizer(qs_tokenizer *tok, const cJSON *n, qs_err *err)
{
    if (!n || cJSON_IsNull(n))
        return 0;
    const char *type = type_of(n);
    if (!type)
        return qs_errf(err, "normalizer: missing type");
    if (!strcmp(type, "Sequence")) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(n, "normalizers");
        if (!cJSON_IsArray(list))
            return qs_errf(err, "normalizer Sequence: missing \"normalizers\"");
        for (const cJSON *c = list->child; c; c = c->next)
            if (load_normalizer(tok, c, err))
                return -1;
        return 0;
    }
    qs_norm_step st = {0};
    if (!strcmp(type, "NFC"))
        st.kind = QS_NORM_NFC;
    else if (!strcmp(type, "NFD"))
        st.kind = QS_NORM_NFD;
    else if (!strcmp(type, "NFKC"))
        st.kind = QS_NORM_NFKC;
    else if (!strcmp(type, "NFKD"))
        st.kind = QS_NORM_NFKD;
    else if (!strcmp(type, "Lowercase"))
        st.kind = QS_NORM_LOWERCASE;
    else if (!strcmp(type, "Strip")) {
        st.kind = QS_NORM_STRIP;
        st.strip_left = flag(n, "strip_left", true);
        st.strip_right = flag(n, "strip_right", true);
    } else if (!strcmp(type, "Prepend")) {
        const char *p = str_field(n, "prepend");
        if (!p)
            return qs_errf(err, "normalizer Prepend: missing \"prepend\"");
        st.kind = QS_NORM_PREPEND;
        st.content = strdup(p);
    } else if (!strcmp(type, "Replace")) {
        const cJSON *pat = cJSON_GetObjectItemCaseSensitive(n, "pattern");
        const char *lit = str_field(pat, "String"), *content = str_field(n, "content");
        if (!lit)
            return qs_errf(err, "normalizer Replace: only a String pattern is supported (got %s)",
                           str_field(pat, "Regex") ? "a Regex" : "none");
        if (!content)
            return qs_errf(err, "normalizer Replace: missing \"content\"");
        st.kind = QS_NORM_REPLACE;
        st.pattern = strdup(lit);
        st.content = strdup(content);
    } else {
        return qs_errf(err, "normalizer type '%s' is not supported (supported: NFC, NFD, NFKC, NFKD, Replace, Prepend, "
                            "Lowercase, Strip, Sequence)", type);
    }
    return add_norm(tok, st, err);
}

/* ---------------- pre-tokenizer ---------------- */

/* GPT-2's split, which the ByteLevel pre-tokenizer applies when use_regex is true. */
static const char GPT2_PATTERN[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static int add_pre(qs_tokenizer *tok, qs_pre_step st, qs_err *err)
{
    qs_pre_step *n = realloc(tok->pre, (tok->n_pre + 1) * sizeof *n);
    if (!n) {
        pcre2_code_free(st.re);
        return qs_errf(err, "pre_tokenizer: out of memory");
    }
    tok->pre = n;
    tok->pre[tok->n_pre++] = st;
    return 0;
}

static int utf8_of_replacement(const char *s, char out[8], const char *what, qs_err *err)
{
    size_t n = s ? strlen(s) : 0;
    if (!n || n >= 8)
        return qs_errf(err, "%s: replacement must be one character", what);
    memcpy(out, s, n + 1);
    return 0;
}

static int prepend_scheme(const cJSON *o, qs_prepend_scheme *out, const char *what, qs_err *err)
{
    const char *scheme = str_field(o, "prepend_scheme");
    if (!scheme) { /* legacy files: add_prefix_space true means "always" */
        *out = flag(o, "add_prefix_space", true) ? QS_PREPEND_ALWAYS : QS_PREPEND_NEVER;
        return 0;
    }
    if (!strcmp(scheme, "always"))
        *out = QS_PREPEND_ALWAYS;
    else if (!strcmp(scheme, "first"))
        *out = QS_PREPEND_FIRST;
    else if (!strcmp(scheme, "never"))
        *out = QS_PREPEND_NEVER;
    else
        return qs_errf(err, "%s: prepend_scheme '%s' is not one of always, first, never", what, scheme);
    return 0;
}

static int load_pre(qs_tokenizer *tok, const cJSON *p, qs_err *err)
{
    if (!p || cJSON_IsNull(p))
        return 0;
    const char *type = type_of(p);
    if (!type)
        return qs_errf(err, "pre_tokenizer: missing type");
    qs_pre_step st = {0};
    if (!strcmp(type, "Sequence")) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(p, "pretokenizers");
        if (!cJSON_IsArray(list))
            return qs_errf(err, "pre_tokenizer Sequence: missing \"pretokenizers\"");
        for (const cJSON *c = list->child; c; c = c->next)
            if (load_pre(tok, c, err))
                return -1;
        return 0;
    } else if (!strcmp(type, "Split")) {
        const cJSON *pat = cJSON_GetObjectItemCaseSensitive(p, "pattern");
        const char *re = str_field(pat, "Regex"), *lit = str_field(pat, "String");
        const char *beh = str_field(p, "behavior");
        st.kind = QS_PRE_SPLIT;
        st.invert = flag(p, "invert", false);
        if (!beh || !strcmp(beh, "Isolated"))
            st.behavior = QS_SPLIT_ISOLATED;
        else if (!strcmp(beh, "Removed"))
            st.behavior = QS_SPLIT_REMOVED;
        else if (!strcmp(beh, "MergedWithPrevious"))
            st.behavior = QS_SPLIT_MERGED_PREV;
        else if (!strcmp(beh, "MergedWithNext"))
            st.behavior = QS_SPLIT_MERGED_NEXT;
        else if (!strcmp(beh, "Contiguous"))
            st.behavior = QS_SPLIT_CONTIGUOUS;
        else
            return qs_errf(err, "pre_tokenizer Split: behavior '%s' is not supported", beh);
        if (re) {
            st.re = qs_regex_compile(re, "pre_tokenizer Split", err);
        } else if (lit) {
            int code;
            PCRE2_SIZE at;
            st.re = pcre2_compile((PCRE2_SPTR)lit, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_LITERAL, &code, &at, NULL);
            if (!st.re)
                qs_errf(err, "pre_tokenizer Split: pattern '%s' is not valid UTF-8", lit);
        } else {
            return qs_errf(err, "pre_tokenizer Split: pattern needs \"Regex\" or \"String\"");
        }
        if (!st.re)
            return -1;
    } else if (!strcmp(type, "ByteLevel")) {
        st.kind = QS_PRE_BYTE_LEVEL;
        st.add_prefix_space = flag(p, "add_prefix_space", true);
        if (flag(p, "use_regex", true) && !(st.re = qs_regex_compile(GPT2_PATTERN, "pre_tokenizer ByteLevel", err)))
            return -1;
        tok->byte_level = true;
    } else if (!strcmp(type, "Metaspace")) {
        st.kind = QS_PRE_METASPACE;
        const char *rep = str_field(p, "replacement");
        if (utf8_of_replacement(rep ? rep : "\xe2\x96\x81", st.replacement, "pre_tokenizer Metaspace", err) ||
            prepend_scheme(p, &st.prepend, "pre_tokenizer Metaspace", err))
            return -1;
        st.split = flag(p, "split", true);
    } else {
        return qs_errf(err, "pre_tokenizer type '%s' is not supported (supported: Split, ByteLevel, Metaspace, Sequence)",
                       type);
    }
    return add_pre(tok, st, err);
}

/* ---------------- post-processor ---------------- */

static int template_ids(const cJSON *specials, const char *name, qs_tids *out, qs_err *err)
{
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(specials, name);
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(sp, "ids");
    if (!cJSON_IsArray(ids))
        return qs_errf(err, "post_processor TemplateProcessing: special token '%s' has no \"ids\"", name);
    for (const cJSON *i = ids->child; i; i = i->next)
        if (!cJSON_IsNumber(i) || qs_tids_push(out, (int32_t)i->valuedouble))
            return qs_errf(err, "post_processor TemplateProcessing: bad id for '%s'", name);
    return 0;
}

static int load_post(qs_tokenizer *tok, const cJSON *p, qs_tids *prefix, qs_tids *suffix, qs_err *err)
{
    if (!p || cJSON_IsNull(p))
        return 0;
    const char *type = type_of(p);
    if (!type)
        return qs_errf(err, "post_processor: missing type");
    if (!strcmp(type, "ByteLevel"))
        return 0; /* only trims offsets, which we do not report */
    if (!strcmp(type, "Sequence")) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(p, "processors");
        if (!cJSON_IsArray(list))
            return qs_errf(err, "post_processor Sequence: missing \"processors\"");
        for (const cJSON *c = list->child; c; c = c->next)
            if (load_post(tok, c, prefix, suffix, err))
                return -1;
        return 0;
    }
    if (strcmp(type, "TemplateProcessing"))
        return qs_errf(err, "post_processor type '%s' is not supported (supported: TemplateProcessing, ByteLevel, Sequence)",
                       type);
    const cJSON *single = cJSON_GetObjectItemCaseSensitive(p, "single");
    const cJSON *specials = cJSON_GetObjectItemCaseSensitive(p, "special_tokens");
    if (!cJSON_IsArray(single))
        return qs_errf(err, "post_processor TemplateProcessing: missing \"single\"");
    prefix->len = suffix->len = 0;
    bool seen_seq = false;
    for (const cJSON *it = single->child; it; it = it->next) {
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(it, "SpecialToken");
        if (cJSON_GetObjectItemCaseSensitive(it, "Sequence")) {
            if (seen_seq)
                return qs_errf(err, "post_processor TemplateProcessing: \"single\" has two sequences");
            seen_seq = true;
        } else if (sp) {
            const char *id = str_field(sp, "id");
            if (!id || template_ids(specials, id, seen_seq ? suffix : prefix, err))
                return id ? -1 : qs_errf(err, "post_processor TemplateProcessing: SpecialToken without id");
        } else {
            return qs_errf(err, "post_processor TemplateProcessing: unknown item in \"single\"");
        }
    }
    return 0;
}

/* ---------------- decoder ---------------- */

static int add_dec(qs_tokenizer *tok, qs_dec_step st, qs_err *err)
{
    qs_dec_step *n = realloc(tok->dec, (tok->n_dec + 1) * sizeof *n);
    if (!n)
        return qs_errf(err, "decoder: out of memory");
    tok->dec = n;
    tok->dec[tok->n_dec++] = st;
    return 0;
}

static int load_decoder(qs_tokenizer *tok, const cJSON *d, qs_err *err)
{
    if (!d || cJSON_IsNull(d))
        return 0;
    tok->has_decoder = true;
    const char *type = type_of(d);
    if (!type)
        return qs_errf(err, "decoder: missing type");
    qs_dec_step st = {0};
    if (!strcmp(type, "Sequence")) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(d, "decoders");
        if (!cJSON_IsArray(list))
            return qs_errf(err, "decoder Sequence: missing \"decoders\"");
        for (const cJSON *c = list->child; c; c = c->next)
            if (load_decoder(tok, c, err))
                return -1;
        return 0;
    } else if (!strcmp(type, "ByteLevel")) {
        st.kind = QS_DEC_BYTE_LEVEL;
    } else if (!strcmp(type, "ByteFallback")) {
        st.kind = QS_DEC_BYTE_FALLBACK;
    } else if (!strcmp(type, "Fuse")) {
        st.kind = QS_DEC_FUSE;
    } else if (!strcmp(type, "Replace")) {
        const char *lit = str_field(cJSON_GetObjectItemCaseSensitive(d, "pattern"), "String");
        const char *content = str_field(d, "content");
        if (!lit || !content)
            return qs_errf(err, "decoder Replace: needs a String pattern and content");
        st.kind = QS_DEC_REPLACE;
        st.pattern = strdup(lit);
        st.content = strdup(content);
    } else if (!strcmp(type, "Strip")) {
        const char *content = str_field(d, "content");
        const cJSON *start = cJSON_GetObjectItemCaseSensitive(d, "start"), *stop = cJSON_GetObjectItemCaseSensitive(d, "stop");
        if (!content || !cJSON_IsNumber(start) || !cJSON_IsNumber(stop))
            return qs_errf(err, "decoder Strip: needs content, start and stop");
        st.kind = QS_DEC_STRIP;
        st.content = strdup(content);
        st.start = start->valueint;
        st.stop = stop->valueint;
    } else if (!strcmp(type, "Metaspace")) {
        qs_prepend_scheme scheme;
        const char *rep = str_field(d, "replacement");
        st.kind = QS_DEC_METASPACE;
        if (utf8_of_replacement(rep ? rep : "\xe2\x96\x81", st.replacement, "decoder Metaspace", err) ||
            prepend_scheme(d, &scheme, "decoder Metaspace", err))
            return -1;
        st.strip_first = scheme != QS_PREPEND_NEVER;
    } else {
        return qs_errf(err, "decoder type '%s' is not supported (supported: ByteLevel, Replace, ByteFallback, Fuse, Strip, "
                            "Metaspace, Sequence)", type);
    }
    return add_dec(tok, st, err);
}

/* ---------------- assembly ---------------- */

static int finish_tables(qs_tokenizer *tok, qs_err *err)
{
    for (int b = 0; b < 256; b++) {
        char name[8];
        size_t n;
        if (tok->byte_level) {
            n = (size_t)qs_byte_level_char((uint8_t)b, name);
        } else {
            snprintf(name, sizeof name, "<0x%02X>", b);
            n = strlen(name);
        }
        tok->byte_ids[b] = qs_vocab_find(&tok->vocab, name, n);
    }
    tok->is_special = calloc(tok->vocab.n_ids ? tok->vocab.n_ids : 1, sizeof *tok->is_special);
    tok->is_added = calloc(tok->vocab.n_ids ? tok->vocab.n_ids : 1, sizeof *tok->is_added);
    if (!tok->is_special || !tok->is_added)
        return qs_errf(err, "out of memory");
    for (size_t i = 0; i < tok->n_added; i++) {
        tok->is_special[tok->added[i].id] = tok->added[i].special;
        tok->is_added[tok->added[i].id] = true;
    }
    return 0;
}

static int load_json(qs_tokenizer *tok, const char *path, qs_err *err)
{
    char *text;
    size_t len;
    if (qs_read_file(path, &text, &len, err))
        return -1;
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    if (!root)
        return qs_errf(err, "%s: not valid JSON", path);
    qs_tids prefix = {0}, suffix = {0};
    int rc = -1;
    if (!cJSON_IsObject(root)) {
        qs_errf(err, "expected a JSON object");
        goto done;
    }
    if (load_model(tok, cJSON_GetObjectItemCaseSensitive(root, "model"), err) ||
        load_added(tok, cJSON_GetObjectItemCaseSensitive(root, "added_tokens"), err) ||
        load_merges(tok, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "model"), "merges"), err) ||
        load_normalizer(tok, cJSON_GetObjectItemCaseSensitive(root, "normalizer"), err) ||
        load_pre(tok, cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), err) ||
        load_post(tok, cJSON_GetObjectItemCaseSensitive(root, "post_processor"), &prefix, &suffix, err) ||
        load_decoder(tok, cJSON_GetObjectItemCaseSensitive(root, "decoder"), err) || finish_tables(tok, err) ||
        qs_bpe_pieces_build(tok, err))
        goto done;
    qs_bpe_compact_build(tok);
    for (size_t i = 0; i < prefix.len + suffix.len; i++) {
        int32_t id = i < prefix.len ? prefix.data[i] : suffix.data[i - prefix.len];
        if (id < 0 || (size_t)id >= tok->vocab.n_ids || !tok->vocab.str[id]) {
            qs_errf(err, "post_processor: id %d is not in the vocab", id);
            goto done;
        }
    }
    tok->post_prefix = prefix.data;
    tok->n_post_prefix = prefix.len;
    tok->post_suffix = suffix.data;
    tok->n_post_suffix = suffix.len;
    prefix.data = suffix.data = NULL;
    rc = 0;
done:
    free(prefix.data);
    free(suffix.data);
    cJSON_Delete(root);
    return rc ? qs_err_prefix(err, "%s: ", path) : 0;
}

int qs_tokenizer_load_files(const char *tokenizer_json_path, const char *config_path, qs_tokenizer **out, qs_err *err)
{
    qs_tokenizer *tok = calloc(1, sizeof *tok);
    if (!tok)
        return qs_errf(err, "out of memory");
    tok->unk_id = tok->bos_id = tok->eos_id = -1;
    if (load_json(tok, tokenizer_json_path, err) || qs_tokenizer_load_config(tok, tokenizer_json_path, config_path, err)) {
        qs_tokenizer_free(tok);
        return -1;
    }
    tok->cache = qs_word_cache_new();
    if (!tok->cache) {
        qs_tokenizer_free(tok);
        return qs_errf(err, "out of memory");
    }
    *out = tok;
    return 0;
}

int qs_tokenizer_load(const char *model_dir, qs_tokenizer **out, qs_err *err)
{
    char json[4096], config[4096];
    qs_path_join(json, sizeof json, model_dir, "tokenizer.json");
    qs_path_join(config, sizeof config, model_dir, "tokenizer_config.json");
    if (!qs_file_exists(json))
        return qs_errf(err, "%s: no tokenizer.json in this folder", json);
    return qs_tokenizer_load_files(json, qs_file_exists(config) ? config : NULL, out, err);
}

void qs_tokenizer_free(qs_tokenizer *tok)
{
    if (!tok)
        return;
    qs_vocab_free(&tok->vocab);
    qs_merges_free(&tok->merges);
    qs_merges_free(&tok->inner_pairs);
    qs_norm_steps_free(tok->norm, tok->n_norm);
    qs_pre_steps_free(tok->pre, tok->n_pre);
    qs_dec_steps_free(tok->dec, tok->n_dec);
    qs_added_set_free(&tok->added_raw);
    qs_added_set_free(&tok->added_norm);
    for (size_t i = 0; i < tok->n_added; i++)
        free(tok->added[i].content);
    free(tok->added);
    free(tok->is_special);
    free(tok->is_added);
    free(tok->post_prefix);
    free(tok->post_suffix);
    free(tok->bos_token);
    free(tok->eos_token);
    free(tok->chat_template);
    qs_word_cache_free(tok->cache);
    free(tok);
}
