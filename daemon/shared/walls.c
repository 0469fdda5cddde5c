/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <time.h>

#include "util.h"
#include "walls.h"

void walls_status_init(WallsStatus *s) {
        *s = (WallsStatus) {};
        snprintf(s->namespaces_reason, sizeof(s->namespaces_reason),
                 "not verified yet: the namespace probe has not answered");
        snprintf(s->ip_firewall_reason, sizeof(s->ip_firewall_reason), "not probed yet");
}

void walls_status_refuse(WallsStatus *s, const char *reason) {
        s->namespaces_private = false;
        snprintf(s->namespaces_reason, sizeof(s->namespaces_reason), "%s", reason);
        s->ip_firewall = false;
        snprintf(s->ip_firewall_reason, sizeof(s->ip_firewall_reason), "unknown: %s", reason);
        s->host = (NsIdSet) {};
        s->probed_usec = now_usec(CLOCK_REALTIME);
        s->no_verdict = true;
}

/* "TAG unavailable REASON" or "TAG IDENTITIES" for host and unit. */
static int parse_ids_line(const char *rest, NsIdSet *ids, char *error, size_t n) {
        if (startswith(rest, "unavailable ") && rest[strlen("unavailable ")]) {
                snprintf(error, n, "%.*s", (int) n - 1, rest + strlen("unavailable "));
                return 0;
        }
        return ns_id_set_parse(rest, WALLS_NS_MASK, ids);
}

static int parse_line(const char *line, WallsReport *r) {
        const char *rest;

        if ((rest = startswith(line, "host ") ? line + 5 : NULL)) {
                if (r->has_host)
                        return -EBADMSG;
                r->has_host = true;
                return parse_ids_line(rest, &r->host, r->host_error, sizeof(r->host_error));
        }
        if ((rest = startswith(line, "unit ") ? line + 5 : NULL)) {
                if (r->has_unit)
                        return -EBADMSG;
                r->has_unit = true;
                return parse_ids_line(rest, &r->unit, r->unit_error, sizeof(r->unit_error));
        }
        if ((rest = startswith(line, "ip-firewall ") ? line + 12 : NULL)) {
                if (r->has_ip_firewall)
                        return -EBADMSG;
                r->has_ip_firewall = true;
                if (startswith(rest, "ok "))
                        r->ip_firewall = true;
                else if (!startswith(rest, "unavailable "))
                        return -EBADMSG;
                rest = strchr(rest, ' ') + 1;
                if (!*rest)
                        return -EBADMSG;
                snprintf(r->ip_firewall_reason, sizeof(r->ip_firewall_reason), "%s", rest);
                return 0;
        }
        return -EBADMSG;
}

int walls_report_parse(const char *out, WallsReport *ret) {
        WallsReport r = {};

        if (!out || !*out)
                return -EBADMSG;
        while (*out) {
                char line[512];
                size_t len = strcspn(out, "\n");
                int k;

                if (len == 0 || len >= sizeof(line))
                        return -EBADMSG;
                snprintf(line, sizeof(line), "%.*s", (int) len, out);
                for (size_t i = 0; i < len; i++)
                        if ((unsigned char) line[i] < ' ')
                                return -EBADMSG;
                k = parse_line(line, &r);
                if (k < 0)
                        return -EBADMSG;
                out += len;
                if (*out == '\n')
                        out++;
        }
        *ret = r;
        return 0;
}

void walls_status_from_report(WallsStatus *s, const WallsReport *r, const char *result) {
        char reason[320], ids[160];

        if (!r->has_host || r->host_error[0]) {
                snprintf(reason, sizeof(reason), "cannot read PID 1's namespaces: %.255s",
                         r->has_host ? r->host_error : "the probe's privileged step did not report them");
                walls_status_refuse(s, reason);
                return;
        }
        if (!r->has_unit || r->unit_error[0]) {
                snprintf(reason, sizeof(reason), "the probe unit could not report its namespaces: %.255s",
                         r->has_unit ? r->unit_error : "it did not run or said nothing");
                walls_status_refuse(s, reason);
                return;
        }
        if (!streq(result, "done")) {
                snprintf(reason, sizeof(reason), "the namespace probe unit ended with result %s", result);
                walls_status_refuse(s, reason);
                return;
        }
        s->probed_usec = now_usec(CLOCK_REALTIME);
        s->no_verdict = false;
        s->host = r->host;
        if (ns_id_set_compare(&r->unit, &r->host, WALLS_NS_MASK, reason, sizeof(reason)) < 0) {
                s->namespaces_private = false;
                snprintf(s->namespaces_reason, sizeof(s->namespaces_reason),
                         "%.250s: systemd did not make them private for a worker's unit", reason);
        } else {
                s->namespaces_private = true;
                (void) ns_id_set_format(&r->unit, ids, sizeof(ids));
                snprintf(s->namespaces_reason, sizeof(s->namespaces_reason),
                         "net, ipc and mnt of a worker's unit are not PID 1's (%s)", ids);
        }
        s->ip_firewall = r->has_ip_firewall && r->ip_firewall;
        snprintf(s->ip_firewall_reason, sizeof(s->ip_firewall_reason), "%s",
                 r->has_ip_firewall ? r->ip_firewall_reason : "the probe did not test it");
}
