/*
 * kube_client_int.h - what kube_client.c shares with kube_watch.c (and the
 * tests). Not part of the extender's public API.
 */
#ifndef MUSTER_KUBE_CLIENT_INT_H
#define MUSTER_KUBE_CLIENT_INT_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>

#include "kube.h"

/* A growable byte buffer with a hard cap set at init (curl's dynbuf). */
struct kube_buf {
    char *data; /* NUL-terminated when non-NULL */
    size_t len;
    size_t alloc;
    size_t max;
    int overflow; /* an append was refused for going over max */
};

void kube__buf_init(struct kube_buf *b, size_t max);
void kube__buf_cleanup(struct kube_buf *b);
void kube__buf_reset(struct kube_buf *b);
int kube__buf_add(struct kube_buf *b, const void *data, size_t len);

/* A fresh easy handle with the client's TLS, timeouts and user agent applied. */
CURL *kube__easy_new(struct kube_client *c);
/* Re-apply the client's options after curl_easy_reset(). */
int kube__easy_setup(struct kube_client *c, CURL *h);

/* The request headers: Accept (NULL: application/json), Authorization (token re-read if
 * rotated), Content-Type (NULL: none). */
int kube__headers(struct kube_client *c, const char *accept, const char *content_type,
                  struct curl_slist **out, char *err, size_t errlen);

/* A full URL for path; the caller frees it. */
char *kube__url(const struct kube_client *c, const char *path);

/* An error code and message for a non-2xx reply whose body (maybe a Status) is given. */
int kube__status_error(const char *method, const char *path, long status, const char *body,
                       size_t len, char *err, size_t errlen);
/* The same for a transport failure. */
int kube__curl_error(const char *method, const char *path, CURLcode cc, const char *errbuf,
                     char *err, size_t errlen);

size_t kube__max_reply(const struct kube_client *c);
/* Count one finished request on h (kube_client_count_requests; code 0 = no response) and the
 * connections it opened (kube_client_count_connections). */
void kube__count(const struct kube_client *c, CURL *h, const char *method, const char *path,
                 long code);

/*
 * A watch stream is one JSON event per line; curl hands it over in arbitrary
 * pieces. The splitter joins pieces and calls on_line once per complete,
 * non-empty line (without the newline). A line over max, or a non-zero
 * on_line result, stops the feed with that code.
 */
struct kube_lines {
    struct kube_buf line;
    int (*on_line)(void *arg, const char *line, size_t len);
    void *arg;
};

void kube__lines_init(struct kube_lines *s, size_t max,
                      int (*on_line)(void *arg, const char *line, size_t len), void *arg);
void kube__lines_cleanup(struct kube_lines *s);
int kube__lines_feed(struct kube_lines *s, const char *data, size_t len);

/*
 * The same for a protobuf watch: a stream of frames, each a 4-byte big-endian length and that
 * many bytes (apimachinery's LengthDelimitedFramer). on_frame is called once per complete frame;
 * a frame over max (its length counted with the 4 bytes) or a non-zero on_frame result stops
 * the feed with that code.
 */
struct kube_frames {
    struct kube_buf frame; /* the length, then the frame as it comes */
    size_t want;           /* the frame's length, once its 4 bytes are in */
    bool have_len;
    int (*on_frame)(void *arg, const void *frame, size_t len);
    void *arg;
};

void kube__frames_init(struct kube_frames *f, size_t max,
                       int (*on_frame)(void *arg, const void *frame, size_t len), void *arg);
void kube__frames_cleanup(struct kube_frames *f);
void kube__frames_reset(struct kube_frames *f);
int kube__frames_feed(struct kube_frames *f, const char *data, size_t len);

/* application/vnd.kubernetes.protobuf, as a request's Accept and a reply's Content-Type. */
#define KUBE_PROTOBUF "application/vnd.kubernetes.protobuf"

/*
 * A protobuf reply ("k8s\0" and a runtime.Unknown) as the JSON the decoders read: a Pod, a Node,
 * a PodList or NodeList ({"metadata": {resourceVersion, continue}, "items": [...]}) or a Status,
 * with only the fields muster reads (proto.c). NULL for another kind or bytes that do not unpack,
 * err says which. The caller owns the result.
 */
cJSON *kube__proto_body(const void *data, size_t len, char *err, size_t errlen);
/* One watch frame (a metav1.WatchEvent) as {"type": ..., "object": ...}; NULL as above. */
cJSON *kube__proto_event(const void *frame, size_t len, char *err, size_t errlen);

#endif
