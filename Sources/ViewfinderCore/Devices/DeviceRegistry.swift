import CViewfinderHooks
import Foundation
import Synchronization

/// Keeps one ``CaptureDevice`` per camera across discoveries, so the same camera is always the
/// same object, and merges what every ``DeviceProvider`` finds, in the providers'
/// ``DeviceProvider/sortOrder`` (real cameras first, virtual ones last).
///
/// Thread safety: all members may be used from any thread.
package final class DeviceRegistry: Sendable {
    /// The process's registry, with the built-in providers when the umbrella `Viewfinder` module
    /// is linked (its load-time hook hands them over, ``setBuiltInProviders(_:)``), each
    /// registered through ``register(_:)`` as any backend's is; empty otherwise, until the app
    /// registers the providers of the modules it links.
    package static let shared: DeviceRegistry = {
        vf_run_load_hook()
        let registry = DeviceRegistry(providers: [])
        for provider in builtInProviders.withLock({ $0 })?() ?? [] { registry.register(provider) }
        return registry
    }()

    private static let builtInProviders = Mutex<(@Sendable () -> [any DeviceProvider])?>(nil)

    /// Called by the umbrella module's load-time hook: `make` lists the built-in providers the
    /// process's registry starts with. The core names no backend.
    package static func setBuiltInProviders(_ make: @escaping @Sendable () -> [any DeviceProvider]) {
        builtInProviders.withLock { $0 = make }
    }

    /// The registry `CaptureDevice.devices(for:)` and friends consult: ``shared``, unless a test
    /// binds another for the duration of a task (so simulated cameras stay out of other tests).
    @TaskLocal package static var current: DeviceRegistry = shared

    private let providers: Mutex<[any DeviceProvider]>
    private let known = Mutex<[String: CaptureDevice]>([:])

    /// A registry consulting `providers` (and any registered later).
    package init(providers: [any DeviceProvider]) {
        self.providers = Mutex(providers)
        providers.forEach(startMonitoring)
    }

    /// Adds a provider: its devices are listed from now on, in its ``DeviceProvider/sortOrder``,
    /// and a ``MonitoringDeviceProvider`` starts reporting hot-plug changes. The one way a
    /// provider joins a registry: the built-in backends, new backends and tests' simulated drivers
    /// all come through here (``CaptureDevice/registerProvider(_:)`` for the process's registry).
    package func register(_ provider: any DeviceProvider) {
        providers.withLock { $0.append(provider) }
        startMonitoring(provider)
    }

    private func startMonitoring(_ provider: any DeviceProvider) {
        guard let monitoring = provider as? any MonitoringDeviceProvider else { return }
        monitoring.startMonitoring { [weak self] changes in self?.post(changes) }
    }

    /// Turns a provider's hot-plug report into device notifications.
    private func post(_ changes: DeviceChanges) {
        for backend in changes.disconnected {
            let device = known.withLock { $0[backend.uniqueID] }
            if let device, device.backend === backend {
                device.profileNeedsReapplying()  // a camera that comes back forgot its settings
                NotificationCenter.default.post(name: CaptureDevice.wasDisconnectedNotification, object: device)
            }
        }
        for backend in changes.connected {
            NotificationCenter.default.post(name: CaptureDevice.wasConnectedNotification, object: device(for: backend))
        }
    }

    /// The providers registered now.
    package func providerList() -> [any DeviceProvider] {
        providers.withLock { $0 }
    }

    /// Removes providers matching `predicate`.
    package func unregister(where predicate: (any DeviceProvider) -> Bool) {
        providers.withLock { $0.removeAll(where: predicate) }
    }

    /// The devices present now, in provider order.
    package func devices() -> [CaptureDevice] {
        let current = providers.withLock { $0 }.sorted { $0.sortOrder < $1.sortOrder }
        var result: [CaptureDevice] = []
        for provider in current {
            for backend in provider.discoverBackends() {
                result.append(device(for: backend))
            }
        }
        return result
    }

    /// The one device object for `backend`'s unique ID.
    package func device(for backend: any DeviceBackend) -> CaptureDevice {
        known.withLock { known in
            if let existing = known[backend.uniqueID], existing.backend === backend { return existing }
            let device = CaptureDevice(backend: backend)
            known[backend.uniqueID] = device
            return device
        }
    }
}

