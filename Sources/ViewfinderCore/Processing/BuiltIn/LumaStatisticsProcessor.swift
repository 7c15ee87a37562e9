import Synchronization

/// Measures each frame's brightness: the mean luma and a 256-bin luma histogram, attached as a
/// ``LumaStatistics`` under ``SampleBuffer/AttachmentKey/lumaStatistics`` (or the key you
/// choose). The image passes through untouched.
///
/// Luma is read from the Y plane for NV12 and I420 (as stored: video range 16–235 for `420v`),
/// from every other byte for YUYV, and computed as BT.601 `0.299 R + 0.587 G + 0.114 B` for BGRA
/// (libyuv `ARGBToJ400`, one row at a time). Counting is a plain loop (no installed library
/// builds histograms).
///
/// `sampleStride` trades precision for speed: with 2, every second pixel of every second row is
/// counted (a quarter of the work), which for camera images changes the mean by a fraction of a
/// level.
///
/// ```swift
/// try output.addProcessor(LumaStatisticsProcessor(sampleStride: 2), named: "exposure")
/// // in the delegate:
/// let stats = sampleBuffer.attachment(forKey: .lumaStatistics) as? LumaStatistics
/// ```
///
/// Thread safety: the row scratch for BGRA and YUYV sits behind a `Mutex`; one instance may
/// serve several outputs.
public final class LumaStatisticsProcessor: FrameProcessor {
    /// Count every `sampleStride`-th pixel of every `sampleStride`-th row.
    public let sampleStride: Int
    /// The attachment key the statistics go under.
    public let attachmentKey: SampleBuffer.AttachmentKey
    private let rowScratch = Mutex<ScratchMemory?>(nil)

    /// A processor counting every `sampleStride`-th pixel each way (1…16; 1 counts all) and
    /// attaching under `attachmentKey`. Throws ``CaptureError/Code/invalidArgument`` for another
    /// stride.
    public init(sampleStride: Int = 1, attachmentKey: SampleBuffer.AttachmentKey = .lumaStatistics)
        throws(CaptureError)
    {
        guard (1...16).contains(sampleStride) else {
            throw CaptureError(
                .invalidArgument,
                "a luma statistics sample stride must be 1...16 (1 counts every pixel), got \(sampleStride)")
        }
        self.sampleStride = sampleStride
        self.attachmentKey = attachmentKey
    }

    /// NV12 (either range), I420, YUYV and BGRA: formats luma can be read from without conversion.
    public var acceptedPixelFormats: [PixelFormat] { LumaRows.formats }

    public func outputFormat(for input: FrameFormat) throws(CaptureError) -> FrameFormat {
        guard LumaRows.formats.contains(input.pixelFormat) else {
            throw BuiltIn.unsupported("LumaStatisticsProcessor", input, accepted: LumaRows.formats)
        }
        return input
    }

    public func process(_ frame: inout ProcessorFrame) throws(CaptureError) -> ProcessorDecision {
        frame.setAttachment(statistics(of: frame.image), forKey: attachmentKey)
        return .keep
    }

    /// The statistics of `image` (which must be in an accepted format), as attached.
    public func statistics(of image: PixelBuffer) -> LumaStatistics {
        let step = sampleStride
        var histogram = [Int](repeating: 0, count: 256)
        rowScratch.withLock { scratch in
            // Four interleaved tables of 32-bit counts (consecutive equal samples, as in flat
            // areas, then increment different memory, not one counter in a chain of dependent
            // stores), then a row of luma for BGRA and YUYV.
            let tableBytes = 4 * 256 * MemoryLayout<UInt32>.stride
            let memory = ScratchMemory.reuse(scratch, byteCount: tableBytes + image.width, key: image.width)
            scratch = memory
            let counts = memory.typed(UInt32.self)
            counts.update(repeating: 0, count: 4 * 256)
            let row =
                LumaRows.needsRowScratch(image.pixelFormat)
                ? (memory.base + tableBytes).assumingMemoryBound(to: UInt8.self) : nil
            for y in stride(from: 0, to: image.height, by: step) {
                let luma = LumaRows.row(y, of: image, scratch: row)
                if step == 1 {
                    Self.count(luma, image.width, into: counts)
                } else {
                    for x in stride(from: 0, to: image.width, by: step) { counts[Int(luma[x])] &+= 1 }
                }
                // A row adds at most its width to a counter: fold before 32 bits could wrap.
                if y & 0x3FF == 0x3FF { Self.fold(counts, into: &histogram) }
            }
            Self.fold(counts, into: &histogram)
        }
        var count = 0
        var total = 0
        for (value, n) in histogram.enumerated() {
            count += n
            total += value * n
        }
        return LumaStatistics(
            mean: count > 0 ? Double(total) / Double(count) : 0, histogram: histogram, sampleCount: count,
            isFullRange: LumaRows.isFullRange(image.pixelFormat))
    }

    /// Counts `width` luma samples into four 256-entry tables, one per sample position mod 4.
    @inline(__always)
    private static func count(_ luma: UnsafePointer<UInt8>, _ width: Int, into counts: UnsafeMutablePointer<UInt32>) {
        var x = 0
        while x + 4 <= width {
            let four = UnsafeRawPointer(luma + x).loadUnaligned(as: UInt32.self)
            counts[Int(four & 0xFF)] &+= 1
            counts[256 + Int((four >> 8) & 0xFF)] &+= 1
            counts[512 + Int((four >> 16) & 0xFF)] &+= 1
            counts[768 + Int(four >> 24)] &+= 1
            x += 4
        }
        while x < width {
            counts[Int(luma[x])] &+= 1
            x += 1
        }
    }

    /// Adds the four tables to `histogram` and clears them.
    private static func fold(_ counts: UnsafeMutablePointer<UInt32>, into histogram: inout [Int]) {
        for bin in 0..<256 {
            histogram[bin] +=
                Int(counts[bin]) + Int(counts[256 + bin]) + Int(counts[512 + bin])
                + Int(counts[768 + bin])
        }
        counts.update(repeating: 0, count: 4 * 256)
    }
}
