import ViewfinderCore

extension CaptureDevice {
    /// For V4L2 cameras: frames the driver returned damaged (`V4L2_BUF_FLAG_ERROR`), empty or
    /// short, which were queued again and never delivered, since the device was discovered.
    /// Always 0 for other devices.
    public var corruptFramesSkipped: Int { (backend as? V4L2CameraBackend)?.corruptFramesSkipped ?? 0 }

    /// For V4L2 cameras: the device node (`/dev/video0`) the camera is at now; `nil` for others.
    public var devicePath: String? { (backend as? V4L2CameraBackend)?.path }

    /// For V4L2 cameras: whether the last frame of the current (or last) stream was stamped from
    /// the camera's own clock: a UVC camera's PTS, read from its metadata node
    /// (`V4L2_META_FMT_UVC`) and mapped onto the host's monotonic clock by a running fit of its SCR
    /// samples, free of USB and scheduling jitter. `false` where the driver's timestamps are used:
    /// a camera without a UVC metadata node, a metadata node another program holds, the first half
    /// second of a stream (the fit is not stable yet), frames whose headers carry no PTS; and for
    /// devices other than V4L2 cameras.
    public var isUsingDeviceClock: Bool {
        (backend as? V4L2CameraBackend)?.deviceClockStatus.state == .deviceClock
    }
}
