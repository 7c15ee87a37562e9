import Foundation
import Synchronization

/// What every output of a Motion-JPEG device decodes its frames into, decided once per
/// negotiation from all the outputs' requests, so that each frame is decoded once and each
/// output converts or scales from that one image.
///
/// The size is the smallest TurboJPEG scale (1/1, 1/2, 1/4, 1/8 of the camera's size) that is
/// at least as large as every output asks; the pixel format is the one every output's chain would
/// decode into when they agree (a single NV12 output decodes straight to its format), else
/// full-range NV12 (what JFIF means, one libyuv pass from anything else). Outputs that ask nothing
/// of the device (photo, preview, metadata: ``OutputRequest/sharesDecode`` is `false`) do not
/// shape it; they take the shared image when it is large enough for them and decode their own
/// otherwise.
///
/// The session makes the plan with the negotiated format and hands it to the outputs' `prepare`
/// through ``current`` (a task-local value), and to the device's ``SharedDeviceStream``, whose
/// ``DeviceFrameDecoder`` does the decoding. ``FormatNegotiator`` prices the decode's work once per
/// candidate format (``cost``; its quality charge once per output that takes the image) and each
/// output's plan from the shared image on.
///
/// Thread safety: a value type.
package struct SharedDecodePlan: Sendable, Hashable, CustomStringConvertible {
    /// The camera's frames (Motion-JPEG).
    package var camera: FrameFormat
    /// What they are decoded into: the format and (scaled) size every consumer shares.
    package var decoded: FrameFormat
    /// 1, 2, 4 or 8: the decode's scale is 1/`scaleDenominator`.
    package var scaleDenominator: Int

    /// The plan in force while a session prepares its outputs' streams (`nil`: none; a chain then
    /// plans its own decode).
    @TaskLocal package static var current: SharedDecodePlan?

    /// Runs `body` with `plan` as ``current``.
    package static func with<T>(_ plan: SharedDecodePlan?, _ body: () throws(CaptureError) -> T) throws(CaptureError)
        -> T
    {
        let result: Result<T, CaptureError> = $current.withValue(plan) {
            do throws(CaptureError) { return .success(try body()) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// A plan decoding `camera` into `format` at 1/`scaleDenominator`.
    package init(camera: FrameFormat, format: PixelFormat, scaleDenominator: Int) {
        self.camera = camera
        self.scaleDenominator = scaleDenominator
        decoded = FrameFormat(
            pixelFormat: format, width: JPEGDecoder.scaled(camera.width, by: scaleDenominator),
            height: JPEGDecoder.scaled(camera.height, by: scaleDenominator))
    }

    /// The plan for `requests` on a device streaming `format`; `nil` when the format is not
    /// Motion-JPEG or no request decodes.
    package init?(format: CaptureDevice.Format, requests: [OutputRequest]) {
        guard format.pixelFormat == .mjpeg else { return nil }
        let camera = FrameFormat(
            pixelFormat: .mjpeg, width: format.dimensions.pixelWidth, height: format.dimensions.pixelHeight)
        var targets: [FrameFormat] = []
        for request in requests where request.audioSettings == nil && request.sharesDecode {
            let wanted = request.pixelFormat ?? ProcessorChain.nativeDelivery(of: .mjpeg)
            guard wanted != .mjpeg else { continue }
            let size = request.size ?? camera.size
            // A first processor that does not take the format makes the chain decode for it.
            let first =
                request.processorFormats.isEmpty || request.processorFormats.contains(wanted)
                ? wanted : request.processorFormats[0]
            targets.append(
                FrameFormat(
                    pixelFormat: MJPEGDecodeStep.decodedFormat(for: first), width: size.pixelWidth,
                    height: size.pixelHeight))
        }
        guard !targets.isEmpty else { return nil }
        self.init(camera: camera, targets: targets)
    }

    /// The plan serving `targets` (each a decoded format and the size wanted) from `camera`.
    package init(camera: FrameFormat, targets: [FrameFormat]) {
        let width = targets.map(\.width).max() ?? camera.width
        let height = targets.map(\.height).max() ?? camera.height
        let denominator = Self.scaleDenominator(for: camera, fitting: width, height)
        let formats = Set(targets.map(\.pixelFormat))
        self.init(
            camera: camera, format: formats.count == 1 ? formats.first! : .nv12FullRange,
            scaleDenominator: denominator)
    }

    /// The largest scale denominator at which `camera` decodes to at least `width` × `height`
    /// (1 when it must be whole, or is asked larger than it is).
    package static func scaleDenominator(for camera: FrameFormat, fitting width: Int, _ height: Int) -> Int {
        JPEGDecoder.scaleDenominators.reversed().first {
            JPEGDecoder.scaled(camera.width, by: $0) >= width && JPEGDecoder.scaled(camera.height, by: $0) >= height
        } ?? 1
    }

    /// Whether a chain that wants `target` next can start from the shared image: it is at least
    /// as large (so nothing is scaled up).
    package func serves(_ target: FrameFormat) -> Bool {
        decoded.width >= target.width && decoded.height >= target.height
    }

    /// What the one decode costs per frame.
    package var cost: CostEstimate {
        MJPEGDecodeStep.estimatedCost(
            decoding: camera.size, scaleDenominator: scaleDenominator, to: decoded.pixelFormat)
    }

    package var description: String {
        "\(camera) decoded once to \(decoded)\(scaleDenominator > 1 ? " (1/\(scaleDenominator) scale)" : "")"
    }
}

/// A device's Motion-JPEG decoding, shared by every output of every session on it (one per
/// ``SharedDeviceStream``): each frame fans out with a ``DecodedFrame`` that decodes it the first
/// time an output asks and hands the same image to the others. A frame no output asks for is never
/// decoded; decoding runs on the thread of the output that asks first (its staging lane or
/// delivery queue), never on the capture thread.
///
/// Decoders and pools are kept per decoded format (made the first time a format is asked for,
/// reused from then on); a decoder is taken from an idle list for each decode, so two outputs'
/// lanes decode two frames at once. Pixel memory comes from a pool of its own large enough for
/// every output's budget; when it runs out the asking output drops the frame as
/// ``DroppedFrameReason/outOfBuffers``.
///
/// Thread safety: every member may be used from any thread.
package final class DeviceFrameDecoder: Sendable {
    /// What the device decoded, for tests and benchmarks.
    package struct Statistics: Sendable, Equatable {
        /// Frames decoded (each at most once per format; failures included).
        package var decodes = 0
        /// Frames that did not decode (empty, cut short, corrupt).
        package var failures = 0
        /// Times an output took an image another output's request had decoded.
        package var shared = 0
        /// Decodes at a reduced scale (1/2, 1/4, 1/8).
        package var scaledDecodes = 0
    }

    /// Whether devices started from now on share their decode (benchmarks turn it off to measure
    /// every output decoding for itself, the A of an A/B in one run; on by default).
    package static let sharingEnabled = Atomic<Bool>(true)

    /// The buffers each decoded format's pool holds at most (allocated only when used).
    package static let poolCapacity = 24

    private struct Engine {
        var format: FrameFormat
        var pool: PixelBufferPool
        var idle: [JPEGDecoder]
    }

    /// The camera's frame size.
    package let camera: CaptureDevice.Dimensions
    private let engines = Mutex<[Engine]>([])
    private let counters = Mutex(Statistics())
    private let plan = Mutex<SharedDecodePlan?>(nil)
    /// Per-frame objects kept for reuse (so fanning a frame out allocates nothing).
    fileprivate let spares = SpareObjects<DecodedFrame>(limit: 16)

    /// A decoder for frames of `camera`'s size.
    package init(camera: CaptureDevice.Dimensions) {
        self.camera = camera
    }

    /// What the session planned (the outputs' shared format and size), if it did.
    package var currentPlan: SharedDecodePlan? {
        get { plan.withLock { $0 } }
        set { plan.withLock { $0 = newValue } }
    }

    /// Counters since the stream started.
    package var statistics: Statistics { counters.withLock { $0 } }

    /// The per-frame object that decodes `frame` on demand (on the capture thread: no decoding
    /// here, a spare object taken).
    package func frame(for frame: PixelBuffer) -> DecodedFrame {
        let decoded = spares.take() ?? DecodedFrame()
        decoded.bind(to: self)
        return decoded
    }

    /// Gives `frame` back for reuse (its images to their pool) when the caller holds its last
    /// reference; `frame` is `nil` afterwards either way.
    package static func recycle(_ frame: inout DecodedFrame?) {
        guard isKnownUniquelyReferenced(&frame), let unique = frame else {
            frame = nil
            return
        }
        frame = nil
        guard let owner = unique.device else { return }
        unique.reset()
        owner.spares.put(unique)
    }

    func countShared() { counters.withLock { $0.shared += 1 } }

    /// Decodes `jpeg` into a new buffer of `format` (whose size must be one of the camera's scales).
    func decode(_ jpeg: PixelBuffer, as format: FrameFormat) -> Result<PixelBuffer, MJPEGDecodeStep.Drop> {
        let denominator = JPEGDecoder.scaleDenominators.first {
            JPEGDecoder.scaled(camera.pixelWidth, by: $0) == format.width
                && JPEGDecoder.scaled(camera.pixelHeight, by: $0) == format.height
        }
        guard let denominator, jpeg.width == camera.pixelWidth, jpeg.height == camera.pixelHeight else {
            return .failure(MJPEGDecodeStep.Drop(reason: .droppedByProcessor(MJPEGDecodeStep.dropName)))
        }
        let taken: (JPEGDecoder?, PixelBufferPool)?
        do throws(CaptureError) {
            taken = try engines.withLock { engines throws(CaptureError) -> (JPEGDecoder?, PixelBufferPool)? in
                if let index = engines.firstIndex(where: { $0.format == format }) {
                    return (engines[index].idle.popLast(), engines[index].pool)
                }
                let pool = try PixelBufferPool(
                    pixelFormat: format.pixelFormat, width: format.width, height: format.height,
                    capacity: Self.poolCapacity)
                var idle: [JPEGDecoder] = []
                idle.reserveCapacity(4)
                engines.append(Engine(format: format, pool: pool, idle: idle))
                return (nil, pool)
            }
        } catch {
            taken = nil
        }
        guard let (idle, pool) = taken else {
            return .failure(MJPEGDecodeStep.Drop(reason: .droppedByProcessor(MJPEGDecodeStep.dropName)))
        }
        let decoder: JPEGDecoder
        if let idle {
            decoder = idle
        } else {
            // More outputs decoding at once than ever before: one decoder more, kept from then on.
            guard
                let made = try? JPEGDecoder(
                    width: camera.pixelWidth, height: camera.pixelHeight, pixelFormat: format.pixelFormat,
                    scaleDenominator: denominator)
            else { return .failure(MJPEGDecodeStep.Drop(reason: .droppedByProcessor(MJPEGDecodeStep.dropName))) }
            decoder = made
        }
        defer {
            engines.withLock { engines in
                if let index = engines.firstIndex(where: { $0.format == format }) {
                    engines[index].idle.append(decoder)
                }
            }
        }
        guard let destination = pool.makePixelBuffer() else {
            return .failure(MJPEGDecodeStep.Drop(reason: .outOfBuffers))
        }
        let failed: Bool
        do throws(CaptureError) {
            try decoder.decode(jpeg, into: destination)
            failed = false
        } catch {
            failed = true
        }
        counters.withLock {
            $0.decodes += 1
            if failed { $0.failures += 1 }
            if denominator > 1 { $0.scaledDecodes += 1 }
        }
        return failed
            ? .failure(MJPEGDecodeStep.Drop(reason: .droppedByProcessor(MJPEGDecodeStep.dropName)))
            : .success(destination)
    }
}

/// One Motion-JPEG frame's decoded images, shared by the outputs it fans out to: the first output
/// that asks for a format decodes into it, others asking for the same format wait for that decode
/// and take the same (read-only) image. Holds up to two formats (a scaled one for the data outputs
/// and a whole one for a photo, say); a third is decoded for its asker without being kept.
///
/// Made from spare objects by ``DeviceFrameDecoder/frame(for:)`` and given back by the delivery
/// engine that drops the last reference (``DeliveryEngine``), so the fan-out allocates nothing per
/// frame.
///
/// Thread safety: every member may be used from any thread (one condition lock).
// unchecked: every stored property is read and written under `condition`.
package final class DecodedFrame: @unchecked Sendable {
    private enum State {
        case decoding
        case done(PixelBuffer)
        case failed(DroppedFrameReason)
    }

    private struct Entry {
        var format: FrameFormat
        var state: State
    }

    private let condition = NSCondition()
    private var decoder: DeviceFrameDecoder?
    private var first: Entry?
    private var second: Entry?

    fileprivate init() {}

    fileprivate func bind(to decoder: DeviceFrameDecoder) {
        condition.lock()
        self.decoder = decoder
        condition.unlock()
    }

    /// Lets go of the images and the device (before the object is kept for reuse).
    fileprivate func reset() {
        condition.lock()
        var a = take(&first)
        var b = take(&second)
        decoder = nil
        condition.unlock()
        PixelBuffer.recycle(&a)
        PixelBuffer.recycle(&b)
    }

    private func take(_ entry: inout Entry?) -> PixelBuffer? {
        defer { entry = nil }
        if case .done(let image)? = entry?.state { return image }
        return nil
    }

    /// The device decoding this frame.
    package var device: DeviceFrameDecoder? {
        condition.lock()
        defer { condition.unlock() }
        return decoder
    }

    /// `jpeg` (this frame's pixels) decoded into `format`: decoded now if no output did yet,
    /// otherwise the image another output's request made (waiting while it is being made).
    package func decoded(_ jpeg: PixelBuffer, as format: FrameFormat) -> Result<PixelBuffer, MJPEGDecodeStep.Drop> {
        condition.lock()
        while true {
            guard let decoder else {
                condition.unlock()
                return .failure(MJPEGDecodeStep.Drop(reason: .droppedByProcessor(MJPEGDecodeStep.dropName)))
            }
            let state: State?
            if let first, first.format == format {
                state = first.state
            } else if let second, second.format == format {
                state = second.state
            } else {
                state = nil
            }
            switch state {
            case .done(let image)?:
                condition.unlock()
                decoder.countShared()
                return .success(image)
            case .failed(let reason)?:
                condition.unlock()
                return .failure(MJPEGDecodeStep.Drop(reason: reason))
            case .decoding?:
                condition.wait()
                continue
            case nil:
                let slot: Int? = first == nil ? 0 : second == nil ? 1 : nil
                if slot == 0 { first = Entry(format: format, state: .decoding) }
                if slot == 1 { second = Entry(format: format, state: .decoding) }
                condition.unlock()
                let result = decoder.decode(jpeg, as: format)
                guard let slot else { return result }
                let outcome: State
                switch result {
                case .success(let image): outcome = .done(image)
                case .failure(let drop): outcome = .failed(drop.reason)
                }
                condition.lock()
                if slot == 0 { first?.state = outcome } else { second?.state = outcome }
                condition.broadcast()
                condition.unlock()
                return result
            }
        }
    }

    /// A whole-size image of the frame for an output that can take any format (the movie
    /// encoder, a photo): one already decoded, else one decoded in the plan's format when the plan
    /// is whole-size, else in `fallback`.
    package func wholeImage(_ jpeg: PixelBuffer, fallback: PixelFormat) -> Result<PixelBuffer, MJPEGDecodeStep.Drop> {
        func whole(_ entry: Entry?) -> PixelBuffer? {
            guard let entry, entry.format.width == jpeg.width, entry.format.height == jpeg.height,
                case .done(let image) = entry.state
            else { return nil }
            return image
        }
        condition.lock()
        let existing = whole(first) ?? whole(second)
        let device = decoder
        condition.unlock()
        if let existing {
            device?.countShared()
            return .success(existing)
        }
        return decoded(jpeg, as: wholeFormat(of: jpeg, fallback: fallback))
    }

    /// The format a whole-size consumer asks for to share the decode: the plan's when it is
    /// whole-size, else `fallback`.
    package func wholeFormat(of jpeg: PixelBuffer, fallback: PixelFormat) -> FrameFormat {
        if let plan = device?.currentPlan, plan.decoded.width == jpeg.width, plan.decoded.height == jpeg.height {
            return plan.decoded
        }
        return FrameFormat(pixelFormat: fallback, width: jpeg.width, height: jpeg.height)
    }
}
