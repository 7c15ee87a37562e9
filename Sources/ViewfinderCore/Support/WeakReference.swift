/// A weak reference that can cross threads.
// unchecked: set once in init; loading a weak reference is thread-safe.
package final class WeakReference<Object: AnyObject>: @unchecked Sendable {
    /// The object, while it lives.
    package private(set) weak var value: Object?
    /// A reference to `value`.
    package init(_ value: Object?) { self.value = value }
}
