import Synchronization

/// A bounded stack of objects kept for reuse, so a per-frame object (a ``PixelBuffer``, a
/// ``SampleBuffer``) is made once and then recycled instead of allocated for every frame.
///
/// An object is put here only by the holder of its last reference (checked with
/// `isKnownUniquelyReferenced`), and taken back by the next maker, which then has the only
/// reference: the object is never reachable by two parties while it is changed. Objects beyond
/// `limit` are simply let go. The storage is reserved up front, so putting and taking allocate
/// nothing.
///
/// Thread safety: lock-protected; any thread.
package final class SpareObjects<Object: AnyObject & Sendable>: Sendable {
    /// The most objects any store keeps (its storage is reserved up front).
    package static var maximumLimit: Int { 64 }

    package let limit: Int
    private let stack: Mutex<[Object]>

    /// A store keeping up to `limit` objects (clamped to 0…``maximumLimit``).
    package init(limit: Int) {
        self.limit = min(max(0, limit), Self.maximumLimit)
        var storage: [Object] = []
        storage.reserveCapacity(self.limit)
        stack = Mutex(storage)
    }

    /// A spare object, now the caller's alone, or `nil` when none is kept.
    package func take() -> Object? {
        stack.withLock { $0.popLast() }
    }

    /// Keeps `object` (whose only reference the caller gives up) for reuse, unless `limit` are
    /// kept already.
    package func put(_ object: Object) {
        stack.withLock { stack in
            if stack.count < limit { stack.append(object) }
        }
    }

    /// Objects kept now.
    package var count: Int { stack.withLock { $0.count } }
}
