// Imports only Viewfinder (and the test framework): this file compiling proves that
// `import Viewfinder` re-exports Foundation and Dispatch, as `import AVFoundation` does.
import Testing
import Viewfinder

/// An NSObject subclass, as AVFoundation delegates are, using Foundation without importing it.
private final class Observer: NSObject, @unchecked Sendable {  // unchecked: mutated only on `queue`.
    let queue = DispatchQueue(label: "viewfinder.tests.reexport")
    var received: [Data] = []
}

@Suite("import Viewfinder re-exports Foundation")
struct FoundationReexportTests {
    @Test("NSObject, DispatchQueue, NotificationCenter and Data need no import Foundation")
    func foundationTypes() {
        let observer = Observer()
        let name = Notification.Name("ViewfinderReexportTest")
        let center = NotificationCenter()
        let token = center.addObserver(forName: name, object: nil, queue: nil) { note in
            let payload = note.userInfo?["data"] as? Data ?? Data()
            observer.queue.sync { observer.received.append(payload) }
        }
        center.post(name: name, object: observer, userInfo: ["data": Data([1, 2, 3])])
        center.removeObserver(token)
        center.post(name: name, object: observer, userInfo: ["data": Data([4])])
        #expect(observer.queue.sync { observer.received } == [Data([1, 2, 3])])
        #expect(observer.isEqual(observer) && !observer.isEqual(NSObject()))
    }
}
