/// A seeded mutator for fuzzing: the same seed gives the same inputs, so a run can be repeated.
/// Mutations are byte flips, interesting byte values, insertions, deletions, repeated and spliced
/// chunks, and (for text) tokens that break number and bracket parsing.
///
/// Thread safety: a value type; use one per thread.
public struct FuzzMutator: Sendable {
    private var state: UInt64

    /// A mutator starting from `seed`.
    public init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }

    /// The next pseudo-random number (SplitMix64).
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<bound` (`bound` > 0).
    public mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(max(1, bound))) }

    static let interestingBytes: [UInt8] = [0, 1, 0x7F, 0x80, 0xFF, 0xFE, 0x20, 0x0A, 0x09, 0x28, 0x29, 0x2D, 0x78]
    static let tokens: [String] = [
        "(", ")", "x", "-", "inf", "nan", "-1", "0", "4294967295", "4294967296", "99999999999", "70000",
        "0.000s", "5000.000s", "1e300", "Discrete ", "Stepwise ", "Continuous ", "Size: ", "Interval: ",
        " fps", "[9]: 'MJPG' (Motion-JPEG, compressed)", "'", "step ", "/", "\n", "\t", "16384x16384",
    ]

    /// `input` changed in 1–8 places; `others` (other seeds) may be spliced in.
    public mutating func mutate(_ input: [UInt8], others: [[UInt8]], text: Bool) -> [UInt8] {
        var bytes = input
        for _ in 0...below(8) {
            switch below(text ? 9 : 7) {
            case 0 where !bytes.isEmpty:
                bytes[below(bytes.count)] ^= UInt8(1 << below(8))
            case 1 where !bytes.isEmpty:
                bytes[below(bytes.count)] = Self.interestingBytes[below(Self.interestingBytes.count)]
            case 2:
                bytes.insert(UInt8(truncatingIfNeeded: next()), at: below(bytes.count + 1))
            case 3 where !bytes.isEmpty:
                let start = below(bytes.count)
                bytes.removeSubrange(start..<min(bytes.count, start + 1 + below(16)))
            case 4 where !bytes.isEmpty:
                let start = below(bytes.count)
                let chunk = Array(bytes[start..<min(bytes.count, start + 1 + below(64))])
                bytes.insert(contentsOf: chunk, at: below(bytes.count + 1))
            case 5 where !others.isEmpty:
                let other = others[below(others.count)]
                guard !other.isEmpty else { break }
                let start = below(other.count)
                let chunk = other[start..<min(other.count, start + 1 + below(256))]
                let at = below(bytes.count + 1)
                bytes.replaceSubrange(at..<min(bytes.count, at + chunk.count), with: chunk)
            case 6 where bytes.count > 4:
                // A 16- or 32-bit field set to an extreme (sizes and lengths in binary formats).
                let at = below(bytes.count - 4)
                let value: UInt32 = [0, 1, 0xFFFF, 0xFFFF_FFFF, 0x7FFF_FFFF, 0x8000_0000][below(6)]
                for index in 0..<(below(2) == 0 ? 2 : 4) {
                    bytes[at + index] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(index)))
                }
            case 7, 8:
                let token = Array(Self.tokens[below(Self.tokens.count)].utf8)
                let at = below(bytes.count + 1)
                if below(2) == 0, at < bytes.count {
                    // Replace a run of digits or one word with the token.
                    var end = at
                    while end < bytes.count, bytes[end] != 0x20, bytes[end] != 0x0A, end - at < 12 { end += 1 }
                    bytes.replaceSubrange(at..<end, with: token)
                } else {
                    bytes.insert(contentsOf: token, at: at)
                }
            default:
                break
            }
        }
        if bytes.count > 1 << 20 { bytes.removeSubrange((1 << 20)...) }
        return bytes
    }
}
