import Foundation
import Synchronization
import ViewfinderCore

#if canImport(Glibc)
    import Glibc
#endif

/// Finds V4L2 cameras: scans a device directory (`/dev`) for `videoN` nodes and keeps those whose
/// `VIDIOC_QUERYCAP` device capabilities include video capture and streaming (a UVC camera's
/// metadata node is left out). Watches the directory (inotify) and reports cameras that come and
/// go, so `CaptureDevice.devices(for:)` stays current and the registry can post
/// ``CaptureDevice/wasConnectedNotification`` / ``CaptureDevice/wasDisconnectedNotification``.
///
/// A node this process may not open (`EACCES`: the user is not in the `video` group; `EPERM`) is
/// listed all the same, as AVFoundation lists a camera the app may not use: named by sysfs where
/// the node is a real one (else by its path), without formats, and ``CaptureDeviceInput`` throws
/// ``CaptureError/Code/permissionDenied`` for it, saying to join the `video` group
/// (``CaptureDevice/authorizationStatus(for:)`` answers ``CaptureDevice/AuthorizationStatus/denied``
/// when no node opens). A UVC camera's metadata node, which sysfs numbers 1, is left out.
///
/// A camera keeps its backend (and so its ``CaptureDevice``) for as long as the process runs: when
/// a camera with the same unique ID returns, possibly at another node, the same device reports
/// itself connected again.
///
/// Unique IDs come from what survives a reboot and a port change first: the USB serial number
/// (with vendor and product IDs), else the `/dev/v4l/by-id` name when no other camera shares it,
/// else the bus info (`usb-0000:00:14.0-1`: the port, as `/dev/v4l/by-path` names it), else card
/// name and node (`V4L2NodeIdentity.uniqueID(busInfo:card:path:byIDIsShared:)`).
///
/// Presence has one owner, the scan: a stream that finds its camera gone marks it disconnected
/// (unless a scan has seen it since the stream started) and asks for a scan, which reports the
/// camera connected again if it is back — however unplug, replug and the stream's failure
/// interleave.
///
/// Thread safety: all members may be used from any thread; scans are serialised.
public final class V4L2DeviceProvider: MonitoringDeviceProvider {
    package let directory: any V4L2DeviceDirectory
    package let interface: any V4L2Interface
    /// Buffers each camera asks the driver for when streaming.
    package let bufferCount: Int
    public var sortOrder: Int { 0 }

    private struct State {
        /// Every camera seen, present or not, by unique ID.
        var known: [String: V4L2CameraBackend] = [:]
        /// The cameras present at the last scan, in node order.
        var present: [V4L2CameraBackend] = []
        var hasScanned = false
        var isWatching = false
        var needsScan = true
        var handler: (@Sendable (DeviceChanges) -> Void)?
        var problems: [CaptureError] = []
    }
    private let state = Mutex(State())
    private let scanning = NSLock()

    /// Where each camera's shared node (PipeWire's) is looked for, if anywhere.
    package let routing: (any V4L2CameraRouting)?

    /// A provider of the cameras in `/dev`, opened through libv4l2: what an app that links the
    /// V4L2 module without the umbrella `Viewfinder` registers,
    /// `CaptureDevice.registerProvider(V4L2DeviceProvider())`.
    public convenience init() {
        self.init(directory: V4L2DevDirectory(), interface: LibV4L2Interface())
    }

    /// A provider of the `videoN` nodes in `directoryPath` instead of `/dev` (a container's or a
    /// test's device directory), opened through libv4l2 and watched for cameras that come and go.
    public convenience init(directoryPath: String) {
        self.init(directory: V4L2DevDirectory(path: directoryPath), interface: LibV4L2Interface())
    }

