/// A rational time value, the counterpart of Core Media's `CMTime`: `value / timescale` seconds,
/// or one of the non-numeric times (invalid, indefinite, ±infinity) that its ``flags`` mark.
///
/// Presentation timestamps, durations and frame intervals are all `MediaTime`s. The rules below
/// are Core Media's, as Apple documents them for `CMTimeCompare`, `CMTimeAdd`, `CMTimeSubtract`,
/// `CMTimeMultiply` and `CMTimeMakeWithSeconds`, so ported code behaves the same:
///
/// **Kinds.** A time is *invalid* without ``MediaTimeFlags/valid`` (``MediaTime/init()`` and
/// ``invalid``), or when numeric with a timescale of zero or less. A valid time is
/// *+infinity*, *-infinity* or *indefinite* when it carries that flag (its value and timescale
/// are then ignored; with several such flags the first of +infinity, -infinity, indefinite
/// wins), and *numeric* otherwise. Many bit patterns mean the same non-numeric time: test with
/// ``isValid``, ``isNumeric``, ``isIndefinite``, ``isPositiveInfinity`` and
/// ``isNegativeInfinity`` rather than against the constants.
///
/// **Order** (`<`, `==`, ``MediaTimeCompare(_:_:)``): `-infinity < every numeric time <
/// indefinite < +infinity < invalid`. Two times of the same non-numeric kind are equal (so
/// `invalid == invalid`); numeric times compare exactly, across timescales, by 128-bit cross
/// multiplication. ``MediaTimeFlags/hasBeenRounded`` plays no part. Hashing agrees with `==`.
///
/// **Addition and subtraction** (`+`, `-`): an invalid operand gives invalid. Otherwise one
/// infinite operand gives that infinity (for `-`, a subtracted infinity flips sign:
/// `5 - +infinity == -infinity`); two infinities give `+inf + +inf == +inf`,
/// `-inf + -inf == -inf`, `+inf - -inf == +inf`, `-inf - +inf == -inf`, and invalid for
/// `+inf + -inf`, `-inf + +inf`, `+inf - +inf`, `-inf - -inf`. Otherwise an indefinite operand
/// gives indefinite. Two numeric times with the same timescale keep it; with different
/// timescales the result takes their least common multiple, or ``maxTimescale`` (10⁹, like
/// `kCMTimeMaxTimescale`) with default rounding when the multiple is larger.
///
/// **Multiplication** (`*`, ``MediaTimeMultiply(_:multiplier:)``): invalid stays invalid,
/// indefinite stays indefinite, an infinity stays infinite with the sign of the product of the
/// signs (a multiplier of zero keeps the infinity, as Core Media documents the result as
/// infinite whatever the multiplier); a numeric time keeps its timescale.
///
/// **Overflow never traps.** Exact intermediate results are 128-bit. When a result's value does
/// not fit in 64 bits its timescale is halved until it does (rounding half away from zero); if it
/// still overflows at timescale 1 the result is +infinity or -infinity by the sign of the
/// overflow. Every rounded result, and every result of a rounded operand, carries
/// ``MediaTimeFlags/hasBeenRounded``. So `MediaTime(value: .max, timescale: 1) +
/// MediaTime(value: 1, timescale: 1_000_000_000)` is `Int64.max/1`, rounded — the sum fits once
/// the timescale is down to 1, as `CMTimeAdd` documents — while `Int64.max/1 + 1/1` is +infinity. The same halving applies to
/// ``init(seconds:preferredTimescale:)``: `MediaTime(seconds: 1e10)` does not fit at nanoseconds
/// and becomes `1e10` seconds at timescale 5·10⁸; `MediaTime(seconds: 1e300)` is +infinity.
/// Conversions out of a time saturate too (``nanoseconds``).
///
/// Epochs (`CMTime.epoch`) are not modelled: every time is in epoch 0.
///
/// Thread safety: a value type; freely sendable.
public struct MediaTime: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The numerator: a count of `1/timescale` second ticks (ignored when not numeric).
    public var value: Int64
    /// Ticks per second. Positive for a numeric time (ignored when not numeric).
    public var timescale: Int32
    /// What kind of time this is and whether it was rounded (`CMTimeFlags`).
    public var flags: MediaTimeFlags

    /// An invalid time, like `CMTime()`: all fields zero.
    public init() {
        self.value = 0
        self.timescale = 0
        self.flags = []
    }

    /// A time of `value / timescale` seconds (`CMTimeMake(value:timescale:)`). A timescale of zero
    /// or less makes an ``invalid`` time.
    public init(value: Int64, timescale: Int32) {
        self.value = value
        self.timescale = timescale
        self.flags = timescale > 0 ? .valid : []
    }

    /// A time from all its fields, like `CMTime(value:timescale:flags:epoch:)` without the epoch.
    public init(value: Int64, timescale: Int32, flags: MediaTimeFlags) {
        self.value = value
        self.timescale = timescale
        self.flags = flags
    }

    /// The time nearest to `seconds` at the given timescale (default: nanoseconds), like
    /// `CMTime(seconds:preferredTimescale:)`. NaN or a timescale of zero or less gives
    /// ``invalid``; ±`Double.infinity` gives ±infinity. A value too large for the timescale
    /// halves it until the value fits, and becomes ±infinity if it does not fit at timescale 1.
    public init(seconds: Double, preferredTimescale: Int32 = 1_000_000_000) {
        guard preferredTimescale > 0, !seconds.isNaN else {
            self = .invalid
            return
        }
        if seconds.isInfinite {
            self = seconds > 0 ? .positiveInfinity : .negativeInfinity
            return
        }
        var scale = preferredTimescale
        while true {
            let nearest = (seconds * Double(scale)).rounded(.toNearestOrAwayFromZero)
            if let value = Int64(exactly: nearest) {
                self.init(value: value, timescale: scale)
                if Double(value) / Double(scale) != seconds { flags.insert(.hasBeenRounded) }
                return
            }
            guard scale > 1 else {
                self = seconds > 0 ? .positiveInfinity : .negativeInfinity
                return
            }
            scale /= 2
        }
    }

    /// No time at all (`kCMTimeInvalid`): the timestamp of nothing, or "no limit" where a limit
    /// is optional. Sorts after every other time.
    public static let invalid = MediaTime()
    /// Zero seconds (`kCMTimeZero`).
    public static let zero = MediaTime(value: 0, timescale: 1)
    /// A time whose value is unknown, e.g. the duration of a live stream (`kCMTimeIndefinite`).
    public static let indefinite = MediaTime(value: 0, timescale: 0, flags: [.valid, .indefinite])
    /// Later than every numeric and indefinite time (`kCMTimePositiveInfinity`).
    public static let positiveInfinity = MediaTime(value: 0, timescale: 0, flags: [.valid, .positiveInfinity])
    /// Earlier than every other valid time (`kCMTimeNegativeInfinity`).
    public static let negativeInfinity = MediaTime(value: 0, timescale: 0, flags: [.valid, .negativeInfinity])
    /// The largest timescale arithmetic picks for a common timescale (`kCMTimeMaxTimescale`).
    public static let maxTimescale: Int32 = 1_000_000_000

    /// Whether the time is valid: numeric, infinite or indefinite (`false` for ``invalid``).
    public var isValid: Bool { kind != .invalid }
    /// Whether the time is a finite number of seconds (valid, not infinite, not indefinite).
    public var isNumeric: Bool { kind == .numeric }
    /// Whether the time is indefinite.
    public var isIndefinite: Bool { kind == .indefinite }
    /// Whether the time is +infinity.
    public var isPositiveInfinity: Bool { kind == .positiveInfinity }
    /// Whether the time is -infinity.
    public var isNegativeInfinity: Bool { kind == .negativeInfinity }
    /// Whether the time was rounded on its way here (``MediaTimeFlags/hasBeenRounded``).
    public var hasBeenRounded: Bool { isValid && flags.contains(.hasBeenRounded) }

    /// The time in seconds: NaN when invalid or indefinite, ±`Double.infinity` when infinite
    /// (`CMTimeGetSeconds`).
    public var seconds: Double {
        switch kind {
        case .numeric: return Double(value) / Double(timescale)
        case .positiveInfinity: return .infinity
        case .negativeInfinity: return -.infinity
        case .indefinite, .invalid: return .nan
        }
    }

    /// The time in whole nanoseconds, rounded toward negative infinity. Saturates: values beyond
    /// `Int64`'s range, and ±infinity, give `Int64.max` / `Int64.min`; invalid and indefinite
    /// give 0.
    public var nanoseconds: Int64 {
        switch kind {
        case .numeric:
            let exact = Int128(value) * 1_000_000_000
            let scale = Int128(timescale)
            var quotient = exact / scale
            if exact % scale < 0 { quotient -= 1 }
            return Int64(clamping: quotient)
        case .positiveInfinity: return .max
        case .negativeInfinity: return .min
        case .indefinite, .invalid: return 0
        }
    }

    /// This time converted to another timescale, rounding half away from zero.
    public func converted(toTimescale newScale: Int32) -> MediaTime {
        convertScale(newScale, method: .default)
    }

    /// This time converted to another timescale with the given rounding (`CMTimeConvertScale`).
    /// Non-numeric times are returned unchanged; a timescale of zero or less gives ``invalid``;
    /// a value that does not fit gives ±infinity. Rounding sets ``MediaTimeFlags/hasBeenRounded``.
    public func convertScale(_ newTimescale: Int32, method: MediaTimeRoundingMethod) -> MediaTime {
        guard newTimescale > 0 else { return .invalid }
        guard isNumeric else { return self }
        if newTimescale == timescale { return self }
        let (truncated, remainder) = Self.scaled(Int128(value), by: Int128(newTimescale), over: Int128(timescale))
        guard let truncated else { return value < 0 ? .negativeInfinity : .positiveInfinity }
        var result = Self.round(
            truncated, remainder, over: Int128(timescale), method: method, upscaling: newTimescale > timescale)
        if method == .quickTime, result == 0, value < 0 { result = -1 }
        guard let fitted = Int64(exactly: result) else { return value < 0 ? .negativeInfinity : .positiveInfinity }
        var time = MediaTime(value: fitted, timescale: newTimescale)
        if remainder != 0 || hasBeenRounded { time.flags.insert(.hasBeenRounded) }
        return time
    }

    public var description: String {
        switch kind {
        case .numeric: return "\(value)/\(timescale) (\(seconds)s)"
        case .positiveInfinity: return "+infinity"
        case .negativeInfinity: return "-infinity"
        case .indefinite: return "indefinite"
        case .invalid: return "invalid"
        }
    }

    // MARK: Comparison

    /// Core Media's order: `-infinity < numeric < indefinite < +infinity < invalid`.
    public static func < (lhs: MediaTime, rhs: MediaTime) -> Bool {
        compare(lhs, rhs) < 0
    }

    public static func == (lhs: MediaTime, rhs: MediaTime) -> Bool {
        compare(lhs, rhs) == 0
    }

    public func hash(into hasher: inout Hasher) {
        let kind = self.kind
        hasher.combine(kind)
        guard kind == .numeric else { return }
        // Equal times may have different timescales: hash the reduced fraction.
        let divisor = Int64(Self.gcd(value.magnitude, UInt64(timescale)))
        hasher.combine(value / divisor)
        hasher.combine(Int64(timescale) / divisor)
    }

    /// -1, 0 or 1 as `lhs` is less than, equal to or greater than `rhs` in Core Media's order.
    package static func compare(_ lhs: MediaTime, _ rhs: MediaTime) -> Int32 {
        let (left, right) = (lhs.kind, rhs.kind)
        if left != right { return left < right ? -1 : 1 }
        guard left == .numeric else { return 0 }
        let a = Int128(lhs.value) * Int128(rhs.timescale)
        let b = Int128(rhs.value) * Int128(lhs.timescale)
        return a < b ? -1 : (a == b ? 0 : 1)
    }

    // MARK: Arithmetic

    public static func + (lhs: MediaTime, rhs: MediaTime) -> MediaTime {
        sum(lhs, rhs, negatingRight: false)
    }

    public static func - (lhs: MediaTime, rhs: MediaTime) -> MediaTime {
        sum(lhs, rhs, negatingRight: true)
    }

    public static func += (lhs: inout MediaTime, rhs: MediaTime) { lhs = lhs + rhs }
    public static func -= (lhs: inout MediaTime, rhs: MediaTime) { lhs = lhs - rhs }

    /// The time multiplied by an integer (see the type's rules; never traps).
    public static func * (lhs: MediaTime, rhs: Int64) -> MediaTime {
        product(lhs, rhs)
    }

    /// The time multiplied by an integer (`CMTimeMultiply`).
    public static func * (lhs: MediaTime, rhs: Int32) -> MediaTime {
        product(lhs, Int64(rhs))
    }

    /// The time multiplied by an integer; integer literals pick this overload.
    public static func * (lhs: MediaTime, rhs: Int) -> MediaTime {
        product(lhs, Int64(rhs))
    }

    /// The time multiplied by an integer (`CMTimeMultiply`).
    public static func * (lhs: Int32, rhs: MediaTime) -> MediaTime {
        product(rhs, Int64(lhs))
    }

    /// The time multiplied by an integer; integer literals pick this overload.
    public static func * (lhs: Int, rhs: MediaTime) -> MediaTime {
        product(rhs, Int64(lhs))
    }

    /// The time multiplied by a floating-point factor (`CMTimeMultiplyByFloat64`).
    public static func * (lhs: MediaTime, rhs: Double) -> MediaTime {
        product(lhs, rhs)
    }

    /// The time multiplied by a floating-point factor (`CMTimeMultiplyByFloat64`).
    public static func * (lhs: Double, rhs: MediaTime) -> MediaTime {
        product(rhs, lhs)
    }

    public static func *= (lhs: inout MediaTime, rhs: Int64) { lhs = lhs * rhs }
    public static func *= (lhs: inout MediaTime, rhs: Int32) { lhs = lhs * rhs }
    public static func *= (lhs: inout MediaTime, rhs: Int) { lhs = lhs * rhs }
    public static func *= (lhs: inout MediaTime, rhs: Double) { lhs = lhs * rhs }

    private static func sum(_ lhs: MediaTime, _ rhs: MediaTime, negatingRight: Bool) -> MediaTime {
        var right = rhs.kind
        if negatingRight {
            if right == .positiveInfinity {
                right = .negativeInfinity
            } else if right == .negativeInfinity {
                right = .positiveInfinity
            }
        }
        let left = lhs.kind
        if left == .invalid || right == .invalid { return .invalid }
        let leftInfinite = left == .positiveInfinity || left == .negativeInfinity
        let rightInfinite = right == .positiveInfinity || right == .negativeInfinity
        if leftInfinite && rightInfinite { return left == right ? infinity(left) : .invalid }
        if leftInfinite { return infinity(left) }
        if rightInfinite { return infinity(right) }
        if left == .indefinite || right == .indefinite { return .indefinite }

        let rounded = lhs.hasBeenRounded || rhs.hasBeenRounded
        let sign: Int128 = negatingRight ? -1 : 1
        if lhs.timescale == rhs.timescale {
            let exact = Int128(lhs.value) + sign * Int128(rhs.value)
            return fit(exact, over: Int128(lhs.timescale), timescale: lhs.timescale, rounded: rounded)
        }
        let a = Int64(lhs.timescale)
        let b = Int64(rhs.timescale)
        let common = a / Int64(gcd(UInt64(a), UInt64(b))) * b
        let exact = Int128(lhs.value) * Int128(common / a) + sign * Int128(rhs.value) * Int128(common / b)
        let timescale = common <= Int64(maxTimescale) ? Int32(common) : maxTimescale
        return fit(exact, over: Int128(common), timescale: timescale, rounded: rounded)
    }

    private static func product(_ time: MediaTime, _ multiplier: Int64) -> MediaTime {
        switch time.kind {
        case .invalid, .indefinite: return time.kind == .invalid ? .invalid : .indefinite
        case .positiveInfinity: return multiplier < 0 ? .negativeInfinity : .positiveInfinity
        case .negativeInfinity: return multiplier < 0 ? .positiveInfinity : .negativeInfinity
        case .numeric:
            let exact = Int128(time.value) * Int128(multiplier)
            return fit(exact, over: Int128(time.timescale), timescale: time.timescale, rounded: time.hasBeenRounded)
        }
    }

    private static func product(_ time: MediaTime, _ multiplier: Double) -> MediaTime {
        if multiplier.isNaN { return .invalid }
        switch time.kind {
        case .invalid, .indefinite: return time.kind == .invalid ? .invalid : .indefinite
        case .positiveInfinity: return multiplier < 0 ? .negativeInfinity : .positiveInfinity
        case .negativeInfinity: return multiplier < 0 ? .positiveInfinity : .negativeInfinity
        case .numeric:
            if multiplier.isInfinite {
                if time.value == 0 { return .invalid }
                return (time.value < 0) != (multiplier < 0) ? .negativeInfinity : .positiveInfinity
            }
            // Core Media's rule: a timescale below 65536 is doubled until it reaches it.
            var scale = time.timescale
            while scale < 65536 && scale <= Int32.max / 2 { scale *= 2 }
            var rounded = time.hasBeenRounded
            while true {
                let exact = Double(time.value) * multiplier * (Double(scale) / Double(time.timescale))
                let nearest = exact.rounded(.toNearestOrAwayFromZero)
                if let value = Int64(exactly: nearest) {
                    var result = MediaTime(value: value, timescale: scale)
                    if rounded || nearest != exact { result.flags.insert(.hasBeenRounded) }
                    return result
                }
                guard scale > 1 else { return exact < 0 ? .negativeInfinity : .positiveInfinity }
                scale /= 2
                rounded = true
            }
        }
    }

    /// The time nearest to `exact / denominator` seconds at `timescale`, halving the timescale
    /// while the value overflows and saturating to ±infinity at timescale 1.
    private static func fit(_ exact: Int128, over denominator: Int128, timescale: Int32, rounded: Bool)
        -> MediaTime
    {
        var scale = timescale
        var wasRounded = rounded
        while true {
            let value: Int128?
            if Int128(scale) == denominator {
                value = exact
            } else {
                let (quotient, remainder) = scaled(exact, by: Int128(scale), over: denominator)
                if remainder != 0 { wasRounded = true }
                value = quotient.map { round($0, remainder, over: denominator, method: .default, upscaling: false) }
            }
            if let value, let fitted = Int64(exactly: value) {
                var result = MediaTime(value: fitted, timescale: scale)
                if wasRounded { result.flags.insert(.hasBeenRounded) }
                return result
            }
            guard scale > 1 else { return exact < 0 ? .negativeInfinity : .positiveInfinity }
            scale /= 2
        }
    }

    /// `numerator * factor / denominator` as a truncated quotient (nil on 128-bit overflow) and
    /// a remainder with the sign of `numerator`. `denominator` and `factor` are positive.
    private static func scaled(_ numerator: Int128, by factor: Int128, over denominator: Int128)
        -> (quotient: Int128?, remainder: Int128)
    {
        let whole = numerator / denominator
        let part = numerator % denominator  // |part| < denominator ≤ 2⁶³: part * factor fits.
        let spread = part * factor
        let (high, overflow) = whole.multipliedReportingOverflow(by: factor)
        let (sum, overflow2) = high.addingReportingOverflow(spread / denominator)
        return (overflow || overflow2 ? nil : sum, spread % denominator)
    }

    /// Applies `method` to the truncated quotient `quotient` with remainder `remainder` (sign of
    /// the exact value) of a division by the positive `denominator`.
    private static func round(
        _ quotient: Int128, _ remainder: Int128, over denominator: Int128, method: MediaTimeRoundingMethod,
        upscaling: Bool
    ) -> Int128 {
        guard remainder != 0 else { return quotient }
        let away: Int128 = remainder > 0 ? 1 : -1
        switch method {
        case .roundHalfAwayFromZero:
            return remainder.magnitude * 2 >= denominator.magnitude ? quotient + away : quotient
        case .roundTowardZero: return quotient
        case .roundAwayFromZero: return quotient + away
        case .quickTime: return upscaling ? quotient + away : quotient
        case .roundTowardPositiveInfinity: return remainder > 0 ? quotient + 1 : quotient
        case .roundTowardNegativeInfinity: return remainder < 0 ? quotient - 1 : quotient
        }
    }

    private static func infinity(_ kind: Kind) -> MediaTime {
        kind == .positiveInfinity ? .positiveInfinity : .negativeInfinity
    }

    private static func gcd(_ a: UInt64, _ b: UInt64) -> UInt64 {
        var (x, y) = (a, b)
        while y != 0 { (x, y) = (y, x % y) }
        return max(x, 1)
    }

    // MARK: Kind

    /// The five kinds of time, in Core Media's sort order.
    package enum Kind: Int, Comparable, Hashable {
        case negativeInfinity
        case numeric
        case indefinite
        case positiveInfinity
        case invalid

        package static func < (lhs: Kind, rhs: Kind) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// Which of the five kinds this time is.
    package var kind: Kind {
        guard flags.contains(.valid) else { return .invalid }
        if flags.contains(.positiveInfinity) { return .positiveInfinity }
        if flags.contains(.negativeInfinity) { return .negativeInfinity }
        if flags.contains(.indefinite) { return .indefinite }
        return timescale > 0 ? .numeric : .invalid
    }
}

