/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Generates CreateWorker arguments: valid worker specs, valid specs with a
 * few mutations (wrong types, boundary and absurd values, odd strings,
 * unknown, renamed, duplicated and dropped keys, deep variants, huge
 * arrays), random a{sv} dictionaries, and now and then arguments that are
 * not an a{sv} at all. Every choice is drawn from a SpecRng: seeded, it is
 * deterministic for a given seed (sbx-busfuzz); fed from bytes, the bytes
 * decide (the fuzz-spec-bus libFuzzer target). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <systemd/sd-bus.h>

typedef struct SpecRng {
        uint64_t state;
        const uint8_t *data;    /* when set, choices come from these bytes, then zeros */
        size_t size, pos;
} SpecRng;

/* Case I of a run with SEED gets its own stream, so one case can be
 * replayed alone (sbx-busfuzz --seed SEED --first I --count 1). */
void spec_rng_seed(SpecRng *r, uint64_t seed, uint64_t case_index);
void spec_rng_from_bytes(SpecRng *r, const uint8_t *data, size_t size);
/* A number in [0, n); n > 0. */
uint64_t spec_rng_below(SpecRng *r, uint64_t n);

typedef enum SpecShape {
        SPEC_SHAPE_VALID,               /* a spec sandboxd should accept */
        SPEC_SHAPE_MUTATED,             /* a valid spec, then 1-4 mutations */
        SPEC_SHAPE_RANDOM,              /* a random a{sv} */
        SPEC_SHAPE_WRONG_SIGNATURE,     /* arguments other than one a{sv} */
        _SPEC_SHAPE_MAX,
} SpecShape;

const char *spec_shape_to_string(SpecShape s);

typedef struct SpecGenOptions {
        size_t budget;          /* rough bytes of payload per message */
        int unix_fd;            /* an fd for 'h' values; -1: generate none */
} SpecGenOptions;

/* Appends the arguments of one CreateWorker call to M (a method call not
 * yet sealed). Returns 0 and the shape chosen, or a negative errno from
 * sd-bus (a bug in the generator: every value it makes is valid D-Bus). */
int spec_gen_append(sd_bus_message *m, SpecRng *rng, const SpecGenOptions *opts, SpecShape *ret_shape);
