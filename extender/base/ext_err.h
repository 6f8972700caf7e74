/* ext_err.h - the one error table of muster's shell (extender/). */
#ifndef MUSTER_EXT_ERR_H
#define MUSTER_EXT_ERR_H

#define EXT_ERRNO_MAP(XX)                                                         \
    XX(OK, 0, "ok")                                                               \
    XX(ENOMEM, -1, "out of memory")                                               \
    XX(EINVAL, -2, "invalid input")                                               \
    XX(ETOOBIG, -3, "input over its size cap")                                    \
    XX(ENOTFOUND, -4, "not found")                                                \
    XX(EIO, -5, "I/O or network failure")                                         \
    XX(EHTTP, -6, "the API server answered with an error status")                 \
    XX(ECONFLICT, -7, "conflict")                                                 \
    XX(EGONE, -8, "resource version too old (410 Gone)")                          \
    XX(ETIMEOUT, -9, "timed out")                                                 \
    XX(ESTOPPED, -10, "shutting down")

enum ext_err {
#define EXT_ERR_ENUM(name, code, text) EXT_##name = code,
    EXT_ERRNO_MAP(EXT_ERR_ENUM)
#undef EXT_ERR_ENUM
};

const char *ext_strerror(int err);

#endif
