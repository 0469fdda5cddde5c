/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "pool-plan.h"

static bool read_line_value(const char *path, const char *prefix, char *buf, size_t size) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char line[256];

        if (!f)
                return false;
        while (fgets(line, sizeof(line), f))
                if (startswith(line, prefix)) {
                        snprintf(buf, size, "%s", line + strlen(prefix));
                        return true;
                }
        return false;
}

void pool_memory_facts_read(const char *meminfo, const char *pressure, PoolMemoryFacts *ret) {
        char v[256];
        unsigned long long kib;
        double avg10;

        *ret = (PoolMemoryFacts) {};
        if (read_line_value(meminfo, "MemAvailable:", v, sizeof(v)) && sscanf(v, "%llu kB", &kib) == 1) {
                ret->avail_known = true;
                ret->mem_available = (uint64_t) kib * 1024;
        }
        /* "some avg10=0.00 avg60=0.00 avg300=0.00 total=0" */
        if (read_line_value(pressure, "some ", v, sizeof(v)) && sscanf(v, "avg10=%lf", &avg10) == 1 && avg10 >= 0) {
                ret->pressure_known = true;
                ret->some_avg10 = avg10 > 100 ? 100 : (unsigned) avg10;
        }
}

unsigned pool_configured_size(const SbxConfig *c, SbxClass class) {
        switch (class) {
        case SBX_CLASS_STANDARD:
                return c->pool_standard_size;
        case SBX_CLASS_UNTRUSTED:
                return c->pool_untrusted_size;
        default:
                return 0;
        }
}

uint64_t pool_entry_memory(const SbxConfig *c) {
        unsigned total = pool_configured_total(c);
        return total ? c->pool_memory_max / total : 0;
}

unsigned pool_configured_total(const SbxConfig *c) {
        return 2 * (c->pool_standard_size + c->pool_untrusted_size);
}

unsigned pool_plan_total(const SbxConfig *c, unsigned current, const PoolMemoryFacts *f) {
        unsigned configured = pool_configured_total(c);
        uint64_t share = pool_entry_memory(c), room, deficit;

        if (configured == 0)
                return 0;
        if (f->pressure_known && c->pool_pressure_max > 0 && f->some_avg10 >= c->pool_pressure_max)
                return 0;
        if (!f->avail_known)
                return configured;
        /* The sandboxes waiting now are in MemAvailable already. */
        if (f->mem_available >= c->pool_min_mem_available) {
                room = (f->mem_available - c->pool_min_mem_available) / share;
                return (unsigned) MIN((uint64_t) configured, current + room);
        }
        deficit = (c->pool_min_mem_available - f->mem_available + share - 1) / share;
        return current > deficit ? (unsigned) MIN((uint64_t) configured, current - deficit) : 0;
}

uint64_t pool_claim_disk_added(const SbxConfig *c, const WorkerSpec *s) {
        return s->disk_max > c->disk_default ? s->disk_max - c->disk_default : 0;
}

const char *pool_claim_refusal(const WorkerSpec *s) {
        if (s->set & SPEC_HAS_DISK_MAX)
                return "a waiting sandbox's disk has the default size, not the DiskMax asked for";
        if (s->n_services > 0)
                return "Services are not served by pooled sandboxes";
        /* The gate joins the worker's namespace, made with its unit. */
        if (sbx_endpoint_wanted(&s->endpoint))
                return "an Endpoint's gate is made with the worker's unit";
        /* The workspace is mounted as the home before the unit starts; a
         * waiting sandbox has a fresh home of its own already. */
        if (s->workspace)
                return "a Workspace is mounted as the home before the sandbox starts";
        return NULL;
}

uint64_t pool_plan_backoff(uint64_t pace_usec, unsigned failures) {
        unsigned shift = MIN(failures, 16u);
        uint64_t usec = pace_usec << shift;

        /* A pace so long that the shift overflows is past the cap anyway. */
        if (pace_usec > 0 && usec >> shift != pace_usec)
                return POOL_BACKOFF_MAX_USEC;
        return MIN(usec, POOL_BACKOFF_MAX_USEC);
}
