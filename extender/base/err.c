#include "ext_err.h"

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
