import Foundation

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
struct V4L2PipeWireRoute: Sendable {
    /// The PipeWire cameras to route through.
    let provider: PipeWireDeviceProvider
    /// The route; `nil`: ``PipeWireRoute/current`` at each use.
    let fixedRoute: PipeWireRoute?

    var route: PipeWireRoute { fixedRoute ?? .current }

    /// The PipeWire node that offers `camera` now, if the route lets PipeWire be used.
    func node(for camera: V4L2CameraBackend) -> PipeWireCameraBackend? {
        guard route.usesPipeWire else { return nil }
        return provider.camerasNow().first { $0.isConnected && $0.offers(camera) }
    }
}

extension PipeWireCameraBackend {
    /// Whether this node is `camera` as PipeWire's V4L2 plugin offers it, by what the plugin and
    /// WirePlumber's V4L2 monitor put on the node: its V4L2 node (`api.v4l2.path`, or
    /// `object.path` `v4l2:/dev/videoN`) is the camera's node (after resolving links); a node
    /// without a path matches by `api.v4l2.cap.bus_info` and `api.v4l2.cap.card`, which are the
    /// camera's `VIDIOC_QUERYCAP` answers. (`device.bus-path` sits on PipeWire's device object,
    /// not on the node, and names a USB port that two capture nodes of one camera, a colour and an
    /// infrared one, share: it is not used.)
    func offers(_ camera: V4L2CameraBackend) -> Bool {
        if let path = v4l2Path {
            return Self.resolved(path) == Self.resolved(camera.path)
        }
        guard !v4l2BusInfo.isEmpty else { return false }
        return v4l2BusInfo == camera.busInfo && (v4l2Card.isEmpty || v4l2Card == camera.card)
    }

    /// The node's format that is `format` (same pixel format, size, and a rate range holding
    /// `frameDuration`), if it offers one.
    func format(matching format: CaptureDevice.Format, frameDuration: MediaTime) -> CaptureDevice.Format? {
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

/// The way a running camera stream reaches the camera.
///
/// Thread safety: a value type.
package enum CameraRoute: Sendable, Equatable {
    /// Through a PipeWire node (shared with other programs).
    case pipeWire
    /// Straight from the V4L2 driver.
    case v4l2
}

extension V4L2DeviceProvider {
    /// A provider of the V4L2 nodes in `path` through the real libv4l2 (the plug-in camera's
    /// directory, for the benchmark runner), routing through `pipeWire` as ``init(directory:interface:bufferCount:pipeWire:route:)`` does.
    package static func libV4L2(directory path: String, pipeWire: PipeWireDeviceProvider?) -> V4L2DeviceProvider {
        V4L2DeviceProvider(directory: V4L2DevDirectory(path: path), interface: LibV4L2Interface(), pipeWire: pipeWire)
    }
}
