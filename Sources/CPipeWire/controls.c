// A node's controls: SPA_PARAM_PropInfo (what each control is, its range) and SPA_PARAM_Props
// (the values), read with pw_node_enum_params and written with pw_node_set_param. See
// include/CPipeWire.h.
#include "CPipeWire.h"
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <spa/param/props.h>
#include <spa/pod/builder.h>
#include <spa/pod/iter.h>

_Static_assert(VF_PW_PROP_BRIGHTNESS == SPA_PROP_brightness, "SPA_PROP_brightness");
_Static_assert(VF_PW_PROP_CONTRAST == SPA_PROP_contrast, "SPA_PROP_contrast");
_Static_assert(VF_PW_PROP_SATURATION == SPA_PROP_saturation, "SPA_PROP_saturation");
_Static_assert(VF_PW_PROP_HUE == SPA_PROP_hue, "SPA_PROP_hue");
_Static_assert(VF_PW_PROP_GAMMA == SPA_PROP_gamma, "SPA_PROP_gamma");
_Static_assert(VF_PW_PROP_EXPOSURE == SPA_PROP_exposure, "SPA_PROP_exposure");
_Static_assert(VF_PW_PROP_GAIN == SPA_PROP_gain, "SPA_PROP_gain");
_Static_assert(VF_PW_PROP_SHARPNESS == SPA_PROP_sharpness, "SPA_PROP_sharpness");
_Static_assert(VF_PW_PROP_START_CUSTOM == SPA_PROP_START_CUSTOM, "SPA_PROP_START_CUSTOM");

/// Whether `id` names a video control (not a device property such as SPA_PROP_device): the video
/// props, a node's own (from SPA_PROP_START_CUSTOM), and the IDs below SPA_PROP_START_Device that
/// PipeWire 0.3's libcamera plugin gives its controls (libcamera's own control IDs).
static int vf_pw_is_video_control(uint32_t id) {
    return (id > SPA_PROP_unknown && id < SPA_PROP_START_Device)
        || (id > SPA_PROP_START_Video && id < SPA_PROP_START_Other) || id >= SPA_PROP_START_CUSTOM;
}

static double vf_pw_number(const struct spa_pod *pod, uint32_t index) {
    const void *body = SPA_POD_BODY_CONST(pod);
    if (pod->type == SPA_TYPE_Float) return ((const float *)body)[index];
    return ((const double *)body)[index];
}

/// Reads the labels of a menu (a Struct of Int value, String label pairs) into `out`.
static void vf_pw_parse_labels(const struct spa_pod *labels, vf_pw_control *out) {
    if (!spa_pod_is_struct(labels)) return;
    const struct spa_pod *item;
    int32_t pending = 0;
    int has_pending = 0;
    SPA_POD_STRUCT_FOREACH(labels, item) {
        if (spa_pod_is_int(item)) {
            pending = SPA_POD_VALUE(struct spa_pod_int, item);
            has_pending = 1;
        } else if (spa_pod_is_string(item) && has_pending) {
            const char *text = NULL;
            if (spa_pod_get_string(item, &text) == 0 && out->menu_count < VF_PW_MAX_MENU) {
                out->menu_values[out->menu_count] = pending;
                snprintf(out->menu_names[out->menu_count], sizeof out->menu_names[0], "%s", text ? text : "");
                out->menu_count++;
            }
            has_pending = 0;
        }
    }
}

