/// What a hot-plug event changed: backends that appeared (or came back) and backends that went.
package struct DeviceChanges: Sendable {
    /// Backends now present that were not at the last look.
    var connected: [any DeviceBackend] = []
    /// Backends present at the last look and gone now.
    var disconnected: [any DeviceBackend] = []

    /// Whether nothing changed.
    var isEmpty: Bool { connected.isEmpty && disconnected.isEmpty }
}

/// A ``DeviceProvider`` that notices devices coming and going by itself (watching `/dev`, say).
/// The ``DeviceRegistry`` starts monitoring when the provider is added and turns the changes into
/// ``CaptureDevice/wasConnectedNotification`` and ``CaptureDevice/wasDisconnectedNotification``.
///
/// Thread safety: as ``DeviceProvider``; `handler` may be called on any thread.
package protocol MonitoringDeviceProvider: DeviceProvider {
    /// Starts reporting changes to `handler`. Called once per registry the provider is in.
    func startMonitoring(_ handler: @escaping @Sendable (DeviceChanges) -> Void)
}
