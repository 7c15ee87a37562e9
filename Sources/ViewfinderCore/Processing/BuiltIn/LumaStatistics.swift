/// The brightness of one frame, as ``LumaStatisticsProcessor`` attaches it under
/// ``SampleBuffer/AttachmentKey/lumaStatistics``.
///
/// ```swift
/// if let stats = sampleBuffer.attachment(forKey: .lumaStatistics) as? LumaStatistics {
///     print("mean luma \(stats.mean), clipped highlights \(stats.histogram[255])")
/// }
/// ```
///
/// Thread safety: a value type; freely sendable.
public struct LumaStatistics: Sendable, Hashable {
    /// The mean luma (Y') of the samples, 0–255.
    public var mean: Double
    /// How many samples had each luma value: 256 bins, index = luma.
    public var histogram: [Int]
    /// How many samples were counted (the histogram's total): every pixel, or fewer when the
    /// processor subsamples.
    public var sampleCount: Int
    /// Whether luma spans 0–255 (BGRA, full-range NV12) rather than video range 16–235.
    public var isFullRange: Bool

    /// Statistics from their parts.
    public init(mean: Double, histogram: [Int], sampleCount: Int, isFullRange: Bool) {
        self.mean = mean
        self.histogram = histogram
        self.sampleCount = sampleCount
        self.isFullRange = isFullRange
    }

    /// The darkest luma present, or `nil` for no samples.
    public var minimum: Int? { histogram.firstIndex { $0 > 0 } }
    /// The brightest luma present, or `nil` for no samples.
    public var maximum: Int? { histogram.lastIndex { $0 > 0 } }
}

extension SampleBuffer.AttachmentKey {
    /// A ``LumaStatistics`` (from ``LumaStatisticsProcessor``).
    public static let lumaStatistics: Self = "viewfinder.lumaStatistics"
}
