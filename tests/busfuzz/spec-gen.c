/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec-gen.h"

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MiB (UINT64_C(1) << 20)
#define USEC_PER_SEC UINT64_C(1000000)
/* Containers of every kind nested in one value. The D-Bus limit is 64 in
 * all (32 arrays, 32 structs); staying below it keeps the bus daemon from
 * refusing the message before sandboxd ever sees it. */
#define NESTING_MAX 30
#define SIGNATURE_MAX 255

/* ---- choices ------------------------------------------------------------ */

static uint64_t splitmix64(uint64_t *s) {
        uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}

void spec_rng_seed(SpecRng *r, uint64_t seed, uint64_t case_index) {
        uint64_t s = seed;
        *r = (SpecRng) {};
        r->state = splitmix64(&s) ^ (case_index * UINT64_C(0xd1342543de82ef95));
}

void spec_rng_from_bytes(SpecRng *r, const uint8_t *data, size_t size) {
        *r = (SpecRng) { .data = data, .size = size };
}

uint64_t spec_rng_below(SpecRng *r, uint64_t n) {
        uint64_t v = 0;

        if (n <= 1)
                return 0;
        if (!r->data)
                return splitmix64(&r->state) % n;
        /* As few input bytes as the choice needs, so mutating a byte changes one decision. */
        for (uint64_t span = n - 1; span > 0; span >>= 8)
                v = (v << 8) | (r->pos < r->size ? r->data[r->pos++] : 0);
        return v % n;
}

static uint64_t rng_u64(SpecRng *r) {
        return r->data ? (spec_rng_below(r, UINT32_MAX) << 32) ^ spec_rng_below(r, UINT32_MAX)
                       : splitmix64(&r->state);
}

static bool chance(SpecRng *r, unsigned percent) {
        return spec_rng_below(r, 100) < percent;
}

#define PICK(r, array) ((array)[spec_rng_below((r), ELEMENTSOF(array))])

/* ---- generation state ------------------------------------------------------ */

typedef struct Gen {
        sd_bus_message *m;
        SpecRng *rng;
        const SpecGenOptions *opts;
        size_t spent;           /* payload bytes so far, against opts->budget */
        unsigned fd_types;      /* 'h' in the signatures made so far */
} Gen;

/* The system bus refuses (and disconnects the sender of) a message with more
 * than 16 fds. Each 'h' in a signature yields at most one fd: an array whose
 * elements hold one gets at most one element. */
#define FD_TYPES_MAX 4

static size_t budget_left(const Gen *g) {
        return g->spent < g->opts->budget ? g->opts->budget - g->spent : 0;
}

/* ---- strings: always valid UTF-8 without NUL, which is all D-Bus carries --- */

static size_t utf8_put(char *p, uint32_t c) {
        if (c < 0x80) {
                p[0] = (char) c;
                return 1;
        }
        if (c < 0x800) {
                p[0] = (char) (0xc0 | (c >> 6));
                p[1] = (char) (0x80 | (c & 0x3f));
                return 2;
        }
        if (c < 0x10000) {
                p[0] = (char) (0xe0 | (c >> 12));
                p[1] = (char) (0x80 | ((c >> 6) & 0x3f));
                p[2] = (char) (0x80 | (c & 0x3f));
                return 3;
        }
        p[0] = (char) (0xf0 | (c >> 18));
        p[1] = (char) (0x80 | ((c >> 12) & 0x3f));
        p[2] = (char) (0x80 | ((c >> 6) & 0x3f));
        p[3] = (char) (0x80 | (c & 0x3f));
        return 4;
}

/* A code point sd-bus and the bus daemon take: no NUL, no surrogate, no
 * noncharacter. */
static uint32_t random_code_point(SpecRng *r) {
        for (;;) {
                uint32_t c;
                switch (spec_rng_below(r, 4)) {
                case 0: c = 1 + (uint32_t) spec_rng_below(r, 0x7f); break;
                case 1: c = 0x80 + (uint32_t) spec_rng_below(r, 0x800 - 0x80); break;
                case 2: c = 0x800 + (uint32_t) spec_rng_below(r, 0x10000 - 0x800); break;
                default: c = 0x10000 + (uint32_t) spec_rng_below(r, 0x110000 - 0x10000); break;
                }
                if ((c >= 0xd800 && c <= 0xdfff) || (c >= 0xfdd0 && c <= 0xfdef) || (c & 0xfffe) == 0xfffe)
                        continue;
                return c;
        }
}

