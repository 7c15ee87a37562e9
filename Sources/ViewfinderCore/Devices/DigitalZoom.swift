import CYUV
import Synchronization

/// Digital zoom, as AVFoundation zooms a camera past its optics: the centre `1/factor` of each
/// frame, scaled back to the frame's size (libyuv's bilinear scalers, reading the centre
/// rectangle in place), before any output sees the frame. ``SharedDeviceStream`` runs it once per
/// device frame, so the video data, preview, photo and movie outputs of every session on the
/// device get the same zoomed frame.
///
/// It serves cameras without an optical zoom control (the virtual camera, most webcams); a
/// camera with one zooms with it (``CaptureDevice/videoZoomFactor``). Frames in raw formats
/// (``zoomablePixelFormats``) are zoomed; Motion-JPEG formats report a
/// ``CaptureDevice/Format/videoMaxZoomFactor`` of 1 and pass as the camera sends them. At factor
/// 1 nothing runs: the frame goes on untouched, zero-copy, with no allocation.
///
/// Thread safety: one device stream's capture thread calls ``zoom(_:by:)``; the pool is under a
/// mutex so a later stream of another size cannot race it.
package final class DigitalZoom: Sendable {
    /// The largest digital factor: 16, AVFoundation's usual `videoMaxZoomFactor` for a camera
    /// whose zoom is digital only, and never so far that the centre rectangle is shorter than
    /// ``minimumCropSide`` pixels.
    package static let maximumFactor: Double = 16
    /// The shortest side the centre rectangle may have.
    package static let minimumCropSide = 16
    /// The formats digital zoom scales: BGRA, NV12 (both ranges), I420 and YUYV.
    package static let zoomablePixelFormats: [PixelFormat] = [.bgra, .nv12VideoRange, .nv12FullRange, .i420, .yuyv]
    /// Zoomed frames a device's outputs may hold at once before a frame is dropped (the memory
    /// of a slot is allocated when first needed).
    package static let capacity = 24

    /// The largest digital zoom factor for `format`: 1 for audio and compressed formats, else
    /// ``maximumFactor``, less for frames so small that its centre rectangle would be shorter than
    /// ``minimumCropSide``.
    package static func maximumFactor(for format: CaptureDevice.Format) -> Double {
        guard format.mediaType == .video, zoomablePixelFormats.contains(format.pixelFormat) else { return 1 }
        return maximumFactor(width: format.dimensions.pixelWidth, height: format.dimensions.pixelHeight)
    }

    /// The largest digital zoom factor for frames of `width` × `height`.
    package static func maximumFactor(width: Int, height: Int) -> Double {
        max(1, min(maximumFactor, Double(min(width, height)) / Double(minimumCropSide)))
    }

    /// The centre rectangle `factor` keeps of a `width` × `height` frame of `format`: sides
    /// rounded to the nearest pixel, on even coordinates where chroma is subsampled.
    package static func cropRect(factor: Double, width: Int, height: Int, format: PixelFormat) -> (
        x: Int, y: Int, width: Int, height: Int
    ) {
        let evenX = format != .bgra
        let evenY = format != .bgra && format != .yuyv
        func side(_ length: Int, even: Bool) -> Int {
            let exact = Int((Double(length) / factor).rounded())
            return even ? min(length, max(2, (exact + 1) & ~1)) : min(length, max(1, exact))
        }
        let w = side(width, even: evenX)
        let h = side(height, even: evenY)
        var x = (width - w) / 2
        var y = (height - h) / 2
        if evenX { x &= ~1 }
        if evenY { y &= ~1 }
        return (x, y, w, h)
    }

    private let pool = Mutex<PixelBufferPool?>(nil)

    package init() {}

    /// `sample` zoomed by `factor` (clamped to what its size allows): the sample itself at 1 or
    /// for a format digital zoom does not scale, `nil` when every zoomed buffer is held
    /// downstream (the frame is dropped, as a camera drops one when its ring is full).
    package func zoom(_ sample: CapturedSample, by factor: Double) -> CapturedSample? {
        guard let source = sample.image, Self.zoomablePixelFormats.contains(source.pixelFormat) else { return sample }
        let width = source.width
        let height = source.height
        let factor = min(factor, Self.maximumFactor(width: width, height: height))
        guard factor > 1 else { return sample }
        let rect = Self.cropRect(factor: factor, width: width, height: height, format: source.pixelFormat)
        if rect.width == width && rect.height == height { return sample }
        guard let destination = buffer(like: source) else { return nil }
        let filter = kFilterBilinear
        func at(_ plane: Int, x: Int, y: Int, bytes: Int) -> UnsafeMutablePointer<UInt8> {
            BuiltIn.pixels(source, plane) + y * source.bytesPerRow(ofPlane: plane) + x * bytes
        }
        let (sw, sh, dw, dh) = (Int32(rect.width), Int32(rect.height), Int32(width), Int32(height))
        let status: Int32
        switch source.pixelFormat {
        case .bgra:
            status = ARGBScale(
                at(0, x: rect.x, y: rect.y, bytes: 4), BuiltIn.stride(source, 0), sw, sh,
                BuiltIn.pixels(destination, 0), BuiltIn.stride(destination, 0), dw, dh, filter)
        case .yuyv:
            // Each Y0 U Y1 V pair scales as one four-channel pixel: chroma stays with its luma.
            status = ARGBScale(
                at(0, x: rect.x, y: rect.y, bytes: 2), BuiltIn.stride(source, 0), sw / 2, sh,
                BuiltIn.pixels(destination, 0), BuiltIn.stride(destination, 0), dw / 2, dh, filter)
        case .i420:
            status = I420Scale(
                at(0, x: rect.x, y: rect.y, bytes: 1), BuiltIn.stride(source, 0),
                at(1, x: rect.x / 2, y: rect.y / 2, bytes: 1), BuiltIn.stride(source, 1),
                at(2, x: rect.x / 2, y: rect.y / 2, bytes: 1), BuiltIn.stride(source, 2), sw, sh,
                BuiltIn.pixels(destination, 0), BuiltIn.stride(destination, 0),
                BuiltIn.pixels(destination, 1), BuiltIn.stride(destination, 1),
                BuiltIn.pixels(destination, 2), BuiltIn.stride(destination, 2), dw, dh, filter)
        default:  // NV12, either range
            status = NV12Scale(
                at(0, x: rect.x, y: rect.y, bytes: 1), BuiltIn.stride(source, 0),
                at(1, x: rect.x, y: rect.y / 2, bytes: 1), BuiltIn.stride(source, 1), sw, sh,
                BuiltIn.pixels(destination, 0), BuiltIn.stride(destination, 0),
                BuiltIn.pixels(destination, 1), BuiltIn.stride(destination, 1), dw, dh, filter)
        }
        guard status == 0 else { return nil }
        var zoomed = sample
        zoomed.payload = .image(destination)
        return zoomed
    }

    /// A buffer of `source`'s format and size from the pool, remade when the stream's format
    /// changed.
    private func buffer(like source: PixelBuffer) -> PixelBuffer? {
        let pool = self.pool.withLock { pool -> PixelBufferPool? in
            if let current = pool, current.pixelFormat == source.pixelFormat, current.width == source.width,
                current.height == source.height
            {
                return current
            }
            pool = try? PixelBufferPool(
                pixelFormat: source.pixelFormat, width: source.width, height: source.height, capacity: Self.capacity)
            return pool
        }
        return pool?.makePixelBuffer()
    }
}
