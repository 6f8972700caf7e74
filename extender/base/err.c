/* err.c - the shell's one error table and its one formatter. */
#include <stdarg.h>
#include <stdio.h>

#include "base.h"

const char *ext_strerror(int err)
{
    switch (err) {
#define EXT_ERR_CASE(name, code, text)                                                             \
    case code:                                                                                     \
        return text;
        EXT_ERRNO_MAP(EXT_ERR_CASE)
#undef EXT_ERR_CASE
    }
    return "unknown error";
}

int ext_errf(char *err, size_t errlen, int code, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || errlen == 0)
        return code;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    cfg_one_line(err);
    return code;
}
