/* The lines of a simulator log that the parser acts on, found in one pass over a block of bytes: the same lines
 * simflow.sim.log_text._wanted's regex finds, and the value of each plain 'stat = number' line read here, so that
 * Python touches only what it keeps. Compiled by simflow.sim.log_scan with the system's C compiler, loaded with
 * ctypes; where that cannot be done the regex does the same work, slower.
 *
 * A block is whole lines of ASCII text without \r, \v, \f or \x1c-\x1f (where a line's spaces are only ' ' and
 * '\t', as Python's str.strip sees them); any other block is refused (-1) and read as text by the regex. */
#define _GNU_SOURCE
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { KEY = 0, START = 1, GPGPU = 2, OPTION = 3 };

typedef struct {
    int n;
    char **word;
    int *len, *kind, *plain;
    /* word indices by first byte: keys (a line's text before its '=', spaces after it trimmed, is the key), and the
     * words a line begins with, longest first (the regex's trie tries longer words first; none holds ' ', '\t'
     * or '=', so no such word is longer than a key the line holds, and keys are tried first) */
    int *keys[256], *prefixes[256];
    int nkeys[256], nprefixes[256];
    int nsub;
    char **sub;  /* what a GPGPU-Sim line must hold later on to matter */
    int *sublen;
    locale_t c_locale;  /* numbers are read as Python reads them, whatever the process's locale */
} Table;

void scan_free(Table *t) {
    if (!t) return;
    for (int i = 0; i < t->n; i++) free(t->word[i]);
    for (int i = 0; i < t->nsub; i++) free(t->sub[i]);
    for (int c = 0; c < 256; c++) free(t->keys[c]), free(t->prefixes[c]);
    free(t->word); free(t->len); free(t->kind); free(t->plain); free(t->sub); free(t->sublen);
    if (t->c_locale) freelocale(t->c_locale);
    free(t);
}

static char *copy(const char *s, int n) {
    char *out = malloc(n + 1);
    if (out) { memcpy(out, s, n); out[n] = 0; }
    return out;
}

Table *scan_new(int n, const char *const *words, const int *lens, const int *kinds, const int *plain,
                int nsub, const char *const *subs, const int *sublens) {
    Table *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->n = n; t->nsub = nsub;
    t->word = calloc(n, sizeof *t->word); t->len = calloc(n, sizeof(int)); t->kind = calloc(n, sizeof(int));
    t->plain = calloc(n, sizeof(int)); t->sub = calloc(nsub, sizeof *t->sub); t->sublen = calloc(nsub, sizeof(int));
    t->c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (!t->word || !t->len || !t->kind || !t->plain || !t->sub || !t->sublen || !t->c_locale) goto fail;
    for (int i = 0; i < n; i++) {
        if (lens[i] < 1 || !(t->word[i] = copy(words[i], lens[i]))) goto fail;
        t->len[i] = lens[i]; t->kind[i] = kinds[i]; t->plain[i] = plain[i];
        if (kinds[i] == KEY) t->nkeys[(unsigned char)words[i][0]]++;
        else t->nprefixes[(unsigned char)words[i][0]]++;
    }
    for (int i = 0; i < nsub; i++) {
        if (!(t->sub[i] = copy(subs[i], sublens[i]))) goto fail;
        t->sublen[i] = sublens[i];
    }
    for (int c = 0; c < 256; c++) {
        if (t->nkeys[c] && !(t->keys[c] = malloc(t->nkeys[c] * sizeof(int)))) goto fail;
        if (t->nprefixes[c] && !(t->prefixes[c] = malloc(t->nprefixes[c] * sizeof(int)))) goto fail;
        int k = 0, m = 0;
        for (int i = 0; i < n; i++) {
            if ((unsigned char)t->word[i][0] != c) continue;
            if (t->kind[i] == KEY) t->keys[c][k++] = i;
            else t->prefixes[c][m++] = i;
        }
        for (int a = 1; a < m; a++)  /* insertion sort, longest first */
            for (int b = a; b > 0 && t->len[t->prefixes[c][b]] > t->len[t->prefixes[c][b - 1]]; b--) {
                int tmp = t->prefixes[c][b]; t->prefixes[c][b] = t->prefixes[c][b - 1]; t->prefixes[c][b - 1] = tmp;
            }
    }
    return t;
fail:
    scan_free(t);
    return NULL;
}

/* A plain number as Python's float() reads it and the parser keeps it as is: digits, a fraction, an exponent,
 * spaces around; finite and not below zero. Anything else (a sign, nan, an underscore, an overflow) is left to
 * Python (NAN). */
static double plain_number(const Table *t, const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    while (end > p && (end[-1] == ' ' || end[-1] == '\t')) end--;
    const char *q = p;
    int digits = 0;
    while (q < end && *q >= '0' && *q <= '9') q++, digits++;
    if (q < end && *q == '.') {
        q++;
        while (q < end && *q >= '0' && *q <= '9') q++, digits++;
    }
    if (!digits) return NAN;
    if (q < end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < end && (*q == '+' || *q == '-')) q++;
        if (q == end || *q < '0' || *q > '9') return NAN;
        while (q < end && *q >= '0' && *q <= '9') q++;
    }
    if (q != end || end - p > 200) return NAN;
    char text[256];
    memcpy(text, p, end - p);
    text[end - p] = 0;
    double v = strtod_l(text, NULL, t->c_locale);  /* correctly rounded, as Python's float() */
    return isfinite(v) ? v : NAN;
}

