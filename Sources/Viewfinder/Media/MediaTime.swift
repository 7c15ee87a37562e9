/// A rational time value, the counterpart of Core Media's `CMTime`: `value / timescale` seconds.
///
/// Presentation timestamps, durations and frame intervals are all `MediaTime`s. Arithmetic and
/// comparison work across timescales without rounding (through a common timescale); an
/// ``invalid`` time compares below every valid time and poisons arithmetic.
///
/// Thread safety: a value type; freely sendable.
public struct MediaTime: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The numerator: a count of `1/timescale` second ticks.
    public var value: Int64
    /// Ticks per second. Always positive for a valid time.
    public var timescale: Int32
    /// Whether the time holds a value at all (`false` for ``invalid``).
    public var isValid: Bool

    /// A time of `value / timescale` seconds. A timescale of zero or less makes an ``invalid`` time.
    public init(value: Int64, timescale: Int32) {
        self.value = value
        self.timescale = timescale
        self.isValid = timescale > 0
    }

    /// The time nearest to `seconds` at the given timescale (default: nanoseconds).
    public init(seconds: Double, preferredTimescale: Int32 = 1_000_000_000) {
        guard seconds.isFinite, preferredTimescale > 0 else {
            self = .invalid
            return
        }
        self.init(value: Int64((seconds * Double(preferredTimescale)).rounded()), timescale: preferredTimescale)
    }

    /// No time at all: the timestamp of nothing, or "no limit" where a limit is optional.
    public static let invalid = MediaTime(value: 0, timescale: 0)
    /// Zero seconds.
    public static let zero = MediaTime(value: 0, timescale: 1)

    /// The time in seconds (NaN when invalid).
    public var seconds: Double {
        isValid ? Double(value) / Double(timescale) : .nan
    }

    /// The time in whole nanoseconds (0 when invalid), rounded toward negative infinity.
    public var nanoseconds: Int64 {
        guard isValid else { return 0 }
        let result = Int64(timescale).dividingFullWidth(value.multipliedFullWidth(by: 1_000_000_000))
        return result.remainder < 0 ? result.quotient - 1 : result.quotient
    }

    /// This time converted to another timescale, rounding to nearest.
    public func converted(toTimescale newScale: Int32) -> MediaTime {
        guard isValid, newScale > 0 else { return .invalid }
        if newScale == timescale { return self }
        let numerator = Double(value) * Double(newScale) / Double(timescale)
        return MediaTime(value: Int64(numerator.rounded()), timescale: newScale)
    }

    public var description: String {
        isValid ? "\(value)/\(timescale) (\(seconds)s)" : "invalid"
    }

    /// Exact comparison through 128-bit cross multiplication.
    public static func < (lhs: MediaTime, rhs: MediaTime) -> Bool {
        switch (lhs.isValid, rhs.isValid) {
        case (false, false): return false
        case (false, true): return true
        case (true, false): return false
        case (true, true): return compare(lhs, rhs) < 0
        }
    }

    public static func == (lhs: MediaTime, rhs: MediaTime) -> Bool {
        if !lhs.isValid || !rhs.isValid { return lhs.isValid == rhs.isValid }
        return compare(lhs, rhs) == 0
    }

    public func hash(into hasher: inout Hasher) {
        guard isValid else {
            hasher.combine(-1)
            return
        }
        // Equal times may have different timescales: hash the reduced fraction.
        let divisor = Self.gcd(Swift.abs(value), Int64(timescale))
        hasher.combine(value / max(divisor, 1))
        hasher.combine(Int64(timescale) / max(divisor, 1))
    }

    public static func + (lhs: MediaTime, rhs: MediaTime) -> MediaTime {
        combine(lhs, rhs, &+)
    }

    public static func - (lhs: MediaTime, rhs: MediaTime) -> MediaTime {
        combine(lhs, rhs, &-)
    }

    public static func += (lhs: inout MediaTime, rhs: MediaTime) { lhs = lhs + rhs }
    public static func -= (lhs: inout MediaTime, rhs: MediaTime) { lhs = lhs - rhs }

    /// The time multiplied by an integer.
    public static func * (lhs: MediaTime, rhs: Int64) -> MediaTime {
        guard lhs.isValid else { return .invalid }
        return MediaTime(value: lhs.value &* rhs, timescale: lhs.timescale)
    }

    private static func combine(_ lhs: MediaTime, _ rhs: MediaTime, _ op: (Int64, Int64) -> Int64) -> MediaTime {
        guard lhs.isValid, rhs.isValid else { return .invalid }
        if lhs.timescale == rhs.timescale {
            return MediaTime(value: op(lhs.value, rhs.value), timescale: lhs.timescale)
        }
        let l = Int64(lhs.timescale)
        let r = Int64(rhs.timescale)
        let common = l / gcd(l, r) * r
        if common <= Int64(Int32.max) {
            return MediaTime(value: op(lhs.value * (common / l), rhs.value * (common / r)), timescale: Int32(common))
        }
        // Timescales too far apart for an exact common one: fall back to nanoseconds.
        return MediaTime(value: op(lhs.nanoseconds, rhs.nanoseconds), timescale: 1_000_000_000)
    }

    private static func compare(_ lhs: MediaTime, _ rhs: MediaTime) -> Int {
        if lhs.timescale == rhs.timescale { return lhs.value < rhs.value ? -1 : (lhs.value == rhs.value ? 0 : 1) }
        let a = lhs.value.multipliedFullWidth(by: Int64(rhs.timescale))
        let b = rhs.value.multipliedFullWidth(by: Int64(lhs.timescale))
        if a.high != b.high { return a.high < b.high ? -1 : 1 }
        if a.low != b.low { return a.low < b.low ? -1 : 1 }
        return 0
    }

    private static func gcd(_ a: Int64, _ b: Int64) -> Int64 {
        var (x, y) = (a, b)
        while y != 0 { (x, y) = (y, x % y) }
        return x
    }
}
