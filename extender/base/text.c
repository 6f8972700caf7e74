/*
 * text.c - text from the cluster made safe for a terminal: the one escaping
 * rule every text printer uses (`muster why`, `muster queues`, `muster
 * simulate -o table`, and the error lines they print).
 *
 * kubectl's rule (CVE-2021-25743, kubernetes#112553: k8s.io/cli-runtime
 * pkg/printers/terminal.go and tableprinter.go) escapes ESC as "^[" and CR as
 * "\r", and cuts a table cell at its first LF, CR or FF with "...". Here the
 * same spellings, made complete and used for free text as well as cells:
 * every control character is escaped, none is cut off, so what the cluster
 * says is all shown and none of it acts on the terminal.
 *
 *   ESC                     ^[          (kubectl's)
 *   CR, LF, TAB             \r \n \t    (CR is kubectl's; LF and TAB would
 *                                        forge a line or shift a column)
 *   other C0 and DEL        \xNN
 *   C1 (U+0080..U+009F)     \uNNNN      (U+009B is CSI on 8-bit terminals)
 *   bidi and line breaks    \uNNNN      (U+200E/F, U+202A..E, U+2066..9 reorder
 *                                        what follows; U+2028/9 break lines)
 *   bytes not UTF-8         \xNN
 *
 * Nothing else changes, backslashes included, so the escaped text is
 * printable and escaping it again changes nothing (like kubectl's, it is not
 * meant to be reversed).
 *
 * JSON output keeps its meaning: cJSON writes every character below U+0020
 * in a string as \uNNNN, but the rest of the set above (C1, bidi, U+2028/9)
 * raw, as Go's encoding/json (kubectl -o json) writes C1 and bidi too.
 * ext_json_print writes them as \uNNNN, which a JSON reader reads back as the
 * same characters, and bytes that are no UTF-8 as U+FFFD.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base.h"

/* A code point that acts on the terminal or on the line rather than showing. */
static bool acts(uint32_t cp)
{
    return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) || cp == 0x200e || cp == 0x200f ||
           (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 ||
           cp == 0x2029;
}

/* The code point of the n-byte UTF-8 sequence at p. */
static uint32_t decode(const unsigned char *p, size_t n)
{
    static const unsigned char lead_bits[] = {0, 0x7f, 0x1f, 0x0f, 0x07};
    uint32_t cp = p[0] & lead_bits[n];

    for (size_t k = 1; k < n; k++)
        cp = cp << 6 | (p[k] & 0x3f);
    return cp;
}

/* How an escape is spelt: for a person reading text, or inside JSON's strings. */
enum spelling { FOR_TEXT, FOR_JSON };

/*
 * The escape for one sequence that acts: n bytes at p, n 0 for a byte that is
 * not UTF-8. In JSON every such sequence is inside a string (the printer
 * escapes below U+0020 itself and is ASCII outside strings), so \uNNNN keeps
 * its meaning; a byte that is no UTF-8 has none and becomes U+FFFD, as Go's
 * encoding/json does.
 */
static void spell(const unsigned char *p, size_t n, enum spelling how, char buf[8])
{
    uint32_t cp = n > 0 ? decode(p, n) : p[0];

    if (how == FOR_JSON)
        snprintf(buf, 8, "\\u%04x", n > 0 ? (unsigned)cp : 0xfffdu);
    else if (n == 1 && cp == 0x1b)
        snprintf(buf, 8, "^[");
    else if (n == 1 && (cp == '\r' || cp == '\n' || cp == '\t'))
        snprintf(buf, 8, "\\%c", cp == '\r' ? 'r' : cp == '\n' ? 'n' : 't');
    else if (n <= 1)
        snprintf(buf, 8, "\\x%02x", p[0]);
    else
        snprintf(buf, 8, "\\u%04x", (unsigned)cp);
}

/* Does this sequence stay as it is? In printed JSON, bytes below 0x20 are its own layout. */
static bool keeps(const unsigned char *p, size_t n, enum spelling how)
{
    if (n == 0)
        return false;
    return !acts(decode(p, n)) || (how == FOR_JSON && p[0] < 0x20);
}

static size_t escape(const char *s, char *out, enum spelling how)
{
    const unsigned char *p = (const unsigned char *)(s != NULL ? s : "");
    size_t left = strlen((const char *)p), len = 0;

    while (left > 0) {
        size_t n = cfg_utf8_len(p, left);
        char esc[8];

        if (keeps(p, n, how)) {
            if (out != NULL)
                memcpy(out + len, p, n);
            len += n;
        } else {
            spell(p, n, how, esc);
            if (out != NULL)
                memcpy(out + len, esc, strlen(esc));
            len += strlen(esc);
            n = n > 0 ? n : 1; /* a byte that is no UTF-8 goes alone */
        }
        p += n;
        left -= n;
    }
    if (out != NULL)
        out[len] = '\0';
    return len;
}

size_t ext_text_escape(const char *s, char *out)
{
    return escape(s, out, FOR_TEXT);
}

char *ext_json_print(const struct cJSON *item, bool formatted)
{
    char *raw = formatted ? cJSON_Print(item) : cJSON_PrintUnformatted(item), *safe;
    size_t len;

    if (raw == NULL)
        return NULL;
    len = escape(raw, NULL, FOR_JSON);
    if (len == strlen(raw))
        return raw; /* nothing to escape: escaping never shortens */
    safe = malloc(len + 1);
    if (safe != NULL)
        escape(raw, safe, FOR_JSON);
    free(raw);
    return safe;
}

char *ext_text_safe(struct ext_arena *a, const char *s)
{
    char *out;

    if (s == NULL)
        return NULL;
    out = ext_arena_alloc(a, ext_text_escape(s, NULL) + 1);
    if (out != NULL)
        ext_text_escape(s, out);
    return out;
}

void ext_text_put(const char *s, FILE *out)
{
    size_t len = ext_text_escape(s, NULL);
    char *safe = malloc(len + 1);

    if (safe == NULL) {
        fputs("<out of memory>", out); /* never the raw text */
        return;
    }
    ext_text_escape(s, safe);
    fputs(safe, out);
    free(safe);
}

void ext_text_printf(FILE *out, const char *fmt, ...)
{
    char *text;
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (text == NULL) {
        fputs("<out of memory>", out);
        return;
    }
    va_start(ap, fmt);
    vsnprintf(text, (size_t)n + 1, fmt, ap);
    va_end(ap);
    ext_text_put(text, out);
    free(text);
}

size_t ext_text_width(const char *s)
{
    size_t w = 0;

    for (; *s; s++)
        w += ((unsigned char)*s & 0xc0) != 0x80;
    return w;
}
