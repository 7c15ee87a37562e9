import CALSA
import ViewfinderCore

#if canImport(Glibc)
    import Glibc
#endif

extension CaptureError {
    /// The error for alsa-lib result `result` (a negative errno) while `action` ("opening",
    /// "configuring", "capturing from") the PCM `name`, saying what to do about it.
    package static func alsa(_ result: Int32, _ action: String, name: String) -> CaptureError {
        let code = -result
        let detail = String(cString: snd_strerror(result))
        switch code {
        case EBUSY:
            return CaptureError(
                .deviceBusy,
                "ALSA device '\(name)' is busy (\(action)): another program is using it; close that program, or capture through 'default' (PipeWire and PulseAudio share the device)",
                errno: code)
        case EACCES, EPERM:
            return CaptureError(
                .permissionDenied,
                "permission denied \(action) ALSA device '\(name)': add the user to the 'audio' group (sudo usermod -aG audio $USER) and log in again",
                errno: code)
        case ENODEV, ENXIO:
            return CaptureError(
                .deviceDisconnected,
                "ALSA device '\(name)' was disconnected (\(action)): reconnect it; the session resumes when it returns",
                errno: code)
        case ENOENT:
            return CaptureError(
                .deviceNotFound,
                "no ALSA capture device '\(name)' (\(action)): \(detail); pick one of `arecord -L`",
                errno: code)
        case EINVAL:
            return CaptureError(
                .unsupportedFormat,
                "ALSA device '\(name)' refused the requested parameters (\(action)): choose one of its formats",
                errno: code)
        case EIO:
            return CaptureError(
                .ioError, "input/output error \(action) ALSA device '\(name)': check the device and its cable",
                errno: code)
        default:
            return CaptureError(
                .systemError, "\(action) ALSA device '\(name)' failed: \(detail)", errno: code > 0 ? code : nil)
        }
    }
}
