import Viewfinder

/// A camera's formats as `v4l2-ctl --list-formats-ext` prints them (the form users paste into bug
/// reports), parsed: each format's FourCC, flags, sizes (discrete or stepwise) and the frame
/// intervals per size. Optional `Card type`, `Driver name` and `Bus info` lines (as
/// `v4l2-ctl --info` prints them, possibly behind `#`) give the camera's identity.
///
/// Thread safety: a value type.
struct V4L2FormatListing: Sendable, Hashable {
    /// A V4L2 fraction of a second.
    struct Fraction: Sendable, Hashable {
        var numerator: UInt32
        var denominator: UInt32
        var seconds: Double { Double(numerator) / Double(denominator) }
    }

    /// The frame intervals of one size.
    enum Intervals: Sendable, Hashable {
        /// A list of discrete intervals.
        case discrete([Fraction])
        /// Any interval from `min` to `max` in steps of `step`.
        case stepwise(min: Fraction, max: Fraction, step: Fraction)
    }

    /// A frame size entry.
    enum Size: Sendable, Hashable {
        case discrete(width: UInt32, height: UInt32)
        case stepwise(
            minWidth: UInt32, minHeight: UInt32, maxWidth: UInt32, maxHeight: UInt32, stepWidth: UInt32,
            stepHeight: UInt32)

        func contains(width: UInt32, height: UInt32) -> Bool {
            switch self {
            case .discrete(let w, let h): return w == width && h == height
            case .stepwise(let minW, let minH, let maxW, let maxH, let stepW, let stepH):
                return width >= minW && width <= maxW && height >= minH && height <= maxH
                    && (width - minW) % max(1, stepW) == 0 && (height - minH) % max(1, stepH) == 0
            }
        }
    }

    /// One pixel format and its sizes.
    struct Format: Sendable, Hashable {
        var fourCC: UInt32
        var description: String
        var isCompressed: Bool
        var isEmulated: Bool
        var sizes: [(size: Size, intervals: Intervals)]

        static func == (lhs: Format, rhs: Format) -> Bool {
            lhs.fourCC == rhs.fourCC && lhs.description == rhs.description && lhs.isCompressed == rhs.isCompressed
                && lhs.isEmulated == rhs.isEmulated && lhs.sizes.map(\.size) == rhs.sizes.map(\.size)
                && lhs.sizes.map(\.intervals) == rhs.sizes.map(\.intervals)
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(fourCC)
            hasher.combine(sizes.count)
        }
    }

    var card: String?
    var driver: String?
    var busInfo: String?
    var formats: [Format] = []

