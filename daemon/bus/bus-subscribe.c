/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "bus-manager.h"
#include "bus-subscribe.h"
#include "bus-worker.h"
#include "errors.h"
#include "manager.h"

#define DBUS_DRIVER "org.freedesktop.DBus"
#define OBJECT_MANAGER_PATH "/org/sandboxd1"
#define OBJECT_MANAGER_IFACE "org.freedesktop.DBus.ObjectManager"

/* Only dbus-daemon's word counts: it sends as org.freedesktop.DBus, a name
 * no client can own, while a signal a client sends straight to us carries
 * the client's unique name. The one check of this signal's sender. */
static int on_name_owner_changed(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        const char *name, *old_owner, *new_owner;

        if (!streq_ptr(sd_bus_message_get_sender(msg), DBUS_DRIVER))
                return 0;
        if (sd_bus_message_read(msg, "sss", &name, &old_owner, &new_owner) < 0 || !isempty(new_owner))
                return 0;
        if (subscribers_remove(&m->subscribers, name))
                log_debug("Subscriber %s left the bus", name);
        return 0;
}

int bus_subscribe_install(Manager *m) {
        int r;

        subscribers_init(&m->subscribers);
        /* Added before the name is ours, so before anyone can subscribe:
         * dbus-daemon delivers a client's Subscribe before its departure. */
        r = sd_bus_match_signal(m->bus, &m->bus_state->name_lost_match, DBUS_DRIVER, "/org/freedesktop/DBus",
                                "org.freedesktop.DBus", "NameOwnerChanged", on_name_owner_changed, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch for subscribers leaving the bus: %m");
        return 0;
}

static void log_refused(uid_t uid, const char *name, const char *why) {
        char u[16], text[160];

        snprintf(u, sizeof(u), "%u", (unsigned) uid);
        snprintf(text, sizeof(text), "Subscription of %s (UID %s) refused: %s", name, u, why);
        log_struct(LOG_NOTICE, text, "SANDBOXD_EVENT", "subscribe-refused", "SANDBOXD_CALLER_UID", u,
                   "SANDBOXD_REASON", why, NULL);
}

int bus_subscribe_caller(Manager *m, sd_bus_message *msg, uid_t uid, bool sees_all, sd_bus_error *ret_error) {
        const char *name = sd_bus_message_get_sender(msg);
        int r;

        if (!name)
                return sd_bus_error_set(ret_error, SBX_ERROR_NOT_SUPPORTED,
                                        "Subscribe needs a bus connection with a unique name");
        r = subscribers_add(&m->subscribers, name, uid, sees_all);
        if (r >= 0)
                /* Workers lost in the restart that ended the old
                 * subscriptions: a client subscribing again hears of them. */
                bus_worker_announce_lost(m, subscribers_find(&m->subscribers, name));
        if (r == -EUSERS) {
                log_refused(uid, name, "too-many-for-uid");
                return sd_bus_error_setf(ret_error, SBX_ERROR_TOO_MANY_SUBSCRIBERS,
                                         "UID %u holds %zu subscriptions already, the most one user may",
                                         (unsigned) uid, m->subscribers.max_per_uid);
        }
        if (r == -ENOSPC) {
                log_refused(uid, name, "too-many");
                return sd_bus_error_setf(ret_error, SBX_ERROR_TOO_MANY_SUBSCRIBERS,
                                         "sandboxd has %zu subscribers already, the most it serves",
                                         m->subscribers.max_total);
        }
        if (r < 0)
                return r;
        log_debug("%s (UID %u) subscribed, %s", name, (unsigned) uid, sees_all ? "to every worker" : "to its own");
        return sd_bus_reply_method_return(msg, NULL);
}

int bus_method_unsubscribe(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;

        if (!subscribers_remove(&m->subscribers, sd_bus_message_get_sender(msg)))
                return sd_bus_error_set(ret_error, SBX_ERROR_NOT_SUBSCRIBED, "This client has not subscribed");
        return sd_bus_reply_method_return(msg, NULL);
}

/* What sd-bus does for a property with no getter, for the types our
 * vtables use that way. */
static int append_member(sd_bus_message *m, const char *signature, const void *p) {
        if (!signature[0] || signature[1])
                return -EOPNOTSUPP;
        switch (signature[0]) {
        case 's':
        case 'o':
                return sd_bus_message_append_basic(m, signature[0], *(char * const *) p ?: "");
        case 'b':
        case 'i':
        case 'u':
        case 't':
        case 'x':
                return sd_bus_message_append_basic(m, signature[0], p);
        default:
                return -EOPNOTSUPP;
        }
}

static int append_property(sd_bus_message *m, const sd_bus_vtable *v, const char *path, const char *iface,
                           void *userdata) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        r = sd_bus_message_open_container(m, 'e', "sv");
        if (r >= 0)
                r = sd_bus_message_append_basic(m, 's', v->x.property.member);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'v', v->x.property.signature);
        if (r < 0)
                return r;
        if (v->x.property.get)
                r = v->x.property.get(sd_bus_message_get_bus(m), path, iface, v->x.property.member, m, userdata,
                                      &error);
        else
                r = append_member(m, v->x.property.signature, (const uint8_t *) userdata + v->x.property.offset);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r;
}

