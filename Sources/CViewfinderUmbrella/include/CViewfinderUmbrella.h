#ifndef VIEWFINDER_CVIEWFINDERUMBRELLA_H
#define VIEWFINDER_CVIEWFINDERUMBRELLA_H

/// Defined in Swift by the umbrella `Viewfinder` module (@_cdecl): registers the built-in
/// backends with the core. Only its address is taken at load time; the core calls it.
void viewfinder_umbrella_register_built_in_backends(void);

#endif
