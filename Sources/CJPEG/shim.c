#include "CJPEG.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

// TJSAMP values (turbojpeg.h), repeated so this target needs only libjpeg's header.
enum { VF_SAMP_422 = 1, VF_SAMP_420 = 2, VF_SAMP_GRAY = 3 };

struct vf_jpeg_error_manager {
    struct jpeg_error_mgr manager;
    jmp_buf jump;
    int warning;
    char message[JMSG_LENGTH_MAX];
};

// libjpeg allocates a frame's working memory (the coefficient buffer, Huffman and IDCT tables) in
// its image pool and frees it when the frame is finished, so every frame would malloc it again.
// The decoder's arena serves the image pool's requests instead, from memory kept from frame to
// frame: the arena is reset when libjpeg frees the image pool, and grows (at that reset, never
// while a frame uses it) when a frame needed more than it had, the overflow having come from
// libjpeg's own allocator meanwhile. Requests libjpeg makes of itself (not through the memory
// manager's methods) and other pools keep libjpeg's allocator.
struct vf_jpeg_arena {
    unsigned char *memory;
    size_t capacity;
    size_t used;
    size_t wanted;
    void *(*alloc_small)(j_common_ptr, int, size_t);
    void *(*alloc_large)(j_common_ptr, int, size_t);
    void (*free_pool)(j_common_ptr, int);
};

struct vf_jpeg_decoder {
    struct jpeg_decompress_struct info;
    struct vf_jpeg_error_manager error;
    struct vf_jpeg_arena arena;
    int created;
    int started;
};

enum { VF_ARENA_ALIGNMENT = 64 };

static void *vf_arena_take(struct vf_jpeg_arena *arena, size_t size) {
    size_t rounded = (size + VF_ARENA_ALIGNMENT - 1) & ~(size_t)(VF_ARENA_ALIGNMENT - 1);
    if (rounded < size) return NULL;
    // Everything the frame asked for, served or not: what the arena grows to.
    arena->wanted += rounded;
    if (arena->used + rounded > arena->capacity) return NULL;
    void *block = arena->memory + arena->used;
    arena->used += rounded;
    return block;
}

static void *vf_arena_alloc_small(j_common_ptr info, int pool, size_t size) {
    struct vf_jpeg_arena *arena = info->client_data;
    void *block = pool == JPOOL_IMAGE ? vf_arena_take(arena, size) : NULL;
    return block ? block : arena->alloc_small(info, pool, size);
}

static void *vf_arena_alloc_large(j_common_ptr info, int pool, size_t size) {
    struct vf_jpeg_arena *arena = info->client_data;
    void *block = pool == JPOOL_IMAGE ? vf_arena_take(arena, size) : NULL;
    return block ? block : arena->alloc_large(info, pool, size);
}

static void vf_arena_free_pool(j_common_ptr info, int pool) {
    struct vf_jpeg_arena *arena = info->client_data;
    if (pool == JPOOL_IMAGE) {
        arena->used = 0;
        if (arena->wanted > arena->capacity) {
            // Room for what the largest frame so far wanted, and a little more.
            size_t capacity = arena->wanted + arena->wanted / 4;
            capacity = (capacity + 4095) & ~(size_t)4095;
            void *memory = NULL;
            if (posix_memalign(&memory, VF_ARENA_ALIGNMENT, capacity) == 0) {
                free(arena->memory);
                arena->memory = memory;
                arena->capacity = capacity;
            }
        }
        arena->wanted = 0;
    }
    arena->free_pool(info, pool);
}

static void vf_arena_release(struct vf_jpeg_arena *arena) {
    free(arena->memory);
    arena->memory = NULL;
    arena->capacity = 0;
    arena->used = 0;
    arena->wanted = 0;
}

static void vf_error_exit(j_common_ptr info) {
    struct vf_jpeg_error_manager *error = (struct vf_jpeg_error_manager *)info->err;
    (*info->err->format_message)(info, error->message);
    longjmp(error->jump, 1);
}

static void vf_emit_message(j_common_ptr info, int level) {
    if (level >= 0) return;  // Trace messages.
    struct vf_jpeg_error_manager *error = (struct vf_jpeg_error_manager *)info->err;
    (*info->err->format_message)(info, error->message);
    error->warning = 1;
    longjmp(error->jump, 1);
}

