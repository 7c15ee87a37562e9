/// A weak reference that can cross threads.
final class WeakReference<Object: AnyObject>: @unchecked Sendable {  // unchecked: set once in init; weak loads are atomic.
    private(set) weak var value: Object?
    init(_ value: Object?) { self.value = value }
}