extension CaptureDevice {
    /// Adds a backend's device provider to the registry device lookups consult (the process's,
    /// or the one a test bound for its task): from now on ``devices(for:)``, ``default(for:)``
    /// and discovery sessions list its devices, sorted by its ``DeviceProvider/sortOrder`` (the
    /// built-in V4L2 cameras are 0, ALSA microphones 100, the virtual devices 1000 and up), and a
    /// ``MonitoringDeviceProvider``'s hot-plug changes are posted as
    /// ``wasConnectedNotification`` and ``wasDisconnectedNotification``.
    ///
    /// The built-in backends register this way too. Register a provider once.
    public static func registerProvider(_ provider: any DeviceProvider) {
        DeviceRegistry.current.register(provider)
    }

    /// The default device for `mediaType`: the first real camera, or the virtual test-pattern
    /// camera when the machine has none. `nil` for media types no device produces.
    public static func `default`(for mediaType: MediaType) -> CaptureDevice? {
        devices(for: mediaType).first
    }

    /// Every device that produces `mediaType`: real cameras first, the virtual camera last.
    public static func devices(for mediaType: MediaType) -> [CaptureDevice] {
        DeviceRegistry.current.devices().filter { $0.hasMediaType(mediaType) }
    }

    /// The device with `uniqueID`, if that device is present.
    public static func device(withUniqueID uniqueID: String) -> CaptureDevice? {
        DeviceRegistry.current.devices().first { $0.uniqueID == uniqueID }
    }

    /// Every device present (AVFoundation's deprecated `devices()`): real cameras first, the
    /// virtual camera last.
    public static func devices() -> [CaptureDevice] {
        DeviceRegistry.current.devices()
    }

    /// The default device of `deviceType` for `mediaType` at `position` (the counterpart of
    /// `AVCaptureDevice.default(_:for:position:)`); ``Position/unspecified`` matches every
    /// position.
    ///
    /// Lookup rule (so ported iOS code gets frames on a laptop or a desktop): a camera whose type
    /// and position match comes first. When none does and the lookup is for
    /// ``DeviceType/builtInWideAngleCamera`` video (iOS code's "the camera", usually with
    /// `.back`), the answer is ``default(for:)`` — the first real camera, or the virtual camera on
    /// a machine without one — whose own ``deviceType`` and ``position`` still say what it is.
    /// Lookups for other types (``DeviceType/external``, ``DeviceType/builtInDualCamera``, …)
    /// return only exact matches, `nil` when there are none.
    public static func `default`(
        _ deviceType: DeviceType, for mediaType: MediaType?, position: Position
    ) -> CaptureDevice? {
        lookup(deviceTypes: [deviceType], mediaType: mediaType, position: position).first
    }

    /// The devices a lookup finds, by the rule of ``default(_:for:position:)``.
    package static func lookup(deviceTypes: [DeviceType], mediaType: MediaType?, position: Position) -> [CaptureDevice]
    {
        let all = DeviceRegistry.current.devices()
        let exact = all.filter { device in
            deviceTypes.contains(device.deviceType)
                && (mediaType.map { device.hasMediaType($0) } ?? true)
                && (position == .unspecified || device.position == position)
        }
        guard exact.isEmpty, deviceTypes.contains(.builtInWideAngleCamera), mediaType == nil || mediaType == .video
        else { return exact }
        return all.first { $0.hasMediaType(.video) }.map { [$0] } ?? []
    }

    /// Finds devices by type, media type and position (the counterpart of
    /// `AVCaptureDevice.DiscoverySession`), by the lookup rule of ``default(_:for:position:)``:
    /// a search for ``DeviceType/builtInWideAngleCamera`` that matches nothing exactly finds the
    /// default camera.
    public final class DiscoverySession: Sendable {
        /// The types searched for.
        public let deviceTypes: [DeviceType]
        /// The media type searched for, or `nil` for any.
        public let mediaType: MediaType?
        /// The position searched for; ``Position/unspecified`` matches every position.
        public let position: Position

        /// A search for devices of `deviceTypes` producing `mediaType` at `position`.
        public init(deviceTypes: [DeviceType], mediaType: MediaType?, position: Position) {
            self.deviceTypes = deviceTypes
            self.mediaType = mediaType
            self.position = position
        }

        /// The matching devices present now, real cameras first.
        public var devices: [CaptureDevice] {
            CaptureDevice.lookup(deviceTypes: deviceTypes, mediaType: mediaType, position: position)
        }
    }
}
