/// What a hot-plug event changed: backends that appeared (or came back) and backends that went.
public struct DeviceChanges: Sendable {
    /// Backends now present that were not at the last look.
    public var connected: [any DeviceBackend] = []
    /// Backends present at the last look and gone now.
    public var disconnected: [any DeviceBackend] = []

    /// A change of `connected` and `disconnected` backends (none by default).
    public init(connected: [any DeviceBackend] = [], disconnected: [any DeviceBackend] = []) {
        self.connected = connected
        self.disconnected = disconnected
    }

    /// Whether nothing changed.
    public var isEmpty: Bool { connected.isEmpty && disconnected.isEmpty }
}

/// A ``DeviceProvider`` that notices devices coming and going by itself (watching `/dev`, say).
/// The registry starts monitoring when the provider is registered and turns the changes into
/// ``CaptureDevice/wasConnectedNotification`` and ``CaptureDevice/wasDisconnectedNotification``.
///
/// Thread safety: as ``DeviceProvider``; `handler` may be called on any thread.
public protocol MonitoringDeviceProvider: DeviceProvider {
    /// Starts reporting changes to `handler`. Called once per registry the provider is in.
    func startMonitoring(_ handler: @escaping @Sendable (DeviceChanges) -> Void)
}
