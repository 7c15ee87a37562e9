#include "CDBus.h"

#include <dbus/dbus.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct vf_dbus {
    DBusConnection *connection;
};

static void clear_error(vf_dbus_error *error) {
    if (error) {
        error->name[0] = 0;
        error->message[0] = 0;
    }
}

static void set_error(vf_dbus_error *error, const char *name, const char *message) {
    if (!error) return;
    snprintf(error->name, sizeof error->name, "%s", name ? name : "");
    snprintf(error->message, sizeof error->message, "%s", message ? message : "");
}

static void take_error(vf_dbus_error *error, DBusError *dbus_error) {
    set_error(error, dbus_error->name, dbus_error->message);
    dbus_error_free(dbus_error);
}

vf_dbus *vf_dbus_open(const char *address, vf_dbus_error *error) {
    clear_error(error);
    dbus_threads_init_default();
    DBusError dbus_error;
    dbus_error_init(&dbus_error);
    DBusConnection *connection = NULL;
    if (address) {
        connection = dbus_connection_open_private(address, &dbus_error);
        if (connection && !dbus_bus_register(connection, &dbus_error)) {
            dbus_connection_close(connection);
            dbus_connection_unref(connection);
            connection = NULL;
        }
    } else {
        connection = dbus_bus_get_private(DBUS_BUS_SESSION, &dbus_error);
    }
    if (!connection) {
        if (dbus_error_is_set(&dbus_error)) {
            take_error(error, &dbus_error);
        } else {
            set_error(error, DBUS_ERROR_FAILED, "could not connect to the bus");
        }
        return NULL;
    }
    dbus_connection_set_exit_on_disconnect(connection, FALSE);
    vf_dbus *bus = calloc(1, sizeof *bus);
    if (!bus) {
        dbus_connection_close(connection);
        dbus_connection_unref(connection);
        set_error(error, DBUS_ERROR_NO_MEMORY, "out of memory");
        return NULL;
    }
    bus->connection = connection;
    return bus;
}

void vf_dbus_close(vf_dbus *bus) {
    if (!bus) return;
    dbus_connection_close(bus->connection);
    dbus_connection_unref(bus->connection);
    free(bus);
}

const char *vf_dbus_unique_name(vf_dbus *bus) {
    const char *name = dbus_bus_get_unique_name(bus->connection);
    return name ? name : "";
}

/// Sends `message` (consumed) and waits for its reply: the reply, or NULL with `error` filled.
static DBusMessage *send_and_wait(vf_dbus *bus, DBusMessage *message, int timeout_ms, vf_dbus_error *error) {
    DBusError dbus_error;
    dbus_error_init(&dbus_error);
    DBusMessage *reply =
        dbus_connection_send_with_reply_and_block(bus->connection, message, timeout_ms, &dbus_error);
    dbus_message_unref(message);
    if (!reply) {
        if (dbus_error_is_set(&dbus_error)) {
            take_error(error, &dbus_error);
        } else {
            set_error(error, DBUS_ERROR_NO_REPLY, "no reply");
        }
    }
    return reply;
}

int vf_dbus_get_bool_property(vf_dbus *bus, const char *destination, const char *path, const char *interface,
                              const char *property, int timeout_ms, int *value, vf_dbus_error *error) {
    clear_error(error);
    DBusMessage *message =
        dbus_message_new_method_call(destination, path, DBUS_INTERFACE_PROPERTIES, "Get");
    if (!message ||
        !dbus_message_append_args(message, DBUS_TYPE_STRING, &interface, DBUS_TYPE_STRING, &property,
                                  DBUS_TYPE_INVALID)) {
        if (message) dbus_message_unref(message);
        set_error(error, DBUS_ERROR_NO_MEMORY, "out of memory");
        return -1;
    }
    DBusMessage *reply = send_and_wait(bus, message, timeout_ms, error);
    if (!reply) return -1;
    DBusMessageIter iter, variant;
    int result = -1;
    if (dbus_message_iter_init(reply, &iter) && dbus_message_iter_get_arg_type(&iter) == DBUS_TYPE_VARIANT) {
        dbus_message_iter_recurse(&iter, &variant);
        if (dbus_message_iter_get_arg_type(&variant) == DBUS_TYPE_BOOLEAN) {
            dbus_bool_t flag = FALSE;
            dbus_message_iter_get_basic(&variant, &flag);
            *value = flag ? 1 : 0;
            result = 0;
        }
    }
    if (result != 0) set_error(error, DBUS_ERROR_INVALID_SIGNATURE, "the property is not a boolean");
    dbus_message_unref(reply);
    return result;
}

