#ifndef VIEWFINDER_CPIPEWIRE_INTERNAL_H
#define VIEWFINDER_CPIPEWIRE_INTERNAL_H
// What the shim's C files share and Swift never sees.
#include <pipewire/pipewire.h>

#include "CPipeWire.h"

/// The connection's loop and core (shim.c owns the connection).
struct pw_thread_loop *vf_pw_connection_thread_loop(vf_pw_connection *connection);
struct pw_core *vf_pw_connection_core(vf_pw_connection *connection);

#endif
