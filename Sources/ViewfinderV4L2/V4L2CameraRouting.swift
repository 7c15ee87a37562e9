/// Another way to reach a V4L2 camera than its driver: a service that shares the camera between
/// programs. The PipeWire module provides the one there is (`V4L2PipeWireRoute`); this module
/// names no such service, so an app that links only V4L2 links no PipeWire.
///
/// Thread safety: implementations must be callable from any thread.
import ViewfinderCore

package protocol V4L2CameraRouting: Sendable {
    /// Whether cameras may only be reached this way: then only cameras it offers are listed, and
    /// a stream it cannot carry fails instead of opening the driver.
    var isForced: Bool { get }
    /// The backend that offers `camera` now, if this way may be used for it.
    func routedCamera(for camera: V4L2CameraBackend) -> (any V4L2RoutedCamera)?
    /// Leaves the cameras `claimer` returns (the provider's present cameras) out of the service's
    /// own listing, so each camera is listed once.
    func addClaimer(_ claimer: @escaping @Sendable () -> [V4L2CameraBackend]?)
    /// Why a forced route cannot carry `camera`'s stream in `format` (`node` is what offers the
    /// camera, if anything does).
    func refusal(camera: V4L2CameraBackend, node: (any V4L2RoutedCamera)?, format: CaptureDevice.Format)
        -> CaptureError
}

/// A camera as the routing service offers it.
package protocol V4L2RoutedCamera: DeviceBackend {
    /// The service's format that is `format` (same pixel format, size, and a rate range holding
    /// `frameDuration`), if it offers one.
    func format(matching format: CaptureDevice.Format, frameDuration: MediaTime) -> CaptureDevice.Format?
}

/// The way a running camera stream reaches the camera.
///
/// Thread safety: a value type.
package enum CameraRoute: Sendable, Equatable {
    /// Through a PipeWire node (shared with other programs).
    case pipeWire
    /// Straight from the V4L2 driver.
    case v4l2
}
