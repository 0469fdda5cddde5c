/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* sandboxd's one connection to PID 1, and the one place that decides which
 * of its signals count. Every call to systemd's manager API and every match
 * on its signals goes through the connection systemd_bus_open() returns. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#define SYSTEMD_DEST "org.freedesktop.systemd1"
#define SYSTEMD_PATH "/org/freedesktop/systemd1"
#define SYSTEMD_MANAGER "org.freedesktop.systemd1.Manager"
#define SYSTEMD_UNIT_IFACE "org.freedesktop.systemd1.Unit"
#define SYSTEMD_SERVICE_IFACE "org.freedesktop.systemd1.Service"
#define SYSTEMD_JOB_IFACE "org.freedesktop.systemd1.Job"
/* A unit's object path is this prefix and its name, bus-path-encoded. */
#define SYSTEMD_UNIT_PATH_PREFIX "/org/freedesktop/systemd1/unit"
#define SYSTEMD_ERROR_NO_SUCH_UNIT "org.freedesktop.systemd1.NoSuchUnit"
#define SYSTEMD_ERROR_UNIT_EXISTS "org.freedesktop.systemd1.UnitExists"
#define SYSTEMD_ERROR_LOAD_FAILED "org.freedesktop.systemd1.LoadFailed"
/* PID 1's own socket, root's alone (systemctl uses it as root): nobody but
 * PID 1 can send on a connection to it, and calls on it do not count
 * against dbus-daemon's cap of awaited replies per connection. */
#define SYSTEMD_PRIVATE_ADDRESS "unix:path=/run/systemd/private"

/* Opens the connection to PID 1 into *RET: with BUS_ADDRESS NULL, PID 1's
 * private socket (no Hello, no AddMatch: it is no bus); otherwise SHARED, a
 * bus connection already open (a test bus with a fake systemd on it), is
 * used for both. */
int systemd_bus_open(const char *bus_address, sd_bus *shared, sd_bus **ret);

/* Matches MEMBER of IFACE at PATH from systemd on BUS. On the private
 * connection only PID 1 speaks, so no sender is needed. On a bus, where any
 * client can send a signal straight to sandboxd's unique name and sd-bus
 * cannot check a well-known sender itself, the match names the current
 * unique name of org.freedesktop.systemd1, which sd-bus does compare. */
int systemd_match_signal_async(sd_bus *bus, sd_bus_slot **ret_slot, const char *path, const char *iface,
                               const char *member, sd_bus_message_handler_t callback,
                               sd_bus_message_handler_t install_callback, void *userdata);

/* MEMBER of PID 1's Manager (JobRemoved, UnitRemoved, Reloading), matched
 * as systemd_match_signal_async() does. */
int systemd_match_manager_signal_async(sd_bus *bus, sd_bus_slot **ret_slot, const char *member,
                                       sd_bus_message_handler_t callback, sd_bus_message_handler_t install_callback,
                                       void *userdata);
/* PropertiesChanged of the unit at UNIT_PATH (sent only after Subscribe()). */
int systemd_match_unit_properties_async(sd_bus *bus, sd_bus_slot **ret_slot, const char *unit_path,
                                        sd_bus_message_handler_t callback, void *userdata);

/* The calls to PID 1's Manager, one helper each: destination, object,
 * interface, member and the leading arguments are written here only. */

/* *RET: UNIT's object path (free() it). */
int systemd_unit_path(const char *unit, char **ret);
/* *RET: a StartTransientUnit call for UNIT in job MODE ("fail", "replace"),
 * the caller to append the a(sv) of properties and the a(sa(sv)) of
 * auxiliary units. */
int systemd_start_transient_unit_new(sd_bus *bus, sd_bus_message **ret, const char *unit, const char *mode);
/* *RET: a SetUnitProperties call for UNIT (RUNTIME: until the next boot
 * only), the caller to append the a(sv). */
int systemd_set_unit_properties_new(sd_bus *bus, sd_bus_message **ret, const char *unit, bool runtime);
/* StopUnit(UNIT, MODE), answered to CALLBACK. */
int systemd_stop_unit_async(sd_bus *bus, sd_bus_slot **ret_slot, const char *unit, const char *mode,
                            sd_bus_message_handler_t callback, void *userdata);
/* StartUnit(UNIT, MODE) of a loaded unit, answered to CALLBACK. */
int systemd_start_unit_async(sd_bus *bus, sd_bus_slot **ret_slot, const char *unit, const char *mode,
                             sd_bus_message_handler_t callback, void *userdata);
