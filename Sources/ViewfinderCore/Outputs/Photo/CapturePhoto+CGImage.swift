import Foundation

extension CapturePhoto {
    /// The photo decoded into a ``CGImage`` (8-bit BGRA; see ``CGImage`` for the layout), as
    /// `AVCapturePhoto.cgImageRepresentation()`: the JPEG file decoded, or an uncompressed photo's
    /// ``pixelBuffer`` converted. Each call decodes afresh (a whole photo's worth of memory: keep
    /// the image rather than calling again). Like the file, the pixels are not turned: the EXIF
    /// orientation says how to show them. `nil` when the photo has no image (a failed request) or
    /// its data does not decode. A deferred proxy is processed first
    /// (``CaptureDeferredPhotoProxy/fileDataRepresentation()``).
    public func cgImageRepresentation() -> CGImage? {
        if let pixelBuffer { return Self.bgraImage(of: pixelBuffer) }
        guard let file = fileDataRepresentation() else { return nil }
        return Self.decodedImage(jpeg: file)
    }

    /// The preview image (``CapturePhotoSettings/previewPhotoFormat``) as a ``CGImage``, as
    /// `AVCapturePhoto.previewCGImageRepresentation()`; `nil` when no preview was asked for.
    public func previewCGImageRepresentation() -> CGImage? {
        preview.flatMap { CGImage(bgra: $0) }
    }

    /// `image` as BGRA (copied, or converted from its format).
    private static func bgraImage(of image: PixelBuffer) -> CGImage? {
        if image.pixelFormat == .bgra { return CGImage(bgra: image) }
        var conversions = FrameConversions(limit: 1)
        guard
            let pool = try? PixelBufferPool(pixelFormat: .bgra, width: image.width, height: image.height, capacity: 1),
            let target = pool.makePixelBuffer(),
            (try? conversions.conversion(of: image, to: .bgra).convert(image, into: target)) != nil
        else { return nil }
        return CGImage(bgra: target)
    }

    /// A JPEG file decoded into BGRA, or `nil` when it does not decode.
    package static func decodedImage(jpeg file: Data) -> CGImage? {
        let bytes = [UInt8](file)
        guard let (width, height) = bytes.withUnsafeBytes({ JPEGFrame.dimensions($0) }),
            let pool = try? PixelBufferPool(pixelFormat: .bgra, width: width, height: height, capacity: 1),
            let target = pool.makePixelBuffer(),
            let decoder = try? JPEGDecoder(width: width, height: height, pixelFormat: .bgra),
            (try? decoder.decode(bytes, into: target)) != nil
        else { return nil }
        return CGImage(bgra: target)
    }
}

extension JPEGFrame {
    /// The image size its start-of-frame segment gives, or `nil` when there is none before the scan.
    package static func dimensions(_ bytes: UnsafeRawBufferPointer) -> (width: Int, height: Int)? {
        guard let layout = layout(bytes) else { return nil }
        // SOF0…SOF15 but DHT (C4), JPG (C8) and DAC (CC): precision, height, width.
        let frameMarkers: Set<UInt8> = [0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF]
        guard let sof = layout.segments.first(where: { frameMarkers.contains($0.marker) }), sof.payloadCount >= 5
        else { return nil }
        let p = sof.payloadOffset
        let height = Int(bytes[p + 1]) << 8 | Int(bytes[p + 2])
        let width = Int(bytes[p + 3]) << 8 | Int(bytes[p + 4])
        guard width > 0, height > 0 else { return nil }
        return (width, height)
    }
}