    /// Parses a listing. Throws ``CaptureError/Code/invalidArgument`` naming the line it cannot
    /// read or whose values no camera has: sizes outside 1…``PixelBuffer/maximumDimension`` (or a
    /// range whose minimum exceeds its maximum), rates that are not finite and positive or above
    /// ~4.29 M fps, intervals above ~4,295 s, ranges written out of order.
    static func parse(_ text: String) throws(CaptureError) -> V4L2FormatListing {
        var listing = V4L2FormatListing()
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var line = rawLine.trimmingWhitespace()
            if line.hasPrefix("#") { line = String(line.dropFirst()).trimmingWhitespace() }
            func fail(_ why: String) -> CaptureError {
                CaptureError(
                    .invalidArgument,
                    "format listing line \(number + 1) ('\(rawLine)'): \(why); paste what `v4l2-ctl --list-formats-ext` prints"
                )
            }
            if let value = line.value(after: "Card type") {
                listing.card = value
            } else if let value = line.value(after: "Driver name") {
                listing.driver = value
            } else if let value = line.value(after: "Bus info") {
                listing.busInfo = value
            } else if line.hasPrefix("["), let quoteStart = line.firstIndex(of: "'") {
                // [0]: 'YUYV' (YUYV 4:2:2)   or   [1]: 'MJPG' (Motion-JPEG, compressed)
                let afterQuote = line[line.index(after: quoteStart)...]
                guard let quoteEnd = afterQuote.firstIndex(of: "'") else { throw fail("unterminated FourCC") }
                let code = String(afterQuote[..<quoteEnd])
                guard let fourCC = V4L2FourCC.code(code) else { throw fail("'\(code)' is not a FourCC") }
                var description = ""
                if let open = line.firstIndex(of: "("), let close = line.lastIndex(of: ")"), open < close {
                    description = String(line[line.index(after: open)..<close])
                }
                listing.formats.append(
                    Format(
                        fourCC: fourCC, description: description, isCompressed: description.contains("compressed"),
                        isEmulated: description.contains("emulated"), sizes: []))
            } else if let rest = line.value(after: "Size") {
                guard !listing.formats.isEmpty else { throw fail("a size before any format") }
                let size: Size
                let words = rest.split(separator: " ").map(String.init)
                if words.first == "Discrete", words.count >= 2, let (w, h) = parseSize(words[1]) {
                    guard isFrameSize(w, h) else { throw fail(Self.sizeRefusal(w, h)) }
                    size = .discrete(width: w, height: h)
                } else if words.first == "Stepwise" || words.first == "Continuous", words.count >= 4,
                    let (minW, minH) = parseSize(words[1]), let (maxW, maxH) = parseSize(words[3])
                {
                    guard isFrameSize(minW, minH) else { throw fail(Self.sizeRefusal(minW, minH)) }
                    guard isFrameSize(maxW, maxH) else { throw fail(Self.sizeRefusal(maxW, maxH)) }
                    guard minW <= maxW, minH <= maxH else {
                        throw fail("the smallest size \(minW)x\(minH) exceeds the largest \(maxW)x\(maxH)")
                    }
                    var step: (UInt32, UInt32) = (1, 1)
                    if let index = words.firstIndex(of: "step"), index + 1 < words.count {
                        let parts = words[index + 1].split(separator: "/").compactMap { UInt32($0) }
                        if parts.count == 2 { step = (max(1, parts[0]), max(1, parts[1])) }
                    }
                    size = .stepwise(
                        minWidth: minW, minHeight: minH, maxWidth: maxW, maxHeight: maxH, stepWidth: step.0,
                        stepHeight: step.1)
                } else {
                    throw fail("cannot read the size")
                }
                listing.formats[listing.formats.count - 1].sizes.append((size, .discrete([])))
            } else if let rest = line.value(after: "Interval") {
                guard let format = listing.formats.last, let last = format.sizes.last else {
                    throw fail("an interval before any size")
                }
                let intervals: Intervals
                if rest.hasPrefix("Discrete") {
                    let parsed: Fraction?
                    do throws(Refusal) {
                        parsed = try parseInterval(rest)
                    } catch {
                        throw fail(error.reason)
                    }
                    guard let interval = parsed else { throw fail("cannot read the interval") }
                    guard case .discrete(let existing) = last.intervals else { throw fail("mixed interval kinds") }
                    intervals = .discrete(existing + [interval])
                } else if rest.hasPrefix("Stepwise") || rest.hasPrefix("Continuous") {
                    let parsed: Intervals?
                    do throws(Refusal) {
                        parsed = try parseIntervalRange(rest)
                    } catch {
                        throw fail(error.reason)
                    }
                    guard let range = parsed else { throw fail("cannot read the interval range") }
                    intervals = range
                } else {
                    throw fail("unknown interval kind")
                }
                let formatIndex = listing.formats.count - 1
                listing.formats[formatIndex].sizes[format.sizes.count - 1].intervals = intervals
            }
        }
        guard !listing.formats.isEmpty else {
            throw CaptureError(
                .invalidArgument, "the format listing names no formats: paste what `v4l2-ctl --list-formats-ext` prints"
            )
        }
        return listing
    }

    /// Why a value on a line cannot be taken (the line number is added by ``parse(_:)``).
    private struct Refusal: Error {
        var reason: String
    }

    private static func parseSize(_ text: String) -> (UInt32, UInt32)? {
        let parts = text.split(separator: "x").compactMap { UInt32($0) }
        return parts.count == 2 ? (parts[0], parts[1]) : nil
    }

    private static func isFrameSize(_ width: UInt32, _ height: UInt32) -> Bool {
        (1...UInt32(PixelBuffer.maximumDimension)).contains(width)
            && (1...UInt32(PixelBuffer.maximumDimension)).contains(height)
    }

    private static func sizeRefusal(_ width: UInt32, _ height: UInt32) -> String {
        "size \(width)x\(height) is outside 1…\(PixelBuffer.maximumDimension) pixels a side"
    }

    /// The largest rate a fraction of a thousandth of a frame can hold: UInt32.max / 1000 fps.
    static let maximumFramesPerSecond = Double(UInt32.max) / 1000
    /// The longest interval microseconds in a UInt32 can hold: UInt32.max µs (~4,295 s).
    static let maximumIntervalSeconds = Double(UInt32.max) / 1_000_000

    /// `Discrete 0.033s (30.000 fps)`: the rate in parentheses is exact where the seconds are rounded.
    private static func parseInterval(_ text: String) throws(Refusal) -> Fraction? {
        if let open = text.firstIndex(of: "("), let fps = Double(text[text.index(after: open)...].prefix { $0 != " " })
        {
            return try checkedFraction(framesPerSecond: fps)
        }
        let words = text.split(separator: " ")
        guard words.count >= 2, let seconds = Double(words[1].dropLast()) else { return nil }
        return try checkedFraction(seconds: seconds)
    }

    /// `Stepwise 0.033s - 1.000s with step 0.033s (1.000-30.000 fps)` or `Continuous 0.033s - 1.000s (…)`.
    private static func parseIntervalRange(_ text: String) throws(Refusal) -> Intervals? {
        let words = text.split(separator: " ").map(String.init)
        guard words.count >= 4, let low = Double(words[1].dropLast()), let high = Double(words[3].dropLast()) else {
            return nil
        }
        var minimum = try checkedFraction(seconds: low)
        var maximum = try checkedFraction(seconds: high)
        let open = text.firstIndex(of: "(")
        let close = text.firstIndex(of: ")")
        if open != nil || close != nil {
            guard let open, let close, open < close else {
                throw Refusal(reason: "the rates in parentheses are not enclosed by '(' … ')'")
            }
            let rates = text[text.index(after: open)..<close].replacingOccurrences(of: " fps", with: "")
                .split(separator: "-").compactMap { Double($0) }
            if rates.count == 2 {
                maximum = try checkedFraction(framesPerSecond: rates[0])
                minimum = try checkedFraction(framesPerSecond: rates[1])
            }
        }
        guard minimum.seconds <= maximum.seconds else {
            throw Refusal(reason: "the shortest interval exceeds the longest")
        }
        var step = Fraction(numerator: 1, denominator: 1_000_000)
        if let index = words.firstIndex(of: "step"), index + 1 < words.count,
            let seconds = Double(words[index + 1].dropLast())
        {
            step = try checkedFraction(seconds: seconds)
        }
        return .stepwise(min: minimum, max: maximum, step: step)
    }

    private static func checkedFraction(framesPerSecond fps: Double) throws(Refusal) -> Fraction {
        guard fps.isFinite, fps > 0, fps <= maximumFramesPerSecond else {
            throw Refusal(
                reason: "a rate of \(fps) fps is not a positive rate up to \(Int(maximumFramesPerSecond)) fps")
        }
        return fraction(framesPerSecond: fps)
    }

    private static func checkedFraction(seconds: Double) throws(Refusal) -> Fraction {
        guard seconds.isFinite, seconds > 0, seconds <= maximumIntervalSeconds else {
            throw Refusal(
                reason: "an interval of \(seconds) s is not a positive interval up to \(Int(maximumIntervalSeconds)) s")
        }
        return fraction(seconds: seconds)
    }

    /// 1/fps as a reduced fraction, from the rate to three decimals (7.5 fps → 2/15); the rate is
    /// clamped to what the fraction can hold.
    static func fraction(framesPerSecond fps: Double) -> Fraction {
        let thousandths = (fps * 1000).rounded()
        let denominator = thousandths.isNaN ? 1 : UInt32(max(1, min(Double(UInt32.max), thousandths)))
        return reduced(1000, denominator)
    }

    /// `seconds` as a reduced fraction of microseconds, clamped to what the fraction can hold.
    static func fraction(seconds: Double) -> Fraction {
        let micro = (seconds * 1_000_000).rounded()
        let numerator = micro.isNaN ? 1 : UInt32(max(1, min(Double(UInt32.max), micro)))
        return reduced(numerator, 1_000_000)
    }

    private static func reduced(_ numerator: UInt32, _ denominator: UInt32) -> Fraction {
        var (a, b) = (numerator, denominator)
        while b != 0 { (a, b) = (b, a % b) }
        return Fraction(numerator: numerator / a, denominator: denominator / a)
    }
}

extension StringProtocol {
    fileprivate func trimmingWhitespace() -> String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }

    /// The text after `key` and a colon (`Size: Discrete 640x480` → `Discrete 640x480`).
    fileprivate func value(after key: String) -> String? {
        guard hasPrefix(key) else { return nil }
        let rest = dropFirst(key.count).drop { $0 == " " || $0 == "\t" }
        guard rest.first == ":" else { return nil }
        return String(rest.dropFirst()).trimmingWhitespace()
    }
}
