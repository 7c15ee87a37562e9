#ifndef VIEWFINDER_CSDL2_H
#define VIEWFINDER_CSDL2_H
// SDL2 (libsdl2 from Debian) for the preview window: SDL's window-position and event macros are
// function-like and its event type is a union, so Swift reaches it through a few plain functions.
#include <stdint.h>

typedef struct SDL_Window SDL_Window;
typedef struct SDL_Renderer SDL_Renderer;
typedef struct SDL_Texture SDL_Texture;

/// What the preview window's thread needs to know of an event.
typedef enum vf_sdl_event_kind {
    VF_SDL_EVENT_NONE = 0,
    VF_SDL_EVENT_QUIT = 1,
    /// A window's size changed (width, height: its new size in pixels).
    VF_SDL_EVENT_RESIZED = 2,
    /// An event pushed with vf_sdl_push_wake.
    VF_SDL_EVENT_WAKE = 3,
    /// A window was exposed and must be drawn again.
    VF_SDL_EVENT_EXPOSED = 4,
    /// A window's close button.
    VF_SDL_EVENT_CLOSE = 5,
    /// A mouse button went down at (x, y) in the window.
    VF_SDL_EVENT_CLICK = 6,
    VF_SDL_EVENT_OTHER = 7,
} vf_sdl_event_kind;

typedef struct vf_sdl_event {
    vf_sdl_event_kind kind;
    uint32_t window_id;
    int x;
    int y;
} vf_sdl_event;

/// Initialises SDL's video subsystem (no signal handlers of SDL's own). 0, or -1 (vf_sdl_error).
int vf_sdl_init(void);
/// Shuts SDL down.
void vf_sdl_quit(void);
/// SDL's last error message.
const char *vf_sdl_error(void);
/// The video driver in use ("x11", "wayland" ...), or NULL.
const char *vf_sdl_video_driver(void);
/// Registers the event type vf_sdl_push_wake pushes; 0 on failure.
uint32_t vf_sdl_register_wake(void);
/// Pushes a wake event (thread-safe). 0, or -1.
int vf_sdl_push_wake(uint32_t type);
/// Waits for the next event, at most timeout_ms (-1: forever). 1 with *event filled, 0 on timeout.
int vf_sdl_wait_event(int timeout_ms, uint32_t wake_type, vf_sdl_event *event);

/// A resizable window of width x height, placed by the window system; NULL on failure.
SDL_Window *vf_sdl_create_window(const char *title, int width, int height);
uint32_t vf_sdl_window_id(SDL_Window *window);
void vf_sdl_window_size(SDL_Window *window, int *width, int *height);
void vf_sdl_set_window_size(SDL_Window *window, int width, int height);
void vf_sdl_destroy_window(SDL_Window *window);

/// A renderer for window (accelerated if available, else software); NULL on failure.
SDL_Renderer *vf_sdl_create_renderer(SDL_Window *window);
void vf_sdl_destroy_renderer(SDL_Renderer *renderer);
/// Draws a BGRA frame stretched over the whole window and presents it. `*texture` (with its size in
/// *texture_width, *texture_height) is created or replaced when the frame's size changes.
/// 0, or -1 (vf_sdl_error).
int vf_sdl_present_bgra(SDL_Renderer *renderer, SDL_Texture **texture, int *texture_width, int *texture_height,
    const void *pixels, int bytes_per_row, int width, int height);
/// Clears the window to black and presents it (before the first frame).
void vf_sdl_present_black(SDL_Renderer *renderer);
void vf_sdl_destroy_texture(SDL_Texture *texture);

#endif