static const char *const odd_strings[] = {
        "", " ", "/", "//", ".", "..", "../../../etc/passwd", "/bin/true", "/bin/sleep", "/nonexistent",
        "/bin/sh", "-c", "%s%s%s%n", "%n", "${HOME}", "$(id)", "`id`", "\n", "\r\n", "\t", "\x01", "\x7f",
        "\\", "\"", "'", "=", "A=", "=b", "A=b", "A==", "HOME=/", "LD_PRELOAD=/tmp/x.so", "PATH=/tmp",
        "LD_DEBUG=libs", "GLIBC_TUNABLES=x", "HTTPS_PROXY=http://10.0.0.1:1", "TOKEN=secret", "1A=b",
        "A B=c", "a-b=c", "ä=b", "trusted", "standard", "untrusted", "hostile", "wasm", "Trusted", "TRUSTED",
        "trusted ", " trusted", "trusted\n", "enforce", "report", "Enforce", "example.org", "*.example.org",
        "*", "*:443", "example.org:0", "example.org:65536", "example.org:443", "[::1]", "127.0.0.1",
        "0x7f.1", "localhost", "*.*.org", "xn--bcher-kva.example", "b\xc3\xbc" "cher.example",
        "Argv", "Environment", "Class", "Credentials", "MemoryMax", "tok", ".hidden", "a/b", "a\\b",
        "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x92\xa9", "\xe2\x80\xae", "\xef\xbb\xbf",
};

/* Lengths at and around the cut-offs sandboxd uses (64 in "%.64s", 255 and
 * 256, its 512-byte error messages) and beyond. */
static const size_t odd_lengths[] = { 62, 63, 64, 65, 66, 254, 255, 256, 510, 511, 512, 513, 4096, 70000, 300000 };

/* Returns a malloc'ed string, or NULL on ENOMEM. */
static char *random_string(Gen *g) {
        SpecRng *r = g->rng;
        size_t len, n = 0;
        char *s;

        switch (spec_rng_below(r, 6)) {
        case 0:
        case 1:
                return strdup(PICK(r, odd_strings));
        case 2: /* printable ASCII */
                len = spec_rng_below(r, 24);
                s = malloc(len + 1);
                if (!s)
                        return NULL;
                for (size_t i = 0; i < len; i++)
                        s[i] = (char) (0x20 + spec_rng_below(r, 0x5f));
                s[len] = 0;
                return s;
        case 3: /* any code points */
                len = spec_rng_below(r, 16);
                s = malloc(len * 4 + 1);
                if (!s)
                        return NULL;
                for (size_t i = 0; i < len; i++)
                        n += utf8_put(s + n, random_code_point(r));
                s[n] = 0;
                return s;
        default: { /* long: ASCII with a multibyte character placed across a cut-off */
                len = PICK(r, odd_lengths);
                if (len > budget_left(g))
                        len = 64;
                size_t at = spec_rng_below(r, len + 1), mb_pos = len >= 4 ? len - 1 - spec_rng_below(r, 4) : 0;
                s = malloc(len + 8);
                if (!s)
                        return NULL;
                char fill = (char) (chance(r, 50) ? 'a' + spec_rng_below(r, 26) : '/');
                for (size_t i = 0; i < len; i++) {
                        if (i == mb_pos || (at < len && i == at && chance(r, 50))) {
                                uint32_t c = random_code_point(r);
                                n += utf8_put(s + n, c < 0x80 ? 0xe9 : c);
                                continue;
                        }
                        s[n++] = fill;
                }
                s[n] = 0;
                /* An absolute path half the time, so it passes Argv's first check. */
                if (n > 0 && (unsigned char) s[0] < 0x80 && chance(r, 50))
                        s[0] = '/';
                g->spent += n;
                return s;
        }
        }
}

/* ---- signatures ------------------------------------------------------------ */

