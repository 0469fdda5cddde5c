/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <strings.h>

#include "parse-util.h"
#include "util.h"

/* Multiplies and adds with overflow detection: the parsers below must never
 * wrap a huge limit into a small one. */
static int mul_add_u64(uint64_t a, uint64_t b, uint64_t c, uint64_t *ret) {
        uint64_t product;
        if (__builtin_mul_overflow(a, b, &product) || __builtin_add_overflow(product, c, ret))
                return -ERANGE;
        return 0;
}

/* Reads "123" or "1.25" at *p (no sign, no blanks). The fraction is kept as
 * numerator/denominator to stay in integer arithmetic. */
static int parse_number_prefix(const char **p, uint64_t *ret_int, uint64_t *ret_frac, uint64_t *ret_frac_div) {
        const char *s = *p;
        uint64_t value = 0, frac = 0, frac_div = 1;

        if (!isdigit((unsigned char) *s))
                return -EINVAL;
        for (; isdigit((unsigned char) *s); s++)
                if (mul_add_u64(value, 10, (uint64_t) (*s - '0'), &value) < 0)
                        return -ERANGE;
        if (*s == '.') {
                s++;
                if (!isdigit((unsigned char) *s))
                        return -EINVAL;
                /* Nine decimals are far below any unit's resolution; the rest only has to be digits. */
                for (unsigned n = 0; isdigit((unsigned char) *s); s++, n++)
                        if (n < 9) {
                                frac = frac * 10 + (uint64_t) (*s - '0');
                                frac_div *= 10;
                        }
        }
        *p = s;
        *ret_int = value;
        *ret_frac = frac;
        *ret_frac_div = frac_div;
        return 0;
}

static int scale_number(uint64_t value, uint64_t frac, uint64_t frac_div, uint64_t unit, uint64_t *ret) {
        /* frac < frac_div <= 1e9 and unit <= 2^40 (sizes) or ~6e11 (weeks in
         * usec): frac * unit fits comfortably in 64 bits. */
        return mul_add_u64(value, unit, frac * unit / frac_div, ret);
}

int parse_uint64(const char *s, uint64_t *ret) {
        uint64_t value = 0;

        if (!s || !isdigit((unsigned char) *s))
                return -EINVAL;
        for (; *s; s++) {
                if (!isdigit((unsigned char) *s))
                        return -EINVAL;
                if (mul_add_u64(value, 10, (uint64_t) (*s - '0'), &value) < 0)
                        return -ERANGE;
        }
        *ret = value;
        return 0;
}

int parse_size(const char *s, uint64_t *ret) {
        static const struct { char letter; uint64_t factor; } units[] = {
                { 'K', UINT64_C(1) << 10 },
                { 'M', UINT64_C(1) << 20 },
                { 'G', UINT64_C(1) << 30 },
                { 'T', UINT64_C(1) << 40 },
        };
        uint64_t value, frac, frac_div, factor = 1;
        int r;

        if (!s)
                return -EINVAL;
        r = parse_number_prefix(&s, &value, &frac, &frac_div);
        if (r < 0)
                return r;
        if (*s && *s != 'B') {
                size_t i;
                for (i = 0; i < ELEMENTSOF(units); i++)
                        if (toupper((unsigned char) *s) == units[i].letter)
                                break;
                if (i == ELEMENTSOF(units))
                        return -EINVAL;
                factor = units[i].factor;
                s++;
                if (streq(s, "iB"))
                        s += 2;
        }
        if (streq(s, "B"))
                s++;
        if (*s)
                return -EINVAL;
        return scale_number(value, frac, frac_div, factor, ret);
}

static int duration_unit(const char *word, size_t len, uint64_t *ret) {
        static const struct { const char *name; uint64_t usec; } units[] = {
                { "",        USEC_PER_SEC },
                { "us",      1 },
                { "usec",    1 },
                { "ms",      USEC_PER_MSEC },
                { "msec",    USEC_PER_MSEC },
                { "s",       USEC_PER_SEC },
                { "sec",     USEC_PER_SEC },
                { "second",  USEC_PER_SEC },
                { "seconds", USEC_PER_SEC },
                { "m",       60 * USEC_PER_SEC },
                { "min",     60 * USEC_PER_SEC },
                { "minute",  60 * USEC_PER_SEC },
                { "minutes", 60 * USEC_PER_SEC },
                { "h",       3600 * USEC_PER_SEC },
                { "hr",      3600 * USEC_PER_SEC },
                { "hour",    3600 * USEC_PER_SEC },
                { "hours",   3600 * USEC_PER_SEC },
                { "d",       86400 * USEC_PER_SEC },
                { "day",     86400 * USEC_PER_SEC },
                { "days",    86400 * USEC_PER_SEC },
                { "w",       7 * 86400 * USEC_PER_SEC },
                { "week",    7 * 86400 * USEC_PER_SEC },
                { "weeks",   7 * 86400 * USEC_PER_SEC },
        };

        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (strlen(units[i].name) == len && strncmp(units[i].name, word, len) == 0) {
                        *ret = units[i].usec;
                        return 0;
                }
        return -EINVAL;
}

int parse_duration_usec(const char *s, uint64_t *ret) {
        uint64_t total = 0;
        bool any = false;
        int r;

        if (!s)
                return -EINVAL;
        for (;;) {
                uint64_t value, frac, frac_div, unit, part;
                const char *word;

                while (*s == ' ')
                        s++;
                if (!*s)
                        break;
                r = parse_number_prefix(&s, &value, &frac, &frac_div);
                if (r < 0)
                        return r;
                while (*s == ' ')
                        s++;
                for (word = s; isalpha((unsigned char) *s); s++)
                        ;
                r = duration_unit(word, (size_t) (s - word), &unit);
                if (r < 0)
                        return r;
                r = scale_number(value, frac, frac_div, unit, &part);
                if (r < 0)
                        return r;
                if (__builtin_add_overflow(total, part, &total))
                        return -ERANGE;
                any = true;
        }
        if (!any)
                return -EINVAL;
        *ret = total;
        return 0;
}

int parse_boolean(const char *s) {
        static const char * const yes[] = { "1", "yes", "y", "true", "t", "on" };
        static const char * const no[] = { "0", "no", "n", "false", "f", "off" };
        for (size_t i = 0; i < ELEMENTSOF(yes); i++)
                if (strcasecmp(s, yes[i]) == 0)
                        return 1;
        for (size_t i = 0; i < ELEMENTSOF(no); i++)
                if (strcasecmp(s, no[i]) == 0)
                        return 0;
        return -EINVAL;
}

