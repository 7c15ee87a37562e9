#ifndef VIEWFINDER_CVIEWFINDERHOOKS_H
#define VIEWFINDER_CVIEWFINDERHOOKS_H

/// Set at load time by the umbrella `Viewfinder` module (a constructor in CViewfinderUmbrella) to
/// its function that hands the core the built-in device providers; NULL when only the core and
/// the modules an app chose are linked. The core calls it once, before its device registry is
/// first used (vf_run_load_hook).
extern void (*vf_load_hook)(void);

/// Calls vf_load_hook once in the process, if it is set.
void vf_run_load_hook(void);

#endif