int bus_append_properties(sd_bus_message *m, const sd_bus_vtable *vtable, const char *path, const char *iface,
                          void *userdata, char **names) {
        const uint64_t announced = SD_BUS_VTABLE_PROPERTY_CONST | SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE;
        int r;

        r = sd_bus_message_open_container(m, 'a', "{sv}");
        for (const sd_bus_vtable *v = vtable; r >= 0 && v->type != _SD_BUS_VTABLE_END; v++) {
                if (v->type != _SD_BUS_VTABLE_PROPERTY && v->type != _SD_BUS_VTABLE_WRITABLE_PROPERTY)
                        continue;
                if (names ? !strv_contains(names, v->x.property.member) : !(v->flags & announced))
                        continue;
                r = append_property(m, v, path, iface, userdata);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r;
}

void bus_emit_to_subscriber(Manager *m, const Subscriber *sub, Audience audience, uid_t owner, const char *path,
                            const char *iface, const char *member, SignalBuild build, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *sig = NULL;
        int r;

        if (!m->bus || !subscriber_entitled(sub, audience, owner))
                return;
        r = sd_bus_message_new_signal(m->bus, &sig, path, iface, member);
        if (r >= 0)
                r = sd_bus_message_set_destination(sig, sub->name);
        if (r >= 0)
                r = build(sig, userdata);
        if (r >= 0)
                r = sd_bus_send(m->bus, sig, NULL);
        if (r < 0)
                log_errno(LOG_DEBUG, r, "Failed to send %s to %s: %m", member, sub->name);
}

void bus_emit_to_subscribers(Manager *m, Audience audience, uid_t owner, const char *path, const char *iface,
                             const char *member, SignalBuild build, void *userdata) {
        for (size_t i = 0; i < m->subscribers.n; i++)
                bus_emit_to_subscriber(m, &m->subscribers.items[i], audience, owner, path, iface, member, build,
                                       userdata);
}

typedef struct PropertiesArgs {
        const char *path;
        const char *iface;
        const sd_bus_vtable *vtable;
        void *userdata;
        char **names;
} PropertiesArgs;

static int build_properties_changed(sd_bus_message *m, void *userdata) {
        PropertiesArgs *a = userdata;
        int r;

        r = sd_bus_message_append(m, "s", a->iface);
        if (r >= 0)
                r = bus_append_properties(m, a->vtable, a->path, a->iface, a->userdata, a->names);
        if (r >= 0)
                r = sd_bus_message_append(m, "as", 0);
        return r;
}

void bus_emit_properties_changed(Manager *m, Audience audience, uid_t owner, const char *path, const char *iface,
                                 const sd_bus_vtable *vtable, void *userdata, char **names) {
        PropertiesArgs a = { path, iface, vtable, userdata, names };
        bus_emit_to_subscribers(m, audience, owner, path, "org.freedesktop.DBus.Properties", "PropertiesChanged",
                                build_properties_changed, &a);
}

static int build_interfaces_added(sd_bus_message *m, void *userdata) {
        PropertiesArgs *a = userdata;
        int r;

        r = sd_bus_message_append(m, "o", a->path);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "{sa{sv}}");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'e', "sa{sv}");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", a->iface);
        if (r >= 0)
                r = bus_append_properties(m, a->vtable, a->path, a->iface, a->userdata, NULL);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r;
}

void bus_emit_interfaces_added(Manager *m, Audience audience, uid_t owner, const char *path, const char *iface,
                               const sd_bus_vtable *vtable, void *userdata) {
        PropertiesArgs a = { path, iface, vtable, userdata, NULL };
        bus_emit_to_subscribers(m, audience, owner, OBJECT_MANAGER_PATH, OBJECT_MANAGER_IFACE, "InterfacesAdded",
                                build_interfaces_added, &a);
}

static int build_interfaces_removed(sd_bus_message *m, void *userdata) {
        PropertiesArgs *a = userdata;
        return sd_bus_message_append(m, "oas", a->path, 1, a->iface);
}

void bus_emit_interfaces_removed(Manager *m, Audience audience, uid_t owner, const char *path, const char *iface) {
        PropertiesArgs a = { .path = path, .iface = iface };
        bus_emit_to_subscribers(m, audience, owner, OBJECT_MANAGER_PATH, OBJECT_MANAGER_IFACE, "InterfacesRemoved",
                                build_interfaces_removed, &a);
}
