// AVFoundation's object model where ported code depends on it: capture objects are NSObjects
// there, so inputs, outputs, connections and sessions compare and hash by identity (`==`,
// `firstIndex(of:)`, `Set<AVCaptureOutput>`, dictionary keys); and the top-level names Swift
// gives a few of AVFoundation's and Core Media's types.
import Foundation

extension CaptureInput: Hashable {
    /// Identity, as `NSObject`'s `isEqual(_:)`: an input equals only itself.
    public static func == (lhs: CaptureInput, rhs: CaptureInput) -> Bool { lhs === rhs }
    /// Hashes the object's identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

extension CaptureInput.Port: Hashable {
    /// Identity: a port equals only itself.
    public static func == (lhs: CaptureInput.Port, rhs: CaptureInput.Port) -> Bool { lhs === rhs }
    /// Hashes the object's identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

extension CaptureOutput: Hashable {
    /// Identity, as `NSObject`'s `isEqual(_:)`: an output equals only itself.
    public static func == (lhs: CaptureOutput, rhs: CaptureOutput) -> Bool { lhs === rhs }
    /// Hashes the object's identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

extension CaptureConnection: Hashable {
    /// Identity: a connection equals only itself.
    public static func == (lhs: CaptureConnection, rhs: CaptureConnection) -> Bool { lhs === rhs }
    /// Hashes the object's identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

extension CaptureSession: Hashable {
    /// Identity: a session equals only itself.
    public static func == (lhs: CaptureSession, rhs: CaptureSession) -> Bool { lhs === rhs }
    /// Hashes the object's identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// Whether the app may use a kind of capture device (`AVAuthorizationStatus`, which Swift
/// imports at the top level): the same type as ``CaptureDevice/AuthorizationStatus``.
public typealias AuthorizationStatus = CaptureDevice.AuthorizationStatus

/// A time scale, in units per second (Core Media's `CMTimeScale`): ``MediaTime/timescale``'s type.
public typealias MediaTimeScale = Int32

/// A file type for writers and recorders (`AVFileType`), by its uniform type identifier.
///
/// Thread safety: a value type; freely sendable.
public struct FileType: RawRepresentable, Sendable, Hashable {
    /// The uniform type identifier (`"com.apple.quicktime-movie"`).
    public let rawValue: String
    /// The file type with identifier `rawValue`.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// The file type with identifier `rawValue`.
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// A QuickTime movie (`.mov`).
    public static let mov = FileType(rawValue: "com.apple.quicktime-movie")
    /// An MPEG-4 file (`.mp4`).
    public static let mp4 = FileType(rawValue: "public.mpeg-4")
    /// An iTunes video file (`.m4v`).
    public static let m4v = FileType(rawValue: "com.apple.m4v-video")
    /// An MPEG-4 audio file (`.m4a`).
    public static let m4a = FileType(rawValue: "com.apple.m4a-audio")
    /// A Matroska file (`.mkv`), which ViewfinderMovie also writes.
    public static let mkv = FileType(rawValue: "org.matroska.mkv")

    /// The file type of a path's extension (`mov`, `mp4`, `m4v`, `m4a`, `mkv`), `nil` for others.
    public init?(pathExtension: String) {
        switch pathExtension.lowercased() {
        case "mov", "qt": self = .mov
        case "mp4": self = .mp4
        case "m4v": self = .m4v
        case "m4a": self = .m4a
        case "mkv": self = .mkv
        default: return nil
        }
    }
}

/// A range of time (Core Media's `CMTimeRange`): a start and a duration.
///
/// Thread safety: a value type; freely sendable.
public struct MediaTimeRange: Sendable, Hashable {
    /// Where it starts.
    public var start: MediaTime
    /// How long it lasts.
    public var duration: MediaTime
    /// The range from `start` lasting `duration`.
    public init(start: MediaTime, duration: MediaTime) {
        self.start = start
        self.duration = duration
    }
    /// Where it ends: `start + duration`.
    public var end: MediaTime { start + duration }
}
