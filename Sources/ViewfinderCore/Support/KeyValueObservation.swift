// swift-format-ignore-file: AlwaysUseLowerCamelCase

// Key-value observation in Foundation's shape. Linux has no Objective-C runtime, and
// swift-corelibs-foundation has no `observe(_:options:changeHandler:)`, `NSKeyValueObservation`,
// `NSKeyValueObservingOptions` or `NSKeyValueObservedChange`; so AVCam-style code such as
//
//     keyValueObservations.append(session.observe(\.isRunning, options: .new) { _, change in … })
//
// would not compile after deleting "AV". These types spell Foundation's, and one registry per
// observable object (`_KeyValueObservers`) is told by the object's setters when a property
// changed. The properties an object lists in `_observableKeyPaths` are reported by name as they
// change; any other property can be observed too: it is read again, and reported when its value
// differs, each time the object reports a change of any property or state (`_KeyValueObservers
// .recheck()`: a device after each setting it applies, a session at each transition).
import Foundation
import Synchronization

/// The values a change notification carries (Foundation's `NSKeyValueObservingOptions`; Linux
/// Foundation has none).
public struct NSKeyValueObservingOptions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt
    /// Options from their raw value.
    public init(rawValue: UInt) { self.rawValue = rawValue }

    /// The change carries the new value.
    public static let new = NSKeyValueObservingOptions(rawValue: 0x01)
    /// The change carries the old value.
    public static let old = NSKeyValueObservingOptions(rawValue: 0x02)
    /// The handler is called once at once, before `observe` returns, with the current value.
    public static let initial = NSKeyValueObservingOptions(rawValue: 0x04)
    /// The handler is also called before each change (`isPrior` true, the old value if asked).
    public static let prior = NSKeyValueObservingOptions(rawValue: 0x08)
}

/// The kind of a change (Foundation's `NSKeyValueChange`): observable capture properties are
/// single values, so changes are always ``setting``.
public enum NSKeyValueChange: UInt, Sendable, Hashable {
    /// The value was set.
    case setting = 1
    /// Objects were inserted into a to-many relationship (not reported here).
    case insertion = 2
    /// Objects were removed from a to-many relationship (not reported here).
    case removal = 3
    /// Objects were replaced in a to-many relationship (not reported here).
    case replacement = 4
}

/// One change of an observed property (Foundation's `NSKeyValueObservedChange`).
public struct NSKeyValueObservedChange<Value> {
    /// The kind of change (Foundation's spelling).
    public typealias Kind = NSKeyValueChange
    /// Always ``NSKeyValueChange/setting``.
    public let kind: Kind
    /// The value after the change, when ``NSKeyValueObservingOptions/new`` was asked for (`nil`
    /// in a prior notification).
    public let newValue: Value?
    /// The value before the change, when ``NSKeyValueObservingOptions/old`` was asked for (`nil`
    /// in the initial notification).
    public let oldValue: Value?
    /// Indexes of a to-many change: always `nil`.
    public let indexes: IndexSet?
    /// Whether this is the notification before the change (``NSKeyValueObservingOptions/prior``).
    public let isPrior: Bool
}

/// A running observation (Foundation's `NSKeyValueObservation`): keep it while you want changes;
/// it stops at ``invalidate()`` or when it is released.
///
/// Thread safety: may be invalidated from any thread; once ``invalidate()`` returns, the handler
/// is not called again (a call already under way on another thread finishes).
public final class NSKeyValueObservation: Sendable {
    private let registry: WeakReference<_KeyValueObservers>
    private let id: Int

    package init(registry: _KeyValueObservers, id: Int) {
        self.registry = WeakReference(registry)
        self.id = id
    }

    /// Stops the observation; further calls do nothing.
    public func invalidate() { registry.value?.remove(id) }

    deinit { invalidate() }
}

/// An object whose listed properties can be observed with
/// ``observe(_:options:changeHandler:)``, as Foundation's KVO observes `@objc dynamic` ones.
/// Viewfinder's capture classes adopt it; applications have no need to.
public protocol _KeyValueObservable: AnyObject {
    /// The object's observer registry.
    var _keyValueObservers: _KeyValueObservers { get }
    /// The properties that report changes (each listed in its type's documentation), by name. A
    /// class with subclasses lists each property once per root type it is observed through (a
    /// key path's root is part of its identity); changes are matched by name.
    static var _observableKeyPaths: [AnyKeyPath: String] { get }
}

extension _KeyValueObservable {
    /// Calls `changeHandler` when the property at `keyPath` changes, as Foundation's
    /// `observe(_:options:changeHandler:)` (same spelling, options and change values); keep the
    /// returned observation. The handler runs on the thread that made the change, after it and
    /// outside Viewfinder's locks — for a session's `isRunning` and `isInterrupted`, on the
    /// session's notification queue, just before the matching notification is posted. The
    /// properties the type documents as observable report each change; any other property is
    /// read again whenever the object reports a change (a setting applied to a device, a
    /// session's transition) and reported when it differs — it never traps.
    public func observe<Value>(
        _ keyPath: KeyPath<Self, Value>, options: NSKeyValueObservingOptions = [],
        changeHandler: @escaping (Self, NSKeyValueObservedChange<Value>) -> Void
    ) -> NSKeyValueObservation {
        // An unlisted property has no name of its own: it is compared on every recheck.
        let name = Self._observableKeyPaths[keyPath] ?? ""
        let current = self[keyPath: keyPath]
        let entry = ObservationEntry(
            object: self, name: name, keyPath: keyPath, options: options, last: current, changeHandler)
        let id = _keyValueObservers.add(entry)
        if options.contains(.initial) {
            changeHandler(
                self,
                NSKeyValueObservedChange(
                    kind: .setting, newValue: options.contains(.new) ? current : nil, oldValue: nil, indexes: nil,
                    isPrior: false))
        }
        return NSKeyValueObservation(registry: _keyValueObservers, id: id)
    }

