extension PlaneLayout {
    /// The layout of a driver's buffer: planes back to back with no padding between them, as
    /// V4L2's single-planar formats lay them out, rows `bytesPerRow` apart in the first plane.
    /// Chroma planes take their stride from it (half for I420's Cb and Cr, the same for NV12's
    /// interleaved CbCr).
    package init(pixelFormat: PixelFormat, width: Int, height: Int, bytesPerRow: Int) {
        self.init(
            pixelFormat: pixelFormat, width: width, height: height, firstPlaneBytesPerRow: bytesPerRow,
            planeAlignment: 1)
    }
}