    /// A provider scanning `directory` through `interface` (default: `/dev` through libv4l2).
    ///
    /// A camera that `routing` also offers (PipeWire's V4L2 route) is listed once, by this
    /// provider, and streams through that route while it offers the camera. `routing` `nil`: V4L2
    /// only.
    package init(
        directory: any V4L2DeviceDirectory = V4L2DevDirectory(), interface: any V4L2Interface = LibV4L2Interface(),
        bufferCount: Int = 4, routing: (any V4L2CameraRouting)? = nil
    ) {
        self.directory = directory
        self.interface = interface
        self.bufferCount = bufferCount
        self.routing = routing
        routing?.addClaimer { [weak self] in self?.presentCameras() }
    }

    public func discoverBackends() -> [any DeviceBackend] {
        let cameras = presentCameras()
        // Forced through PipeWire: only the cameras a PipeWire node offers.
        guard let routing, routing.isForced else { return cameras }
        return cameras.filter { routing.routedCamera(for: $0) != nil }
    }

    /// The cameras present now (scanning first when the directory is not watched or changed).
    package func presentCameras() -> [V4L2CameraBackend] {
        // A node plugged in just before this call is seen: the watch's unread events are read now.
        directory.catchUp()
        let mustScan = state.withLock { !$0.isWatching || $0.needsScan }
        if mustScan { rescan() }
        return state.withLock { $0.present }
    }

    public func startMonitoring(_ handler: @escaping @Sendable (DeviceChanges) -> Void) {
        state.withLock { $0.handler = handler }
        let watching = directory.watch { [weak self] in self?.directoryDidChange() }
        state.withLock { $0.isWatching = watching }
    }

    /// Problems met by the last scan on nodes that could not be examined (e.g. permission
    /// denied: the user is not in the `video` group; such a camera is listed all the same, and
    /// opening it throws the same error).
    package var scanProblems: [CaptureError] { state.withLock { $0.problems } }

    private func directoryDidChange() {
        state.withLock { $0.needsScan = true }
        rescan()
    }

    /// A stream found its camera gone (on its capture thread): look again, off that thread, so a
    /// camera already back is reported connected.
    private func streamDidLoseCamera() {
        let watching = state.withLock { state -> Bool in
            state.needsScan = true
            return state.isWatching
        }
        guard watching else { return }  // the next discovery scans
        DispatchQueue.global().async { [weak self] in self?.rescan() }
    }