/// Appends an a{sv} whose values are strings.
static int append_options(DBusMessage *message, const char *const *keys, const char *const *values, int count) {
    DBusMessageIter iter, dict, entry, variant;
    dbus_message_iter_init_append(message, &iter);
    if (!dbus_message_iter_open_container(&iter, DBUS_TYPE_ARRAY, "{sv}", &dict)) return 0;
    for (int i = 0; i < count; i++) {
        const char *key = keys[i];
        const char *value = values[i];
        if (!dbus_message_iter_open_container(&dict, DBUS_TYPE_DICT_ENTRY, NULL, &entry) ||
            !dbus_message_iter_append_basic(&entry, DBUS_TYPE_STRING, &key) ||
            !dbus_message_iter_open_container(&entry, DBUS_TYPE_VARIANT, "s", &variant) ||
            !dbus_message_iter_append_basic(&variant, DBUS_TYPE_STRING, &value) ||
            !dbus_message_iter_close_container(&entry, &variant) ||
            !dbus_message_iter_close_container(&dict, &entry)) {
            dbus_message_iter_abandon_container_if_open(&entry, &variant);
            dbus_message_iter_abandon_container_if_open(&dict, &entry);
            dbus_message_iter_abandon_container(&iter, &dict);
            return 0;
        }
    }
    return dbus_message_iter_close_container(&iter, &dict);
}

int vf_dbus_call_with_options(vf_dbus *bus, const char *destination, const char *path, const char *interface,
                              const char *method, const char *const *keys, const char *const *values, int count,
                              int timeout_ms, char reply_type, char *out_path, int out_path_capacity, int *out_fd,
                              vf_dbus_error *error) {
    clear_error(error);
    DBusMessage *message = dbus_message_new_method_call(destination, path, interface, method);
    if (!message || !append_options(message, keys, values, count)) {
        if (message) dbus_message_unref(message);
        set_error(error, DBUS_ERROR_NO_MEMORY, "out of memory");
        return -1;
    }
    DBusMessage *reply = send_and_wait(bus, message, timeout_ms, error);
    if (!reply) return -1;
    int result = 0;
    DBusError dbus_error;
    dbus_error_init(&dbus_error);
    if (reply_type == 'o') {
        const char *handle = NULL;
        if (dbus_message_get_args(reply, &dbus_error, DBUS_TYPE_OBJECT_PATH, &handle, DBUS_TYPE_INVALID)) {
            snprintf(out_path, (size_t)out_path_capacity, "%s", handle);
        } else {
            take_error(error, &dbus_error);
            result = -1;
        }
    } else if (reply_type == 'h') {
        int fd = -1;
        if (dbus_message_get_args(reply, &dbus_error, DBUS_TYPE_UNIX_FD, &fd, DBUS_TYPE_INVALID)) {
            *out_fd = fd;
        } else {
            take_error(error, &dbus_error);
            result = -1;
        }
    }
    dbus_message_unref(reply);
    return result;
}

