// swift-format-ignore-file: AlwaysUseLowerCamelCase
// Core Video's C-style names with "CV" deleted from the functions (CVPixelBufferGetWidth →
// PixelBufferGetWidth) and kept on the constants (kCVPixelFormatType_32BGRA), so ported code
// compiles unchanged. Optionality and the values for non-planar buffers are Core Video's.

/// A four-character code packed big-endian into 32 bits, as Core Video's pixel format types.
public typealias OSType = UInt32

/// A Core Video status code: ``kCVReturnSuccess`` or one of the `kCVReturn…` errors.
public typealias CVReturn = Int32

/// The call succeeded.
public let kCVReturnSuccess: CVReturn = 0
/// An invalid argument was passed (Core Video's `kCVReturnInvalidArgument`).
public let kCVReturnInvalidArgument: CVReturn = -6661

/// The `videoSettings` key whose value is the wanted pixel format (an ``OSType``).
public let kCVPixelBufferPixelFormatTypeKey = "PixelFormatType"
/// The `videoSettings` key for the wanted width in pixels.
public let kCVPixelBufferWidthKey = "Width"
/// The `videoSettings` key for the wanted height in pixels.
public let kCVPixelBufferHeightKey = "Height"

/// `'BGRA'`: 32-bit BGRA (``PixelFormat/bgra``).
public let kCVPixelFormatType_32BGRA: OSType = PixelFormat.bgra.rawValue
/// `'420v'`: NV12, video range (``PixelFormat/nv12VideoRange``).
public let kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange: OSType = PixelFormat.nv12VideoRange.rawValue
/// `'420f'`: NV12, full range (``PixelFormat/nv12FullRange``).
public let kCVPixelFormatType_420YpCbCr8BiPlanarFullRange: OSType = PixelFormat.nv12FullRange.rawValue
/// `'yuvs'`: packed 4:2:2 Y0 Cb Y1 Cr (``PixelFormat/yuyv``).
public let kCVPixelFormatType_422YpCbCr8_yuvs: OSType = PixelFormat.yuyv.rawValue
/// `'y420'`: three-plane 4:2:0 (``PixelFormat/i420``).
public let kCVPixelFormatType_420YpCbCr8Planar: OSType = PixelFormat.i420.rawValue

/// The options of ``PixelBufferLockBaseAddress(_:_:)`` (Core Video's `CVPixelBufferLockFlags`).
public struct PixelBufferLockFlags: OptionSet, Sendable, Hashable {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// The caller will only read the pixels.
    public static let readOnly = PixelBufferLockFlags(rawValue: 1)
}

/// `CVPixelBufferLockBaseAddress(_:_:)`. Viewfinder's pixel memory is always mapped for the CPU,
/// so there is nothing to lock: the call succeeds (``kCVReturnSuccess``) for every buffer.
/// Keep the calls balanced anyway, as on Apple platforms.
@discardableResult
public func PixelBufferLockBaseAddress(_ pixelBuffer: PixelBuffer, _ lockFlags: PixelBufferLockFlags) -> CVReturn {
    kCVReturnSuccess
}

/// `CVPixelBufferUnlockBaseAddress(_:_:)`: the counterpart of ``PixelBufferLockBaseAddress(_:_:)``;
/// always ``kCVReturnSuccess``.
@discardableResult
public func PixelBufferUnlockBaseAddress(_ pixelBuffer: PixelBuffer, _ unlockFlags: PixelBufferLockFlags)
    -> CVReturn
{
    kCVReturnSuccess
}

/// `CVPixelBufferGetWidth(_:)`: the width in pixels.
public func PixelBufferGetWidth(_ pixelBuffer: PixelBuffer) -> Int {
    pixelBuffer.width
}

/// `CVPixelBufferGetHeight(_:)`: the height in pixels.
public func PixelBufferGetHeight(_ pixelBuffer: PixelBuffer) -> Int {
    pixelBuffer.height
}

