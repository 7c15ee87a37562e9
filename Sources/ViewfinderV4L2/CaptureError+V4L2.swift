import ViewfinderCore

#if canImport(Glibc)
    import Glibc
#endif

extension CaptureError {
    /// The error for a failed V4L2 call: what failed, on which camera, what to do, and the errno.
    ///
    /// - Parameters:
    ///   - failure: the errno of the call.
    ///   - action: what was being done, as a gerund phrase ("opening", "starting the stream").
    ///   - name: the camera's name; `path`: its node.
    package static func v4l2(_ failure: V4L2Errno, _ action: String, name: String, path: String) -> CaptureError {
        let camera = "'\(name)' (\(path))"
        switch failure.code {
        case EACCES, EPERM:
            return CaptureError(
                .permissionDenied,
                "permission denied \(action) \(camera): add the user to the 'video' group (sudo usermod -aG video $USER) and log in again",
                errno: failure.code)
        case EBUSY:
            return CaptureError(
                .deviceBusy,
                "\(camera) is in use by another program (\(action) failed): close the other program using the camera and try again",
                errno: failure.code)
        case EMFILE:
            return CaptureError(
                .systemError,
                "cannot open \(camera): this process already has as many cameras open as libv4l2 serves (16 a process) or as many files as it may: close a camera, or run further cameras in a second process",
                errno: failure.code)
        case ENODEV, ENXIO, ENOENT:
            return CaptureError(
                .deviceDisconnected,
                "\(camera) was disconnected while \(action): reconnect it; a running session resumes when the same camera returns",
                errno: failure.code)
        case EIO:
            return CaptureError(
                .ioError,
                "input/output error \(action) \(camera): the camera or its USB connection failed; replug it or try another port or cable",
                errno: failure.code)
        case EINVAL:
            return CaptureError(
                .driverError,
                "the driver of \(camera) rejected \(action) as invalid: pick another format or setting from what the device lists",
                errno: failure.code)
        case ENOMEM, ENOSPC:
            return CaptureError(
                .systemError,
                "not enough memory or USB bandwidth \(action) \(camera): choose a smaller format or a lower frame rate, or close other cameras on the same bus",
                errno: failure.code)
        default:
            return CaptureError(.systemError, "\(action) \(camera) failed", errno: failure.code)
        }
    }
}
