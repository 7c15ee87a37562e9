import CFFmpeg
import CSwresample
import CSwscale
import Glibc
import ViewfinderCore

/// A failure of the recording engine (``MovieFileWriter``): what failed, what to do, and the
/// errno or FFmpeg code behind it. `CaptureMovieFileOutput` maps the codes onto its own errors
/// (``Code/fileAlreadyExists`` → `fileAlreadyExists`, ``Code/diskFull`` → `diskFull`, …).
///
/// Thread safety: a value type; freely sendable.
package struct RecordingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure.
    package enum Code: String, Sendable, Hashable {
        /// Something already exists at the destination path; the writer never overwrites.
        case fileAlreadyExists
        /// A write failed because the disk (or the writer's byte limit) is full.
        case diskFull
        /// Opening, writing, syncing or closing the destination failed otherwise.
        case ioError
        /// The destination's container or protocol is not one the writer knows, or FFmpeg lacks it.
        case unsupportedContainer
        /// The codec is missing from this FFmpeg build or cannot take these settings.
        case unsupportedCodec
        /// The pixel or sample format cannot be fed to the encoder.
        case unsupportedFormat
        /// An argument is out of range (size, rate, settings).
        case invalidArgument
        /// A presentation time is invalid, before the start, or not after the previous one.
        case invalidTimestamp
        /// The call does not fit the writer's state (e.g. adding a stream after writing began,
        /// appending after finishing).
        case invalidState
        /// The encoder or the muxer failed.
        case encoderFailed
        /// Writing more would make the closed file larger than ``MovieFileWriter/maxFileSize``:
        /// nothing more is written; ``MovieFileWriter/finish()`` closes a file within the limit.
        case fileSizeLimitReached
    }

    /// The kind of failure.
    package let code: Code
    /// What failed and what to do about it.
    package let message: String
    /// The errno behind the failure, when there is one.
    package let errno: Int32?

    /// An error of `code` with a message that says what failed and what to do.
    package init(_ code: Code, _ message: String, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.errno = errno
    }

    package var description: String {
        if let errno { return "\(message) (\(code.rawValue), errno \(errno))" }
        return "\(message) (\(code.rawValue))"
    }

    /// An error for FFmpeg status `status` (negative): ENOSPC becomes ``Code/diskFull``, other
    /// errnos `errnoCode`, FFmpeg's own codes `ffmpegCode`; the message ends with FFmpeg's text.
    package static func ffmpeg(
        _ status: Int32, _ what: String, errnoCode: Code = .ioError, ffmpegCode: Code = .encoderFailed
    ) -> RecordingError {
        let text = ffmpegErrorText(status)
        let errno = vf_avunerror(status)
        // AVERROR(e) is -e for the errnos; FFmpeg's own tags are large four-character codes.
        if errno > 0 && errno < 4096 {
            if errno == ENOSPC || errno == EDQUOT || errno == EFBIG {
                return RecordingError(.diskFull, "\(what): \(text): free disk space or record elsewhere", errno: errno)
            }
            return RecordingError(errnoCode, "\(what): \(text)", errno: errno)
        }
        return RecordingError(ffmpegCode, "\(what): \(text)")
    }

    /// FFmpeg's text for status `status`.
    package static func ffmpegErrorText(_ status: Int32) -> String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 128) { buffer in
            String(cString: vf_err2str(status, buffer.baseAddress, 128))
        }
    }
}
