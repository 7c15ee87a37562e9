#ifndef VIEWFINDER_CPIPEWIRE_INTERNAL_H
#define VIEWFINDER_CPIPEWIRE_INTERNAL_H
// What the shim's C files share and Swift never sees.
#include <pipewire/pipewire.h>

#include "CPipeWire.h"

/// The connection's loop and core (shim.c owns the connection).
struct pw_thread_loop *vf_pw_connection_thread_loop(vf_pw_connection *connection);
struct pw_core *vf_pw_connection_core(vf_pw_connection *connection);
struct pw_registry *vf_pw_connection_registry(vf_pw_connection *connection);
/// With the loop locked: a round trip to the daemon (0 or a negative errno).
int vf_pw_connection_sync_locked(vf_pw_connection *connection, int timeout_ms);

/// The controls of a PropInfo param (appended to `controls`; returns the new count) and the values
/// of a Props param (written into the matching `controls`), for controls.c and the producer.
int vf_pw_parse_prop_info(const struct spa_pod *param, vf_pw_control *controls, int count, int capacity);
void vf_pw_parse_props(const struct spa_pod *param, vf_pw_control *controls, int count);

/// A VF_PW_FORMAT_* from an SPA_VIDEO_FORMAT_* (VF_PW_FORMAT_UNKNOWN for others), and back.
uint32_t vf_pw_from_spa_format(uint32_t spa_format);
uint32_t vf_pw_to_spa_format(uint32_t format);

#endif
