import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

extension CaptureDevice {
    /// The camera the user prefers, kept across launches and reboots (AVFoundation's
    /// `userPreferredCamera`). Set it when the user picks a camera; read it to open that camera
    /// next time.
    ///
    /// Viewfinder keeps a short history of the cameras set here, most recent first, by their
    /// ``uniqueID``s, in `$XDG_CONFIG_HOME/viewfinder/preferred-cameras.json` (`~/.config/…` by
    /// default). Reading it returns the most recent of them that is connected; when none is, the
    /// next best choice (``systemPreferredCamera``'s); `nil` only when no camera is connected.
    /// Setting `nil`, or a device that is not a camera, has no effect.
    ///
    /// Observable on the class: `CaptureDevice.observe(\.userPreferredCamera, options: [.new]) { … }`
    /// (AVFoundation's `AVCaptureDevice.self.addObserver(_:forKeyPath:options:context:)`), reported
    /// on the thread that set it, and on a background queue when a camera connects or disconnects.
    public static var userPreferredCamera: CaptureDevice? {
        get { PreferredCameras.current.userPreferredCamera }
        set { PreferredCameras.current.setUserPreferredCamera(newValue) }
    }

    /// The camera to use, as the system sees it (AVFoundation's `systemPreferredCamera`): the
    /// user's preferred camera (``userPreferredCamera``'s history) when one of them is connected;
    /// otherwise PipeWire's default video source (the node the session manager, WirePlumber, keeps
    /// as `default.video.source`: `wpctl set-default` chooses it) when Viewfinder is connected to a
    /// PipeWire daemon and that node is one of the cameras; else the camera connected most
    /// recently while the process ran, else the first external camera, else the first camera
    /// (``default(for:)``). `nil` when no camera is connected.
    ///
    /// It changes by itself when cameras come and go: observe it on the class and move the
    /// session's input to the new camera, as AVFoundation asks —
    /// `CaptureDevice.observe(\.systemPreferredCamera, options: [.new]) { _, change in … }`.
    public static var systemPreferredCamera: CaptureDevice? { PreferredCameras.current.systemPreferredCamera }

    /// Calls `changeHandler` when the class property at `keyPath` changes: ``userPreferredCamera``
    /// and ``systemPreferredCamera`` (AVFoundation observes them with
    /// `AVCaptureDevice.self.addObserver(_:forKeyPath:options:context:)`, which Linux Foundation
    /// lacks; this is the same observation in the shape of ``observe(_:options:changeHandler:)``).
    /// Keep the returned observation. A change is reported once per new value, on the thread that
    /// set the preference or, when a camera connected or disconnected, on a background queue.
    public static func observe<Value: Equatable & Sendable>(
        _ keyPath: KeyPath<CaptureDevice.Type, Value>, options: NSKeyValueObservingOptions = [],
        changeHandler: @escaping (CaptureDevice.Type, NSKeyValueObservedChange<Value>) -> Void
    ) -> NSKeyValueObservation {
        let preferences = PreferredCameras.current
        preferences.startWatching()
        let registry = preferences.observers
        let name = PreferredCameras.observableKeyPaths[keyPath] ?? ""
        let current = CaptureDevice.self[keyPath: keyPath]
        let id = registry.add(
            ClassObservationEntry(name: name, keyPath: keyPath, options: options, last: current, changeHandler))
        if options.contains(.initial) {
            changeHandler(
                CaptureDevice.self,
                NSKeyValueObservedChange(
                    kind: .setting, newValue: options.contains(.new) ? current : nil, oldValue: nil, indexes: nil,
                    isPrior: false))
        }
        return NSKeyValueObservation(registry: registry, id: id)
    }
}