/// `CVPixelBufferGetBytesPerRow(_:)`: bytes from one row to the next (of plane 0 when planar).
public func PixelBufferGetBytesPerRow(_ pixelBuffer: PixelBuffer) -> Int {
    pixelBuffer.bytesPerRow
}

/// `CVPixelBufferGetBaseAddress(_:)`: the first byte of the image. For a planar buffer Core Video
/// returns a planar descriptor here; Viewfinder returns the first byte of plane 0 (use
/// ``PixelBufferGetBaseAddressOfPlane(_:_:)`` for planar buffers, as on Apple platforms).
public func PixelBufferGetBaseAddress(_ pixelBuffer: PixelBuffer) -> UnsafeMutableRawPointer? {
    pixelBuffer.baseAddress
}

/// `CVPixelBufferGetPixelFormatType(_:)`: the pixel format's four-character code.
public func PixelBufferGetPixelFormatType(_ pixelBuffer: PixelBuffer) -> OSType {
    pixelBuffer.pixelFormat.rawValue
}

/// `CVPixelBufferIsPlanar(_:)`: whether the buffer has more than one plane.
public func PixelBufferIsPlanar(_ pixelBuffer: PixelBuffer) -> Bool {
    pixelBuffer.isPlanar
}

/// `CVPixelBufferGetDataSize(_:)`: the bytes of valid data.
public func PixelBufferGetDataSize(_ pixelBuffer: PixelBuffer) -> Int {
    pixelBuffer.dataSize
}

/// `CVPixelBufferGetPlaneCount(_:)`: the number of planes; 0 for a non-planar buffer (BGRA,
/// YUYV), as in Core Video (``PixelBuffer/planeCount`` counts such a buffer's one plane).
public func PixelBufferGetPlaneCount(_ pixelBuffer: PixelBuffer) -> Int {
    pixelBuffer.isPlanar ? pixelBuffer.planeCount : 0
}

/// `CVPixelBufferGetBaseAddressOfPlane(_:_:)`: the first byte of plane `planeIndex`; `nil` for a
/// non-planar buffer or a plane that does not exist.
public func PixelBufferGetBaseAddressOfPlane(_ pixelBuffer: PixelBuffer, _ planeIndex: Int)
    -> UnsafeMutableRawPointer?
{
    hasPlane(pixelBuffer, planeIndex) ? pixelBuffer.baseAddress(ofPlane: planeIndex) : nil
}

/// `CVPixelBufferGetWidthOfPlane(_:_:)`: samples per row of plane `planeIndex`; 0 for a
/// non-planar buffer or a plane that does not exist.
public func PixelBufferGetWidthOfPlane(_ pixelBuffer: PixelBuffer, _ planeIndex: Int) -> Int {
    hasPlane(pixelBuffer, planeIndex) ? pixelBuffer.width(ofPlane: planeIndex) : 0
}

/// `CVPixelBufferGetHeightOfPlane(_:_:)`: rows of plane `planeIndex`; 0 for a non-planar buffer
/// or a plane that does not exist.
public func PixelBufferGetHeightOfPlane(_ pixelBuffer: PixelBuffer, _ planeIndex: Int) -> Int {
    hasPlane(pixelBuffer, planeIndex) ? pixelBuffer.height(ofPlane: planeIndex) : 0
}

/// `CVPixelBufferGetBytesPerRowOfPlane(_:_:)`: bytes from one row of plane `planeIndex` to the
/// next; 0 for a non-planar buffer or a plane that does not exist.
public func PixelBufferGetBytesPerRowOfPlane(_ pixelBuffer: PixelBuffer, _ planeIndex: Int) -> Int {
    hasPlane(pixelBuffer, planeIndex) ? pixelBuffer.bytesPerRow(ofPlane: planeIndex) : 0
}

private func hasPlane(_ pixelBuffer: PixelBuffer, _ planeIndex: Int) -> Bool {
    pixelBuffer.isPlanar && planeIndex >= 0 && planeIndex < pixelBuffer.planeCount
}
