/* hub_fetch_file.c — one repo file into the cache, as huggingface_hub's hf_hub_download does it:
 * HEAD the resolve URL for the ETag (X-Linked-Etag for LFS files) and size, GET it (following the
 * CDN redirect; the token stays with the hub's host) into
 * blobs/ETAG.incomplete under .locks/…/ETAG.lock (resuming with a Range request when a partial
 * file is there), check an LFS file's sha256 against its ETag, rename to blobs/ETAG and link
 * snapshots/COMMIT/FILE to it. Failures name the file and the cause. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "hub/hub_internal.h"
#include "util/log.h"

typedef struct file_sink {
    int fd;
    hub_sha256 *sha; /* NULL unless an LFS file */
    long long written;
    hub_progress *progress;
    int write_errno;
} file_sink;

static int sink_data(void *ctx, const void *data, size_t len)
{
    file_sink *s = ctx;
    if (!data) { /* start over: the server sent the whole file */
        if (ftruncate(s->fd, 0) || lseek(s->fd, 0, SEEK_SET) < 0) {
            s->write_errno = errno;
            return -1;
        }
        if (s->sha)
            hub_sha256_reset(s->sha);
        hub_progress_add_total(s->progress, s->written);
        s->written = 0;
        return 0;
    }
    const char *p = data;
    for (size_t done = 0; done < len;) {
        ssize_t w = write(s->fd, p + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            s->write_errno = w < 0 ? errno : ENOSPC;
            return -1;
        }
        done += (size_t)w;
    }
    if (s->sha)
        hub_sha256_update(s->sha, data, len);
    s->written += (long long)len;
    hub_progress_add_done(s->progress, (long long)len);
    return 0;
}

static long long free_bytes(const char *dir)
{
    struct statvfs v;
    if (statvfs(dir, &v))
        return -1;
    return (long long)v.f_bavail * (long long)v.f_frsize;
}

typedef struct file_meta {
    char etag[192];
    bool lfs;
    long long size; /* -1 when the server did not say */
    char url[HUB_URL_MAX];
} file_meta;

static int head_file(const hub_fetch_ctx *c, const char *file, file_meta *m, qs_err *err)
{
    char rev[512], path[2048];
    if (hub_url_encode(c->commit, false, rev, sizeof rev) || hub_url_encode(file, true, path, sizeof path))
        return qs_errf(err, "%s: name too long for a URL", file);
    char url[HUB_URL_MAX];
    snprintf(url, sizeof url, "%s/%s/resolve/%s/%s", c->endpoint, c->repo_id, rev, path);
    hub_response r;
    if (hub_http_head(url, c->token, &r, err))
        return -1;
    hub_what w = {c->repo_id, c->revision, file};
    if (r.status >= 400 || r.status < 200)
        return hub_http_status_error(&r, &w, err);
    m->lfs = r.linked_etag[0] != '\0';
    snprintf(m->etag, sizeof m->etag, "%s", m->lfs ? r.linked_etag : r.etag);
    if (!hub_normalize_etag(m->etag))
        return qs_errf(err, "%s: the hub sent no usable ETag for this file ('%s')", file,
                       m->lfs ? r.linked_etag : r.etag);
    if (m->lfs && strlen(m->etag) != 64)
        return qs_errf(err, "%s: X-Linked-Etag '%s' is not a sha256", file, m->etag);
    bool redirect = r.status >= 300 && r.status <= 399 && r.location[0];
    /* a redirect's Content-Length is its own (empty) body's: only X-Linked-Size then says */
    m->size = r.linked_size >= 0 ? r.linked_size : redirect ? -1 : r.content_length;
    /* the bytes come from the resolve URL again, redirects followed by libcurl, which sends the
     * token to the hub's host only, never to the CDN a signed redirect points to */
    snprintf(m->url, sizeof m->url, "%s", url);
    return 0;
}

