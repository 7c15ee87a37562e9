import CSwscale
import ViewfinderCore

/// Turns full-range I420 (what libv4lconvert decodes from a camera's JPEG frames: JFIF is full
/// range) into the video-range I420 that ``PixelFormat/i420`` means, with libswscale, so emulated
/// I420 from an MJPEG camera carries the same colours as I420 converted from a YUYV camera.
///
/// Thread safety: not thread-safe; one stream's capture thread owns it.
// unchecked: handed to one capture thread, used only there.
package final class V4L2RangeCompressor: @unchecked Sendable {
    private let context: OpaquePointer

    /// A compressor for `width`x`height` frames, or `nil` if libswscale refuses.
    package init?(width: Int, height: Int) {
        // YUVJ420P (full-range I420) as the source: between two YUV420P formats libswscale takes
        // its plain-copy shortcut whatever ranges sws_setColorspaceDetails gives.
        guard
            let context = sws_getContext(
                Int32(width), Int32(height), AV_PIX_FMT_YUVJ420P, Int32(width), Int32(height), AV_PIX_FMT_YUV420P,
                SWS_POINT, nil, nil, nil)
        else { return nil }
        let table = vf_sws_bt601_coefficients()
        sws_setColorspaceDetails(context, table, 1, table, 0, 0, 1 << 16, 1 << 16)
        self.context = context
    }

    deinit { sws_freeContext(context) }

    /// Writes `source` (full range) into `destination` (video range); both I420 of this size.
    /// Returns false if libswscale failed.
    package func compress(_ source: PixelBuffer, into destination: PixelBuffer) -> Bool {
        var sourcePlanes: [UnsafePointer<UInt8>?] = [nil, nil, nil, nil]
        var sourceStrides: [Int32] = [0, 0, 0, 0]
        var destinationPlanes: [UnsafeMutablePointer<UInt8>?] = [nil, nil, nil, nil]
        var destinationStrides: [Int32] = [0, 0, 0, 0]
        for plane in 0..<min(3, source.planeCount, destination.planeCount) {
            sourcePlanes[plane] = UnsafePointer(source.baseAddress(ofPlane: plane).assumingMemoryBound(to: UInt8.self))
            sourceStrides[plane] = Int32(source.bytesPerRow(ofPlane: plane))
            destinationPlanes[plane] = destination.baseAddress(ofPlane: plane).assumingMemoryBound(to: UInt8.self)
            destinationStrides[plane] = Int32(destination.bytesPerRow(ofPlane: plane))
        }
        let rows = sws_scale(
            context, sourcePlanes, sourceStrides, 0, Int32(source.height), destinationPlanes, destinationStrides)
        return rows == Int32(destination.height)
    }
}
