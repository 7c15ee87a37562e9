import Foundation
import Synchronization
import ViewfinderCore

/// Records the session's video to a movie file (the counterpart of `AVCaptureMovieFileOutput`):
/// H.264 (default) or HEVC through FFmpeg's libavcodec, or a Motion-JPEG camera's frames as they
/// are, muxed by libavformat into `.mov` (default), `.mp4` or `.mkv`.
///
/// ```swift
/// let movie = CaptureMovieFileOutput()
/// if session.canAddOutput(movie) { try session.tryAddOutput(movie) }
/// session.startRunning()
/// movie.startRecording(to: URL(fileURLWithPath: "clip.mov"), recordingDelegate: recorder)
/// // …
/// movie.stopRecording()   // recorder.fileOutput(_:didFinishRecordingTo:from:error:) follows
/// ```
///
/// The recording contract is ``CaptureFileOutput``'s. Files are crash-safe by default: MOV and MP4
/// are written fragmented (an index every ``movieFragmentInterval``), so a process killed
/// mid-recording leaves a file playable up to its last complete fragment; Matroska is written
/// cluster by cluster.
///
/// Thread safety: every member may be used from any thread.
// unchecked: adds no state; the recorder's is in Mutexes.
public final class CaptureMovieFileOutput: CaptureFileOutput, @unchecked Sendable {
    /// A movie file output that lets at most `bufferBudget` frames wait for the encoder (at least
    /// 1; default 6) before new ones drop as ``DroppedFrameReason/outOfBuffers``.
    public override init(bufferBudget: Int = 6) {
        super.init(bufferBudget: bufferBudget)
    }

    /// How often a fragment (an index of what came before) is completed in MOV and MP4 files;
    /// bounds a Matroska file's clusters. Default 10 seconds. ``MediaTime/invalid`` writes one
    /// index at the end instead (such a file is unreadable if the process dies while recording).
    /// Applies from the next recording; a zero or negative time is taken as invalid.
    public var movieFragmentInterval: MediaTime {
        get { recorder.writerOptions.withLock { $0.fragmentInterval } }
        set {
            recorder.writerOptions.withLock {
                $0.fragmentInterval = newValue.isNumeric && newValue > .zero ? newValue : .invalid
            }
        }
    }

    /// Container metadata of each recording, by libavformat key: `title`, `comment`, `artist`,
    /// `creation_time` (ISO 8601), `location` (ISO 6709, e.g. `+48.8577+002.2950/`) …
    ///
    /// Settable while recording, as AVFoundation's: the file being recorded gets the metadata as
    /// it is when the recording stops, where the container allows —
    /// - MOV and MP4 with ``movieFragmentInterval`` ``MediaTime/invalid``: always (the one index,
    ///   written at stop, holds it);
    /// - fragmented MOV and MP4 (the default): the header (initial `moov`, which holds the
    ///   metadata) is rewritten in place at stop into 4 KiB reserved after it, so a change fits
    ///   unless it adds more than about 4 KiB; if it does not fit, the file keeps the metadata it
    ///   started with. (A process killed mid-recording leaves the start's metadata.)
    /// - Matroska (`.mkv`) and streaming URLs: the metadata the recording started with (the muxer
    ///   writes its tags with the header and never rewrites them); a change applies from the next
    ///   recording.
    public var metadata: [String: String] {
        get { recorder.writerOptions.withLock { $0.metadata } }
        set { recorder.setMetadata(newValue) }
    }

    /// The codecs ``setOutputSettings(_:for:)-(MovieOutputSettings?,_)`` accepts now: H.264 and HEVC where this FFmpeg
    /// build has them, and ``VideoCodecType/jpeg`` when the connected camera delivers Motion-JPEG.
    public var availableVideoCodecTypes: [VideoCodecType] {
        var codecs = [VideoCodecType.h264, .hevc].filter { $0.movieCodec?.isAvailable == true }
        if connection(with: .video)?.device?.formats.contains(where: { $0.pixelFormat == .mjpeg }) ?? false {
            codecs.append(.jpeg)
        }
        return codecs
    }

    /// The encoding of `connection`'s video (defaults until set).
    public func outputSettings(for connection: CaptureConnection) -> MovieOutputSettings {
        videoCore.currentSettings.perConnection[ObjectIdentifier(connection)] ?? MovieOutputSettings()
    }

    /// Sets how `connection`'s video is encoded; `nil` restores the defaults. Applies from the next
    /// recording (a change of codec renegotiates the camera's format on a running session).
    /// Throws ``CaptureError/Code/invalidArgument`` when `connection` is not this output's or the
    /// settings are out of range, ``CaptureError/Code/unsupportedFormat`` for a codec not in
    /// ``availableVideoCodecTypes``.
    @_disfavoredOverload  // `setOutputSettings(nil, for:)` without `try` is AVFoundation's dictionary form.
    public func setOutputSettings(_ outputSettings: MovieOutputSettings?, for connection: CaptureConnection)
        throws(CaptureError)
    {
        guard connections.contains(where: { $0 === connection }) else {
            throw CaptureError(
                .invalidArgument, "that connection does not feed this output: pass one of its connections")
        }
        if let outputSettings {
            _ = try outputSettings.movieQuality()
            guard availableVideoCodecTypes.contains(outputSettings.codec) else {
                throw CaptureError(
                    .unsupportedFormat,
                    "cannot record \(outputSettings.codec) here: available are \(availableVideoCodecTypes.map(\.rawValue).joined(separator: ", "))"
                )
            }
        }
        try videoCore.applyChange { settings, _ in settings.perConnection[ObjectIdentifier(connection)] = outputSettings
        }
    }
}
