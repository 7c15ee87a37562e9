/// A weak reference that can cross threads.
// unchecked: set once in init; loading a weak reference is thread-safe.
final class WeakReference<Object: AnyObject>: @unchecked Sendable {
    private(set) weak var value: Object?
    init(_ value: Object?) { self.value = value }
}
