import CPipeWire
import Foundation
import Synchronization
import ViewfinderCore
import ViewfinderV4L2

/// Finds PipeWire cameras: the registry's nodes with `media.class` `Video/Source` and
/// `media.role` `Camera` (or, without a role, a node of the `v4l2` or `libcamera` device API),
/// listed with the formats their EnumFormat params offer, and followed as they come and go (the
/// registry reports them; the registry's ``DeviceRegistry`` turns that into
/// ``CaptureDevice/wasConnectedNotification`` / ``CaptureDevice/wasDisconnectedNotification``).
///
/// A camera keeps its backend (and so its ``CaptureDevice``) while the process runs: when a node
/// with the same `node.name` returns, the same device reports itself connected again. Unique IDs
/// are `pipewire:` plus the node name.
///
/// Connecting: to the daemon's socket when it exists (nothing is tried otherwise, so machines
/// without PipeWire pay a `stat`), or through a remote descriptor the Camera portal opened
/// (``useRemote(fileDescriptor:)``). A daemon that goes away takes its cameras with it; the next
/// discovery connects again.
///
/// Thread safety: all members may be used from any thread; node events are handled on one
/// serial queue.
package final class PipeWireDeviceProvider: MonitoringDeviceProvider {
    /// The provider the process's registry starts with.
    package static let shared = PipeWireDeviceProvider()

    package var sortOrder: Int { 0 }

    /// The socket to connect to (`nil`: `$PIPEWIRE_REMOTE`, else `pipewire-0`).
    package let remoteName: String?

    private struct Entry {
        var backend: PipeWireCameraBackend
        var id: UInt32
    }

    private struct State {
        var connection: PipeWireConnection?
        /// A portal's remote to use instead of the socket, until it is taken by a connection.
        var remoteFileDescriptor: Int32?
        /// Cameras present now by node ID.
        var present: [UInt32: Entry] = [:]
        /// Every camera seen, present or not, by unique ID.
        var known: [String: PipeWireCameraBackend] = [:]
        /// Order the cameras were first seen, for a stable listing.
        var order: [String] = []
        var handler: (@Sendable (DeviceChanges) -> Void)?
        var generation = 0
    }

    private let state = Mutex(State())
    private final class Claimer: Sendable {
        let cameras: @Sendable () -> [V4L2CameraBackend]?
        init(cameras: @escaping @Sendable () -> [V4L2CameraBackend]?) { self.cameras = cameras }
    }
    private let claimers = Mutex<[Claimer]>([])
    private let queue = DispatchQueue(label: "viewfinder.pipewire.registry")

    /// A provider for the daemon at `remoteName` (default: `$PIPEWIRE_REMOTE`, else `pipewire-0`).
    package init(remoteName: String? = nil) {
        self.remoteName = remoteName
        // PipeWire's default video source is the system's choice of camera (systemPreferredCamera).
        PreferredCameras.addSystemChooser(owner: self) { [weak self] cameras in self?.defaultCamera(among: cameras) }
    }

    /// The daemon connection, if one is open (none is made for asking).
    package var openConnection: PipeWireConnection? { state.withLock { $0.connection } }

    package func startMonitoring(_ handler: @escaping @Sendable (DeviceChanges) -> Void) {
        state.withLock { $0.handler = handler }
    }

    package func discoverBackends() -> [any DeviceBackend] {
        camerasNow().filter { !isClaimed($0) }
    }

    /// Every camera node the daemon offers now, in the order first seen, also those a V4L2
    /// camera claims (connecting first if needed, then a round trip, so every node the daemon
    /// had is there).
    package func camerasNow() -> [PipeWireCameraBackend] {
        guard PipeWireRoute.current.usesPipeWire else { return [] }
        guard let connection = queue.sync(execute: { connectIfNeeded() }) else { return [] }
        do {
            try connection.sync()
        } catch {
            return []
        }
        // Every node the daemon reported before the round trip is handled once this runs.
        return queue.sync {
            state.withLock { state in
                state.order.compactMap { id in
                    state.present.values.first { $0.backend.uniqueID == id }?.backend
                }
            }
        }
    }

    /// The cameras present now, without asking the daemon.
    package var presentBackends: [PipeWireCameraBackend] {
        state.withLock { state in state.present.values.map(\.backend) }
    }

    /// Adds a source of V4L2 cameras (a ``V4L2DeviceProvider``'s present cameras; `nil` once that
    /// provider is gone): a node that one of them claims (``PipeWireCameraBackend/offers(_:)``)
    /// is that camera, listed once by its V4L2 provider, so this provider neither lists it nor
    /// reports it coming and going.
    package func addClaimer(_ claimer: @escaping @Sendable () -> [V4L2CameraBackend]?) {
        claimers.withLock { $0.append(Claimer(cameras: claimer)) }
    }

    /// Whether a V4L2 camera present now is the camera `backend` is a node of.
    package func isClaimed(_ backend: PipeWireCameraBackend) -> Bool {
        let sources = claimers.withLock { $0 }
        var claimed = false
        var gone: [ObjectIdentifier] = []
        for source in sources {
            guard let cameras = source.cameras() else {
                gone.append(ObjectIdentifier(source))
                continue
            }
            if cameras.contains(where: { backend.offers($0) }) {
                claimed = true
                break
            }
        }
        if !gone.isEmpty { claimers.withLock { $0.removeAll { gone.contains(ObjectIdentifier($0)) } } }
        return claimed
    }

    /// Called with the portal's remote: drops the current connection and uses `fileDescriptor`.
    package func reconnect(remoteFileDescriptor fileDescriptor: Int32) throws(CaptureError) {
        let result: Result<Void, CaptureError> = queue.sync {
            dropConnection()
            state.withLock { $0.remoteFileDescriptor = fileDescriptor }
            return connectIfNeeded() != nil
                ? .success(())
                : .failure(
                    CaptureError(
                        .deviceNotFound,
                        "the PipeWire remote the Camera portal opened (fd \(fileDescriptor)) does not reach a daemon: ask the portal again"
                    ))
        }
        try result.get()
    }

    // MARK: On the queue

    private func connectIfNeeded() -> PipeWireConnection? {
        if let connection = state.withLock({ $0.connection }) { return connection }
        let fd = state.withLock { state -> Int32? in
            defer { state.remoteFileDescriptor = nil }
            return state.remoteFileDescriptor
        }
        guard fd != nil || PipeWireConnection.socketExists(remoteName: remoteName) else { return nil }
        let generation = state.withLock { state -> Int in
            state.generation += 1
            return state.generation
        }
        // The loop thread never holds the provider: were its reference the last, the provider and
        // its connection would be torn down on the very loop thread being stopped. The weak
        // reference is read on the provider's queue only.
        let queue = self.queue
        let relay = WeakRelay(self)
        var events = PipeWireConnection.Events()
        events.nodeAdded = { id, _, _, mediaClass, role in
            guard mediaClass == "Video/Source", role.isEmpty || role == "Camera" else { return }
            queue.async {
                relay.provider?.nodeAppeared(id, requiresCameraRole: role.isEmpty, generation: generation)
            }
        }
        events.globalRemoved = { id in
            queue.async { relay.provider?.nodeWent(id, generation: generation) }
        }
        events.failed = { _ in
            queue.async {
                guard let provider = relay.provider, provider.state.withLock({ $0.generation }) == generation
                else { return }
                provider.dropConnection()
            }
        }
        guard let connection = try? PipeWireConnection(remoteFileDescriptor: fd, remoteName: remoteName, events: events)
        else { return nil }
        state.withLock { $0.connection = connection }
        return connection
    }

    private func nodeAppeared(_ id: UInt32, requiresCameraRole: Bool, generation: Int) {
        guard let connection = state.withLock({ $0.generation == generation ? $0.connection : nil }),
            let (details, rawFormats) = connection.describeNode(id)
        else { return }
        let api = PipeWireCameraBackend.string(details.device_api)
        if requiresCameraRole, PipeWireCameraBackend.string(details.media_role) != "Camera",
            api != "v4l2", api != "libcamera"
        {
            return
        }
        let name = PipeWireCameraBackend.string(details.name)
        let uniqueID = "pipewire:" + (name.isEmpty ? "node-\(details.serial)" : name)
        var seen = Set<CaptureDevice.Format>()
        let formats = rawFormats.compactMap(PipeWireFormat.captureFormat).filter { seen.insert($0).inserted }
        // Its controls (PropInfo, Props); a node without any, or one that does not answer, has none.
        let controls = connection.nodeControls(id) ?? []
        let (backend, handler) = state.withLock {
            state -> (PipeWireCameraBackend, (@Sendable (DeviceChanges) -> Void)?) in
            let backend: PipeWireCameraBackend
            // A node of the same name is the same camera come back, whatever it offers now: the
            // app's device object (and a session waiting for it) stays the one it holds.
            if let existing = state.known[uniqueID] {
                existing.reappeared(
                    id: id, serial: details.serial, formats: formats, connection: connection, controls: controls)
                backend = existing
            } else {
                backend = PipeWireCameraBackend(
                    uniqueID: uniqueID, details: details, nodeID: id, formats: formats, connection: connection,
                    controls: controls)
                state.known[uniqueID] = backend
            }
            if !state.order.contains(uniqueID) { state.order.append(uniqueID) }
            state.present[id] = Entry(backend: backend, id: id)
            return (backend, state.handler)
        }
        // A node of a V4L2 camera is that camera: its V4L2 provider reports it.
        if !isClaimed(backend) { handler?(DeviceChanges(connected: [backend])) }
    }

    private func nodeWent(_ id: UInt32, generation: Int) {
        let (entry, handler) = state.withLock { state in
            state.generation == generation ? (state.present.removeValue(forKey: id), state.handler) : (nil, nil)
        }
        guard let entry else { return }
        entry.backend.disappeared()
        if !isClaimed(entry.backend) { handler?(DeviceChanges(disconnected: [entry.backend])) }
    }

    private func dropConnection() {
        let (connection, gone, handler) = state.withLock { state in
            defer {
                state.connection = nil
                state.present = [:]
                state.generation += 1
            }
            return (state.connection, Array(state.present.values.map(\.backend)), state.handler)
        }
        for backend in gone { backend.disappeared() }
        let reported = gone.filter { !isClaimed($0) }
        if !reported.isEmpty { handler?(DeviceChanges(disconnected: reported)) }
        // Streams still running on it keep it (they stop on their own); it closes with the last
        // reference, never under a thread that is using it.
        _ = connection
    }
}