static const char basic_types[] = "ybnqiuxtdsog";

/* Length of the single complete type at s. */
static size_t type_len(const char *s) {
        size_t n;
        int depth = 0;

        if (*s == 'a')
                return 1 + type_len(s + 1);
        if (*s != '(' && *s != '{')
                return 1;
        for (n = 0; s[n]; n++) {
                if (s[n] == '(' || s[n] == '{')
                        depth++;
                else if (s[n] == ')' || s[n] == '}') {
                        if (--depth == 0)
                                return n + 1;
                }
        }
        return n;
}

/* Appends one random complete type to buf (of SIGNATURE_MAX + 1), nested at
 * most `depth` further, leaving `reserve` bytes for the enclosing types'
 * closing characters; where a container would not fit, a basic type goes. */
static void random_type(Gen *g, char *buf, size_t *len, unsigned depth, size_t reserve) {
        SpecRng *r = g->rng;
        unsigned k = (unsigned) spec_rng_below(r, depth > 0 ? 10 : 6);
        /* Callers leave at least one byte of room. */
        long room = (long) SIGNATURE_MAX - (long) *len - (long) reserve;

        if (room < 8 || k < 5) {
                char t = basic_types[spec_rng_below(r, sizeof(basic_types) - 1)];
                if (g->opts->unix_fd >= 0 && g->fd_types < FD_TYPES_MAX && chance(r, 3)) {
                        t = 'h';
                        g->fd_types++;
                }
                buf[(*len)++] = t;
        } else if (k == 5)
                buf[(*len)++] = 'v';
        else if (k <= 7) {
                buf[(*len)++] = 'a';
                random_type(g, buf, len, depth - 1, reserve);
        } else if (k == 8) {
                buf[(*len)++] = 'a';
                buf[(*len)++] = '{';
                buf[(*len)++] = basic_types[spec_rng_below(r, sizeof(basic_types) - 1)];
                random_type(g, buf, len, depth - 1, reserve + 1);
                buf[(*len)++] = '}';
        } else {
                unsigned members = 1 + (unsigned) spec_rng_below(r, 4);
                buf[(*len)++] = '(';
                for (unsigned i = 0; i == 0 || (i < members && (long) SIGNATURE_MAX - (long) *len - (long) reserve > 1); i++)
                        random_type(g, buf, len, depth - 1, reserve + 1);
                buf[(*len)++] = ')';
        }
        buf[*len] = 0;
}

/* A random signature of one complete type, as a static-length string. */
static void random_signature(Gen *g, char buf[static SIGNATURE_MAX + 1], unsigned depth) {
        size_t len = 0;
        buf[0] = 0;
        /* Deep types are rare; most values are flat. */
        random_type(g, buf, &len, depth > 4 && !chance(g->rng, 10) ? 2 : depth, 0);
}

/* ---- values ----------------------------------------------------------------- */

static const uint64_t odd_u64[] = {
        0, 1, 2, 3, 4, 5, 15, 16, 255, 256, 1000, 4096, 16383, 16384, 16385, 65535, 65536,
        MiB - 1, MiB, 16 * MiB - 1, 16 * MiB, 256 * MiB, 64 * 1024 * MiB, 64 * 1024 * MiB + 1,
        USEC_PER_SEC - 1, USEC_PER_SEC, 600 * USEC_PER_SEC, 3600 * USEC_PER_SEC,
        7 * 24 * 3600 * USEC_PER_SEC, 7 * 24 * 3600 * USEC_PER_SEC + 1, UINT64_C(1) << 40,
        (UINT64_C(1) << 40) + 1, UINT32_MAX, UINT64_C(1) << 32, INT64_MAX, (uint64_t) INT64_MAX + 1,
        UINT64_MAX - 1, UINT64_MAX, UINT64_MAX / 1000, UINT64_MAX / 1000 + 1,
};

static uint64_t random_number(SpecRng *r) {
        switch (spec_rng_below(r, 4)) {
        case 0:
        case 1: return PICK(r, odd_u64);
        case 2: return spec_rng_below(r, 100000);
        default: return rng_u64(r);
        }
}

static int append_value(Gen *g, const char *sig, unsigned nesting);

