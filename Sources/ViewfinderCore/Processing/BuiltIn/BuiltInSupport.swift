/// Small helpers the built-in processors share: typed plane access for libyuv, format checks,
/// scratch memory, and errors that say what to do.
package enum BuiltIn {
    /// The two NV12 flavours (the same memory layout; only the value range differs).
    package static let nv12Formats: [PixelFormat] = [.nv12VideoRange, .nv12FullRange]

    /// Whether `format` is 4:2:0 subsampled (so rectangles must sit on even coordinates).
    package static func isSubsampled420(_ format: PixelFormat) -> Bool {
        nv12Formats.contains(format) || format == .i420
    }

    /// Plane `plane` of `buffer` as the byte pointer libyuv takes.
    package static func pixels(_ buffer: PixelBuffer, _ plane: Int) -> UnsafeMutablePointer<UInt8> {
        buffer.baseAddress(ofPlane: plane).assumingMemoryBound(to: UInt8.self)
    }

    /// Plane `plane`'s row stride as the `Int32` libyuv takes.
    package static func stride(_ buffer: PixelBuffer, _ plane: Int) -> Int32 {
        Int32(buffer.bytesPerRow(ofPlane: plane))
    }

    /// A buffer in the frame's negotiated output format, or an ``CaptureError/Code/outOfBuffers``
    /// error (which the chain reports as ``DroppedFrameReason/outOfBuffers``).
    package static func outputBuffer(for frame: ProcessorFrame, processor: String) throws(CaptureError) -> PixelBuffer {
        guard let buffer = frame.makeOutputBuffer() else {
            throw CaptureError(
                .outOfBuffers,
                "\(processor) has no free output buffer: the delegate holds them all; release sample buffers sooner")
        }
        return buffer
    }

    /// The error for an input a processor cannot take.
    package static func unsupported(_ processor: String, _ input: FrameFormat, accepted: [PixelFormat]) -> CaptureError
    {
        CaptureError(
            .unsupportedFormat,
            "\(processor) cannot process \(input.pixelFormat.name) frames: it takes "
                + "\(accepted.map(\.name).joined(separator: ", ")); add it to an output's chain (which converts "
                + "for it) or put a ConvertProcessor before it"
        )
    }

    /// The error for a libyuv call that reported failure.
    package static func libyuvFailed(_ processor: String, _ function: String, _ status: Int32, _ frame: PixelBuffer)
        -> CaptureError
    {
        CaptureError(
            .conversionFailed,
            "\(processor): libyuv \(function) failed (status \(status)) on a \(frame.pixelFormat.name) "
                + "\(frame.width)x\(frame.height) frame; this is a bug, please report it"
        )
    }
}

/// Memory a built-in processor keeps between frames (a previous frame, a row, a sum table),
/// allocated once for a size and reused until the size changes, so steady state allocates
/// nothing per frame.
///
/// Thread safety: none; each instance lives inside its processor's `Mutex`.
package final class ScratchMemory {
    /// What the memory was allocated for (a size, a row width …), to tell when to reallocate.
    package let key: Int
    /// Bytes available.
    package let byteCount: Int
    /// The first byte, 64-byte aligned (libyuv's SIMD kernels like aligned rows).
    package let base: UnsafeMutableRawPointer

    /// `byteCount` zeroed bytes (at least one), remembered under `key`.
    package init(byteCount: Int, key: Int) {
        self.key = key
        self.byteCount = max(1, byteCount)
        base = UnsafeMutableRawPointer.allocate(byteCount: self.byteCount, alignment: 64)
        base.initializeMemory(as: UInt8.self, repeating: 0, count: self.byteCount)
    }

    deinit { base.deallocate() }

    /// The memory as elements of `type`.
    package func typed<T>(_ type: T.Type) -> UnsafeMutablePointer<T> { base.assumingMemoryBound(to: type) }

    /// `existing` if it was made for `key` with room for `byteCount` bytes, else new memory.
    package static func reuse(_ existing: ScratchMemory?, byteCount: Int, key: Int) -> ScratchMemory {
        if let existing, existing.key == key, existing.byteCount >= byteCount { return existing }
        return ScratchMemory(byteCount: byteCount, key: key)
    }
}