/* StopUnit(UNIT, MODE), waiting for the reply (start-up only). */
int systemd_stop_unit(sd_bus *bus, const char *unit, const char *mode);
/* ResetFailedUnit(UNIT), waiting for the reply (start-up only). */
int systemd_reset_failed_unit(sd_bus *bus, const char *unit);
/* The names of every loaded unit that matches PATTERN (ListUnitsByPatterns)
 * into *RET_NAMES and, when RET_ACTIVE is not NULL, their ActiveState at the
 * same index; both NULL-terminated, never NULL on success. Waits for the
 * reply (start-up only). */
int systemd_list_units_by_pattern(sd_bus *bus, const char *pattern, sd_bus_error *ret_error, char ***ret_names,
                                  char ***ret_active);
/* Subscribe(): without it systemd sends no unit's PropertiesChanged. */
int systemd_subscribe(sd_bus *bus);
/* Reads the string PROPERTY of the unit at UNIT_PATH into *RET; waits for
 * the reply. */
int systemd_unit_get_string(sd_bus *bus, const char *unit_path, const char *property, sd_bus_error *ret_error,
                            char **ret);

/* The type of UNIT's pending job ("start", "stop", ...) into *RET_TYPE, or
 * NULL when it has none; waits for both replies. */
int systemd_unit_job_type(sd_bus *bus, const char *unit, char **ret_type);

/* InaccessiblePaths= for every unit sandboxd starts that does not get a
 * worker's walls (unit_append_hardening hides all of /run): the egress proxy
 * and the helpers (probes, cleanup, checkpoint). None of them has any use for
 * the system bus, from which a compromised one could forge what sandboxd's
 * clients believe, nor for PID 1's socket. M must be inside the a(sv). */
static inline int systemd_append_no_bus(sd_bus_message *m) {
        return sd_bus_message_append(m, "(sv)", "InaccessiblePaths", "as", 2, "-/run/dbus", "-/run/systemd/private");
}

/* Appends one command as an ExecStartEx=/ExecStopPostEx= style a(sasas)
 * property; FLAGS are systemd's ("privileged", "no-env-expand", ...). With
 * FLAGS NULL it is a plain ExecStart=-style a(sasb) property instead, the only
 * form systemd 252 can read back from a transient unit file on a reload. */
int unit_append_exec(sd_bus_message *m, const char *property, const char *path, char * const *argv,
                     const char * const *flags);

/* What systemd itself says of a unit now, read before anything destructive
 * (ending a worker, deleting its home or image) rather than trusting the
 * signal that announced it. */
typedef struct SystemdUnitState {
        char load_state[32];
        char active_state[32];
        char sub_state[32];
        char result[32];
        int32_t exec_main_code;
        int32_t exec_main_status;
} SystemdUnitState;

/* Asks PID 1 on BUS for every property of the unit at UNIT_PATH
 * (Properties.GetAll of all interfaces, as systemctl show does); CALLBACK
 * gets the reply, which systemd_unit_state_parse() reads. */
int systemd_unit_state_read_async(sd_bus *bus, sd_bus_slot **ret_slot, const char *unit_path,
                                  sd_bus_message_handler_t callback, void *userdata);
/* Reads REPLY into *RET; a negative errno for an error reply or one without
 * an ActiveState. */
int systemd_unit_state_parse(sd_bus_message *reply, SystemdUnitState *ret);
/* The unit is not running any more: inactive or failed. */
bool systemd_unit_state_down(const SystemdUnitState *s);
/* The unit has no start running or done: inactive, failed or on its way down.
 * A start or checkpoint job that systemd really ended leaves it so. */
bool systemd_unit_state_not_up(const SystemdUnitState *s);
/* systemd holds the unit no more: asked for it, it makes an empty stub. */
bool systemd_unit_state_unloaded(const SystemdUnitState *s);
/* systemd has the unit but no longer as it was made ("bad-setting" after a
 * reload of systemd 252, unit-props.h), or not at all. */
bool systemd_unit_state_not_loaded(const SystemdUnitState *s);

typedef bool (*systemd_unit_check_t)(const SystemdUnitState *s);
typedef void (*systemd_unit_confirmed_t)(const char *unit, const char *claim, void *userdata);

/* The one way a signal from systemd that sets off something destructive
 * (deleting a home, an image or a bundle, replacing pooled sandboxes) is
 * acted on: systemd, asked again on BUS for UNIT's state, must agree (CHECK)
 * before CONFIRMED runs with UNIT and CLAIM (what SIGNAL said, e.g. a job's
 * result). Otherwise it is logged once (SANDBOXD_EVENT=signal-unconfirmed)
 * and nothing happens. With RET_SLOT NULL the call belongs to BUS and
 * CONFIRMED must look up what it acts on again; otherwise freeing *RET_SLOT
 * cancels it. */
int systemd_unit_confirm_async(sd_bus *bus, sd_bus_slot **ret_slot, const char *unit, const char *signal,
                               const char *claim, systemd_unit_check_t check, systemd_unit_confirmed_t confirmed,
                               void *userdata);
