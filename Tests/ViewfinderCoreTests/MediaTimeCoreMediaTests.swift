import Testing

@testable import Viewfinder
@testable import ViewfinderALSA
@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderPipeWire
@testable import ViewfinderPreviewWindow
@testable import ViewfinderTestSupport
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

/// `MediaTime` against Core Media's documented rules (`CMTimeCompare`, `CMTimeAdd`,
/// `CMTimeSubtract`, `CMTimeMultiply`, `CMTimeMakeWithSeconds`).
@Suite("MediaTime follows Core Media")
struct MediaTimeCoreMediaTests {
    static let numeric = MediaTime(value: 1, timescale: 3)

    @Test("MediaTime() is invalid, like CMTime(); a timescale of zero makes an invalid time")
    func defaultIsInvalid() {
        let time = MediaTime()
        #expect(!time.isValid && !time.isNumeric && time.seconds.isNaN)
        #expect(time == .invalid && time == kMediaTimeInvalid)
        #expect(!MediaTimeMake(value: 1, timescale: 0).isValid)
        #expect(MediaTimeMake(value: 1, timescale: 30).isNumeric)
    }

    @Test("the constants are the kinds they name, and only that kind")
    func kinds() {
        #expect(kMediaTimePositiveInfinity.isPositiveInfinity && kMediaTimePositiveInfinity.isValid)
        #expect(kMediaTimeNegativeInfinity.isNegativeInfinity && !kMediaTimeNegativeInfinity.isNumeric)
        #expect(kMediaTimeIndefinite.isIndefinite && !kMediaTimeIndefinite.isPositiveInfinity)
        #expect(kMediaTimeZero.isNumeric && kMediaTimeZero.seconds == 0)
        #expect(MediaTimeGetSeconds(.positiveInfinity) == .infinity)
        #expect(MediaTimeGetSeconds(.negativeInfinity) == -.infinity)
        #expect(MediaTimeGetSeconds(.indefinite).isNaN && MediaTimeGetSeconds(.invalid).isNaN)
        #expect(MediaTimeGetSeconds(MediaTimeMake(value: 3, timescale: 2)) == 1.5)
        // Value and timescale are ignored once a non-numeric flag is set; the valid flag rules.
        let odd = MediaTime(value: 42, timescale: 7, flags: [.valid, .positiveInfinity])
        #expect(odd.isPositiveInfinity && odd == .positiveInfinity)
        #expect(!MediaTime(value: 42, timescale: 7, flags: [.positiveInfinity]).isValid)
    }

    @Test("order: -infinity < finite < indefinite < +infinity < invalid")
    func order() {
        let ascending: [MediaTime] = [
            .negativeInfinity, MediaTime(value: Int64.min, timescale: 1), MediaTime(value: -100, timescale: 1),
            .zero, Self.numeric, MediaTime(value: Int64.max, timescale: 1), .indefinite, .positiveInfinity,
            .invalid,
        ]
        for (i, lhs) in ascending.enumerated() {
            for (j, rhs) in ascending.enumerated() {
                let expected: Int32 = i < j ? -1 : (i == j ? 0 : 1)
                #expect(MediaTimeCompare(lhs, rhs) == expected, "\(lhs) vs \(rhs)")
                #expect((lhs < rhs) == (i < j) && (lhs == rhs) == (i == j))
            }
        }
        #expect(ascending.reversed().sorted() == ascending)
        #expect(MediaTime.invalid == MediaTime() && MediaTime.invalid >= .positiveInfinity)
        #expect([MediaTime.invalid, .fps(30), .fps(15)].min() == .fps(30))
        #expect([MediaTime.invalid, .fps(30), .fps(15)].max() == .invalid)
    }