    /// Tells this object's observers of `keyPath` that it changed, to `value` (read from the
    /// object when `nil`). Call it after the change, holding none of the object's locks.
    package func didChangeValue<Value>(for keyPath: KeyPath<Self, Value>, to value: Value? = nil) {
        guard let name = Self._observableKeyPaths[keyPath] else {
            _keyValueObservers.recheck()
            return
        }
        _keyValueObservers.changed(name, newValue: value ?? self[keyPath: keyPath])
    }
}

/// One observation: the handler and the last value it was told (its next `oldValue`).
// unchecked: `last` is only touched under the registry's lock; the handler is the caller's, called
// as Foundation calls it (from the thread that made the change).
private final class ObservationEntry<Object: AnyObject, Value>: AnyObservationEntry, @unchecked Sendable {
    private weak var object: Object?
    let name: String
    private let keyPath: KeyPath<Object, Value>
    private let options: NSKeyValueObservingOptions
    private var last: Value
    private let handler: (Object, NSKeyValueObservedChange<Value>) -> Void

    init(
        object: Object, name: String, keyPath: KeyPath<Object, Value>, options: NSKeyValueObservingOptions,
        last: Value, _ handler: @escaping (Object, NSKeyValueObservedChange<Value>) -> Void
    ) {
        self.object = object
        self.name = name
        self.keyPath = keyPath
        self.options = options
        self.last = last
        self.handler = handler
    }

    func takeChangeIfDifferent() -> (@Sendable () -> Void)? {
        guard let object else { return nil }
        let value = object[keyPath: keyPath]
        if sameValue(value, last) { return nil }
        return takeChange(value)
    }

    func takeChange(_ value: Any) -> (@Sendable () -> Void)? {
        guard let value = value as? Value, let object else { return nil }
        let old = last
        last = value
        let options = options
        let handler = handler
        return UncheckedCall {
            if options.contains(.prior) {
                handler(
                    object,
                    NSKeyValueObservedChange(
                        kind: .setting, newValue: nil, oldValue: options.contains(.old) ? old : nil, indexes: nil,
                        isPrior: true))
            }
            handler(
                object,
                NSKeyValueObservedChange(
                    kind: .setting, newValue: options.contains(.new) ? value : nil,
                    oldValue: options.contains(.old) ? old : nil, indexes: nil, isPrior: false))
        }.run
    }
}

/// A call that is made on the thread that made the change.
// unchecked: it captures the caller's handler and values, which Foundation's KVO calls alike.
private struct UncheckedCall: @unchecked Sendable {
    let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
    var run: @Sendable () -> Void { { [self] in body() } }
}

package protocol AnyObservationEntry: AnyObject, Sendable {
    /// The observed property's name (its entry in `_observableKeyPaths`).
    var name: String { get }
    /// Records `value` as the last one told (under the registry's lock) and returns the calls to
    /// make outside it; `nil` when the observed object is gone or `value` is not the property's type.
    func takeChange(_ value: Any) -> (@Sendable () -> Void)?
    /// Reads the property again and, when it differs from the last value told, records it and
    /// returns the calls to make (for properties observed without a name).
    func takeChangeIfDifferent() -> (@Sendable () -> Void)?
}

/// Whether two values of an observed property are the same: `==` when the type is `Equatable`,
/// identity for objects, else their descriptions.
private func sameValue(_ a: Any, _ b: Any) -> Bool {
    if let a = a as? any Equatable { return a.isEqual(to: b) }
    if type(of: a) is AnyClass { return (a as AnyObject) === (b as AnyObject) }
    return String(describing: a) == String(describing: b)
}

extension Equatable {
    fileprivate func isEqual(to other: Any) -> Bool {
        guard let other = other as? Self else { return false }
        return self == other
    }
}

/// The observations of one object (see ``_KeyValueObservable``).
///
/// Thread safety: may be used from any thread.
public final class _KeyValueObservers: Sendable {
    private struct State {
        var nextID = 0
        var entries: [(id: Int, entry: any AnyObservationEntry)] = []
    }
    private let state = Mutex(State())

    /// An empty registry.
    public init() {}

    package func add(_ entry: any AnyObservationEntry) -> Int {
        state.withLock { state in
            state.nextID += 1
            state.entries.append((state.nextID, entry))
            return state.nextID
        }
    }

    fileprivate func remove(_ id: Int) {
        state.withLock { $0.entries.removeAll { $0.id == id } }
    }

    /// Tells the observers of the property called `name` it changed to `newValue`: each handler
    /// runs on this thread, in the order the observations were made, outside the registry's lock.
    package func changed(_ name: String, newValue: Any) {
        let calls = state.withLock { state in
            state.entries.compactMap { entry -> (@Sendable () -> Void)? in
                if entry.entry.name.isEmpty { return entry.entry.takeChangeIfDifferent() }
                return entry.entry.name == name ? entry.entry.takeChange(newValue) : nil
            }
        }
        for call in calls { call() }
    }

    /// Reads every property observed without a name again and reports those that changed (call
    /// it after anything that may have changed the object's state, holding none of its locks).
    package func recheck() {
        let calls = state.withLock { state in
            state.entries.compactMap { $0.entry.name.isEmpty ? $0.entry.takeChangeIfDifferent() : nil }
        }
        for call in calls { call() }
    }
}
