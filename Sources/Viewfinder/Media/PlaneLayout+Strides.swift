extension PlaneLayout {
    /// The layout of a driver's buffer: planes back to back with no padding between them, as
    /// V4L2's single-planar formats lay them out, rows `bytesPerRow` apart in the first plane.
    /// Chroma planes take their stride from it (half for I420's Cb and Cr, the same for NV12's
    /// interleaved CbCr).
    init(pixelFormat: PixelFormat, width: Int, height: Int, bytesPerRow: Int) {
        var offset = 0
        var planes: [Plane] = []
        for index in 0..<pixelFormat.planeCount {
            var geometry = pixelFormat.planeGeometry(index, width: width, height: height)
            let packed = pixelFormat.planeGeometry(0, width: width, height: height).bytesPerRow
            if bytesPerRow > packed {
                geometry.bytesPerRow = pixelFormat == .i420 && index > 0 ? bytesPerRow / 2 : bytesPerRow
            }
            planes.append(Plane(offset: offset, geometry: geometry))
            offset += geometry.bytesPerRow * geometry.height
        }
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
        self.planes = planes
        self.totalBytes = offset
    }
}