int vf_pw_parse_prop_info(const struct spa_pod *param, vf_pw_control *controls, int count, int capacity) {
    if (param == NULL || !spa_pod_is_object_type(param, SPA_TYPE_OBJECT_PropInfo) || count >= capacity) return count;
    const struct spa_pod_object *object = (const struct spa_pod_object *)param;
    vf_pw_control control;
    memset(&control, 0, sizeof control);
    const struct spa_pod *type = NULL, *labels = NULL;
    const char *name = NULL, *description = NULL;
    int has_id = 0;
    const struct spa_pod_prop *prop;
    SPA_POD_OBJECT_FOREACH(object, prop) {
        switch (prop->key) {
        case SPA_PROP_INFO_id:
            if (spa_pod_get_id(&prop->value, &control.id) == 0) has_id = 1;
            break;
        case SPA_PROP_INFO_name: spa_pod_get_string(&prop->value, &name); break;
        case SPA_PROP_INFO_description: spa_pod_get_string(&prop->value, &description); break;
        case SPA_PROP_INFO_type: type = &prop->value; break;
        case SPA_PROP_INFO_labels: labels = &prop->value; break;
        default: break;
        }
    }
    if (!has_id || type == NULL || !vf_pw_is_video_control(control.id)) return count;
    for (int i = 0; i < count; i++) {
        if (controls[i].id == control.id) return count;
    }
    snprintf(control.name, sizeof control.name, "%s", description ? description : name ? name : "");
    uint32_t n = 0, choice = 0;
    const struct spa_pod *values = spa_pod_get_values(type, &n, &choice);
    if (n == 0) return count;
    switch (values->type) {
    case SPA_TYPE_Int: {
        const int32_t *v = SPA_POD_BODY_CONST(values);
        control.default_value = v[0];
        control.minimum = control.maximum = v[0];
        control.step = 1;
        if ((choice == SPA_CHOICE_Range || choice == SPA_CHOICE_Step) && n >= 3) {
            control.kind = VF_PW_CONTROL_INT;
            control.minimum = v[1];
            control.maximum = v[2];
            if (choice == SPA_CHOICE_Step && n >= 4 && v[3] > 0) control.step = v[3];
        } else if (choice == SPA_CHOICE_Enum || labels != NULL) {
            control.kind = VF_PW_CONTROL_MENU;
            if (labels) vf_pw_parse_labels(labels, &control);
            if (control.menu_count == 0) {
                // No labels: the enumeration's values (after the default) are the choices.
                for (uint32_t i = n > 1 ? 1 : 0; i < n && control.menu_count < VF_PW_MAX_MENU; i++) {
                    control.menu_values[control.menu_count] = v[i];
                    snprintf(control.menu_names[control.menu_count], sizeof control.menu_names[0], "%d", v[i]);
                    control.menu_count++;
                }
            }
            if (control.menu_count == 0) return count;
            control.minimum = control.maximum = control.menu_values[0];
            for (uint32_t i = 0; i < control.menu_count; i++) {
                if (control.menu_values[i] < control.minimum) control.minimum = control.menu_values[i];
                if (control.menu_values[i] > control.maximum) control.maximum = control.menu_values[i];
            }
        } else {
            // A single fixed integer is a read-out, not a control.
            return count;
        }
        break;
    }
    case SPA_TYPE_Bool: {
        control.kind = VF_PW_CONTROL_BOOL;
        control.default_value = SPA_POD_VALUE(struct spa_pod_bool, values) ? 1 : 0;
        control.minimum = 0;
        control.maximum = 1;
        control.step = 1;
        break;
    }
    case SPA_TYPE_Float:
    case SPA_TYPE_Double: {
        if (!((choice == SPA_CHOICE_Range || choice == SPA_CHOICE_Step) && n >= 3)) return count;
        control.kind = VF_PW_CONTROL_FLOAT;
        control.float_default = vf_pw_number(values, 0);
        control.float_minimum = vf_pw_number(values, 1);
        control.float_maximum = vf_pw_number(values, 2);
        break;
    }
    default:
        return count;
    }
    controls[count] = control;
    return count + 1;
}

void vf_pw_parse_props(const struct spa_pod *param, vf_pw_control *controls, int count) {
    if (param == NULL || !spa_pod_is_object_type(param, SPA_TYPE_OBJECT_Props)) return;
    const struct spa_pod_object *object = (const struct spa_pod_object *)param;
    const struct spa_pod_prop *prop;
    SPA_POD_OBJECT_FOREACH(object, prop) {
        for (int i = 0; i < count; i++) {
            vf_pw_control *control = &controls[i];
            if (control->id != prop->key) continue;
            int32_t int_value = 0;
            bool bool_value = false;
            float float_value = 0;
            double double_value = 0;
            if (spa_pod_get_int(&prop->value, &int_value) == 0) {
                control->value = int_value;
                control->float_value = int_value;
                control->has_value = 1;
            } else if (spa_pod_get_bool(&prop->value, &bool_value) == 0) {
                control->value = bool_value ? 1 : 0;
                control->has_value = 1;
            } else if (spa_pod_get_float(&prop->value, &float_value) == 0) {
                control->float_value = float_value;
                control->value = (int32_t)float_value;
                control->has_value = 1;
            } else if (spa_pod_get_double(&prop->value, &double_value) == 0) {
                control->float_value = double_value;
                control->value = (int32_t)double_value;
                control->has_value = 1;
            }
        }
    }
}

// MARK: - Reading a node's controls

#define VF_PW_MAX_PROPS 8

struct vf_pw_controls_read {
    vf_pw_control *controls;
    int capacity;
    int count;
    int got_info;
    /// Props params, copied: they may come before the PropInfo they refer to is complete.
    uint8_t props[VF_PW_MAX_PROPS][4096];
    int props_count;
    int error;
};

static void on_controls_info(void *data, const struct pw_node_info *info) {
    struct vf_pw_controls_read *r = data;
    (void)info;
    r->got_info = 1;
}

static void on_controls_param(
    void *data, int seq, uint32_t id, uint32_t index, uint32_t next, const struct spa_pod *param) {
    struct vf_pw_controls_read *r = data;
    (void)seq;
    (void)index;
    (void)next;
    if (param == NULL) return;
    if (id == SPA_PARAM_PropInfo) {
        r->count = vf_pw_parse_prop_info(param, r->controls, r->count, r->capacity);
    } else if (id == SPA_PARAM_Props && r->props_count < VF_PW_MAX_PROPS && SPA_POD_SIZE(param) <= sizeof r->props[0]) {
        memcpy(r->props[r->props_count++], param, SPA_POD_SIZE(param));
    }
}