/* Downloads into blob.incomplete and renames it to blob; the lock is held. */
static int download_blob(const hub_fetch_ctx *c, const char *file, const file_meta *m, const char *blob, qs_err *err)
{
    char part[HUB_PATH_MAX + 16], dir[HUB_PATH_MAX];
    snprintf(part, sizeof part, "%s.incomplete", blob);
    snprintf(dir, sizeof dir, "%s/blobs", c->paths->repo);
    int fd = open(part, O_RDWR | O_CREAT, 0666);
    if (fd < 0)
        return qs_errf(err, "%s: cannot create %s: %s", file, part, strerror(errno));
    long long offset = lseek(fd, 0, SEEK_END);
    if (offset < 0 || (m->size >= 0 && offset > m->size)) {
        offset = 0; /* longer than the file: not a prefix of it */
        if (ftruncate(fd, 0) || lseek(fd, 0, SEEK_SET) < 0) {
            close(fd);
            return qs_errf(err, "%s: cannot reset %s: %s", file, part, strerror(errno));
        }
    }
    if (offset > 0)
        qs_info("%s: resuming %s from byte %lld", file, part, offset);
    long long need = m->size >= 0 ? m->size - offset : 0, avail = free_bytes(dir);
    if (avail >= 0 && need > avail) {
        close(fd);
        return qs_errf(err, "%s: not enough disk space in %s: %lld bytes needed, %lld free", file, dir, need, avail);
    }
    file_sink s = {.fd = fd, .written = offset, .progress = c->progress};
    if (m->lfs && !(s.sha = hub_sha256_new())) {
        close(fd);
        return qs_errf(err, "cannot start sha256");
    }
    int rc = 0;
    if (s.sha && offset > 0 && hub_sha256_file_prefix(s.sha, part, offset, err))
        rc = -1;
    hub_progress_add_total(c->progress, m->size >= 0 ? m->size - offset : 0);
    hub_response r = {0};
    if (rc == 0 && (m->size < 0 || offset < m->size)) {
        rc = hub_http_download(m->url, c->token, offset, sink_data, &s, c->abort_flag, &r, err);
        hub_what w = {c->repo_id, c->revision, file};
        if (rc == -2 && (s.write_errno == ENOSPC || s.write_errno == EDQUOT))
            rc = m->size >= 0 ? qs_errf(err, "%s: disk full writing %s: %lld more bytes needed, %lld free in %s", file,
                                        part, m->size - s.written, free_bytes(dir), dir)
                              : qs_errf(err, "%s: disk full writing %s after %lld bytes (the hub gave no size), %lld "
                                             "free in %s",
                                        file, part, s.written, free_bytes(dir), dir);
        else if (rc == -2)
            rc = qs_errf(err, "%s: cannot write %s: %s", file, part, strerror(s.write_errno));
        else if (rc == 0 && r.status != 200 && r.status != 206)
            rc = hub_http_status_error(&r, &w, err);
        else if (rc)
            qs_err_prefix(err, "%s: ", file);
    }
    if (rc == 0 && m->size >= 0 && s.written != m->size)
        rc = qs_errf(err, "%s: the download stopped at %lld of %lld bytes", file, s.written, m->size);
    if (rc && s.written > 0) {
        char msg[QS_ERR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", err->msg);
        qs_errf(err, "%s; %lld bytes are kept in %s and the next run resumes there", msg, s.written, part);
    }
    close(fd);
    if (rc == 0 && s.sha) {
        char got[65];
        hub_sha256_hex(s.sha, got);
        if (strcmp(got, m->etag)) {
            unlink(part);
            rc = qs_errf(err, "%s: checksum mismatch: the downloaded bytes have sha256 %s but the hub's ETag is %s; "
                              "the partial blob %s was removed, run again to download it anew",
                         file, got, m->etag, part);
        }
    }
    hub_sha256_free(s.sha);
    if (rc == 0 && rename(part, blob))
        rc = qs_errf(err, "%s: cannot rename %s to %s: %s", file, part, blob, strerror(errno));
    return rc;
}

int hub_fetch_file(const hub_fetch_ctx *c, const char *file, qs_err *err)
{
    file_meta m;
    if (head_file(c, file, &m, err))
        return -1;
    char blob[HUB_PATH_MAX], lock[HUB_PATH_MAX], dir[HUB_PATH_MAX];
    hub_blob_path(c->paths, m.etag, blob, sizeof blob);
    hub_lock_path(c->paths, m.etag, lock, sizeof lock);
    snprintf(dir, sizeof dir, "%s/blobs", c->paths->repo);
    if (hub_mkdirs(dir, err))
        return -1;
    snprintf(dir, sizeof dir, "%s", lock);
    *strrchr(dir, '/') = '\0';
    if (hub_mkdirs(dir, err))
        return -1;
    /* the same lock file huggingface_hub's FileLock takes, so the two never write one blob at once */
    int lfd = open(lock, O_RDWR | O_CREAT, 0666);
    if (lfd < 0)
        return qs_errf(err, "%s: cannot open the lock %s: %s", file, lock, strerror(errno));
    if (flock(lfd, LOCK_EX)) {
        close(lfd);
        return qs_errf(err, "%s: cannot lock %s: %s", file, lock, strerror(errno));
    }
    int rc = 0;
    struct stat st;
    if (stat(blob, &st) != 0)
        rc = download_blob(c, file, &m, blob, err);
    else
        hub_progress_add_total(c->progress, 0);
    flock(lfd, LOCK_UN);
    close(lfd);
    if (rc == 0)
        rc = hub_link_snapshot_file(c->paths, c->commit, file, m.etag, err);
    if (rc == 0)
        hub_progress_file_done(c->progress, file, m.size);
    return rc;
}