int vf_dbus_lookup_permission(vf_dbus *bus, const char *table, const char *id, const char *app, int timeout_ms,
                              char *out, int out_capacity, vf_dbus_error *error) {
    clear_error(error);
    DBusMessage *message =
        dbus_message_new_method_call("org.freedesktop.impl.portal.PermissionStore",
                                     "/org/freedesktop/impl/portal/PermissionStore",
                                     "org.freedesktop.impl.portal.PermissionStore", "Lookup");
    if (!message ||
        !dbus_message_append_args(message, DBUS_TYPE_STRING, &table, DBUS_TYPE_STRING, &id, DBUS_TYPE_INVALID)) {
        if (message) dbus_message_unref(message);
        set_error(error, DBUS_ERROR_NO_MEMORY, "out of memory");
        return -1;
    }
    DBusMessage *reply = send_and_wait(bus, message, timeout_ms, error);
    if (!reply) {
        // The store answers NotFound for a table or an entry that was never written.
        if (strcmp(error->name, "org.freedesktop.portal.Error.NotFound") == 0) {
            clear_error(error);
            return 0;
        }
        return -1;
    }
    // (a{sas} permissions, v data)
    DBusMessageIter iter, dict, entry, list;
    int result = 0;
    if (!dbus_message_iter_init(reply, &iter) || dbus_message_iter_get_arg_type(&iter) != DBUS_TYPE_ARRAY) {
        set_error(error, DBUS_ERROR_INVALID_SIGNATURE, "Lookup's reply is not (a{sas}v)");
        dbus_message_unref(reply);
        return -1;
    }
    dbus_message_iter_recurse(&iter, &dict);
    while (dbus_message_iter_get_arg_type(&dict) == DBUS_TYPE_DICT_ENTRY) {
        dbus_message_iter_recurse(&dict, &entry);
        const char *key = NULL;
        if (dbus_message_iter_get_arg_type(&entry) == DBUS_TYPE_STRING) {
            dbus_message_iter_get_basic(&entry, &key);
        }
        if (key && strcmp(key, app) == 0 && dbus_message_iter_next(&entry) &&
            dbus_message_iter_get_arg_type(&entry) == DBUS_TYPE_ARRAY) {
            dbus_message_iter_recurse(&entry, &list);
            if (dbus_message_iter_get_arg_type(&list) == DBUS_TYPE_STRING) {
                const char *permission = NULL;
                dbus_message_iter_get_basic(&list, &permission);
                snprintf(out, (size_t)out_capacity, "%s", permission);
                result = 1;
            }
            break;
        }
        dbus_message_iter_next(&dict);
    }
    dbus_message_unref(reply);
    return result;
}

int vf_dbus_add_match(vf_dbus *bus, const char *rule, vf_dbus_error *error) {
    clear_error(error);
    DBusError dbus_error;
    dbus_error_init(&dbus_error);
    dbus_bus_add_match(bus->connection, rule, &dbus_error);
    if (dbus_error_is_set(&dbus_error)) {
        take_error(error, &dbus_error);
        return -1;
    }
    return 0;
}

void vf_dbus_remove_match(vf_dbus *bus, const char *rule) {
    dbus_bus_remove_match(bus->connection, rule, NULL);
}

static long long now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

int vf_dbus_wait_signal(vf_dbus *bus, const char *path, const char *interface, const char *member, int timeout_ms,
                        uint32_t *first, vf_dbus_error *error) {
    clear_error(error);
    long long deadline = now_ms() + timeout_ms;
    for (;;) {
        DBusMessage *message;
        while ((message = dbus_connection_pop_message(bus->connection)) != NULL) {
            int match = dbus_message_is_signal(message, interface, member) && dbus_message_has_path(message, path);
            if (match) {
                DBusMessageIter iter;
                int ok = dbus_message_iter_init(message, &iter) &&
                         dbus_message_iter_get_arg_type(&iter) == DBUS_TYPE_UINT32;
                if (ok) dbus_message_iter_get_basic(&iter, first);
                dbus_message_unref(message);
                if (!ok) set_error(error, DBUS_ERROR_INVALID_SIGNATURE, "the signal's first argument is not a uint32");
                return ok ? 1 : -1;
            }
            int disconnected = dbus_message_is_signal(message, DBUS_INTERFACE_LOCAL, "Disconnected");
            dbus_message_unref(message);
            if (disconnected) {
                set_error(error, DBUS_ERROR_DISCONNECTED, "the bus connection closed");
                return -1;
            }
        }
        long long remaining = deadline - now_ms();
        if (remaining <= 0) return 0;
        if (!dbus_connection_read_write(bus->connection, (int)remaining)) {
            set_error(error, DBUS_ERROR_DISCONNECTED, "the bus connection closed");
            return -1;
        }
    }
}
