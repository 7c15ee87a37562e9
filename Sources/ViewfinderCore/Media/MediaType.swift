/// The kind of media a device produces or a connection carries, like `AVMediaType`.
public struct MediaType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Video frames.
    public static let video = MediaType(rawValue: "vide")
    /// Audio samples (microphones: ALSA capture devices and the virtual microphone).
    public static let audio = MediaType(rawValue: "soun")

    public var description: String { rawValue }
}
