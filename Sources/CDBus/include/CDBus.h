#ifndef VIEWFINDER_CDBUS_H
#define VIEWFINDER_CDBUS_H
// libdbus (Debian's libdbus-1) for the Camera portal: a private session-bus connection, the few
// calls the portal needs (a property, a method taking an a{sv} of strings, the permission store's
// Lookup) and a wait for one signal. libdbus's message iterators and its variadic argument
// readers stay in C; what to call and what the answers mean is decided in Swift.
#include <stdint.h>

/// A private connection to a message bus (opaque).
typedef struct vf_dbus vf_dbus;

/// A D-Bus error: its name (`org.freedesktop.DBus.Error.ServiceUnknown`, …) and message; empty
/// strings when there was none.
typedef struct {
    char name[256];
    char message[768];
} vf_dbus_error;

/// Connects to the bus at `address` (a D-Bus address), or to the session bus when `address` is
/// NULL, and registers (so the connection has a unique name). NULL on failure, `error` filled.
/// The process never exits when the bus goes away.
vf_dbus *vf_dbus_open(const char *address, vf_dbus_error *error);
/// Closes and releases the connection.
void vf_dbus_close(vf_dbus *bus);
/// The connection's unique name (":1.42"); valid while the connection is open.
const char *vf_dbus_unique_name(vf_dbus *bus);

/// Reads a boolean property through org.freedesktop.DBus.Properties.Get: 0 with `*value` set,
/// -1 with `error` filled.
int vf_dbus_get_bool_property(vf_dbus *bus, const char *destination, const char *path, const char *interface,
                              const char *property, int timeout_ms, int *value, vf_dbus_error *error);

/// Calls `method` with one a{sv} argument whose `count` entries are strings (`keys[i]` →
/// `values[i]`). `reply` is 'o' (the reply is an object path, copied into `out_path`), 'h' (a
/// Unix fd, stored in `*out_fd`: the caller owns it) or 0 (the reply is ignored). 0 on success,
/// -1 with `error` filled.
int vf_dbus_call_with_options(vf_dbus *bus, const char *destination, const char *path, const char *interface,
                              const char *method, const char *const *keys, const char *const *values, int count,
                              int timeout_ms, char reply, char *out_path, int out_path_capacity, int *out_fd,
                              vf_dbus_error *error);

/// org.freedesktop.impl.portal.PermissionStore.Lookup(`table`, `id`): copies the first permission
/// stored for `app` into `out` and returns 1; 0 when the table, the entry or the app has none;
/// -1 with `error` filled.
int vf_dbus_lookup_permission(vf_dbus *bus, const char *table, const char *id, const char *app, int timeout_ms,
                              char *out, int out_capacity, vf_dbus_error *error);

/// Subscribes to signals matching `rule` (a D-Bus match rule). 0, or -1 with `error` filled.
int vf_dbus_add_match(vf_dbus *bus, const char *rule, vf_dbus_error *error);
/// Removes a subscription made with vf_dbus_add_match (errors are ignored).
void vf_dbus_remove_match(vf_dbus *bus, const char *rule);

/// Waits up to `timeout_ms` for the signal `interface`.`member` on `path` whose first argument is
/// a uint32, stored in `*first`; other messages are discarded. 1 when it came, 0 on timeout,
/// -1 when the connection closed or the signal was malformed (`error` filled).
int vf_dbus_wait_signal(vf_dbus *bus, const char *path, const char *interface, const char *member, int timeout_ms,
                        uint32_t *first, vf_dbus_error *error);

#endif
