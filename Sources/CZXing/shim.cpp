// The C face of ZXing-cpp 1.4 (see include/CZXing.h). Exceptions never cross into Swift: they
// become a -1 return with a message.
#define ZX_USE_UTF8 1
#include "CZXing.h"

#include <ZXing/ReadBarcode.h>

#include <cstring>
#include <exception>

extern "C" int vf_zx_read(
    const uint8_t *data, int width, int height, int row_stride, int pixel_stride, int layout, int formats,
    int try_harder, vf_zx_found found, void *context, char *error, size_t error_size) {
    try {
        ZXing::ImageView image(
            data, width, height, layout == VF_ZX_BGRX ? ZXing::ImageFormat::BGRX : ZXing::ImageFormat::Lum,
            row_stride, pixel_stride);
        ZXing::DecodeHints hints;
        hints.setFormats(ZXing::BarcodeFormats(static_cast<ZXing::BarcodeFormat>(formats)));
        hints.setTryHarder(try_harder != 0);
        hints.setTryRotate(try_harder != 0);
        hints.setTryDownscale(true);
        hints.setReturnCodabarStartEnd(false);
        auto results = ZXing::ReadBarcodes(image, hints);
        int count = 0;
        for (const auto &result : results) {
            if (!result.isValid()) continue;
            const auto text = result.text();
            const auto &position = result.position();
            const int corners[8] = {
                position.topLeft().x,     position.topLeft().y,     position.topRight().x,   position.topRight().y,
                position.bottomRight().x, position.bottomRight().y, position.bottomLeft().x, position.bottomLeft().y,
            };
            found(context, static_cast<int>(result.format()), text.data(), text.size(), corners);
            count += 1;
        }
        return count;
    } catch (const std::exception &exception) {
        if (error && error_size > 0) {
            std::strncpy(error, exception.what(), error_size - 1);
            error[error_size - 1] = '\0';
        }
        return -1;
    } catch (...) {
        if (error && error_size > 0) {
            std::strncpy(error, "ZXing failed", error_size - 1);
            error[error_size - 1] = '\0';
        }
        return -1;
    }
}
