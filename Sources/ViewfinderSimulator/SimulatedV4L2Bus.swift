import Foundation
import Synchronization
import Viewfinder

#if canImport(Glibc)
    import Glibc
#endif

/// A simulated `/dev` with ``SimulatedUVCCamera``s plugged into it: the device directory and the
/// system-call interface the V4L2 backend runs against in tests and demos. Plugging and unplugging
/// cameras notifies the backend's hot-plug watch exactly as inotify would.
///
/// Each plugged camera gets two nodes, as a UVC camera does: `/dev/videoN` for capture and
/// `/dev/videoN+1` for metadata (which discovery must skip).
///
/// The bus has its own device registry, like the system's but with the bus's cameras as the real
/// cameras and the virtual camera last; ``withDiscovery(_:)`` makes `CaptureDevice.devices(for:)`
/// consult it within a task, so simulated cameras never leak into unrelated code.
///
/// ```swift
/// let bus = SimulatedV4L2Bus()
/// bus.plug(try SimulatedUVCCamera(configuration: .init(listing: SimulatedUVCCamera.c920Listing)))
/// bus.withDiscovery {
///     let camera = CaptureDevice.default(for: .video)!   // the simulated C920
/// }
/// ```
///
/// Thread safety: all members may be used from any thread.
public final class SimulatedV4L2Bus: Sendable {
    private struct Node {
        var camera: SimulatedUVCCamera
        var isMetadata: Bool
    }

    // unchecked: the mapped memory objects are only retained and released under the lock.
    private struct State: @unchecked Sendable {
        var nodes: [String: Node] = [:]
        var descriptors: [Int32: SimulatedUVCCamera] = [:]
        var mappings: [UInt: SimulatedBufferMemory] = [:]
        var nextDescriptor: Int32 = 100
        var watchers: [@Sendable () -> Void] = []
    }
    private let state = Mutex(State())

    /// The V4L2 provider scanning this bus (buffers per stream: `bufferCount`).
    let provider: V4L2DeviceProvider
    /// The registry for ``withDiscovery(_:)``: this bus's cameras, then the virtual camera.
    let registry: DeviceRegistry

    /// This bus's USB host controllers' bandwidth reservations.
    let usbReservations = SimulatedUSBReservations()
    /// Makes this bus's USB bus IDs unique in the process (`sim3-usb1`).
    let usbPrefix = "sim\(SimulatedV4L2Bus.instances.add(1, ordering: .relaxed).newValue)"
    private static let instances = Atomic<Int>(0)

    /// An empty bus whose cameras stream with `bufferCount` buffers each.
    public init(bufferCount: Int = 4) {
        let directory = BusDirectory()
        let interface = BusInterface()
        provider = V4L2DeviceProvider(directory: directory, interface: interface, bufferCount: bufferCount)
        registry = DeviceRegistry(providers: [VirtualCameraProvider()])
        directory.bus.withLock { $0 = WeakReference(self) }
        interface.bus.withLock { $0 = WeakReference(self) }
        registry.register(provider)
    }

    // MARK: Plugging

