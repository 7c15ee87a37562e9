import Foundation
import Synchronization

/// The first step of a chain on a Motion-JPEG camera: decodes each frame that will be delivered
/// (the engine decides drops first) with a ``JPEGDecoder`` into a pooled buffer, straight to the
/// format the chain needs next.
///
/// It has one decoder per *lane*, so consecutive frames can decode on two cores at once while
/// delivery keeps their order (the delivery engine's staging, which the video data output sets
/// up). A frame that is empty, cut short or corrupt is not delivered: it
/// is reported as dropped with ``DroppedFrameReason/droppedByProcessor(_:)`` named
/// ``dropName`` ("decoder") and counted in ``failures``.
///
/// Thread safety: each lane's decoder is used by one thread at a time (the engine runs a lane's
/// work on that lane's serial queue); different lanes may decode at once. The pool and the
/// counter are thread-safe.
// unchecked: a lane's decoder is used by one thread at a time.
package final class MJPEGDecodeStep: @unchecked Sendable {
    /// Why a frame could not be decoded, as a drop reason.
    package struct Drop: Error {
        package var reason: DroppedFrameReason
    }

    /// The name drops of undecodable frames carry.
    package static let dropName = "decoder"

    /// Two lanes when the machine has two cores or more: a 1080p frame takes ~4 CPU-ms to decode,
    /// so one camera's 30 fps fit on one core, but a backlog (or a slow machine) uses both.
    package static var defaultLanes: Int { min(2, max(1, ProcessInfo.processInfo.activeProcessorCount)) }

    /// The format a chain decodes Motion-JPEG into when it wants `target` next: the target
    /// itself when the decoder makes it, I420 (video range, one libyuv pass away) for YUYV,
    /// full-range NV12 (what JFIF means) otherwise.
    package static func decodedFormat(for target: PixelFormat) -> PixelFormat {
        if JPEGDecoder.supportedPixelFormats.contains(target) { return target }
        return target == .yuyv ? .i420 : .nv12FullRange
    }

    /// What the step makes.
    package let format: FrameFormat
    /// The camera's frame size.
    package let camera: CaptureDevice.Dimensions
    /// The decode's scale: 1/`scaleDenominator` of the camera's size.
    package let scaleDenominator: Int
    /// Where decoded frames go.
    package let pool: PixelBufferPool
    private let decoders: [JPEGDecoder]
    private let failureCount = Atomic<Int>(0)
    /// Frames each lane decoded (for tests of the two-core split).
    private let laneCounts: Mutex<[Int]>

    /// A step decoding frames of `camera`'s size (nil: `format`'s) to `format`, whose size is the
    /// camera's or one of its scales (1/2, 1/4, 1/8: a scaled decode), with `lanes` decoders (at
    /// least 1) and a pool of `capacity`.
    package init(
        camera: CaptureDevice.Dimensions? = nil, format: FrameFormat, lanes: Int, capacity: Int
    ) throws(CaptureError) {
        let camera = camera ?? format.size
        guard
            let denominator = JPEGDecoder.scaleDenominators.first(where: {
                JPEGDecoder.scaled(camera.pixelWidth, by: $0) == format.width
                    && JPEGDecoder.scaled(camera.pixelHeight, by: $0) == format.height
            })
        else {
            throw CaptureError(
                .invalidArgument,
                "a \(camera) Motion-JPEG frame decodes at 1/1, 1/2, 1/4 or 1/8 of its size, not to \(format.size)")
        }
        var decoders: [JPEGDecoder] = []
        for _ in 0..<max(1, lanes) {
            decoders.append(
                try JPEGDecoder(
                    width: camera.pixelWidth, height: camera.pixelHeight, pixelFormat: format.pixelFormat,
                    scaleDenominator: denominator))
        }
        self.camera = camera
        scaleDenominator = denominator
        self.decoders = decoders
        laneCounts = Mutex(Array(repeating: 0, count: decoders.count))
        self.format = format
        // One more than the budget: a frame decoded ahead may wait while every slot is delivered.
        pool = try PixelBufferPool(
            pixelFormat: format.pixelFormat, width: format.width, height: format.height, capacity: capacity + 1)
    }

    /// How many decoders (lanes) the step has.
    package var laneCount: Int { decoders.count }

    /// Frames that could not be decoded so far.
    package var failures: Int { failureCount.load(ordering: .relaxed) }

    /// How many frames each lane has decoded (successfully or not).
    package var decodesPerLane: [Int] { laneCounts.withLock { $0 } }

    /// Decodes `frame` (a ``PixelFormat/mjpeg`` buffer) with lane `lane`'s decoder (taken modulo
    /// the lane count) into a buffer from the pool; or, when the frame carries the device's
    /// shared decode (`shared`), takes the image it decodes once for every output (read-only:
    /// other outputs see it too).
    package func decode(_ frame: PixelBuffer, lane: Int, shared: DecodedFrame?) -> Result<PixelBuffer, Drop> {
        if let shared, shared.device?.camera == camera {
            let result = shared.decoded(frame, as: format)
            if case .failure(let drop) = result, case .droppedByProcessor = drop.reason {
                failureCount.add(1, ordering: .relaxed)
            }
            return result
        }
        return decode(frame, lane: lane)
    }

    /// Decodes `frame` (a ``PixelFormat/mjpeg`` buffer) with lane `lane`'s decoder (taken modulo
    /// the lane count) into a buffer from the pool.
    package func decode(_ frame: PixelBuffer, lane: Int) -> Result<PixelBuffer, Drop> {
        guard let destination = pool.makePixelBuffer() else { return .failure(Drop(reason: .outOfBuffers)) }
        let lane = lane % decoders.count
        laneCounts.withLock { $0[lane] += 1 }
        do {
            try decoders[lane].decode(frame, into: destination)
            return .success(destination)
        } catch {
            failureCount.add(1, ordering: .relaxed)
            return .failure(Drop(reason: .droppedByProcessor(Self.dropName)))
        }
    }
}

