import Foundation
import ViewfinderCore
import ViewfinderV4L2

#if canImport(Glibc)
    import Glibc
#endif

/// One camera, listed once: a webcam that both V4L2 and PipeWire offer is the V4L2 provider's
/// ``CaptureDevice`` (its unique ID, controls, USB location), and its streams go through the
/// PipeWire node that offers it while a daemon does (so other programs can use the camera at the
/// same time), straight through V4L2 otherwise. The PipeWire provider leaves such nodes out of its
/// own listing (``PipeWireDeviceProvider/isClaimed(_:)``).
///
/// The route comes from `VIEWFINDER_CAMERA_ROUTE` (``PipeWireRoute``) unless a test fixes it:
/// `auto` (unset) as above; `pipewire`: only cameras PipeWire offers are listed, and they stream
/// only through PipeWire; `v4l2`: PipeWire is not asked.
///
/// Thread safety: a value type over thread-safe members.
package struct V4L2PipeWireRoute: V4L2CameraRouting {
    /// The PipeWire cameras to route through.
    package let provider: PipeWireDeviceProvider
    /// The route; `nil`: ``PipeWireRoute/current`` at each use.
    package let fixedRoute: PipeWireRoute?

    package var route: PipeWireRoute { fixedRoute ?? .current }

    package var isForced: Bool { route == .pipeWire }

    /// The PipeWire node that offers `camera` now, if the route lets PipeWire be used.
    package func node(for camera: V4L2CameraBackend) -> PipeWireCameraBackend? {
        guard route.usesPipeWire else { return nil }
        return provider.camerasNow().first { $0.isConnected && $0.offers(camera) }
    }

    package func routedCamera(for camera: V4L2CameraBackend) -> (any V4L2RoutedCamera)? { node(for: camera) }

    package func addClaimer(_ claimer: @escaping @Sendable () -> [V4L2CameraBackend]?) {
        provider.addClaimer(claimer)
    }

    package func refusal(camera: V4L2CameraBackend, node: (any V4L2RoutedCamera)?, format: CaptureDevice.Format)
        -> CaptureError
    {
        node == nil
            ? CaptureError(
                .deviceDisconnected,
                "'\(camera.localizedName)' (\(camera.path)) is not offered by a PipeWire daemon now, and VIEWFINDER_CAMERA_ROUTE=pipewire forbids opening it directly: start pipewire and wireplumber, or unset VIEWFINDER_CAMERA_ROUTE"
            )
            : CaptureError(
                .unsupportedFormat,
                "the PipeWire node of '\(camera.localizedName)' does not offer \(format), and VIEWFINDER_CAMERA_ROUTE=pipewire forbids opening the camera directly: choose one of the formats PipeWire offers, or unset VIEWFINDER_CAMERA_ROUTE"
            )
    }
}

extension V4L2CameraBackend {
    /// The PipeWire route this camera's streams may take (`nil`: V4L2 only).
    package var pipeWireRoute: V4L2PipeWireRoute? { routing as? V4L2PipeWireRoute }
}

extension V4L2DeviceProvider {
    /// A provider scanning `directory` through `interface`; a camera that `pipeWire` also offers is
    /// listed once, by this provider, and streams through PipeWire while its node is there
    /// (``V4L2PipeWireRoute``); `route` fixes the route (default: `VIEWFINDER_CAMERA_ROUTE` at each
    /// use). `pipeWire` `nil`: V4L2 only.
    package convenience init(
        directory: any V4L2DeviceDirectory = V4L2DevDirectory(), interface: any V4L2Interface = LibV4L2Interface(),
        bufferCount: Int = 4, pipeWire: PipeWireDeviceProvider?, route: PipeWireRoute? = nil
    ) {
        self.init(
            directory: directory, interface: interface, bufferCount: bufferCount,
            routing: pipeWire.map { V4L2PipeWireRoute(provider: $0, fixedRoute: route) })
    }
}

extension PipeWireCameraBackend: V4L2RoutedCamera {}

extension PipeWireCameraBackend {
    /// Whether this node is `camera` as PipeWire's V4L2 plugin offers it, by what the plugin and
    /// WirePlumber's V4L2 monitor put on the node: its V4L2 node (`api.v4l2.path`, or
    /// `object.path` `v4l2:/dev/videoN`) is the camera's node (after resolving links); a node
    /// without a path matches by `api.v4l2.cap.bus_info` and `api.v4l2.cap.card`, which are the
    /// camera's `VIDIOC_QUERYCAP` answers. (`device.bus-path` sits on PipeWire's device object,
    /// not on the node, and names a USB port that two capture nodes of one camera, a colour and an
    /// infrared one, share: it is not used.)
    package func offers(_ camera: V4L2CameraBackend) -> Bool {
        if let path = v4l2Path {
            return Self.resolved(path) == Self.resolved(camera.path)
        }
        guard !v4l2BusInfo.isEmpty else { return false }
        return v4l2BusInfo == camera.busInfo && (v4l2Card.isEmpty || v4l2Card == camera.card)
    }

    /// The node's format that is `format` (same pixel format, size, and a rate range holding
    /// `frameDuration`), if it offers one.
    package func format(matching format: CaptureDevice.Format, frameDuration: MediaTime) -> CaptureDevice.Format? {
        let candidates = formats.filter {
            $0.pixelFormat == format.pixelFormat && $0.dimensions == format.dimensions
        }
        return candidates.first { $0.supports(frameDuration: frameDuration) }
            ?? candidates.first { $0.supports(frameDuration: format.minFrameDuration) }
    }

    private static func resolved(_ path: String) -> String {
        guard let real = realpath(path, nil) else { return path }
        defer { free(real) }
        return String(cString: real)
    }
}

extension V4L2DeviceProvider {
    /// A provider of the V4L2 nodes in `path` through the real libv4l2 (the plug-in camera's
    /// directory, for the benchmark runner), routing through `pipeWire` as ``init(directory:interface:bufferCount:pipeWire:route:)`` does.
    package static func libV4L2(directory path: String, pipeWire: PipeWireDeviceProvider?) -> V4L2DeviceProvider {
        V4L2DeviceProvider(directory: V4L2DevDirectory(path: path), interface: LibV4L2Interface(), pipeWire: pipeWire)
    }
}