    /// Plugs `camera` in at the lowest free `/dev/videoN` (or at `path`), plus its metadata node,
    /// and, with `port`, at that USB port (its sysfs and udev view, and a share of that bus's
    /// bandwidth: see ``SimulatedUSBPort``). Returns the capture node's path. A camera plugged in
    /// already stays as it is (its open descriptors, buffers and stream untouched) and its node is
    /// returned.
    @discardableResult
    public func plug(_ camera: SimulatedUVCCamera, at path: String? = nil, port: SimulatedUSBPort? = nil) -> String {
        let (node, watchers) = state.withLock { state -> (String, [@Sendable () -> Void]) in
            if let existing = state.nodes.first(where: { $0.value.camera === camera && !$0.value.isMetadata }) {
                return (existing.key, [])
            }
            // Under the bus's lock, so two threads plugging one camera cannot both reset it.
            _ = camera.plugIn()
            if let port {
                let busID = "\(usbPrefix)-usb\(port.bus)"
                camera.attach(
                    SimulatedUSBAttachment(
                        reservations: usbReservations,
                        location: USBLocation(
                            busID: busID, busNumber: port.bus, port: port.port, speedMbps: port.speedMbps),
                        busInfo: "usb-\(usbPrefix).\(port.bus)-\(port.port)"))
            }
            let node: String
            if let path {
                node = path
                state.nodes[path] = Node(camera: camera, isMetadata: false)
            } else {
                var number = 0
                while state.nodes["/dev/video\(number)"] != nil || state.nodes["/dev/video\(number + 1)"] != nil {
                    number += 1
                }
                node = "/dev/video\(number)"
                state.nodes[node] = Node(camera: camera, isMetadata: false)
                state.nodes["/dev/video\(number + 1)"] = Node(camera: camera, isMetadata: true)
            }
            return (node, state.watchers)
        }
        for watcher in watchers { watcher() }
        return node
    }

    /// Unplugs `camera`: its nodes disappear and every descriptor open on it fails with `ENODEV`.
    public func unplug(_ camera: SimulatedUVCCamera) {
        camera.unplug()
        let watchers = state.withLock { state in
            state.nodes = state.nodes.filter { $0.value.camera !== camera }
            return state.watchers
        }
        for watcher in watchers { watcher() }
    }

    // MARK: Devices

    /// The capture devices of the cameras plugged in now, in node order.
    public var devices: [CaptureDevice] {
        registry.devices().filter { $0.devicePath != nil }
    }

    /// The capture device of `camera`, if it is plugged in.
    public func device(for camera: SimulatedUVCCamera) -> CaptureDevice? {
        guard let node = node(of: camera) else { return nil }
        return devices.first { $0.devicePath == node }
    }

    /// The capture node `camera` is plugged in at, if it is.
    public func node(of camera: SimulatedUVCCamera) -> String? {
        state.withLock { state in
            state.nodes.first { $0.value.camera === camera && !$0.value.isMetadata }?.key
        }
    }

    /// The sysfs and udev view of the camera at `node`.
    /// What sysfs would say of `node` to anyone: the camera's name, and the node's index (0 the
    /// capture node, 1 the metadata node).
    fileprivate func sysfsFacts(ofNode node: String) -> (name: String?, index: Int?) {
        guard let entry = state.withLock({ $0.nodes[node] }) else { return (nil, nil) }
        return (entry.camera.card, entry.isMetadata ? 1 : 0)
    }

    fileprivate func identity(ofNode node: String) -> V4L2NodeIdentity {
        guard let camera = state.withLock({ $0.nodes[node].flatMap { $0.isMetadata ? nil : $0.camera } }) else {
            return V4L2NodeIdentity()
        }
        return camera.identity(busID: usbPrefix)
    }

    /// Runs `body` with `CaptureDevice.devices(for:)`, `default(for:)` and discovery sessions
    /// seeing this bus's cameras (first) and the virtual camera (last) instead of the machine's.
    public func withDiscovery<T>(_ body: () throws -> T) rethrows -> T {
        try DeviceRegistry.$current.withValue(registry) { try body() }
    }

    /// Descriptors open on the bus's cameras.
    public var openDescriptorCount: Int { state.withLock { $0.descriptors.count } }

    /// Buffers mapped and not yet unmapped.
    public var mappedBufferCount: Int { state.withLock { $0.mappings.count } }

    // MARK: The directory and interface the provider sees

    fileprivate func videoNodes() -> [String] {
        BusDirectory.sortedNumerically(state.withLock { Array($0.nodes.keys) })
    }

    fileprivate func addWatcher(_ watcher: @escaping @Sendable () -> Void) {
        state.withLock { $0.watchers.append(watcher) }
    }

