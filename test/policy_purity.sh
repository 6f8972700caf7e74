#!/usr/bin/env bash
# policy/ is the pure core: it may call libc's memory, string and formatting
# functions and libm, nothing that touches a clock, file, socket, environment
# or log; libgcc's 128-bit division helpers are allowed. Checked on the symbols
# libpolicy.a really links, and on its includes.
set -euo pipefail
lib=$1
src=$2
allowed='^(malloc|calloc|realloc|free|strdup|memcpy|memmove|memset|memcmp|strcmp|strncmp|strlen|strchr|strtol|snprintf|vsnprintf|vasprintf|qsort|qsort_r|abs|exp2|expm1|llround|__divti3|__udivti3|__modti3|__umodti3|__divmodti4|__udivmodti4|__stack_chk_fail|__assert_fail|__asan_.*|__ubsan_.*|__sanitizer_.*)$'
defined=$(nm --defined-only "$lib" | awk 'NF == 3 {print $3}' | sort -u)
undefined=$(nm -u "$lib" | awk '{print $2}' | sort -u)
bad=$(comm -23 <(echo "$undefined") <(echo "$defined") | grep -Ev "$allowed" || true)
if [ -n "$bad" ]; then
    echo "policy/ links symbols outside its allowance:"; echo "$bad"; exit 1
fi
inc=$(grep -hE '^#include <' "$src"/*.c "$src"/*.h | sort -u |
      grep -Ev '<(stdarg|stdbool|stddef|stdint|stdio|stdlib|string|math|limits)\.h>' || true)
if [ -n "$inc" ]; then
    echo "policy/ includes headers outside libc/libm basics:"; echo "$inc"; exit 1
fi
echo "policy purity: 1 passed, 0 failed"
