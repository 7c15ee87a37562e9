// Linking the umbrella `Viewfinder` module registers the built-in backends, as `import Viewfinder`
// code expects, without a call: at load time this constructor points the core's hook at the
// umbrella's registration. It runs no Swift (the Swift runtime may not have registered this
// image's metadata yet); the core calls the hook before its device registry is first used.
#include "CViewfinderUmbrella.h"

#include <CViewfinderHooks.h>

__attribute__((constructor)) static void viewfinder_umbrella_load(void) {
    vf_load_hook = viewfinder_umbrella_register_built_in_backends;
}
