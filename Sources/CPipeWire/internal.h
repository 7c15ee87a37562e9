#ifndef VIEWFINDER_CPIPEWIRE_INTERNAL_H
#define VIEWFINDER_CPIPEWIRE_INTERNAL_H
// What the shim's C files share and Swift never sees.
#include <pipewire/pipewire.h>

#include "CPipeWire.h"

/// The connection's loop and core (shim.c owns the connection).
struct pw_thread_loop *vf_pw_connection_thread_loop(vf_pw_connection *connection);
struct pw_core *vf_pw_connection_core(vf_pw_connection *connection);

/// A VF_PW_FORMAT_* from an SPA_VIDEO_FORMAT_* (VF_PW_FORMAT_UNKNOWN for others), and back.
uint32_t vf_pw_from_spa_format(uint32_t spa_format);
uint32_t vf_pw_to_spa_format(uint32_t format);

#endif
