#define SDL_MAIN_HANDLED
#include <SDL2/SDL.h>

#include "CSDL2.h"

int vf_sdl_init(void) {
    SDL_SetMainReady();
    SDL_SetHint(SDL_HINT_NO_SIGNAL_HANDLERS, "1");
    // A desktop window or nothing: without this SDL falls back to KMS/DRM or an off-screen
    // driver, which opens no window a person sees. SDL_VIDEODRIVER still overrides it.
    if (SDL_getenv("SDL_VIDEODRIVER") == NULL) SDL_SetHint(SDL_HINT_VIDEODRIVER, "x11,wayland");
    return SDL_InitSubSystem(SDL_INIT_VIDEO) == 0 ? 0 : -1;
}

void vf_sdl_quit(void) { SDL_Quit(); }

const char *vf_sdl_error(void) { return SDL_GetError(); }

const char *vf_sdl_video_driver(void) { return SDL_GetCurrentVideoDriver(); }

uint32_t vf_sdl_register_wake(void) {
    Uint32 type = SDL_RegisterEvents(1);
    return type == (Uint32)-1 ? 0 : type;
}

int vf_sdl_push_wake(uint32_t type) {
    SDL_Event event;
    SDL_zero(event);
    event.type = type;
    return SDL_PushEvent(&event) == 1 ? 0 : -1;
}

int vf_sdl_wait_event(int timeout_ms, uint32_t wake_type, vf_sdl_event *out) {
    SDL_Event event;
    if (!SDL_WaitEventTimeout(&event, timeout_ms)) return 0;
    out->kind = VF_SDL_EVENT_OTHER;
    out->window_id = 0;
    out->x = 0;
    out->y = 0;
    if (event.type == wake_type) {
        out->kind = VF_SDL_EVENT_WAKE;
    } else if (event.type == SDL_QUIT) {
        out->kind = VF_SDL_EVENT_QUIT;
    } else if (event.type == SDL_WINDOWEVENT) {
        out->window_id = event.window.windowID;
        switch (event.window.event) {
        case SDL_WINDOWEVENT_SIZE_CHANGED:
        case SDL_WINDOWEVENT_RESIZED:
            out->kind = VF_SDL_EVENT_RESIZED;
            out->x = event.window.data1;
            out->y = event.window.data2;
            break;
        case SDL_WINDOWEVENT_EXPOSED:
        case SDL_WINDOWEVENT_SHOWN:
            out->kind = VF_SDL_EVENT_EXPOSED;
            break;
        case SDL_WINDOWEVENT_CLOSE:
            out->kind = VF_SDL_EVENT_CLOSE;
            break;
        default:
            break;
        }
    } else if (event.type == SDL_MOUSEBUTTONDOWN) {
        out->kind = VF_SDL_EVENT_CLICK;
        out->window_id = event.button.windowID;
        out->x = event.button.x;
        out->y = event.button.y;
    }
    return 1;
}

SDL_Window *vf_sdl_create_window(const char *title, int width, int height) {
    return SDL_CreateWindow(title, SDL_WINDOWPOS_UNDEFINED, SDL_WINDOWPOS_UNDEFINED, width, height,
        SDL_WINDOW_RESIZABLE | SDL_WINDOW_SHOWN);
}

uint32_t vf_sdl_window_id(SDL_Window *window) { return SDL_GetWindowID(window); }

void vf_sdl_window_size(SDL_Window *window, int *width, int *height) { SDL_GetWindowSize(window, width, height); }

void vf_sdl_set_window_size(SDL_Window *window, int width, int height) { SDL_SetWindowSize(window, width, height); }

void vf_sdl_destroy_window(SDL_Window *window) { SDL_DestroyWindow(window); }

SDL_Renderer *vf_sdl_create_renderer(SDL_Window *window) {
    SDL_Renderer *renderer = SDL_CreateRenderer(window, -1, 0);
    if (renderer == NULL) renderer = SDL_CreateRenderer(window, -1, SDL_RENDERER_SOFTWARE);
    return renderer;
}

void vf_sdl_destroy_renderer(SDL_Renderer *renderer) { SDL_DestroyRenderer(renderer); }

int vf_sdl_present_bgra(SDL_Renderer *renderer, SDL_Texture **texture, int *texture_width, int *texture_height,
    const void *pixels, int bytes_per_row, int width, int height) {
    if (*texture == NULL || *texture_width != width || *texture_height != height) {
        if (*texture != NULL) SDL_DestroyTexture(*texture);
        // SDL's ARGB8888 is a 32-bit word: on a little-endian machine its bytes are B, G, R, A.
        *texture = SDL_CreateTexture(renderer, SDL_PIXELFORMAT_ARGB8888, SDL_TEXTUREACCESS_STREAMING, width, height);
        if (*texture == NULL) return -1;
        *texture_width = width;
        *texture_height = height;
    }
    if (SDL_UpdateTexture(*texture, NULL, pixels, bytes_per_row) != 0) return -1;
    SDL_SetRenderDrawColor(renderer, 0, 0, 0, 255);
    SDL_RenderClear(renderer);
    if (SDL_RenderCopy(renderer, *texture, NULL, NULL) != 0) return -1;
    SDL_RenderPresent(renderer);
    return 0;
}

void vf_sdl_present_black(SDL_Renderer *renderer) {
    SDL_SetRenderDrawColor(renderer, 0, 0, 0, 255);
    SDL_RenderClear(renderer);
    SDL_RenderPresent(renderer);
}

void vf_sdl_destroy_texture(SDL_Texture *texture) { SDL_DestroyTexture(texture); }
