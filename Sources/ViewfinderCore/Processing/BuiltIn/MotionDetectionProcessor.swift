import CYUV
import Synchronization

/// Detects motion by differencing each frame's luma against the previous frame's, attaching a
/// ``MotionReport`` under ``SampleBuffer/AttachmentKey/motionReport``. The image passes through
/// untouched.
///
/// A pixel counts as changed when its luma moved by more than ``pixelThreshold`` (which absorbs
/// sensor noise); the frame shows motion when at least ``minimumChangedFraction`` of its pixels
/// changed. The first frame (and the first after a size change) has nothing to compare with and
/// reports no motion.
///
/// The previous frame's luma is kept in a private plane, allocated once per frame size; each
/// frame is compared and copied into it in one pass (a plain loop: libyuv's comparison functions
/// give sums of squares, not counts above a threshold). Luma is read as ``LumaStatisticsProcessor``
/// reads it.
///
/// ```swift
/// let motion = try MotionDetectionProcessor(pixelThreshold: 24, minimumChangedFraction: 0.01)
/// try output.addProcessor(motion, named: "motion")
/// ```
///
/// Thread safety: the previous frame sits behind a `Mutex`. Each instance remembers one stream:
/// give every output its own.
public final class MotionDetectionProcessor: FrameProcessor {
    /// The luma difference (0–254) a pixel must exceed to count as changed.
    public let pixelThreshold: Int
    /// The fraction of changed pixels (0–1) at which a frame reports motion.
    public let minimumChangedFraction: Double
    /// The attachment key the reports go under.
    public let attachmentKey: SampleBuffer.AttachmentKey

    private struct State {
        /// Previous luma, `width` × `height` bytes, then a row of scratch per band for BGRA and
        /// YUYV.
        var memory: ScratchMemory?
        var hasReference = false
    }
    private let state = Mutex(State())
    /// Each band's counts: changed pixels and summed differences, band 0 then band 1.
    private let partials = Partials()
    /// Compares and copies rows in two bands on two cores for frames of a million pixels or more.
    /// The destination view is the previous luma (plane 0) and the scratch rows (plane 1); the
    /// variant packs the pixel format and the threshold (`-1`: no reference, copy only).
    private let bands: RowBands

    /// A detector counting pixels whose luma changed by more than `pixelThreshold` (0…254) and
    /// reporting motion when at least `minimumChangedFraction` (0…1) of them did. Throws
    /// ``CaptureError/Code/invalidArgument`` for values out of range.
    public init(
        pixelThreshold: Int = 24, minimumChangedFraction: Double = 0.01,
        attachmentKey: SampleBuffer.AttachmentKey = .motionReport
    ) throws(CaptureError) {
        guard (0...254).contains(pixelThreshold) else {
            throw CaptureError(
                .invalidArgument, "a motion pixel threshold must be 0...254 luma levels, got \(pixelThreshold)")
        }
        guard minimumChangedFraction >= 0, minimumChangedFraction <= 1 else {
            throw CaptureError(
                .invalidArgument,
                "a motion fraction must be between 0 and 1 (e.g. 0.01 for 1 % of the picture), "
                    + "got \(minimumChangedFraction)"
            )
        }
        self.pixelThreshold = pixelThreshold
        self.minimumChangedFraction = minimumChangedFraction
        self.attachmentKey = attachmentKey
        let partials = self.partials
        bands = RowBands { rows, source, previous, variant in
            let band = rows.lowerBound == 0 ? 0 : 1
            let (changed, difference) = Self.compareRows(
                rows, of: source, format: Self.formats[variant >> 16], previous: previous, band: band,
                threshold: (variant & 0xFFFF) - 1)
            partials.store(band: band, changed: changed, difference: difference)
            return 0
        }
    }

    /// The formats in the order the band variant numbers them.
    private static let formats: [PixelFormat] = LumaRows.formats

    /// Per-band results, written by each band and read after both finished.
    // unchecked: bands write distinct slots, and the band run's semaphores order them.
    private final class Partials: @unchecked Sendable {
        private let values = UnsafeMutablePointer<Int>.allocate(capacity: 4)
        init() { values.initialize(repeating: 0, count: 4) }
        deinit { values.deallocate() }
        func store(band: Int, changed: Int, difference: Int) {
            values[2 * band] = changed
            values[2 * band + 1] = difference
        }
        func reset() { values.update(repeating: 0, count: 4) }
        var total: (changed: Int, difference: Int) { (values[0] &+ values[2], values[1] &+ values[3]) }
    }

    /// NV12 (either range), I420, YUYV and BGRA.
    public var acceptedPixelFormats: [PixelFormat] { LumaRows.formats }

    public func outputFormat(for input: FrameFormat) throws(CaptureError) -> FrameFormat {
        guard LumaRows.formats.contains(input.pixelFormat) else {
            throw BuiltIn.unsupported("MotionDetectionProcessor", input, accepted: LumaRows.formats)
        }
        return input
    }

