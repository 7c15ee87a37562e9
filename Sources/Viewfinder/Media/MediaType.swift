/// The kind of media a device produces or a connection carries, like `AVMediaType`.
public struct MediaType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Video frames.
    public static let video = MediaType(rawValue: "vide")
    /// Audio samples (no audio devices exist yet; asking for them finds none).
    public static let audio = MediaType(rawValue: "soun")

    public var description: String { rawValue }
}
