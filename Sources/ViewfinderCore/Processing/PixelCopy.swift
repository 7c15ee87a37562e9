import CYUV

/// Copies images plane by plane (libyuv's `CopyPlane`, which handles differing strides).
package enum PixelCopy {
    /// Copies `source` into `destination`, which must have the same format and size.
    package static func copy(_ source: PixelBuffer, into destination: PixelBuffer) {
        precondition(
            source.pixelFormat == destination.pixelFormat && source.width == destination.width
                && source.height == destination.height, "copy between different formats or sizes")
        for plane in 0..<source.planeCount {
            let geometry = source.pixelFormat.planeGeometry(plane, width: source.width, height: source.height)
            CopyPlane(
                source.baseAddress(ofPlane: plane).assumingMemoryBound(to: UInt8.self),
                Int32(source.bytesPerRow(ofPlane: plane)),
                destination.baseAddress(ofPlane: plane).assumingMemoryBound(to: UInt8.self),
                Int32(destination.bytesPerRow(ofPlane: plane)),
                Int32(geometry.bytesPerRow), Int32(geometry.height))
        }
    }
}