    /// Looks at every node again, updates which cameras are present, and reports the changes.
    private func rescan() {
        scanning.lock()
        state.withLock { $0.needsScan = false }
        var found: [V4L2DeviceInfo] = []
        var identities: [V4L2NodeIdentity] = []
        // Why each node this process may not open refused (by node), listed all the same.
        var refusals: [String: CaptureError] = [:]
        var problems: [CaptureError] = []
        var metadataNodes: [String: String] = [:]  // UVC metadata nodes by bus info
        for path in directory.videoNodes() {
            do {
                if let info = try V4L2DeviceInfo.probe(path: path, interface: interface) {
                    found.append(info)
                    identities.append(directory.identity(ofNode: path))
                } else if let bus = UVCMetadataStream.uvcMetadataBusInfo(path: path, interface: interface), !bus.isEmpty
                {
                    metadataNodes[bus] = metadataNodes[bus] ?? path
                }
            } catch  where [ENOENT, ENODEV, ENXIO].contains(error.code) {
                continue  // gone between listing and opening
            } catch  where [EACCES, EPERM].contains(error.code) {
                // The user may not open it (not in the `video` group): list it, as AVFoundation
                // lists a camera the app may not use, so the program can say why rather than
                // silently get another camera. Nothing can be asked of the node; sysfs (readable
                // by anyone) names it, and tells a UVC camera's metadata node (index 1) from its
                // capture node, which alone is listed.
                let facts = directory.unopenedNodeFacts(ofNode: path)
                if let index = facts.index, index != 0 { continue }
                let name = facts.name ?? path
                let refusal = CaptureError.v4l2(error, "opening", name: name, path: path)
                problems.append(refusal)
                refusals[path] = refusal
                found.append(
                    V4L2DeviceInfo(
                        path: path, card: name, driver: "", busInfo: "", deviceCapabilities: 0, formats: []))
                identities.append(directory.identity(ofNode: path))
            } catch {
                problems.append(CaptureError.v4l2(error, "examining", name: path, path: path))
            }
        }
        let (changes, handler) = state.withLock { state in
            var present: [V4L2CameraBackend] = []
            var ids = Set<String>()
            let byIDNames = identities.compactMap(\.byIDName)
            for (info, identity) in zip(found, identities) {
                let shared = identity.byIDName.map { name in byIDNames.filter { $0 == name }.count > 1 } ?? false
                let base = identity.uniqueID(
                    busInfo: info.busInfo, card: info.card, path: info.path, byIDIsShared: shared)
                var id = base
                var suffix = 2
                while ids.contains(id) {
                    id = base + "#\(suffix)"
                    suffix += 1
                }
                ids.insert(id)
                let backend: V4L2CameraBackend
                let refusal = refusals[info.path]
                if let existing = state.known[id], existing.formats == info.formats,
                    existing.localizedName == info.card,
                    (existing.accessRefusal == nil) == (refusal == nil)
                {
                    backend = existing
                } else {
                    backend = V4L2CameraBackend(
                        info: info, uniqueID: id, interface: interface, bufferCount: bufferCount,
                        portKind: directory.portKind(ofNode: info.path), usb: identity.usb,
                        routing: routing, accessRefusal: refusal,
                        optics: KnownCameraOptics.lookup(vendorID: identity.vendorID, productID: identity.productID))
                    backend.setLossHandler { [weak self] in self?.streamDidLoseCamera() }
                    state.known[id] = backend
                }
                present.append(backend)
            }
            var changes = DeviceChanges()
            let previous = state.present
            for backend in previous where !present.contains(where: { $0 === backend }) {
                backend.update(path: nil, connected: false)
                changes.disconnected.append(backend)
            }
            for (backend, (info, identity)) in zip(present, zip(found, identities)) {
                let wasPresent = previous.contains { $0 === backend } && backend.isConnected
                backend.update(path: info.path, connected: true)
                backend.update(usb: identity.usb)
                backend.update(metadataNode: metadataNodes[info.busInfo])
                if !wasPresent { changes.connected.append(backend) }
            }
            let isFirst = !state.hasScanned
            state.hasScanned = true
            state.present = present
            state.problems = problems
            return (isFirst ? DeviceChanges() : changes, state.handler)
        }
        scanning.unlock()
        if !changes.isEmpty { handler?(changes) }
    }

}

extension V4L2DeviceProvider: AuthorizingDeviceProvider {
    /// Cameras: authorized when a `videoN` node opens; denied when opening fails with `EACCES`
    /// (with the `video` group hint), restricted with `EPERM`; `nil` without nodes or for other media.
    package func authorization(for mediaType: MediaType) -> DeviceAuthorization? {
        guard mediaType == .video else { return nil }
        let nodes = directory.videoNodes()
        guard !nodes.isEmpty else { return nil }
        var refusals: [(V4L2Errno, String)] = []
        for node in nodes {
            do {
                let fd = try interface.open(node, flags: O_RDWR | O_NONBLOCK)
                interface.close(fd)
                return DeviceAuthorization(status: .authorized)
            } catch {
                if error.code == EACCES || error.code == EPERM { refusals.append((error, node)) }
            }
        }
        // Nodes that failed for other reasons (busy, gone) do not refuse permission.
        guard refusals.count == nodes.count else { return DeviceAuthorization(status: .authorized) }
        let (failure, node) = refusals.first { $0.0.code == EACCES } ?? refusals[0]
        let error = CaptureError.v4l2(failure, "opening", name: node, path: node)
        return DeviceAuthorization(status: failure.code == EACCES ? .denied : .restricted, error: error)
    }
}
