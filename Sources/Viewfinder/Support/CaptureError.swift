#if canImport(Glibc)
    import Glibc
#endif

/// The one error type Viewfinder throws and posts: what failed, what to do about it, and the
/// system `errno` where one was involved.
///
/// Compare errors by ``code``; show ``description`` to people.
public struct CaptureError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// A value was out of range or malformed (zero size, negative duration, …).
        case invalidArgument
        /// The device does not offer the requested format, size or frame rate.
        case unsupportedFormat
        /// The output cannot deliver the requested pixel format.
        case unsupportedPixelFormat
        /// The device's configuration was changed without `lockForConfiguration()`.
        case configurationNotLocked
        /// The device has no such control (focus, exposure, torch, …), or not that mode of it.
        case unsupportedControl
        /// The session refused an input (already added, unknown device, wrong media type).
        case cannotAddInput
        /// The session refused an output (already added, belongs to another session).
        case cannotAddOutput
        /// `startRunning()` was called on a session that has no inputs.
        case noInputs
        /// `startRunning()` was called on a session that has no outputs.
        case noOutputs
        /// No device with that identifier exists (or it disappeared).
        case deviceNotFound
        /// The operating system refused access to the device.
        case permissionDenied
        /// Another program is using the device.
        case deviceBusy
        /// The device disappeared (unplugged) while in use.
        case deviceDisconnected
        /// The device reported an input/output error.
        case ioError
        /// The driver rejected a request it advertised, or behaved against the specification.
        case driverError
        /// Converting a frame between pixel formats failed.
        case conversionFailed
        /// Every buffer of a pool was in use.
        case outOfBuffers
        /// Another system call failed; see ``CaptureError/errno``.
        case systemError
    }

    /// The kind of failure.
    public var code: Code
    /// What failed and what to do, in one or two sentences.
    public var message: String
    /// The `errno` of the system call that failed, if any.
    public var errno: Int32?

    /// An error of `code` with a message that says what failed and what to do.
    public init(_ code: Code, _ message: String, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.errno = errno
    }

    public var description: String {
        guard let errno else { return message }
        return "\(message) (errno \(errno): \(String(cString: strerror(errno))))"
    }
}
