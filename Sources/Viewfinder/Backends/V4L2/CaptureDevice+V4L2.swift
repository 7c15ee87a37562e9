extension CaptureDevice {
    /// For V4L2 cameras: frames the driver returned damaged (`V4L2_BUF_FLAG_ERROR`), empty or
    /// short, which were queued again and never delivered, since the device was discovered.
    /// Always 0 for other devices.
    public var corruptFramesSkipped: Int { (backend as? V4L2CameraBackend)?.corruptFramesSkipped ?? 0 }

    /// For V4L2 cameras: the device node (`/dev/video0`) the camera is at now; `nil` for others.
    public var devicePath: String? { (backend as? V4L2CameraBackend)?.path }
}
