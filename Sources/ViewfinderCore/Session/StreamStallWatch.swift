/// Why a device skipped a frame it produced instead of handing it on (a backend tells its
/// ``DeviceStreamSink`` with ``DeviceStreamSink/deviceDidSkipFrame(_:)``).
public enum SkippedFrameCause: Hashable, Sendable, CaseIterable {
    /// The driver flagged the buffer as damaged (`V4L2_BUF_FLAG_ERROR`: a failed USB transfer).
    case errorFlag
    /// The buffer held fewer bytes than a frame (or none).
    case shortPayload
    /// The buffer claimed more bytes (`bytesused`) than it maps.
    case oversizedPayload

    /// What the cause means, for people.
    package var explanation: String {
        switch self {
        case .errorFlag: "flagged as damaged by the driver"
        case .shortPayload: "shorter than a frame"
        case .oversizedPayload: "claiming more bytes (bytesused) than their buffer maps"
        }
    }
}

/// Watches one stream for a device that keeps producing while nothing gets through: frames
/// skipped one after another, with no frame handed on in between, for ``bound`` (counted in
/// frames at the stream's rate, or in host time for a driver slower than its rate). The first
/// time the bound is crossed it answers the error to post; later skips only count, until a frame
/// gets through (``recover()``) and the watch starts over.
///
/// Thread safety: a value type; its owner keeps it under a lock.
package struct StreamStallWatch {
    /// How long a stream may deliver nothing while its device keeps producing.
    package static let bound = MediaTime(value: 2, timescale: 1)

    package private(set) var counts: [SkippedFrameCause: Int] = [:]
    package private(set) var total = 0
    private var firstSkip: MediaTime?
    package private(set) var hasReported = false

    /// The frames at `frameDuration` apart that span ``bound`` (at least 2; 60 at 30 fps, and
    /// 60 when the duration is unknown).
    package static func frameBound(frameDuration: MediaTime) -> Int {
        guard frameDuration.isNumeric, frameDuration > .zero else { return 60 }
        let frames = (bound.seconds / frameDuration.seconds).rounded(.up)
        return frames.isFinite ? max(2, Int(min(frames, 1_000_000))) : 60
    }

    /// Counts one skipped frame at host time `now`. Returns the error to post when this frame
    /// crosses the bound for the first time since the last delivered frame, otherwise `nil`.
    package mutating func skip(
        _ cause: SkippedFrameCause, now: MediaTime, frameDuration: MediaTime, deviceName: String
    ) -> CaptureError? {
        counts[cause, default: 0] += 1
        total += 1
        if firstSkip == nil { firstSkip = now }
        guard !hasReported else { return nil }
        let frames = Self.frameBound(frameDuration: frameDuration)
        let elapsed = firstSkip.map { now - $0 } ?? .zero
        guard total >= frames || (total >= 2 && elapsed >= Self.bound) else { return nil }
        hasReported = true
        let causes = SkippedFrameCause.allCases.compactMap { cause in
            counts[cause].map { "\($0) \(cause.explanation)" }
        }
        let rate =
            frameDuration.isNumeric && frameDuration > .zero ? " at \(format3(1 / frameDuration.seconds)) fps" : ""
        return CaptureError(
            .driverError,
            "'\(deviceName)' has delivered no frame for \(total) frames\(rate) (\(Self.bound.seconds) s) while it keeps producing: every one was corrupt, \(causes.joined(separator: ", ")); the stream keeps running and counting (corruptFramesSkipped): check the cable and the driver, or choose another format"
        )
    }

    /// A frame got through: the stall (if any) is over and the watch starts over.
    package mutating func recover() {
        self = StreamStallWatch()
    }
}