/// Where the preferred cameras' history lives: `$XDG_CONFIG_HOME/viewfinder/preferred-cameras.json`
/// (`~/.config/…` when `XDG_CONFIG_HOME` is unset), a JSON object a person can read and edit:
///
/// ```json
/// {
///   "userPreferredCameras" : [
///     "v4l2:usb-046d:082d:ABC123"
///   ],
///   "version" : 1
/// }
/// ```
///
/// Thread safety: a value type; the file is written whole (a temporary name, then renamed).
package struct PreferredCameraStore: Sendable, Hashable {
    /// The file.
    package var file: URL

    /// A store in `file` (tests point it at a temporary directory).
    package init(file: URL) { self.file = file }

    /// The store in the XDG config directory `environment` names (the process's by default).
    package static func standard(environment: [String: String] = ProcessInfo.processInfo.environment)
        -> PreferredCameraStore
    {
        let viewfinder = CameraProfileStore.standard(environment: environment).directory.deletingLastPathComponent()
        return PreferredCameraStore(file: viewfinder.appendingPathComponent("preferred-cameras.json"))
    }

    private struct Contents: Codable {
        var version: Int? = 1
        var userPreferredCameras: [String]
    }

    /// The unique IDs, most recent first; empty when there is no file or it cannot be read.
    package func load() -> [String] {
        guard let data = FileManager.default.contents(atPath: file.path),
            let contents = try? JSONDecoder().decode(Contents.self, from: data)
        else { return [] }
        return contents.userPreferredCameras
    }

    /// Writes `history`.
    package func save(_ history: [String]) throws(CaptureError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        do {
            var data = try encoder.encode(Contents(userPreferredCameras: history))
            data.append(UInt8(ascii: "\n"))
            let folder = file.deletingLastPathComponent()
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let temporary = folder.appendingPathComponent(".preferred-cameras.\(UUID().uuidString).tmp")
            try data.write(to: temporary)
            guard rename(temporary.path, file.path) == 0 else {
                let code = errno
                try? FileManager.default.removeItem(at: temporary)
                throw CaptureError(
                    .systemError, "cannot write \(file.path): check the directory's permissions", errno: code)
            }
        } catch let error as CaptureError {
            throw error
        } catch {
            throw CaptureError(
                .systemError, "cannot write \(file.path) (\(error.localizedDescription)): check that it is writable")
        }
    }
}

