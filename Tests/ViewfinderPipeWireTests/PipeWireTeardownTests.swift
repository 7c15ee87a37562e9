import Dispatch
import Foundation
import Synchronization
import Testing
import ViewfinderSimulator

@testable import Viewfinder
@testable import ViewfinderALSA
@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderPipeWire
@testable import ViewfinderPreviewWindow
@testable import ViewfinderTestSupport
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

/// A PipeWire object whose last reference goes inside one of its own callbacks is closed on its
/// loop thread: closing there joins the thread that is running, and destroying its loop returns
/// into freed memory (a crash on the `viewfinder.pipewire` thread, seen once in a loaded run).
@Suite("PipeWire teardown", .enabled(if: PipeWireTestDaemon.isAvailable, "needs Scripts/pipewire.sh"))
struct PipeWireTeardownTests {
    /// Signals when the closures that captured it are freed: the connection's events go with its
    /// close, so this says the close ran to its end.
    final class Sentinel: Sendable {
        let freed: DispatchSemaphore
        init(_ freed: DispatchSemaphore) { self.freed = freed }
        deinit { freed.signal() }
    }

    /// Holds the only reference to a connection until its callback takes it.
    final class Holder: Sendable {
        let connection = Mutex<PipeWireConnection?>(nil)
        let tookOnLoopThread = Mutex<Bool?>(nil)
    }

    @Test("a connection whose last reference is dropped on its loop thread closes without a crash")
    func lastReferenceOnLoopThread() throws {
        let remote = try #require(PipeWireTestDaemon.remote, "Scripts/pipewire.sh sets VIEWFINDER_PIPEWIRE_REMOTE")
        let holder = Holder()
        let dropped = DispatchSemaphore(value: 0)
        let freed = DispatchSemaphore(value: 0)
        let name = PipeWireTestDaemon.uniqueName("teardown")
        var connection: PipeWireConnection? = try PipeWireConnection(
            remoteName: remote, events: Self.events(dropping: holder, when: name, dropped: dropped, freed: freed))
        try connection?.sync()  // the nodes already there are reported before the holder is filled
        holder.connection.withLock { $0 = connection }
        connection = nil
        // A node appearing calls the callback that drops the last reference.
        let camera = try PipeWireTestCamera(
            name: name, format: "yuyv", width: 64, height: 48, framesPerSecond: 30, remoteName: remote)
        #expect(dropped.wait(timeout: .now() + 10) == .success, "the node's appearance reached the callback")
        #expect(holder.tookOnLoopThread.withLock { $0 } == true, "the last reference ended on the loop thread")
        #expect(freed.wait(timeout: .now() + 10) == .success, "the connection closed and freed its events")
        withExtendedLifetime(camera) {}
    }

    /// Events whose `nodeAdded` takes the connection out of `holder` when node `name` appears (the
    /// only reference, so it ends on the loop thread), and that own the sentinel signalling `freed`.
    static func events(
        dropping holder: Holder, when name: String, dropped: DispatchSemaphore,
        freed: DispatchSemaphore
    ) -> PipeWireConnection.Events {
        var events = PipeWireConnection.Events()
        let sentinel = Sentinel(freed)
        events.nodeAdded = { _, _, nodeName, _, _ in
            withExtendedLifetime(sentinel) {}
            guard nodeName == name else { return }
            let taken = holder.connection.withLock { connection -> PipeWireConnection? in
                defer { connection = nil }
                return connection
            }
            guard let taken else { return }
            holder.tookOnLoopThread.withLock { $0 = taken.isCallerOnLoopThread }
            dropped.signal()
        }
        return events
    }
}