    fileprivate func open(_ path: String, flags: Int32) throws(V4L2Errno) -> Int32 {
        let (node, fd) = state.withLock { state -> (Node?, Int32) in
            state.nextDescriptor += 1
            return (state.nodes[path], state.nextDescriptor)
        }
        guard let node else { throw V4L2Errno(ENOENT) }
        try node.camera.open(fd: fd, isMetadata: node.isMetadata, flags: flags)
        state.withLock { $0.descriptors[fd] = node.camera }
        return fd
    }

    private func camera(_ fd: Int32) throws(V4L2Errno) -> SimulatedUVCCamera {
        guard let camera = state.withLock({ $0.descriptors[fd] }) else { throw V4L2Errno(EBADF) }
        return camera
    }

    fileprivate func close(_ fd: Int32) {
        guard let camera = state.withLock({ $0.descriptors.removeValue(forKey: fd) }) else { return }
        camera.close(fd: fd)
    }

    fileprivate func ioctl(_ fd: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) throws(V4L2Errno) {
        try camera(fd).ioctl(fd: fd, request: request, argument: argument)
    }

    fileprivate func mmap(fd: Int32, length: Int, offset: Int64) throws(V4L2Errno) -> UnsafeMutableRawPointer {
        let memory = try camera(fd).memory(fd: fd, offset: offset, length: length)
        state.withLock { $0.mappings[UInt(bitPattern: memory.address)] = memory }
        return memory.address
    }

    fileprivate func munmap(_ address: UnsafeMutableRawPointer) {
        _ = state.withLock { $0.mappings.removeValue(forKey: UInt(bitPattern: address)) }
    }

    fileprivate func poll(_ fd: Int32, events: Int16, timeoutMilliseconds: Int32) throws(V4L2Errno) -> Int16 {
        try camera(fd).poll(fd: fd, events: events, timeoutMilliseconds: timeoutMilliseconds)
    }
}

/// The bus as a ``V4L2DeviceDirectory`` (held weakly: the bus owns the provider that owns this).
private final class BusDirectory: V4L2DeviceDirectory {
    let bus = Mutex<WeakReference<SimulatedV4L2Bus>?>(nil)
    private var target: SimulatedV4L2Bus? { bus.withLock { $0?.value } }

    func videoNodes() -> [String] { target?.videoNodes() ?? [] }

    func identity(ofNode node: String) -> V4L2NodeIdentity { target?.identity(ofNode: node) ?? V4L2NodeIdentity() }

    func unopenedNodeFacts(ofNode node: String) -> (name: String?, index: Int?) {
        target?.sysfsFacts(ofNode: node) ?? (nil, nil)
    }

    func watch(_ onChange: @escaping @Sendable () -> Void) -> Bool {
        guard let target else { return false }
        target.addWatcher(onChange)
        return true
    }
}

/// The bus as a ``V4L2Interface``.
private final class BusInterface: V4L2Interface {
    let bus = Mutex<WeakReference<SimulatedV4L2Bus>?>(nil)
    private func target() throws(V4L2Errno) -> SimulatedV4L2Bus {
        guard let bus = bus.withLock({ $0?.value }) else { throw V4L2Errno(ENODEV) }
        return bus
    }

    func open(_ path: String, flags: Int32) throws(V4L2Errno) -> Int32 { try target().open(path, flags: flags) }
    func close(_ fd: Int32) { (try? target())?.close(fd) }
    func ioctl(_ fd: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) throws(V4L2Errno) {
        try target().ioctl(fd, request, argument)
    }
    func mmap(fd: Int32, length: Int, offset: Int64) throws(V4L2Errno) -> UnsafeMutableRawPointer {
        try target().mmap(fd: fd, length: length, offset: offset)
    }
    func munmap(_ address: UnsafeMutableRawPointer, length: Int) { (try? target())?.munmap(address) }
    func poll(_ fd: Int32, events: Int16, timeoutMilliseconds: Int32) throws(V4L2Errno) -> Int16 {
        try target().poll(fd, events: events, timeoutMilliseconds: timeoutMilliseconds)
    }
}
