/// A FIFO queue over a growable ring buffer, with stable absolute positions so an element can be
/// replaced in place while it waits. Amortised O(1); allocates only when it grows.
package struct RingQueue<Element> {
    private var storage: [Element?]
    private var head = 0  // absolute position of the first element
    package private(set) var count = 0

    package init(capacity: Int = 16) {
        storage = Array(repeating: nil, count: max(1, capacity))
    }

    package var isEmpty: Bool { count == 0 }

    /// The absolute position of the first element (equal to ``endPosition`` when empty).
    package var startPosition: Int { head }

    /// The absolute position the next appended element will get.
    package var endPosition: Int { head + count }

    /// Appends `element`; returns its absolute position.
    @discardableResult
    package mutating func append(_ element: Element) -> Int {
        if count == storage.count { grow() }
        let position = head + count
        storage[position % storage.count] = element
        count += 1
        return position
    }

    package mutating func popFirst() -> Element? {
        guard count > 0 else { return nil }
        let index = head % storage.count
        let element = storage[index]
        storage[index] = nil
        head += 1
        count -= 1
        return element
    }

    /// The last element, if any.
    package var last: Element? {
        count > 0 ? storage[(head + count - 1) % storage.count] : nil
    }

    /// Whether `position` still holds an element.
    package func contains(position: Int) -> Bool { position >= head && position < head + count }

    /// The element at absolute `position`, which must be in the queue.
    package subscript(position position: Int) -> Element {
        get { storage[position % storage.count]! }
        set { storage[position % storage.count] = newValue }
    }

    private mutating func grow() {
        var bigger = [Element?](repeating: nil, count: storage.count * 2)
        for offset in 0..<count {
            bigger[(head + offset) % bigger.count] = storage[(head + offset) % storage.count]
        }
        storage = bigger
    }
}
