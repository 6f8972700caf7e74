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
