// libdbus's header, found through pkg-config (dbus-1): its arch-dependent header lives under
// /usr/lib/<triple>/dbus-1.0/include, which only pkg-config knows. Only the CDBus shim uses it.
#include <dbus/dbus.h>