/// The preferred cameras of a process: the user's history (read from the store once, written on
/// each set), the order cameras connected in while it watched, and the observers of the two class
/// properties, told when the user's or the system's choice changes.
///
/// Thread safety: all members may be used from any thread.
package final class PreferredCameras: Sendable {
    /// The process's, over the process's registry and the XDG config directory.
    package static let shared = PreferredCameras(store: .standard(), registry: nil)

    /// The one the class properties consult: ``shared``, unless a test binds another for its task.
    @TaskLocal package static var current: PreferredCameras = shared

    /// A backend's idea of the system's camera (PipeWire's default video source).
    private final class Chooser: Sendable {
        let owner: WeakReference<AnyObject>
        let choose: @Sendable ([CaptureDevice]) -> CaptureDevice?
        init(owner: AnyObject, _ choose: @escaping @Sendable ([CaptureDevice]) -> CaptureDevice?) {
            self.owner = WeakReference(owner)
            self.choose = choose
        }
    }
    private static let choosers = Mutex<[Chooser]>([])

    /// Adds a source of the system's choice of camera, asked (in the order added) when no camera
    /// of the user's history is connected: it returns one of the cameras it is given, or `nil`
    /// when it has no opinion. PipeWire's provider adds its default video source. The chooser
    /// goes with `owner`.
    package static func addSystemChooser(
        owner: AnyObject, _ choose: @escaping @Sendable ([CaptureDevice]) -> CaptureDevice?
    ) {
        choosers.withLock { list in
            list.removeAll { $0.owner.value == nil }
            list.append(Chooser(owner: owner, choose))
        }
    }

    /// How many cameras the history keeps.
    package static let historyLimit = 8

    /// The observable class properties, by name.
    package static var observableKeyPaths: [AnyKeyPath: String] {
        [
            \CaptureDevice.Type.userPreferredCamera: "userPreferredCamera",
            \CaptureDevice.Type.systemPreferredCamera: "systemPreferredCamera",
        ]
    }

    /// The observers of ``CaptureDevice/userPreferredCamera`` and ``CaptureDevice/systemPreferredCamera``.
    package let observers = _KeyValueObservers()

    private struct State {
        var history: [String]?
        /// Unique IDs of cameras that connected while the process watched, oldest first.
        var connected: [String] = []
        /// What the observers were last told (unique IDs; `nil`: no camera).
        var reportedUser: String??
        var reportedSystem: String??
        /// Whether anyone observes the class properties (only then do connections trigger a recheck).
        var isObserved = false
    }
    private let state = Mutex(State())
    private let store: PreferredCameraStore
    private let registry: DeviceRegistry?
    private let queue = DispatchQueue(label: "viewfinder.preferred-camera")
    private let tokens = ObserverTokens()

    /// The notification observers, removed with the object.
    // unchecked: `list` is set once in init, read once in deinit.
    private final class ObserverTokens: @unchecked Sendable {
        var list: [any NSObjectProtocol] = []
    }

    /// Preferences kept in `store`, over the cameras of `registry` (`nil`: the registry device
    /// lookups consult at the time).
    package init(store: PreferredCameraStore, registry: DeviceRegistry?) {
        self.store = store
        self.registry = registry
        let center = NotificationCenter.default
        tokens.list = [
            center.addObserver(forName: CaptureDevice.wasConnectedNotification, object: nil, queue: nil) {
                [weak self] note in
                guard let self, let device = note.object as? CaptureDevice, device.hasMediaType(.video) else { return }
                let id = device.uniqueID
                state.withLock { state in
                    state.connected.removeAll { $0 == id }
                    state.connected.append(id)
                    if state.connected.count > 64 { state.connected.removeFirst() }
                }
                recheckLater()
            },
            center.addObserver(forName: CaptureDevice.wasDisconnectedNotification, object: nil, queue: nil) {
                [weak self] _ in
                self?.recheckLater()
            },
        ]
    }

    /// Called when the class properties are observed: from now on cameras connecting and
    /// disconnecting make the choices be worked out again (and reported when they change).
    package func startWatching() {
        state.withLock { $0.isObserved = true }
    }

    private func recheckLater() {
        guard state.withLock({ $0.isObserved }) else { return }
        queue.async { [weak self] in self?.recheck() }
    }

    deinit {
        for token in tokens.list { NotificationCenter.default.removeObserver(token) }
    }

    /// The history, most recent first (read from the store on first use).
    package var history: [String] {
        state.withLock { state in
            if state.history == nil { state.history = store.load() }
            return state.history!
        }
    }

    private var cameras: [CaptureDevice] {
        (registry ?? DeviceRegistry.current).devices().filter { $0.hasMediaType(.video) && $0.isConnected }
    }

    /// The most recent camera of the history that is connected, else the system's choice.
    package var userPreferredCamera: CaptureDevice? {
        let cameras = cameras
        return fromHistory(cameras) ?? systemChoice(cameras)
    }

    /// The user's choice when connected, else the system's own.
    package var systemPreferredCamera: CaptureDevice? {
        let cameras = cameras
        return fromHistory(cameras) ?? systemChoice(cameras)
    }

    private func fromHistory(_ cameras: [CaptureDevice]) -> CaptureDevice? {
        for id in history {
            if let camera = cameras.first(where: { $0.uniqueID == id }) { return camera }
        }
        return nil
    }

    /// Without a connected preference: the system's default (PipeWire's default video source,
    /// through a chooser its provider added), else the camera that connected last while the
    /// process watched, else the first external camera, else the first camera.
    private func systemChoice(_ cameras: [CaptureDevice]) -> CaptureDevice? {
        for chooser in Self.choosers.withLock({ $0 }) where chooser.owner.value != nil {
            if let camera = chooser.choose(cameras) { return camera }
        }
        let connected = state.withLock { $0.connected }
        for id in connected.reversed() {
            if let camera = cameras.first(where: { $0.uniqueID == id }) { return camera }
        }
        return cameras.first { $0.deviceType == .external } ?? cameras.first
    }

    /// Puts `device` first in the history and writes it (`nil` or a device that is not a camera:
    /// nothing). A history that cannot be written is still used by this process.
    package func setUserPreferredCamera(_ device: CaptureDevice?) {
        guard let device, device.hasMediaType(.video) else { return }
        let updated = state.withLock { state -> [String] in
            var history = state.history ?? store.load()
            history.removeAll { $0 == device.uniqueID }
            history.insert(device.uniqueID, at: 0)
            history = Array(history.prefix(Self.historyLimit))
            state.history = history
            return history
        }
        try? store.save(updated)
        recheck()
    }

    /// Works out both choices again and tells the observers of each one that changed.
    package func recheck() {
        let cameras = cameras
        let user = fromHistory(cameras) ?? systemChoice(cameras)
        let system = user
        let (userChanged, systemChanged) = state.withLock { state -> (Bool, Bool) in
            let userChanged = state.reportedUser.map { $0 != user?.uniqueID } ?? true
            let systemChanged = state.reportedSystem.map { $0 != system?.uniqueID } ?? true
            state.reportedUser = .some(user?.uniqueID)
            state.reportedSystem = .some(system?.uniqueID)
            return (userChanged, systemChanged)
        }
        if userChanged { observers.changed("userPreferredCamera", newValue: user as Any) }
        if systemChanged { observers.changed("systemPreferredCamera", newValue: system as Any) }
    }
}