static void vf_output_message(j_common_ptr info) { (void)info; }

static void vf_setup(vf_jpeg_decoder *decoder) {
    decoder->info.err = jpeg_std_error(&decoder->error.manager);
    decoder->error.manager.error_exit = vf_error_exit;
    decoder->error.manager.emit_message = vf_emit_message;
    decoder->error.manager.output_message = vf_output_message;
    decoder->created = 0;
    decoder->started = 0;
    if (setjmp(decoder->error.jump)) return;
    jpeg_create_decompress(&decoder->info);
    decoder->created = 1;
    // The image pool through the arena (kept across a re-setup after an error: it holds nothing
    // of a finished frame).
    struct jpeg_memory_mgr *manager = decoder->info.mem;
    decoder->arena.used = 0;
    decoder->arena.wanted = 0;
    decoder->arena.alloc_small = manager->alloc_small;
    decoder->arena.alloc_large = manager->alloc_large;
    decoder->arena.free_pool = manager->free_pool;
    manager->alloc_small = vf_arena_alloc_small;
    manager->alloc_large = vf_arena_alloc_large;
    manager->free_pool = vf_arena_free_pool;
    decoder->info.client_data = &decoder->arena;
}

vf_jpeg_decoder *vf_jpeg_create(void) {
    vf_jpeg_decoder *decoder = calloc(1, sizeof(*decoder));
    if (!decoder) return NULL;
    vf_setup(decoder);
    if (!decoder->created) {
        free(decoder);
        return NULL;
    }
    return decoder;
}

void vf_jpeg_destroy(vf_jpeg_decoder *decoder) {
    if (!decoder) return;
    if (decoder->created) jpeg_destroy_decompress(&decoder->info);
    vf_arena_release(&decoder->arena);
    free(decoder);
}

void vf_jpeg_abort(vf_jpeg_decoder *decoder) {
    if (decoder->created) jpeg_destroy_decompress(&decoder->info);
    char message[JMSG_LENGTH_MAX];
    int warning = decoder->error.warning;
    memcpy(message, decoder->error.message, sizeof(message));
    vf_setup(decoder);
    decoder->error.warning = warning;
    memcpy(decoder->error.message, message, sizeof(message));
}

static int vf_fail(vf_jpeg_decoder *decoder) {
    vf_jpeg_abort(decoder);
    return -1;
}

int vf_jpeg_start(vf_jpeg_decoder *decoder, const unsigned char *data, unsigned long size, vf_jpeg_info *out) {
    return vf_jpeg_start_scaled(decoder, data, size, 1, out);
}

