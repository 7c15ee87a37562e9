import Dispatch
import Foundation
import Synchronization

// The transition lock that serialises start, stop, commits, live changes and failure handling,
// and the notification queue: notifications queued while the lock is held are posted from the
// session's own queue, in order, once it is released.

extension CaptureSession {
    func fail(_ error: CaptureError) {
        post(Self.runtimeErrorNotification, error: error)
    }

    func enterTransition() {
        transition.lock()
        transitionDepth += 1
    }

    /// Enters a transition if no other thread is in one.
    func tryEnterTransition() -> Bool {
        guard transition.try() else { return false }
        transitionDepth += 1
        return true
    }

    /// Leaves a transition; the outermost one posts what it queued, without the lock.
    func leaveTransition() {
        transitionDepth -= 1
        let outermost = transitionDepth == 0
        transition.unlock()
        if outermost { flushNotifications() }
    }

    /// Queues a notification; it is posted from the notification queue, in order, once no lock
    /// of the session is held (at once when no transition is under way).
    func post(_ name: Notification.Name, error: CaptureError? = nil, format: CaptureDevice.Format? = nil) {
        pendingNotifications.withLock { $0.append((name, error, format)) }
        if !isInsideTransition { flushNotifications() }
    }

    /// Whether this thread is inside a transition (another thread's does not count: its queued
    /// notifications are flushed by whoever comes first, in order).
    var isInsideTransition: Bool {
        guard transition.try() else { return false }
        defer { transition.unlock() }
        return transitionDepth > 0
    }

    /// Posts every queued notification on the notification queue (synchronously, so the
    /// session is not kept alive by a block in flight).
    func flushNotifications() {
        let deliver = { [self] in
            while true {
                let next = pendingNotifications.withLock { $0.isEmpty ? nil : $0.removeFirst() }
                guard let next else { return }
                var userInfo: [AnyHashable: Any]? = next.error.map { [CaptureSessionErrorKey: $0] }
                if next.name == Self.wasInterruptedNotification, let reason = next.error.map(InterruptionReason.init) {
                    userInfo?[CaptureSessionInterruptionReasonKey] = reason
                }
                reportKeyValueChange(for: next.name)
                if let format = next.format { userInfo?[CaptureSessionFormatKey] = format }
                notificationCenter.post(name: next.name, object: self, userInfo: userInfo)
            }
        }
        if DispatchQueue.getSpecific(key: Self.notificationQueueKey) == ObjectIdentifier(self) {
            deliver()
        } else {
            notificationQueue.sync(execute: deliver)
        }
    }

    func schedule(_ work: @escaping @Sendable () -> Void) {
        notificationQueue.async(execute: work)
    }
}