/// One observation of a class property of ``CaptureDevice``.
// unchecked: `last` is only touched under the registry's lock; the handler is the caller's, called
// as Foundation calls it (from the thread that made the change).
private final class ClassObservationEntry<Value: Equatable & Sendable>: AnyObservationEntry, @unchecked Sendable {
    let name: String
    private let keyPath: KeyPath<CaptureDevice.Type, Value>
    private let options: NSKeyValueObservingOptions
    private var last: Value
    private let handler: (CaptureDevice.Type, NSKeyValueObservedChange<Value>) -> Void

    init(
        name: String, keyPath: KeyPath<CaptureDevice.Type, Value>, options: NSKeyValueObservingOptions, last: Value,
        _ handler: @escaping (CaptureDevice.Type, NSKeyValueObservedChange<Value>) -> Void
    ) {
        self.name = name
        self.keyPath = keyPath
        self.options = options
        self.last = last
        self.handler = handler
    }

    func takeChangeIfDifferent() -> (@Sendable () -> Void)? {
        takeChange(CaptureDevice.self[keyPath: keyPath])
    }

    func takeChange(_ value: Any) -> (@Sendable () -> Void)? {
        guard let value = value as? Value, value != last else { return nil }
        let old = last
        last = value
        let call = Call(handler: handler, options: options, old: old, new: value)
        return { call.run() }
    }

    /// A call made on the thread that made the change.
    // unchecked: it captures the caller's handler and values, which Foundation's KVO calls alike.
    private struct Call: @unchecked Sendable {
        let handler: (CaptureDevice.Type, NSKeyValueObservedChange<Value>) -> Void
        let options: NSKeyValueObservingOptions
        let old: Value
        let new: Value

        func run() {
            if options.contains(.prior) {
                handler(
                    CaptureDevice.self,
                    NSKeyValueObservedChange(
                        kind: .setting, newValue: nil, oldValue: options.contains(.old) ? old : nil, indexes: nil,
                        isPrior: true))
            }
            handler(
                CaptureDevice.self,
                NSKeyValueObservedChange(
                    kind: .setting, newValue: options.contains(.new) ? new : nil,
                    oldValue: options.contains(.old) ? old : nil, indexes: nil, isPrior: false))
        }
    }
}