int vf_jpeg_start_scaled(
    vf_jpeg_decoder *decoder, const unsigned char *data, unsigned long size, int scale_denom, vf_jpeg_info *out) {
    decoder->error.warning = 0;
    decoder->error.message[0] = 0;
    if (!decoder->created) {
        snprintf(decoder->error.message, sizeof(decoder->error.message), "no libjpeg decompressor");
        return -1;
    }
    if (decoder->started) jpeg_abort_decompress(&decoder->info);
    decoder->started = 0;
    struct jpeg_decompress_struct *info = &decoder->info;
    if (setjmp(decoder->error.jump)) return vf_fail(decoder);
    jpeg_mem_src(info, data, size);
    jpeg_read_header(info, TRUE);
    memset(out, 0, sizeof(*out));
    out->width = (int)info->image_width;
    out->height = (int)info->image_height;
    out->components = info->num_components;
    out->subsampling = -1;
    if (info->jpeg_color_space == JCS_GRAYSCALE && info->num_components == 1) {
        out->subsampling = VF_SAMP_GRAY;
    } else if (info->jpeg_color_space == JCS_YCbCr && info->num_components == 3) {
        jpeg_component_info *c = info->comp_info;
        int h = c[0].h_samp_factor, v = c[0].v_samp_factor;
        int chroma_unit = c[1].h_samp_factor == 1 && c[1].v_samp_factor == 1 && c[2].h_samp_factor == 1
            && c[2].v_samp_factor == 1;
        if (chroma_unit && h == 2 && v == 1) out->subsampling = VF_SAMP_422;
        else if (chroma_unit && h == 2 && v == 2) out->subsampling = VF_SAMP_420;
    } else {
        snprintf(decoder->error.message, sizeof(decoder->error.message),
            "the frame is neither Y'CbCr nor greyscale (libjpeg colour space %d, %d components)",
            (int)info->jpeg_color_space, info->num_components);
        return vf_fail(decoder);
    }
    if (out->subsampling < 0) {
        jpeg_abort_decompress(info);
        return 0;
    }
    info->raw_data_out = TRUE;
    info->dct_method = JDCT_ISLOW;
    info->do_fancy_upsampling = FALSE;
    info->scale_num = 1;
    info->scale_denom = (unsigned int)(scale_denom > 0 ? scale_denom : 1);
    jpeg_calc_output_dimensions(info);
    int scaled = info->min_DCT_scaled_size;
    if (scale_denom > 1) {
        int uniform = 1;
        for (int component = 0; component < info->num_components; component++) {
            if (info->comp_info[component].DCT_scaled_size != scaled) uniform = 0;
        }
        if (!uniform || (info->num_components == 3 && (info->max_v_samp_factor * scaled) % 2 != 0)) {
            out->subsampling = -1;
            jpeg_abort_decompress(info);
            return 0;
        }
    }
    jpeg_start_decompress(info);
    decoder->started = 1;
    jpeg_component_info *c = info->comp_info;
    out->output_width = (int)info->output_width;
    out->output_height = (int)info->output_height;
    out->luma_rows = info->max_v_samp_factor * scaled;
    out->luma_row_bytes = (int)c[0].width_in_blocks * c[0].DCT_scaled_size;
    if (info->num_components == 3) {
        out->chroma_rows = c[1].v_samp_factor * c[1].DCT_scaled_size;
        out->chroma_row_bytes = (int)c[1].width_in_blocks * c[1].DCT_scaled_size;
        out->chroma_width = (int)c[1].downsampled_width;
    }
    return 0;
}

int vf_jpeg_read_rows(vf_jpeg_decoder *decoder, unsigned char *y, int y_stride, unsigned char *cb, int cb_stride,
    unsigned char *cr, int cr_stride) {
    struct jpeg_decompress_struct *info = &decoder->info;
    if (!decoder->started || info->output_scanline >= info->output_height) {
        snprintf(decoder->error.message, sizeof(decoder->error.message), "no rows left to read");
        return -1;
    }
    JSAMPROW rows[3][2 * DCTSIZE];
    JSAMPARRAY planes[3] = {rows[0], rows[1], rows[2]};
    unsigned char *bases[3] = {y, cb, cr};
    int strides[3] = {y_stride, cb_stride, cr_stride};
    for (int component = 0; component < info->num_components; component++) {
        int count = info->comp_info[component].v_samp_factor * info->comp_info[component].DCT_scaled_size;
        for (int row = 0; row < count; row++) rows[component][row] = bases[component] + (size_t)row * strides[component];
    }
    JDIMENSION first = info->output_scanline;
    if (setjmp(decoder->error.jump)) return vf_fail(decoder);
    JDIMENSION lines =
        jpeg_read_raw_data(info, planes, (JDIMENSION)(info->max_v_samp_factor * info->min_DCT_scaled_size));
    if (lines == 0) {
        snprintf(decoder->error.message, sizeof(decoder->error.message), "libjpeg returned no rows (data cut short)");
        return vf_fail(decoder);
    }
    JDIMENSION left = info->output_height - first;
    return (int)(lines < left ? lines : left);
}

int vf_jpeg_finish(vf_jpeg_decoder *decoder) {
    if (!decoder->started) return -1;
    if (setjmp(decoder->error.jump)) return vf_fail(decoder);
    jpeg_finish_decompress(&decoder->info);
    decoder->started = 0;
    return 0;
}

const char *vf_jpeg_error(const vf_jpeg_decoder *decoder) { return decoder->error.message; }

int vf_jpeg_error_is_warning(const vf_jpeg_decoder *decoder) { return decoder->error.warning; }
