/* hub_sha256.c — SHA-256 over a download as it streams in (and over the part of an interrupted
 * one already on disk), through OpenSSL's libcrypto. An LFS file's ETag is its sha256. */
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hub/hub_internal.h"

struct hub_sha256 {
    EVP_MD_CTX *ctx;
};

hub_sha256 *hub_sha256_new(void)
{
    hub_sha256 *h = calloc(1, sizeof *h);
    if (!h || !(h->ctx = EVP_MD_CTX_new()) || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
        hub_sha256_free(h);
        return NULL;
    }
    return h;
}

void hub_sha256_update(hub_sha256 *h, const void *data, size_t len) { EVP_DigestUpdate(h->ctx, data, len); }

void hub_sha256_reset(hub_sha256 *h) { EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL); }

void hub_sha256_hex(hub_sha256 *h, char out[65])
{
    unsigned char md[32];
    unsigned int n = 0;
    EVP_DigestFinal_ex(h->ctx, md, &n);
    for (unsigned i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    out[64] = '\0';
}

void hub_sha256_free(hub_sha256 *h)
{
    if (!h)
        return;
    EVP_MD_CTX_free(h->ctx);
    free(h);
}

int hub_sha256_file_prefix(hub_sha256 *h, const char *path, long long len, qs_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return qs_errf(err, "cannot read %s: %s", path, strerror(errno));
    static const size_t CHUNK = 1 << 20;
    unsigned char *buf = malloc(CHUNK);
    long long left = len;
    while (buf && left > 0) {
        size_t want = left < (long long)CHUNK ? (size_t)left : CHUNK;
        size_t got = fread(buf, 1, want, f);
        if (got == 0)
            break;
        hub_sha256_update(h, buf, got);
        left -= (long long)got;
    }
    free(buf);
    fclose(f);
    if (left != 0)
        return qs_errf(err, "cannot read %s back to check it", path);
    return 0;
}
