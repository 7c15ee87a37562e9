import Foundation
import ViewfinderCore

/// The container (libavformat muxer) a recording is written in, chosen from the destination URL:
/// a file's extension (`.mov` default, `.mp4`, `.mkv`) or a streaming URL's scheme (`srt://` →
/// MPEG-TS, `rtmp://` → FLV, `rtsp://` → RTSP).
///
/// Thread safety: a value type; freely sendable.
package enum MovieContainer: String, Sendable, Hashable, CaseIterable {
    /// QuickTime (`.mov`), the default; fragmented for crash safety.
    case quickTime = "mov"
    /// MPEG-4 (`.mp4`); fragmented for crash safety.
    case mpeg4 = "mp4"
    /// Matroska (`.mkv`): written cluster by cluster, readable after a crash by design.
    case matroska = "matroska"
    /// MPEG transport stream, for SRT publishing (also `.ts` files).
    case mpegTS = "mpegts"
    /// FLV, for RTMP publishing.
    case flv = "flv"
    /// RTSP publishing (libavformat's RTSP muxer, which does its own I/O).
    case rtsp = "rtsp"

    /// libavformat's name of the muxer.
    package var formatName: String { rawValue }

    /// The container for `url`: by scheme for streaming URLs, else by the file's extension
    /// (`.mov` for an unknown or missing one). `nil` for a scheme the writer cannot publish to.
    package init?(url: URL) {
        switch url.scheme?.lowercased() {
        case "srt", "udp": self = .mpegTS
        case "rtmp", "rtmps": self = .flv
        case "rtsp": self = .rtsp
        case nil, "file":
            switch url.pathExtension.lowercased() {
            case "mp4", "m4v": self = .mpeg4
            case "mkv": self = .matroska
            case "ts": self = .mpegTS
            case "flv": self = .flv
            default: self = .quickTime
            }
        default: return nil
        }
    }

    /// Whether the container is written in fragments (MP4 family: an empty `moov` then `moof` +
    /// `mdat` pairs) when a fragment interval is set.
    package var supportsFragments: Bool { self == .quickTime || self == .mpeg4 }

    /// Whether a file cut off at any point still opens (up to its last complete unit) without
    /// special muxer flags.
    package var isInherentlyCrashSafe: Bool { self == .matroska || self == .mpegTS || self == .flv }
}
