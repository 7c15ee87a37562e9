import Synchronization
import ViewfinderCore

/// Finds ALSA capture devices: the PCMs alsa-lib's hints list (``ALSADeviceDirectory``), `default`
/// first. A PCM is listed when it opens for capture, or when opening it fails for a reason the
/// user can fix (busy, permission): so on a machine with no sound card, where `default` has no
/// capture device behind it, none is listed and the virtual microphone becomes the default.
///
/// Each PCM keeps one backend (so one ``CaptureDevice``) across discoveries. A PCM that failed
/// to open is tried again after ``retryInterval``, so discovery stays cheap.
///
/// Thread safety: all members may be used from any thread.
package final class ALSADeviceProvider: DeviceProvider {
    /// How long a PCM that failed to open is left out before it is tried again.
    package static let retryInterval = MediaTime(value: 5, timescale: 1)

    private struct Entry {
        let microphone: ALSAMicrophone
        let backend: AudioDeviceBackend
        var usable: Bool?
        var checkedAt: MediaTime = .negativeInfinity
    }
    private let entries = Mutex<[String: Entry]>([:])
    private let list: @Sendable () -> [ALSADeviceInfo]
    private let clock: any CaptureClock

    /// A provider listing `list()` (default: alsa-lib's hints), retrying failed PCMs on `clock`.
    package init(
        list: @escaping @Sendable () -> [ALSADeviceInfo] = { ALSADeviceDirectory.captureDevices() },
        clock: any CaptureClock = HostClock()
    ) {
        self.list = list
        self.clock = clock
    }

    package var sortOrder: Int { 100 }

    package func discoverBackends() -> [any DeviceBackend] {
        list().compactMap { info in usableBackend(for: info) }
    }

    private func usableBackend(for info: ALSADeviceInfo) -> AudioDeviceBackend? {
        let now = clock.now()
        let entry = entries.withLock { entries in
            if let entry = entries[info.name] { return entry }
            let microphone = ALSAMicrophone(info: info, bufferCount: 32)
            let entry = Entry(
                microphone: microphone,
                backend: AudioDeviceBackend(source: microphone, modelID: "ALSA \(info.name)", manufacturer: ""))
            entries[info.name] = entry
            return entry
        }
        if let usable = entry.usable, usable || now - entry.checkedAt < Self.retryInterval {
            return usable ? entry.backend : nil
        }
        // Probing opens the PCM: done outside the lock.
        let usable = Self.isUsable(entry.microphone)
        entries.withLock { entries in
            entries[info.name]?.usable = usable
            entries[info.name]?.checkedAt = now
        }
        return usable ? entry.backend : nil
    }

    /// Whether `microphone` opens and lists formats, or fails only in a way the user can fix.
    package static func isUsable(_ microphone: ALSAMicrophone) -> Bool {
        if !microphone.formats.isEmpty { return true }
        do {
            return try !microphone.probeFormats().isEmpty
        } catch {
            return error.code == .deviceBusy || error.code == .permissionDenied
        }
    }
}
