// PipeWire's headers, found through pkg-config (libpipewire-0.3, which requires libspa-0.2):
// they live under <prefix>/include/pipewire-0.3 and spa-0.2, which only pkg-config knows, so any
// prefix (/usr, /usr/local, a Nix store, a cross-build sysroot) works. Only the CPipeWire shim
// uses them.
#include <pipewire/pipewire.h>