    public func process(_ frame: inout ProcessorFrame) throws(CaptureError) -> ProcessorDecision {
        frame.setAttachment(compare(frame.image), forKey: attachmentKey)
        return .keep
    }

    /// Forgets the previous frame: the next one reports no motion.
    public func reset() {
        state.withLock { $0.hasReference = false }
    }

    /// Compares `image` with the previous frame and makes it the new previous frame.
    private func compare(_ image: PixelBuffer) -> MotionReport {
        let (width, height) = (image.width, image.height)
        let threshold = pixelThreshold
        let (changed, difference, hadReference): (Int, Int, Bool) = state.withLock { state in
            let planeBytes = width * height
            let memory = ScratchMemory.reuse(
                state.memory, byteCount: planeBytes + 2 * width, key: width << 32 | height)
            let hadReference = state.hasReference && memory === state.memory
            state.memory = memory
            state.hasReference = true
            let previous = memory.typed(UInt8.self)
            let view = ImageView(
                width: width, height: height, planes: [previous, previous + planeBytes], strides: [width, width],
                chromaRowShift: 0)
            let format = Self.formats.firstIndex(of: image.pixelFormat) ?? 0
            partials.reset()
            _ = bands.run(
                ImageView(image), view, pixels: width * height,
                variant: format << 16 | (hadReference ? threshold + 1 : 0))
            let total = partials.total
            return (total.changed, total.difference, hadReference)
        }
        let pixels = Double(width * height)
        let fraction = Double(changed) / pixels
        return MotionReport(
            changedFraction: fraction, meanAbsoluteDifference: Double(difference) / pixels,
            isMotion: hadReference && fraction >= minimumChangedFraction && changed > 0, hasReference: hadReference)
    }

    /// Compares source rows `rows` with the previous luma and copies them over it; for BGRA and
    /// YUYV the luma row is computed into the band's scratch row (plane 1 of `previous`, row
    /// `band`). A `threshold` below 0 only copies.
    private static func compareRows(
        _ rows: Range<Int>, of source: ImageView, format: PixelFormat, previous: ImageView, band: Int,
        threshold: Int
    ) -> (changed: Int, difference: Int) {
        let width = source.width
        let scratch = previous.planes.1 + band * width
        var changed = 0
        var difference = 0
        for y in rows {
            let start = source.planes.0 + y * source.strides.0
            let luma: UnsafePointer<UInt8>
            switch format {
            case .bgra:
                ARGBToJ400(start, 0, scratch, 0, Int32(width), 1)
                luma = UnsafePointer(scratch)
            case .yuyv:
                YUY2ToY(start, 0, scratch, 0, Int32(width), 1)
                luma = UnsafePointer(scratch)
            default:
                luma = UnsafePointer(start)
            }
            let old = previous.planes.0 + y * width
            if threshold >= 0 {
                let (rowChanged, rowDifference) = compareRow(luma, old, count: width, threshold: threshold)
                changed &+= rowChanged
                difference &+= rowDifference
            }
            old.update(from: luma, count: width)
        }
        return (changed, difference)
    }

    /// Pixels of one row whose luma moved by more than `threshold`, and the sum of the absolute
    /// differences: 8-bit differences in 16-byte vectors, counts and sums widened only per chunk.
    @inline(__always)
    private static func compareRow(
        _ new: UnsafePointer<UInt8>, _ old: UnsafePointer<UInt8>, count: Int, threshold: Int
    ) -> (changed: Int, difference: Int) {
        typealias Bytes = SIMD16<UInt8>
        let limit = Bytes(repeating: UInt8(threshold))
        let one = Bytes(repeating: 1)
        var changed = 0
        var difference = 0
        var x = 0
        let (newBytes, oldBytes) = (UnsafeRawPointer(new), UnsafeRawPointer(old))
        while x + 16 <= count {
            // Up to 128 vectors per chunk: 16-bit lane sums reach 128 × 2 × 255 at most.
            var sums = SIMD8<UInt16>()
            var counts = Bytes()
            let end = min(count, x + 16 * 128)
            while x + 16 <= end {
                let a = newBytes.loadUnaligned(fromByteOffset: x, as: Bytes.self)
                let b = oldBytes.loadUnaligned(fromByteOffset: x, as: Bytes.self)
                let delta = pointwiseMax(a, b) &- pointwiseMin(a, b)
                counts &+= one.replacing(with: 0, where: delta .<= limit)
                let low = SIMD8<UInt16>(truncatingIfNeeded: delta.lowHalf)
                let high = SIMD8<UInt16>(truncatingIfNeeded: delta.highHalf)
                sums &+= low &+ high
                x += 16
            }
            // 128 vectors can count 128 per lane: fits a byte.
            difference &+= Int(SIMD8<UInt32>(truncatingIfNeeded: sums).wrappedSum())
            changed &+= Int(SIMD16<UInt32>(truncatingIfNeeded: counts).wrappedSum())
        }
        while x < count {
            let delta = abs(Int(new[x]) - Int(old[x]))
            difference &+= delta
            if delta > threshold { changed &+= 1 }
            x += 1
        }
        return (changed, difference)
    }
}
