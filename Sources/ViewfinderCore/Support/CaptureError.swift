#if canImport(Glibc)
    import Glibc
#endif

/// The one error type Viewfinder throws and posts: what failed, what to do about it, and the
/// system `errno` where one was involved.
///
/// Compare errors by ``code``; show ``description`` to people.
public struct CaptureError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is: an open set of codes (the way swift-system's `Errno` is), so
    /// new codes can be added without breaking anyone's `switch`. Compare with `==` or match
    /// with `case .deviceBusy:` in a `switch` that has a `default:`.
    ///
    /// Thread safety: a value type; freely sendable.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// The code's name (`"deviceBusy"`), stable across releases.
        public var rawValue: String

        /// The code named `rawValue`.
        public init(rawValue: String) { self.rawValue = rawValue }

        public var description: String { rawValue }

        /// A value was out of range or malformed (zero size, negative duration, …).
        public static let invalidArgument = Code(rawValue: "invalidArgument")
        /// The device does not offer the requested format, size or frame rate.
        public static let unsupportedFormat = Code(rawValue: "unsupportedFormat")
        /// The output cannot deliver the requested pixel format.
        public static let unsupportedPixelFormat = Code(rawValue: "unsupportedPixelFormat")
        /// The device's configuration was changed without `lockForConfiguration()`.
        public static let configurationNotLocked = Code(rawValue: "configurationNotLocked")
        /// The device has no such control (focus, exposure, torch, …), or not that mode of it.
        public static let unsupportedControl = Code(rawValue: "unsupportedControl")
        /// The session refused an input (already added, unknown device, wrong media type).
        public static let cannotAddInput = Code(rawValue: "cannotAddInput")
        /// The session refused an output (already added, belongs to another session).
        public static let cannotAddOutput = Code(rawValue: "cannotAddOutput")
        /// `startRunning()` was called on a session that has no inputs.
        public static let noInputs = Code(rawValue: "noInputs")
        /// `startRunning()` found no outputs.
        public static let noOutputs = Code(rawValue: "noOutputs")
        /// No device with that identifier exists (or it disappeared).
        public static let deviceNotFound = Code(rawValue: "deviceNotFound")
        /// The operating system refused access to the device.
        public static let permissionDenied = Code(rawValue: "permissionDenied")
        /// Another program is using the device.
        public static let deviceBusy = Code(rawValue: "deviceBusy")
        /// The device disappeared (unplugged) while in use.
        public static let deviceDisconnected = Code(rawValue: "deviceDisconnected")
        /// The device reported an input/output error.
        public static let ioError = Code(rawValue: "ioError")
        /// The driver rejected a request it advertised, or behaved against the specification.
        public static let driverError = Code(rawValue: "driverError")
        /// Converting a frame between pixel formats failed.
        public static let conversionFailed = Code(rawValue: "conversionFailed")
        /// Every buffer of a pool was in use.
        public static let outOfBuffers = Code(rawValue: "outOfBuffers")
        /// Another system call failed; see ``CaptureError/errno``.
        public static let systemError = Code(rawValue: "systemError")
        /// A recording's destination already exists: recorders never overwrite.
        public static let fileAlreadyExists = Code(rawValue: "fileAlreadyExists")
        /// A recording ended before any sample was written (the file is removed).
        public static let noDataCaptured = Code(rawValue: "noDataCaptured")
        /// A recording reached its `maxRecordedDuration` and stopped.
        public static let maximumDurationReached = Code(rawValue: "maximumDurationReached")
        /// A recording reached its `maxRecordedFileSize` and stopped.
        public static let maximumFileSizeReached = Code(rawValue: "maximumFileSizeReached")
        /// The disk filled up, or its free space fell below `minFreeDiskSpaceLimit`.
        public static let diskFull = Code(rawValue: "diskFull")
        /// Encoding or muxing a recording failed.
        public static let encodingFailed = Code(rawValue: "encodingFailed")

        /// The session was interrupted (another session took its camera, or another of its devices
        /// was lost), or stopped after a failure; a recording then finishes with this code.
        public static let sessionWasInterrupted = Code(rawValue: "sessionWasInterrupted")
        /// The operation needs a running session.
        public static let sessionNotRunning = Code(rawValue: "sessionNotRunning")
        /// A failure with no better code.
        public static let unknown = Code(rawValue: "unknown")

        // AVFoundation's `AVError.Code` names, so `(error as? CaptureError)?.code == .deviceWasDisconnected`
        // ports unchanged. Each is another name for the code it stands for.

        /// `AVError.Code.deviceWasDisconnected`: ``deviceDisconnected``.
        public static let deviceWasDisconnected = deviceDisconnected
        /// `AVError.Code.deviceNotConnected`: ``deviceNotFound``.
        public static let deviceNotConnected = deviceNotFound
        /// `AVError.Code.deviceInUseByAnotherApplication`: ``deviceBusy``.
        public static let deviceInUseByAnotherApplication = deviceBusy
        /// `AVError.Code.deviceAlreadyUsedByAnotherSession`: ``deviceBusy``.
        public static let deviceAlreadyUsedByAnotherSession = deviceBusy
        /// `AVError.Code.applicationIsNotAuthorizedToUseDevice`: ``permissionDenied``.
        public static let applicationIsNotAuthorizedToUseDevice = permissionDenied
        /// `AVError.Code.deviceLockedForConfigurationByAnotherProcess`: ``configurationNotLocked``.
        public static let deviceLockedForConfigurationByAnotherProcess = configurationNotLocked
        /// `AVError.Code.mediaServicesWereReset`: ``ioError`` (the device stopped responding).
        public static let mediaServicesWereReset = ioError
        /// `AVError.Code.deviceIsNotAvailableInBackground`: never reported (no background state on Linux).
        public static let deviceIsNotAvailableInBackground = Code(rawValue: "deviceIsNotAvailableInBackground")
        /// `AVError.Code.deviceNotAvailableInBackground`: never reported.
        public static let deviceNotAvailableInBackground = deviceIsNotAvailableInBackground
        /// `AVError.Code.outOfMemory`: ``outOfBuffers``.
        public static let outOfMemory = outOfBuffers
        /// `AVError.Code.unsupportedDeviceActiveFormat`: ``unsupportedFormat``.
        public static let unsupportedDeviceActiveFormat = unsupportedFormat
        /// `AVError.Code.invalidSourceMedia`-style bad input: ``invalidArgument``.
        public static let invalidSourceMedia = invalidArgument

        /// Every code this version of Viewfinder defines (others may come later).
        public static let knownCodes: [Code] = [
            .invalidArgument,
            .unsupportedFormat,
            .unsupportedPixelFormat,
            .configurationNotLocked,
            .unsupportedControl,
            .cannotAddInput,
            .cannotAddOutput,
            .noInputs,
            .noOutputs,
            .deviceNotFound,
            .permissionDenied,
            .deviceBusy,
            .deviceDisconnected,
            .ioError,
            .driverError,
            .conversionFailed,
            .outOfBuffers,
            .systemError,
            .sessionWasInterrupted,
            .sessionNotRunning,
            .unknown,
            .deviceIsNotAvailableInBackground,
            .fileAlreadyExists,
            .noDataCaptured,
            .maximumDurationReached,
            .maximumFileSizeReached,
            .diskFull,
            .encodingFailed,
        ]
    }

    /// The kind of failure.
    public var code: Code
    /// What failed and what to do, in one or two sentences.
    public var message: String
    /// The `errno` of the system call that failed, if any.
    public var errno: Int32?
    /// For errors that end a recording (``CaptureFileOutputRecordingDelegate``): whether the file
    /// was finished and is playable despite the error (AVFoundation's
    /// `AVErrorRecordingSuccessfullyFinishedKey`). `nil` for every other error.
    public var recordingSuccessfullyFinished: Bool?

    /// An error of `code` with a message that says what failed and what to do.
    public init(_ code: Code, _ message: String, errno: Int32? = nil, recordingSuccessfullyFinished: Bool? = nil) {
        self.code = code
        self.message = message
        self.errno = errno
        self.recordingSuccessfullyFinished = recordingSuccessfullyFinished
    }

    public var description: String {
        guard let errno else { return message }
        return "\(message) (errno \(errno): \(String(cString: strerror(errno))))"
    }
}