static const struct pw_node_events vf_controls_node_events = {
    PW_VERSION_NODE_EVENTS,
    .info = on_controls_info,
    .param = on_controls_param,
};

static void on_controls_proxy_error(void *data, int seq, int res, const char *message) {
    int *error = data;
    (void)seq;
    (void)message;
    if (res < 0) *error = res;
}

static const struct pw_proxy_events vf_controls_proxy_events = {
    PW_VERSION_PROXY_EVENTS,
    .error = on_controls_proxy_error,
};

int vf_pw_node_controls(vf_pw_connection *c, uint32_t id, vf_pw_control *controls, int capacity, int timeout_ms) {
    struct vf_pw_controls_read *r = calloc(1, sizeof(*r));
    if (!r) return -ENOMEM;
    r->controls = controls;
    r->capacity = capacity;
    struct spa_hook listener, proxy_listener;
    spa_zero(listener);
    spa_zero(proxy_listener);
    struct pw_thread_loop *loop = vf_pw_connection_thread_loop(c);
    pw_thread_loop_lock(loop);
    struct pw_node *node = pw_registry_bind(vf_pw_connection_registry(c), id, PW_TYPE_INTERFACE_Node, PW_VERSION_NODE, 0);
    if (!node) {
        int err = -errno;
        pw_thread_loop_unlock(loop);
        free(r);
        return err;
    }
    pw_node_add_listener(node, &listener, &vf_controls_node_events, r);
    pw_proxy_add_listener((struct pw_proxy *)node, &proxy_listener, &vf_controls_proxy_events, &r->error);
    pw_node_enum_params(node, 0, SPA_PARAM_PropInfo, 0, UINT32_MAX, NULL);
    pw_node_enum_params(node, 0, SPA_PARAM_Props, 0, UINT32_MAX, NULL);
    // Twice, as in vf_pw_node_describe: the node's owner answers after our first round trip.
    int res = vf_pw_connection_sync_locked(c, timeout_ms);
    if (res == 0) res = vf_pw_connection_sync_locked(c, timeout_ms);
    spa_hook_remove(&proxy_listener);
    spa_hook_remove(&listener);
    pw_proxy_destroy((struct pw_proxy *)node);
    pw_thread_loop_unlock(loop);
    // A node without PropInfo or Props answers the enumeration with an error (-ENOENT): that is
    // a node without controls, not a failure.
    if (res == 0 && !r->got_info) res = -ENOENT;
    int count = r->count;
    for (int i = 0; i < r->props_count; i++) {
        vf_pw_parse_props((const struct spa_pod *)r->props[i], controls, count);
    }
    free(r);
    return res < 0 ? res : count;
}

// MARK: - Setting a control

int vf_pw_node_set_control(
    vf_pw_connection *c, uint32_t id, const vf_pw_control *control, int32_t value, double float_value,
    int timeout_ms) {
    uint8_t buffer[256];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, sizeof(buffer));
    struct spa_pod_frame f;
    spa_pod_builder_push_object(&b, &f, SPA_TYPE_OBJECT_Props, SPA_PARAM_Props);
    spa_pod_builder_prop(&b, control->id, 0);
    switch (control->kind) {
    case VF_PW_CONTROL_BOOL: spa_pod_builder_bool(&b, value != 0); break;
    case VF_PW_CONTROL_FLOAT: spa_pod_builder_float(&b, (float)float_value); break;
    default: spa_pod_builder_int(&b, value); break;
    }
    const struct spa_pod *param = spa_pod_builder_pop(&b, &f);
    if (param == NULL) return -ENOSPC;

    int error = 0, got_info = 0;
    struct spa_hook listener, proxy_listener;
    spa_zero(listener);
    spa_zero(proxy_listener);
    struct vf_pw_controls_read *r = calloc(1, sizeof(*r));
    if (!r) return -ENOMEM;
    struct pw_thread_loop *loop = vf_pw_connection_thread_loop(c);
    pw_thread_loop_lock(loop);
    struct pw_node *node = pw_registry_bind(vf_pw_connection_registry(c), id, PW_TYPE_INTERFACE_Node, PW_VERSION_NODE, 0);
    if (!node) {
        int err = -errno;
        pw_thread_loop_unlock(loop);
        free(r);
        return err;
    }
    // The node's info tells that the bind reached a live node; the parameters are not read.
    r->capacity = 0;
    pw_node_add_listener(node, &listener, &vf_controls_node_events, r);
    pw_proxy_add_listener((struct pw_proxy *)node, &proxy_listener, &vf_controls_proxy_events, &error);
    pw_node_set_param(node, SPA_PARAM_Props, 0, param);
    int res = vf_pw_connection_sync_locked(c, timeout_ms);
    if (res == 0) res = vf_pw_connection_sync_locked(c, timeout_ms);
    got_info = r->got_info;
    spa_hook_remove(&proxy_listener);
    spa_hook_remove(&listener);
    pw_proxy_destroy((struct pw_proxy *)node);
    pw_thread_loop_unlock(loop);
    free(r);
    if (res < 0) return res;
    if (error < 0) return error;
    return got_info ? 0 : -ENOENT;
}