/// The flags of a ``MediaTime``, Core Media's `CMTimeFlags`.
///
/// Thread safety: a value type; freely sendable.
public struct MediaTimeFlags: OptionSet, Sendable, Hashable {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Set on every valid time; a time without it is invalid.
    public static let valid = MediaTimeFlags(rawValue: 1 << 0)
    /// The value was rounded on the way (a conversion or an operation could not be exact).
    public static let hasBeenRounded = MediaTimeFlags(rawValue: 1 << 1)
    /// The time is +infinity; value and timescale are ignored.
    public static let positiveInfinity = MediaTimeFlags(rawValue: 1 << 2)
    /// The time is -infinity; value and timescale are ignored.
    public static let negativeInfinity = MediaTimeFlags(rawValue: 1 << 3)
    /// The time is indefinite (unknown); value and timescale are ignored.
    public static let indefinite = MediaTimeFlags(rawValue: 1 << 4)
    /// The flags that make a time non-numeric: the infinities and indefinite.
    public static let impliedValueFlagsMask: MediaTimeFlags = [.positiveInfinity, .negativeInfinity, .indefinite]
}

/// How a conversion to another timescale rounds, Core Media's `CMTimeRoundingMethod`.
public enum MediaTimeRoundingMethod: UInt32, Sendable, Hashable {
    /// Rounds to nearest, halves away from zero (the default).
    case roundHalfAwayFromZero = 1
    /// Rounds toward zero.
    case roundTowardZero = 2
    /// Rounds away from zero.
    case roundAwayFromZero = 3
    /// Toward zero when converting to a smaller timescale, away from zero when converting to a
    /// larger one; never rounds a negative time to zero (gives `-1/newTimescale` instead).
    case quickTime = 4
    /// Rounds toward +infinity.
    case roundTowardPositiveInfinity = 5
    /// Rounds toward -infinity.
    case roundTowardNegativeInfinity = 6

    /// The default method: ``roundHalfAwayFromZero``.
    public static let `default` = MediaTimeRoundingMethod.roundHalfAwayFromZero
}