    @Test("equal times hash alike; rounding plays no part in equality")
    func hashing() {
        var rounded = MediaTime(value: 2, timescale: 6)
        rounded.flags.insert(.hasBeenRounded)
        #expect(rounded == Self.numeric && rounded.hashValue == Self.numeric.hashValue)
        let infinities = Set([
            MediaTime.positiveInfinity, MediaTime(value: 9, timescale: 1, flags: [.valid, .positiveInfinity]),
        ])
        #expect(infinities.count == 1)
        let invalids = Set([MediaTime.invalid, MediaTime(value: 5, timescale: 0), MediaTime(value: 7, timescale: -3)])
        #expect(invalids.count == 1)
        // Int64.min has no positive counterpart: reducing the fraction must not trap.
        let minimum = Set([MediaTime(value: Int64.min, timescale: 1), MediaTime(value: Int64.min, timescale: 2)])
        #expect(minimum.count == 2)
        #expect(MediaTime(value: Int64.min, timescale: 2) == MediaTime(value: Int64.min / 2, timescale: 1))
        #expect(
            MediaTime(value: Int64.min, timescale: 2).hashValue
                == MediaTime(value: Int64.min / 2, timescale: 1).hashValue)
    }

    /// (lhs, rhs, lhs + rhs, lhs - rhs) by CMTimeAdd's and CMTimeSubtract's documented rules.
    static let sums: [(MediaTime, MediaTime, MediaTime, MediaTime)] = [
        (.invalid, numeric, .invalid, .invalid),
        (numeric, .invalid, .invalid, .invalid),
        (.invalid, .positiveInfinity, .invalid, .invalid),
        (.indefinite, .invalid, .invalid, .invalid),
        (.positiveInfinity, .positiveInfinity, .positiveInfinity, .invalid),
        (.negativeInfinity, .negativeInfinity, .negativeInfinity, .invalid),
        (.positiveInfinity, .negativeInfinity, .invalid, .positiveInfinity),
        (.negativeInfinity, .positiveInfinity, .invalid, .negativeInfinity),
        (.positiveInfinity, numeric, .positiveInfinity, .positiveInfinity),
        (numeric, .positiveInfinity, .positiveInfinity, .negativeInfinity),
        (numeric, .negativeInfinity, .negativeInfinity, .positiveInfinity),
        (.negativeInfinity, numeric, .negativeInfinity, .negativeInfinity),
        (.positiveInfinity, .indefinite, .positiveInfinity, .positiveInfinity),
        (.indefinite, .negativeInfinity, .negativeInfinity, .positiveInfinity),
        (.indefinite, numeric, .indefinite, .indefinite),
        (numeric, .indefinite, .indefinite, .indefinite),
        (.indefinite, .indefinite, .indefinite, .indefinite),
        (
            numeric, MediaTime(value: 1, timescale: 6), MediaTime(value: 1, timescale: 2),
            MediaTime(value: 1, timescale: 6)
        ),
    ]

    @Test("addition and subtraction follow CMTimeAdd and CMTimeSubtract", arguments: 0..<sums.count)
    func addAndSubtract(row: Int) {
        let (lhs, rhs, sum, difference) = Self.sums[row]
        #expect((lhs + rhs).kind == sum.kind && lhs + rhs == sum, "\(lhs) + \(rhs)")
        #expect((lhs - rhs).kind == difference.kind && lhs - rhs == difference, "\(lhs) - \(rhs)")
        #expect(MediaTimeAdd(lhs, rhs) == sum && MediaTimeSubtract(lhs, rhs) == difference)
    }

    @Test("multiplication follows CMTimeMultiply")
    func multiply() {
        #expect(!(MediaTime.invalid * 3).isValid)
        #expect((MediaTime.indefinite * -3).isIndefinite)
        #expect((MediaTime.positiveInfinity * 2).isPositiveInfinity)
        #expect((MediaTime.positiveInfinity * -2).isNegativeInfinity)
        #expect((MediaTime.negativeInfinity * Int64(-2)).isPositiveInfinity)
        #expect(
            MediaTimeMultiply(MediaTime(value: 1, timescale: 30), multiplier: 15) == MediaTime(value: 1, timescale: 2))
        #expect(MediaTimeMultiply(MediaTime(value: 1, timescale: 30), multiplier: 15).timescale == 30)
        #expect(Int32(4) * MediaTime(value: 1, timescale: 8) == MediaTime(value: 1, timescale: 2))
        let scaled = MediaTimeMultiplyByFloat64(MediaTime(value: 1, timescale: 30), multiplier: 0.5)
        #expect(scaled.timescale >= 65536 && abs(scaled.seconds - 1.0 / 60) < 1e-6)
        #expect(!(MediaTime(value: 1, timescale: 30) * Double.nan).isValid)
    }

    @Test("the frame gate idiom: lastTimestamp = MediaTime() lets the first frame through")
    func frameGate() {
        var lastTimestamp = MediaTime()
        #expect(!(MediaTimeMake(value: 0, timescale: 30) - lastTimestamp).isValid, "finite - invalid is invalid")
        var passed: [Int64] = []
        for frame in Int64(0)..<12 {
            let timestamp = MediaTimeMake(value: frame, timescale: 30)
            if timestamp - lastTimestamp >= MediaTimeMake(value: 1, timescale: 15) {
                passed.append(frame)
                lastTimestamp = timestamp
            }
        }
        #expect(passed == [0, 2, 4, 6, 8, 10])

        // The same with a camera's nanosecond clock, 30 fps frames stamped 33.4 ms apart.
        lastTimestamp = MediaTime()
        passed = []
        for frame in Int64(0)..<9 {
            let timestamp = MediaTime(value: 5_000_000_000 + frame * 33_400_000, timescale: 1_000_000_000)
            if timestamp - lastTimestamp >= MediaTimeMake(value: 1, timescale: 10) {
                passed.append(frame)
                lastTimestamp = timestamp
            }
        }
        #expect(passed == [0, 3, 6])
    }

    @Test("overflow halves the timescale, then saturates to ±infinity; nothing traps")
    func overflow() {
        let big = MediaTime(value: Int64.max, timescale: 1000)
        let doubled = big + big
        #expect(doubled.isNumeric && doubled.timescale == 500 && doubled.value == Int64.max)
        #expect((MediaTime(value: Int64.max, timescale: 1) + MediaTime(value: 1, timescale: 1)).isPositiveInfinity)
        #expect((MediaTime(value: Int64.min, timescale: 1) - MediaTime(value: 1, timescale: 1)).isNegativeInfinity)
        #expect(
            (MediaTime(value: Int64.max, timescale: 1) + MediaTime(value: Int64.max, timescale: 7)).isPositiveInfinity)
        #expect((MediaTime(value: Int64.max, timescale: 1) * Int64.max).isPositiveInfinity)
        #expect((MediaTime(value: Int64.max, timescale: 1) * Int64.min).isNegativeInfinity)
        let product = MediaTime(value: 3, timescale: 1_000_000_000) * Int64.max
        #expect(product.isNumeric && product.hasBeenRounded && product.timescale == 250_000_000)
        #expect(abs(product.seconds / (3 * Double(Int64.max) / 1e9) - 1) < 1e-12)
        #expect((MediaTime(value: Int64.max, timescale: 1) * 2.0).isPositiveInfinity)
        #expect(MediaTime(value: Int64.max, timescale: 1).converted(toTimescale: 1000).isPositiveInfinity)
    }

    @Test("timescales whose common multiple exceeds 10⁹ meet at 10⁹, rounded and flagged")
    func coarserTimescale() {
        let prime = MediaTime(value: 1, timescale: 999_999_937)
        let half = MediaTime(value: 1, timescale: 2)
        let sum = prime + half
        #expect(sum.timescale == kMediaTimeMaxTimescale && sum.value == 500_000_001 && sum.hasBeenRounded)
        #expect(!(MediaTime(value: 1, timescale: 3) + MediaTime(value: 1, timescale: 6)).hasBeenRounded)
        var rounded = MediaTime(value: 1, timescale: 3)
        rounded.flags.insert(.hasBeenRounded)
        #expect((rounded + .zero).hasBeenRounded, "a rounded operand rounds the result")
    }

    @Test("seconds convert without trapping: huge values halve the timescale or become infinite")
    func fromSeconds() {
        let tenBillion = MediaTime(seconds: 1e10)
        #expect(tenBillion.isNumeric && tenBillion.timescale == 500_000_000 && tenBillion.seconds == 1e10)
        #expect(!tenBillion.hasBeenRounded)
        #expect(MediaTimeMakeWithSeconds(1e300, preferredTimescale: 600).isPositiveInfinity)
        #expect(MediaTimeMakeWithSeconds(-1e300, preferredTimescale: 600).isNegativeInfinity)
        #expect(MediaTimeMakeWithSeconds(.infinity, preferredTimescale: 600).isPositiveInfinity)
        #expect(!MediaTimeMakeWithSeconds(.nan, preferredTimescale: 600).isValid)
        #expect(!MediaTimeMakeWithSeconds(1, preferredTimescale: 0).isValid)
        let inexact = MediaTimeMakeWithSeconds(0.123_456_7, preferredTimescale: 600)
        #expect(inexact == MediaTime(value: 74, timescale: 600) && inexact.hasBeenRounded)
        #expect(!MediaTimeMakeWithSeconds(0.5, preferredTimescale: 600).hasBeenRounded)
    }

    @Test("nanoseconds saturate instead of trapping")
    func nanoseconds() {
        #expect(MediaTime(value: Int64.max, timescale: 1).nanoseconds == Int64.max)
        #expect(MediaTime(value: Int64.min, timescale: 1).nanoseconds == Int64.min)
        #expect(MediaTime(seconds: 1e10).nanoseconds == Int64.max)
        #expect(MediaTime.positiveInfinity.nanoseconds == Int64.max)
        #expect(MediaTime.negativeInfinity.nanoseconds == Int64.min)
        #expect(MediaTime.indefinite.nanoseconds == 0 && MediaTime.invalid.nanoseconds == 0)
        #expect(MediaTime(value: 10_000_000_000, timescale: 1).nanoseconds == Int64.max)
        #expect(MediaTime(value: 9, timescale: 1).nanoseconds == 9_000_000_000)
    }

    /// (method, 1/3 at timescale 10, -1/3 at timescale 10).
    static let roundings: [(MediaTimeRoundingMethod, Int64, Int64)] = [
        (.roundHalfAwayFromZero, 3, -3), (.roundTowardZero, 3, -3), (.roundAwayFromZero, 4, -4),
        (.roundTowardPositiveInfinity, 4, -3), (.roundTowardNegativeInfinity, 3, -4),
    ]

    @Test("convertScale rounds as CMTimeRoundingMethod says", arguments: 0..<roundings.count)
    func convertScale(row: Int) {
        let (method, positive, negative) = Self.roundings[row]
        let up = MediaTimeConvertScale(MediaTime(value: 1, timescale: 3), timescale: 10, method: method)
        let down = MediaTimeConvertScale(MediaTime(value: -1, timescale: 3), timescale: 10, method: method)
        #expect(up.value == positive && up.timescale == 10 && up.hasBeenRounded)
        #expect(down.value == negative && down.timescale == 10 && down.hasBeenRounded)
    }

    @Test("convertScale: QuickTime rounding and non-numeric times")
    func convertScaleSpecialCases() {
        // Toward zero when the timescale shrinks, yet never a negative time to zero.
        #expect(MediaTime(value: -1, timescale: 30).convertScale(10, method: .quickTime).value == -1)
        #expect(MediaTime(value: 7, timescale: 30).convertScale(10, method: .quickTime).value == 2)
        // Away from zero when it grows.
        #expect(MediaTime(value: 1, timescale: 3).convertScale(10, method: .quickTime).value == 4)
        #expect(MediaTime.positiveInfinity.convertScale(600, method: .default).isPositiveInfinity)
        #expect(MediaTime.indefinite.convertScale(600, method: .default).isIndefinite)
        #expect(!MediaTime.invalid.convertScale(600, method: .default).isValid)
        #expect(!MediaTime(value: 1, timescale: 3).convertScale(0, method: .default).isValid)
        #expect(!MediaTime(value: 1, timescale: 3).convertScale(9, method: .default).hasBeenRounded)
    }

    @Test(
        "a custom exposure of a non-numeric duration is a typed error, not a trap",
        arguments: [MediaTime.invalid, .indefinite, .positiveInfinity, .negativeInfinity])
    func exposureOfNonNumericDuration(duration: MediaTime) throws {
        let rig = try SimulatedRig()
        let device = try rig.device
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        #expect(throws: CaptureError.self) { try device.setExposureModeCustom(duration: duration) }
        #expect(device.exposureMode == .continuousAutoExposure, "a refused duration changes nothing")
    }
}