extension MJPEGDecodeStep {
    /// What decoding one megapixel of Motion-JPEG costs, on the converter's scale (1 ≈ a libyuv
    /// pass over a megabyte, measured ~0.15 CPU-ms here; a 4:2:2 q85 webcam frame decodes at ~2
    /// CPU-ms per megapixel, TurboJPEG included).
    package static let costPerMegapixel = 13.0

    /// What decoding one frame of `size` into `decoded` costs, for negotiation: the decoder's work
    /// and, as for any change of format, the converter's colour-change charge (JPEG's quantisation
    /// is lossier than rounding), so a raw format that keeps the rate and converts in one pass is
    /// preferred; beyond planar Y'CbCr, a colour conversion (BGRA) or NV12's range mapping on top.
    package static func estimatedCost(decoding size: CaptureDevice.Dimensions, to decoded: PixelFormat) -> CostEstimate
    {
        estimatedCost(decoding: size, scaleDenominator: 1, to: decoded)
    }

    /// The share of a whole-size decode's work that does not shrink with a scaled decode: reading
    /// the entropy-coded data (Huffman decoding) is the same at any scale; the inverse transform
    /// and writing the pixels shrink with the area. Measured on webcam-like 1080p frames (4:2:2,
    /// quality 85, sensor noise; `capacity/decode-floor`): TurboJPEG's 1/2 decode costs 0.82× the
    /// whole one, its 1/4 0.73×, so about three quarters is entropy decoding.
    package static let entropyShare = 0.75

    /// What decoding one frame of `size` at 1/`scaleDenominator` into `decoded` costs (see
    /// ``estimatedCost(decoding:to:)``; a scaled decode saves the transform and output work of
    /// the pixels it does not make).
    package static func estimatedCost(
        decoding size: CaptureDevice.Dimensions, scaleDenominator: Int, to decoded: PixelFormat
    ) -> CostEstimate {
        let megapixels = Double(size.width * size.height) / 1e6
        let areaShare = 1 / Double(scaleDenominator * scaleDenominator)
        let work = costPerMegapixel * megapixels * (entropyShare + (1 - entropyShare) * areaShare)
        let decode = CostEstimate(work: work, preference: PixelConverter.colourChangeCost)
        switch decoded {
        case .nv12FullRange, .i420: return decode
        case .bgra: return decode + CostEstimate(preference: PixelConverter.colourChangeCost)
        default: return decode + CostEstimate(preference: PixelConverter.colourChangeCost / 4)
        }
    }
}
