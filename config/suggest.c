/* suggest.c - "did you mean": the known name nearest to a misspelt one. */
#include <ctype.h>
#include <string.h>

#include "cfg_internal.h"

#define SUGGEST_MAX_LEN 64
#define SUGGEST_MAX_DISTANCE 2

/* Levenshtein distance, ignoring case: "bindwait" is 0 away from "bindWait". */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t row[SUGGEST_MAX_LEN + 1];

    if (la > SUGGEST_MAX_LEN || lb > SUGGEST_MAX_LEN)
        return (size_t)-1;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];

        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            size_t best = diag + cost;

            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *cfg__suggest(const char *word, const char *const *names, size_t stride)
{
    const char *best = NULL;
    size_t best_d = SUGGEST_MAX_DISTANCE + 1;

    for (const char *const *n = names; *n != NULL;
         n = (const char *const *)((const char *)n + stride)) {
        size_t d = distance(word, *n);

        if (d < best_d) {
            best = *n;
            best_d = d;
        }
    }
    return best;
}