/* Where each line of buf[0, n) that holds `needle` begins (the simulator's banner: one a process), at most cap. */
long find_lines_with(const char *buf, long n, const char *needle, long len, int64_t *starts, long cap) {
    long found = 0;
    const char *p = buf, *end = buf + n;
    while (found < cap && (p = memmem(p, end - p, needle, len))) {
        const char *start = p;
        while (start > buf && start[-1] != '\n') start--;
        starts[found++] = start - buf;
        p = memchr(p, '\n', end - p);
        if (!p) break;
        p++;
    }
    return found;
}

/* The lines of buf[from, to): its newlines (a loop the compiler vectorises). */
long count_lines(const char *buf, long from, long to) {
    long count = 0;
    for (long i = from; i < to; i++) count += buf[i] == '\n';
    return count;
}

/* One event a line that matters, in order, in two lists. A plain stat whose number this read ("fast"): its word
 * and value. Any other line ("slow"): the word it begins with (-1: an option line), where the line starts, where
 * the matched word (and a key's '=') ends, and how many fast events came before it. fast_start/fast_stop: where a
 * fast event's line starts and its '=' ends (for a stat outside a stats block, which Python reads itself). *lines
 * is the block's lines. Returns the slow events (*fast: the fast ones), -1 for a block to read as text, -2 when
 * either list would pass `cap`. */
long scan_block(const Table *t, const char *buf, long n, int options, long cap,
                int32_t *slow_word, int64_t *slow_start, int64_t *slow_stop, int64_t *slow_fast,
                int32_t *fast_word, double *fast_value, int64_t *fast_start, int64_t *fast_stop,
                long *fast, int64_t *lines) {
    unsigned odd = 0;
    for (long i = 0; i < n; i++) {
        unsigned char c = (unsigned char)buf[i];
        odd |= (c & 0x80u) | ((unsigned char)(c - 0x0bu) < 3u) | ((unsigned char)(c - 0x1cu) < 4u);
    }
    if (odd) return -1;  /* bytes 0x0b-0x0d: \v \f \r */
    long slow = 0, quick = 0;
    int64_t count = 0;
    const char *p = buf, *end = buf + n;
    while (p < end) {
        const char *eol = memchr(p, '\n', end - p);
        if (!eol) eol = end;
        count++;
        const char *q = p;
        while (q < eol && (*q == ' ' || *q == '\t')) q++;
        unsigned char c = q < eol ? (unsigned char)*q : 0;
        int hit = -2;  /* -2: nothing; -1: an option line; else the word */
        const char *after = q;
        double v = NAN;
        const char *eq = t->nkeys[c] ? memchr(q, '=', eol - q) : NULL;
        if (eq) {  /* a key: the text before '=', spaces after it trimmed */
            const char *key_end = eq;
            while (key_end > q && (key_end[-1] == ' ' || key_end[-1] == '\t')) key_end--;
            long len = key_end - q;
            for (int k = 0; k < t->nkeys[c]; k++) {
                int w = t->keys[c][k];
                if (t->len[w] == len && memcmp(q, t->word[w], len) == 0) {
                    hit = w; after = eq + 1;
                    if (t->plain[w]) v = plain_number(t, after, eol);
                    break;
                }
            }
        }
        for (int k = 0; k < t->nprefixes[c] && hit == -2; k++) {
            int w = t->prefixes[c][k], len = t->len[w];
            if (eol - q < len || memcmp(q, t->word[w], len) != 0) continue;
            if (t->kind[w] == START) {
                hit = w; after = q + len;
            } else {  /* GPGPU: what the rest of the line holds decides */
                for (int s = 0; s < t->nsub; s++)
                    if (memmem(q + len, eol - q - len, t->sub[s], t->sublen[s])) { hit = w; after = q + len; break; }
            }
        }
        if (hit == -2 && options && c == '-') {  /* '-name value': not a line of dashes and spaces only */
            for (const char *r = q + 1; r < eol; r++)
                if (*r != '-' && *r != ' ' && *r != '\t') { hit = -1; after = q + 1; break; }
        }
        if (hit != -2 && !isnan(v)) {
            if (quick == cap) return -2;
            fast_word[quick] = hit; fast_value[quick] = v; fast_start[quick] = p - buf; fast_stop[quick] = after - buf;
            quick++;
        } else if (hit != -2) {
            if (slow == cap) return -2;
            slow_word[slow] = hit; slow_start[slow] = p - buf; slow_stop[slow] = after - buf; slow_fast[slow] = quick;
            slow++;
        }
        p = eol + 1;
    }
    *lines = count;
    *fast = quick;
    return slow;
}
