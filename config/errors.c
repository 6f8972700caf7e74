/* errors.c - config/'s one error table. */
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

void cfg_one_line(char *msg)
{
    for (; msg && *msg; msg++)
        if ((unsigned char)*msg < 0x20 || *msg == 0x7f)
            *msg = '?';
}
