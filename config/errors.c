/* errors.c - config/'s one error table. */
#include <string.h>

#include "config.h"

const char *cfg_strerror(int err)
{
    switch (err) {
#define CFG_ERR_CASE(name, code, text)                                                             \
    case code:                                                                                     \
        return text;
        CFG_ERRNO_MAP(CFG_ERR_CASE)
#undef CFG_ERR_CASE
    }
    return "unknown error";
}

size_t cfg_utf8_len(const unsigned char *p, size_t n)
{
    unsigned c = p[0], cp, min;
    size_t k, need;

    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        need = 1, cp = c & 0x1f, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        need = 2, cp = c & 0x0f, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        need = 3, cp = c & 0x07, min = 0x10000;
    else
        return 0;
    if (n < need + 1)
        return 0;
    for (k = 1; k <= need; k++) {
        if ((p[k] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return need + 1;
}

void cfg_one_line(char *msg)
{
    unsigned char *p = (unsigned char *)msg;
    size_t n = msg ? strlen(msg) : 0, k;

    while (n > 0) {
        k = cfg_utf8_len(p, n);
        if (k == 0 || *p < 0x20 || *p == 0x7f) {
            *p = '?'; /* a control byte, or a byte of no (or a cut) UTF-8 sequence */
            k = 1;
        }
        p += k;
        n -= k;
    }
}
