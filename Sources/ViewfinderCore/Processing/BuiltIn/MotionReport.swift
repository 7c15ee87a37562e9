/// How much a frame differs from the one before it, as ``MotionDetectionProcessor`` attaches it
/// under ``SampleBuffer/AttachmentKey/motionReport``.
///
/// ```swift
/// if let motion = sampleBuffer.attachment(forKey: .motionReport) as? MotionReport, motion.isMotion {
///     print("motion: \(Int(motion.changedFraction * 100)) % of the picture changed")
/// }
/// ```
///
/// Thread safety: a value type; freely sendable.
public struct MotionReport: Sendable, Hashable {
    /// The fraction of pixels (0–1) whose luma changed by more than the processor's
    /// ``MotionDetectionProcessor/pixelThreshold``.
    public var changedFraction: Double
    /// The mean absolute luma difference over all pixels, 0–255.
    public var meanAbsoluteDifference: Double
    /// Whether ``changedFraction`` reached the processor's
    /// ``MotionDetectionProcessor/minimumChangedFraction`` (and at least one pixel changed).
    public var isMotion: Bool
    /// Whether there was a previous frame to compare with: `false` for the first frame (and the
    /// first after the frame size changed), which reports no motion.
    public var hasReference: Bool

    /// A report from its parts.
    public init(changedFraction: Double, meanAbsoluteDifference: Double, isMotion: Bool, hasReference: Bool) {
        self.changedFraction = changedFraction
        self.meanAbsoluteDifference = meanAbsoluteDifference
        self.isMotion = isMotion
        self.hasReference = hasReference
    }
}

extension SampleBuffer.AttachmentKey {
    /// A ``MotionReport`` (from ``MotionDetectionProcessor``).
    public static let motionReport: Self = "viewfinder.motionReport"
}
