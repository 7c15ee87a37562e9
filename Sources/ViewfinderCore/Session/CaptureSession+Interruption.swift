import Dispatch
import Foundation
import Synchronization

extension CaptureSession {
    /// Why a session was interrupted (the counterpart of `AVCaptureSession.InterruptionReason`),
    /// under ``CaptureSessionInterruptionReasonKey`` in ``wasInterruptedNotification``'s
    /// `userInfo`.
    ///
    /// Two sessions of one process on one camera share its stream, as on macOS, when the later
    /// one can run on the format and rate the camera already runs at (each session's outputs
    /// convert to what they asked). When it cannot (its preset needs another size, it asks a
    /// faster rate, or an output cannot be served from that format), the session that starts
    /// (or commits) last gets the camera and every other is interrupted with
    /// ``videoDeviceInUseByAnotherClient``, resuming by itself — posting
    /// ``interruptionEndedNotification`` — once the camera is free again.
    public enum InterruptionReason: Int, Sendable, Hashable {
        /// Never reported on Linux (no background state).
        case videoDeviceNotAvailableInBackground = 1
        /// Another client (a microphone in use elsewhere).
        case audioDeviceInUseByAnotherClient = 2
        /// Another capture session of this process took the camera.
        case videoDeviceInUseByAnotherClient = 3
        /// Never reported on Linux.
        case videoDeviceNotAvailableWithMultipleForegroundApps = 4
        /// Never reported on Linux.
        case videoDeviceNotAvailableDueToSystemPressure = 5
        /// Never reported on Linux (no sensitive-content analyzer interrupts a session).
        case sensitiveContentMitigationActivated = 6
        /// Viewfinder's addition: the camera was unplugged; the session resumes when it returns.
        case videoDeviceWasDisconnected = 100

        /// The reason an interruption with `error` has.
        package init(_ error: CaptureError) {
            self = error.code == .deviceDisconnected ? .videoDeviceWasDisconnected : .videoDeviceInUseByAnotherClient
        }
    }
}

/// The `userInfo` key of ``CaptureSession/wasInterruptedNotification`` whose value is the
/// ``CaptureSession/InterruptionReason`` (`AVCaptureSessionInterruptionReasonKey` without "AV").
// swift-format-ignore: AlwaysUseLowerCamelCase
public let CaptureSessionInterruptionReasonKey = "ViewfinderCaptureSessionInterruptionReasonKey"

extension CaptureSession {
    // MARK: Interruptions

    /// Waits for a lost device to return (``CaptureDevice/wasConnectedNotification`` for the same
    /// unique ID), then resumes. Checks once at once, in case it is already back.
    func watchForReconnection() {
        let observer = ReconnectionObserver { [weak self] device in
            guard let self else { return }
            self.schedule { self.resumeInterruptedStreams(reconnected: device) }
        }
        reconnection.withLock { $0 = observer }
        resumeInterruptedStreams(reconnected: nil)
    }

    /// Restarts the streams of device inputs that have none, if their devices are connected again;
    /// posts ``interruptionEndedNotification`` once every input streams.
    func resumeInterruptedStreams(reconnected: CaptureDevice?) {
        enterTransition()
        defer { leaveTransition() }
        let (graph, active, interrupted) = state.withLock { ($0.graph, $0.streams, $0.running && $0.interrupted) }
        guard interrupted else { return }
        let idle = graph.inputs.compactMap { $0 as? CaptureDeviceInput }.filter { input in
            !active.contains { $0.device === input.device }
        }
        var resumed: [DeviceStream] = []
        for input in idle where input.device.isConnected || input.device.uniqueID == reconnected?.uniqueID {
            do {
                resumed.append(
                    try startStream(
                        device: input.device, connections: Self.connections(of: input, in: graph),
                        preset: graph.preset, preempting: false))
            } catch  where error.code == .deviceBusy {
                input.device.addWaiter(self)  // another session still has it: wait for it again
            } catch {
                post(Self.runtimeErrorNotification, error: error)
            }
        }
        guard resumed.count == idle.count else {
            state.withLock { $0.streams.append(contentsOf: resumed) }
            return
        }
        state.withLock {
            $0.streams.append(contentsOf: resumed)
            $0.interrupted = false
        }
        reconnection.withLock { $0 = nil }
        post(Self.interruptionEndedNotification)
    }

    /// Another session of this process takes `device` (it started last): this session's stream
    /// on it stops at once and the session is interrupted with
    /// ``InterruptionReason/videoDeviceInUseByAnotherClient``; it resumes, posting
    /// ``interruptionEndedNotification``, when the other session lets the device go. Runs on
    /// the other session's thread without this session's transition lock (taking it could
    /// deadlock two sessions starting at once); the notification is posted from this session's
    /// queue.
    func yieldDevice(_ device: CaptureDevice) {
        let stream = state.withLock { state -> DeviceStream? in
            guard state.running, let index = state.streams.firstIndex(where: { $0.device === device }) else {
                return nil
            }
            state.interrupted = true
            return state.streams.remove(at: index)
        }
        guard let stream else { return }
        stream.stop()
        device.addWaiter(self)
        let error = CaptureError(
            .sessionWasInterrupted,
            "'\(device.localizedName)' was taken by another capture session of this process: frames resume when that session stops"
        )
        // As on iOS, an interruption is not a runtime error: only wasInterrupted is posted.
        schedule { [self] in post(Self.wasInterruptedNotification, error: error) }
    }

    /// The device this session waited for is free again (called on the notification queue).
    func deviceBecameAvailable() {
        resumeInterruptedStreams(reconnected: nil)
    }
}

/// Observes ``CaptureDevice/wasConnectedNotification`` until released.
// unchecked: the token is only passed back to NotificationCenter.
final class ReconnectionObserver: @unchecked Sendable {
    private let token: NSObjectProtocol

    init(_ handler: @escaping @Sendable (CaptureDevice) -> Void) {
        token = NotificationCenter.default.addObserver(
            forName: CaptureDevice.wasConnectedNotification, object: nil, queue: nil
        ) { notification in
            if let device = notification.object as? CaptureDevice { handler(device) }
        }
    }

    deinit {
        NotificationCenter.default.removeObserver(token)
    }
}