/// A weak reference to the provider for the loop thread's callbacks, read on the provider's queue.
private final class WeakRelay: @unchecked Sendable {  // unchecked: `provider` is read on one serial queue.
    weak var provider: PipeWireDeviceProvider?
    init(_ provider: PipeWireDeviceProvider) { self.provider = provider }
}

/// Which route cameras take when both PipeWire and V4L2 offer them, from the environment
/// variable `VIEWFINDER_CAMERA_ROUTE`: unset / `auto` (a V4L2 camera that a PipeWire node offers
/// streams through PipeWire while the node is there, straight from V4L2 otherwise; PipeWire-only
/// cameras, libcamera's say, are listed too), `pipewire` (only cameras PipeWire offers are listed,
/// and they stream only through PipeWire), `v4l2` (PipeWire is not asked: the PipeWire backend
/// lists nothing and V4L2 cameras open their driver). A camera keeps its unique ID whichever
/// route it takes (``V4L2PipeWireRoute``).
///
/// Thread safety: a value type.
package enum PipeWireRoute: Sendable, Equatable {
    case automatic, pipeWire, v4l2

    /// The route the environment asks for now.
    package static var current: PipeWireRoute {
        switch ProcessInfo.processInfo.environment["VIEWFINDER_CAMERA_ROUTE"]?.lowercased() {
        case "pipewire": return .pipeWire
        case "v4l2": return .v4l2
        default: return .automatic
        }
    }

    /// Whether the PipeWire backend lists cameras.
    package var usesPipeWire: Bool { self != .v4l2 }
}