static size_t random_count(Gen *g) {
        SpecRng *r = g->rng;
        switch (spec_rng_below(r, 20)) {
        case 0: case 1: case 2: case 3: return 0;
        case 4: case 5: case 6: return 5 + spec_rng_below(r, 60);
        case 7: return budget_left(g) > 64 * 1024 ? 100 + spec_rng_below(r, 6000) : 8;
        default: return 1 + spec_rng_below(r, 4);
        }
}

static int append_basic(Gen *g, char t) {
        SpecRng *r = g->rng;
        uint64_t v = random_number(r);
        int r2;

        g->spent += 8;
        switch (t) {
        case 's': {
                char *s = random_string(g);
                if (!s)
                        return -ENOMEM;
                g->spent += strlen(s);
                r2 = sd_bus_message_append_basic(g->m, 's', s);
                free(s);
                return r2;
        }
        case 'o': {
                static const char *const paths[] = { "/", "/org/sandboxd1", "/org/sandboxd1/worker/000000000000",
                                                     "/a/b/c", "/_" };
                return sd_bus_message_append_basic(g->m, 'o', PICK(r, paths));
        }
        case 'g': {
                char sig[SIGNATURE_MAX + 1];
                random_signature(g, sig, 3);
                return sd_bus_message_append_basic(g->m, 'g', sig);
        }
        case 'h':
                return sd_bus_message_append_basic(g->m, 'h', &g->opts->unix_fd);
        case 'b': {
                int b = (int) (v & 1);
                return sd_bus_message_append_basic(g->m, 'b', &b);
        }
        case 'd': {
                double d;
                memcpy(&d, &v, sizeof(d));
                return sd_bus_message_append_basic(g->m, 'd', &d);
        }
        case 'y': { uint8_t x = (uint8_t) v; return sd_bus_message_append_basic(g->m, t, &x); }
        case 'n':
        case 'q': { uint16_t x = (uint16_t) v; return sd_bus_message_append_basic(g->m, t, &x); }
        case 'i':
        case 'u': { uint32_t x = (uint32_t) v; return sd_bus_message_append_basic(g->m, t, &x); }
        default: return sd_bus_message_append_basic(g->m, t, &v);   /* x, t */
        }
}

static int append_array(Gen *g, const char *sig, unsigned nesting) {
        size_t elen = type_len(sig + 1), n = random_count(g);
        char element[SIGNATURE_MAX + 1];
        int r;

        g->spent += 4;
        memcpy(element, sig + 1, elen);
        element[elen] = 0;
        if (strchr(element, 'h'))
                n = MIN(n, 1);
        if (element[0] == 'y') {
                /* Bytes in one piece: huge byte arrays are cheap to make. */
                if (chance(g->rng, 10) && budget_left(g) > MiB + 64 * 1024)
                        n = (size_t) (chance(g->rng, 50) ? MiB + 1 : MiB);
                if (n > budget_left(g))
                        n = 0;
                uint8_t *b = malloc(n ?: 1);
                if (!b)
                        return -ENOMEM;
                for (size_t i = 0; i < n; i++)
                        b[i] = (uint8_t) (i < 256 ? spec_rng_below(g->rng, 256) : i * 131);
                g->spent += n;
                r = sd_bus_message_append_array(g->m, 'y', b, n);
                free(b);
                return r;
        }
        r = sd_bus_message_open_container(g->m, 'a', element);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n && budget_left(g) > 0; i++) {
                r = append_value(g, element, nesting + 1);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(g->m);
}

