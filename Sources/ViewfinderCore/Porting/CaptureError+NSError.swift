// swift-format-ignore-file: AlwaysUseLowerCamelCase

// AVFoundation reports errors as NSErrors whose userInfo carries
// AVErrorRecordingSuccessfullyFinishedKey; after deleting "AV", ported code reads
// `(error as NSError).userInfo[ErrorRecordingSuccessfullyFinishedKey] as? Bool`. CaptureError
// bridges to NSError with that key (and the message as its localized description).
import Foundation

/// `AVErrorRecordingSuccessfullyFinishedKey`: in `(error as NSError).userInfo` of an error that
/// ends a recording, a `Bool` saying whether the file was finished and is playable (the same as
/// ``CaptureError/recordingSuccessfullyFinished``). Absent from every other error.
public let ErrorRecordingSuccessfullyFinishedKey = "AVErrorRecordingSuccessfullyFinishedKey"

/// `AVFoundationErrorDomain` with "AV" deleted: the domain of a ``CaptureError`` bridged to
/// `NSError`.
public let FoundationErrorDomain = "ViewfinderErrorDomain"

extension CaptureError: CustomNSError, LocalizedError {
    /// ``FoundationErrorDomain``.
    public static var errorDomain: String { FoundationErrorDomain }

    /// The code's position in ``Code/knownCodes`` (from 1), or 0 for a code this version does not
    /// know. Compare ``code`` instead where you can.
    public var errorCode: Int {
        (Code.knownCodes.firstIndex(of: code) ?? -1) + 1
    }

    /// The message as `NSLocalizedDescriptionKey`, and ``ErrorRecordingSuccessfullyFinishedKey``
    /// for errors that end a recording.
    public var errorUserInfo: [String: Any] {
        var info: [String: Any] = [NSLocalizedDescriptionKey: description]
        if let recordingSuccessfullyFinished {
            info[ErrorRecordingSuccessfullyFinishedKey] = recordingSuccessfullyFinished
        }
        return info
    }

    /// The ``description`` (what failed and what to do), for `error.localizedDescription`.
    public var errorDescription: String? { description }
}

extension Error {
    /// `AVError.code`: after deleting "AV", `AVError` is Swift's `Error`, which has no code; the
    /// compiler's message here names the cast. (Concrete errors' own `code` members, such as
    /// ``CaptureError/code`` and `NSError.code`, are unaffected.)
    @available(
        *, unavailable,
        message: "AVError minus \"AV\" is Swift's Error: use (error as? CaptureError)?.code"
    )
    public var code: CaptureError.Code { .unknown }
}