static int append_struct(Gen *g, char kind, const char *sig, size_t len, unsigned nesting) {
        char inner[SIGNATURE_MAX + 1];
        int r;

        g->spent += 4;
        memcpy(inner, sig + 1, len - 2);
        inner[len - 2] = 0;
        r = sd_bus_message_open_container(g->m, kind, inner);
        if (r < 0)
                return r;
        for (const char *p = inner; *p; p += type_len(p)) {
                r = append_value(g, p, nesting + 1);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(g->m);
}

static int append_variant(Gen *g, unsigned nesting) {
        char contents[SIGNATURE_MAX + 1];
        int r;

        g->spent += 4;
        /* A chain of variants, up to the nesting the bus allows. */
        if (nesting + 2 >= NESTING_MAX)
                strcpy(contents, "s");
        else if (chance(g->rng, 30))
                strcpy(contents, "v");
        else
                random_signature(g, contents, nesting + 6 < NESTING_MAX ? 4 : 0);
        r = sd_bus_message_open_container(g->m, 'v', contents);
        if (r < 0)
                return r;
        r = append_value(g, contents, nesting + 1);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(g->m);
}

/* Appends one value of the single complete type at sig. */
static int append_value(Gen *g, const char *sig, unsigned nesting) {
        size_t len = type_len(sig);

        switch (sig[0]) {
        case 'a':
                if (sig[1] == '{') {
                        size_t n = random_count(g);
                        if (memchr(sig, 'h', len))
                                n = MIN(n, 1);
                        char entry[SIGNATURE_MAX + 1];
                        memcpy(entry, sig + 1, len - 1);
                        entry[len - 1] = 0;
                        int r = sd_bus_message_open_container(g->m, 'a', entry);
                        if (r < 0)
                                return r;
                        for (size_t i = 0; i < n && budget_left(g) > 0; i++) {
                                r = append_struct(g, 'e', entry, len - 1, nesting + 1);
                                if (r < 0)
                                        return r;
                        }
                        return sd_bus_message_close_container(g->m);
                }
                return append_array(g, sig, nesting);
        case '(':
                return append_struct(g, 'r', sig, len, nesting);
        case 'v':
                return append_variant(g, nesting);
        default:
                return append_basic(g, sig[0]);
        }
}

/* ---- the spec's keys ---------------------------------------------------------- */

typedef enum Key {
        KEY_ARGV, KEY_ENVIRONMENT, KEY_CLASS, KEY_CREDENTIALS, KEY_MEMORY_MAX, KEY_TASKS_MAX,
        KEY_CPU_QUOTA, KEY_RUNTIME_MAX, KEY_IDLE_TIMEOUT, KEY_DISK_MAX, KEY_EGRESS_ALLOW,
        KEY_EGRESS_RATE, KEY_EGRESS_MODE, _KEY_MAX,
} Key;

static const struct {
        const char *name;
        const char *signature;
        unsigned percent;       /* how often a valid spec has it */
} keys[_KEY_MAX] = {
        [KEY_ARGV] = { "Argv", "as", 100 },
        [KEY_ENVIRONMENT] = { "Environment", "as", 25 },
        [KEY_CLASS] = { "Class", "s", 97 },
        [KEY_CREDENTIALS] = { "Credentials", "a(say)", 20 },
        [KEY_MEMORY_MAX] = { "MemoryMax", "t", 25 },
        [KEY_TASKS_MAX] = { "TasksMax", "t", 25 },
        [KEY_CPU_QUOTA] = { "CPUQuotaPercent", "u", 25 },
        [KEY_RUNTIME_MAX] = { "RuntimeMaxUSec", "t", 25 },
        [KEY_IDLE_TIMEOUT] = { "IdleTimeoutUSec", "t", 25 },
        [KEY_DISK_MAX] = { "DiskMax", "t", 3 },
        [KEY_EGRESS_ALLOW] = { "EgressAllow", "as", 8 },
        [KEY_EGRESS_RATE] = { "EgressRateBps", "t", 5 },
        [KEY_EGRESS_MODE] = { "EgressMode", "s", 5 },
};

static uint64_t between(SpecRng *r, uint64_t lo, uint64_t hi) {
        return lo + spec_rng_below(r, hi - lo + 1);
}

static int append_strv(Gen *g, const char *const *l, size_t n) {
        int r = sd_bus_message_open_container(g->m, 'a', "s");
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = sd_bus_message_append_basic(g->m, 's', l[i]);
        return r < 0 ? r : sd_bus_message_close_container(g->m);
}

/* A value sandboxd accepts for the key (with the default configuration). */
static int append_valid(Gen *g, Key k) {
        SpecRng *r = g->rng;

        switch (k) {
        case KEY_ARGV: {
                static const char *const sleeper[] = { "/bin/sleep", "1000" };
                static const char *const shell[] = { "/bin/sh", "-c", "exec sleep 1000" };
                static const char *const quick[] = { "/bin/true" };
                unsigned c = (unsigned) spec_rng_below(r, 10);
                return c < 7 ? append_strv(g, sleeper, 2) : c < 9 ? append_strv(g, shell, 3) : append_strv(g, quick, 1);
        }
        case KEY_ENVIRONMENT: {
                /* Each name at most once: systemd refuses a name assigned twice. */
                static const char *const env[] = { "A=b", "LANG=C.UTF-8", "X_1=\xc3\xa9t\xc3\xa9", "EMPTY=",
                                                   "TERM=dumb", "_U=1", "K=v=w" };
                size_t n = 0, start = spec_rng_below(r, ELEMENTSOF(env)), want = spec_rng_below(r, 4);
                const char *l[4];
                for (size_t i = 0; i < want; i++)
                        l[n++] = env[(start + i) % ELEMENTSOF(env)];
                return append_strv(g, l, n);
        }
        case KEY_CLASS: {
                /* Trusted mostly: gVisor starts cost far more, and hostile and wasm are refused here. */
                static const char *const classes[] = { "standard", "untrusted", "hostile", "wasm" };
                const char *c = chance(r, 93) ? "trusted" : PICK(r, classes);
                return sd_bus_message_append_basic(g->m, 's', c);
        }
        case KEY_CREDENTIALS: {
                static const char *const names[] = { "tok", "api-key", "a.b", "K_1", "x" };
                size_t n = spec_rng_below(r, 3);
                int q = sd_bus_message_open_container(g->m, 'a', "(say)");
                for (size_t i = 0; q >= 0 && i < n; i++) {
                        uint8_t data[64];
                        size_t len = spec_rng_below(r, sizeof(data) + 1);
                        for (size_t j = 0; j < len; j++)
                                data[j] = (uint8_t) spec_rng_below(r, 256);
                        q = sd_bus_message_open_container(g->m, 'r', "say");
                        if (q >= 0)
                                q = sd_bus_message_append_basic(g->m, 's', names[i]);   /* distinct names */
                        if (q >= 0)
                                q = sd_bus_message_append_array(g->m, 'y', data, len);
                        if (q >= 0)
                                q = sd_bus_message_close_container(g->m);
                }
                return q < 0 ? q : sd_bus_message_close_container(g->m);
        }
        case KEY_EGRESS_ALLOW: {
                static const char *const pats[] = { "example.org", "*.example.org", "api.github.com:8443", "*" };
                size_t n = 1 + spec_rng_below(r, 2);
                const char *l[2];
                for (size_t i = 0; i < n; i++)
                        l[i] = PICK(r, pats);
                return append_strv(g, l, n);
        }
        case KEY_EGRESS_MODE:
                return sd_bus_message_append_basic(g->m, 's', chance(r, 50) ? "enforce" : "report");
        case KEY_CPU_QUOTA: {
                uint32_t v = (uint32_t) between(r, 1, 6400);
                return sd_bus_message_append_basic(g->m, 'u', &v);
        }
        default: {
                uint64_t v;
                switch (k) {
                case KEY_MEMORY_MAX: v = between(r, 16 * MiB, 1024 * MiB); break;
                case KEY_TASKS_MAX: v = between(r, 4, 16384); break;
                case KEY_RUNTIME_MAX:
                case KEY_IDLE_TIMEOUT: v = between(r, 60, 7 * 24 * 3600) * USEC_PER_SEC; break;
                case KEY_DISK_MAX: v = between(r, 1, 16) * MiB; break;
                default: v = between(r, 1, UINT64_C(1) << 30); break;   /* EgressRateBps */
                }
                return sd_bus_message_append_basic(g->m, 't', &v);
        }
        }
}

/* A value of the key's own type, chosen to be on or past an edge. */
static int append_odd(Gen *g, Key k) {
        if (k == KEY_ENVIRONMENT && chance(g->rng, 30)) {
                /* A name given twice, with the same or another value, or a
                 * name that only starts like another. */
                static const char *const pairs[][2] = {
                        { "A=1", "A=2" }, { "A=b", "A=b" }, { "AB=1", "A=2" }, { "A=", "A=" }, { "LANG=C", "LANG=" },
                };
                size_t p = spec_rng_below(g->rng, ELEMENTSOF(pairs));
                return append_strv(g, pairs[p], 2);
        }
        if (k == KEY_CREDENTIALS && chance(g->rng, 50)) {
                /* Many credentials, or names that collide. */
                size_t n = chance(g->rng, 50) ? 65 : 2 + spec_rng_below(g->rng, 3);
                int q = sd_bus_message_open_container(g->m, 'a', "(say)");
                for (size_t i = 0; q >= 0 && i < n; i++) {
                        char name[32];
                        snprintf(name, sizeof(name), "c%u", (unsigned) (chance(g->rng, 50) ? i : 0));
                        q = sd_bus_message_append(g->m, "(say)", name, 1, 'x');
                }
                return q < 0 ? q : sd_bus_message_close_container(g->m);
        }
        return append_value(g, keys[k].signature, 2);
}

static int append_key(Gen *g, const char *name) {
        return sd_bus_message_append_basic(g->m, 's', name);
}

typedef enum Plan { PLAN_VALID, PLAN_ODD, PLAN_WRONG_TYPE, PLAN_RENAMED, PLAN_UNKNOWN_KEY } Plan;

static int append_entry(Gen *g, Key k, Plan plan) {
        char sig[SIGNATURE_MAX + 1];
        int r;

        r = sd_bus_message_open_container(g->m, 'e', "sv");
        if (r < 0)
                return r;
        switch (plan) {
        case PLAN_RENAMED: {
                /* Almost the name: case, whitespace, a prefix; or another key's name. */
                char name[64];
                static const struct { const char *prefix, *suffix; } forms[] = {
                        { "", " " }, { " ", "" }, { "", "\n" }, { "org.sandboxd1.", "" }, { "", "2" }, { "", "\t" },
                };
                unsigned f = (unsigned) spec_rng_below(g->rng, ELEMENTSOF(forms) + 2);
                if (f < ELEMENTSOF(forms))
                        snprintf(name, sizeof(name), "%s%s%s", forms[f].prefix, keys[k].name, forms[f].suffix);
                else if (f == ELEMENTSOF(forms)) {
                        snprintf(name, sizeof(name), "%s", keys[k].name);
                        for (char *p = name; *p; p++)
                                if (*p >= 'A' && *p <= 'Z')
                                        *p = (char) (*p + 32);
                } else
                        snprintf(name, sizeof(name), "%s", keys[spec_rng_below(g->rng, _KEY_MAX)].name);
                r = append_key(g, name);
                break;
        }
        case PLAN_UNKNOWN_KEY: {
                char *name = random_string(g);
                if (!name)
                        return -ENOMEM;
                r = append_key(g, name);
                free(name);
                break;
        }
        default:
                r = append_key(g, keys[k].name);
                break;
        }
        if (r < 0)
                return r;

        if (plan == PLAN_VALID || plan == PLAN_ODD)
                strcpy(sig, keys[k].signature);
        else
                random_signature(g, sig, 6);
        r = sd_bus_message_open_container(g->m, 'v', sig);
        if (r < 0)
                return r;
        if (plan == PLAN_VALID)
                r = append_valid(g, k);
        else if (plan == PLAN_ODD)
                r = append_odd(g, k);
        else
                r = append_value(g, sig, 2);
        if (r < 0)
                return r;
        r = sd_bus_message_close_container(g->m);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(g->m);
}

#define ENTRIES_MAX 40

typedef struct Entry {
        Key key;
        Plan plan;
} Entry;

static size_t plan_valid_spec(SpecRng *r, Entry *e) {
        size_t n = 0;
        for (Key k = 0; k < _KEY_MAX; k++)
                if (chance(r, keys[k].percent))
                        e[n++] = (Entry) { k, PLAN_VALID };
        /* Any order: the spec is a dictionary. */
        for (size_t i = n; i > 1; i--) {
                size_t j = spec_rng_below(r, i);
                Entry t = e[i - 1];
                e[i - 1] = e[j];
                e[j] = t;
        }
        return n;
}

static size_t mutate(SpecRng *r, Entry *e, size_t n) {
        unsigned mutations = 1 + (unsigned) spec_rng_below(r, 4);

        for (unsigned i = 0; i < mutations; i++) {
                unsigned op = (unsigned) spec_rng_below(r, 100);
                size_t at = n > 0 ? spec_rng_below(r, n) : 0;
                if (n == 0 || (op >= 80 && n < ENTRIES_MAX)) {
                        /* A key that was not there: known with any value, or unknown. */
                        Plan p = chance(r, 50) ? PLAN_UNKNOWN_KEY : (Plan) spec_rng_below(r, 3);
                        e[n++] = (Entry) { (Key) spec_rng_below(r, _KEY_MAX), p };
                } else if (op < 50)
                        e[at].plan = PLAN_ODD;
                else if (op < 62)
                        e[at].plan = PLAN_WRONG_TYPE;
                else if (op < 68)
                        e[at].plan = PLAN_RENAMED;
                else if (op < 74 && n < ENTRIES_MAX)
                        e[n++] = (Entry) { e[at].key, chance(r, 50) ? PLAN_VALID : PLAN_ODD };   /* a duplicate */
                else if (op < 80) {
                        e[at] = e[n - 1];   /* dropped */
                        n--;
                }
        }
        return n;
}

static size_t plan_random_spec(SpecRng *r, Entry *e) {
        size_t n = spec_rng_below(r, 9);
        for (size_t i = 0; i < n; i++)
                e[i] = (Entry) { (Key) spec_rng_below(r, _KEY_MAX),
                                 chance(r, 35) ? PLAN_UNKNOWN_KEY : (Plan) spec_rng_below(r, 3) };
        return n;
}

/* Arguments that are not a single a{sv}: sd-bus refuses them by signature. */
static int append_wrong_signature(Gen *g) {
        switch (spec_rng_below(g->rng, 5)) {
        case 0:
                return 0;   /* no argument at all */
        case 1:
                return sd_bus_message_append(g->m, "s", "Argv");
        case 2:
                return sd_bus_message_append(g->m, "a{ss}", 1, "Argv", "/bin/true");
        case 3:
                return sd_bus_message_append(g->m, "a{sv}s", 1, "Argv", "as", 1, "/bin/true", "extra");
        default:
                return sd_bus_message_append(g->m, "av", 1, "s", "/bin/true");
        }
}

const char *spec_shape_to_string(SpecShape s) {
        static const char *const names[_SPEC_SHAPE_MAX] = {
                [SPEC_SHAPE_VALID] = "valid",
                [SPEC_SHAPE_MUTATED] = "mutated",
                [SPEC_SHAPE_RANDOM] = "random",
                [SPEC_SHAPE_WRONG_SIGNATURE] = "wrong-signature",
        };
        return s >= 0 && s < _SPEC_SHAPE_MAX ? names[s] : "?";
}

int spec_gen_append(sd_bus_message *m, SpecRng *rng, const SpecGenOptions *opts, SpecShape *ret_shape) {
        Gen g = { .m = m, .rng = rng, .opts = opts };
        Entry e[ENTRIES_MAX];
        unsigned c = (unsigned) spec_rng_below(rng, 100);
        SpecShape shape = c < 8 ? SPEC_SHAPE_VALID : c < 68 ? SPEC_SHAPE_MUTATED : c < 98 ? SPEC_SHAPE_RANDOM
                                                                                        : SPEC_SHAPE_WRONG_SIGNATURE;
        size_t n = 0;
        int r;

        *ret_shape = shape;
        if (shape == SPEC_SHAPE_WRONG_SIGNATURE) {
                r = append_wrong_signature(&g);
                return r < 0 ? r : 0;
        }
        if (shape == SPEC_SHAPE_RANDOM)
                n = plan_random_spec(rng, e);
        else {
                n = plan_valid_spec(rng, e);
                if (shape == SPEC_SHAPE_MUTATED)
                        n = mutate(rng, e, n);
        }
        r = sd_bus_message_open_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                r = append_entry(&g, e[i].key, e[i].plan);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(m);
        return r < 0 ? r : 0;
}
