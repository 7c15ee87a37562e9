import Foundation
import ViewfinderCore

// What tests read and set of the movie output's insides.

extension CaptureFileOutput {
    /// Waits until every frame queued so far has reached the encoder and every recording event
    /// queued so far has been handled, for tests and shutdown. Returns `false` on timeout.
    @discardableResult
    package func waitUntilIdle(timeout: Double) -> Bool {
        guard videoCore.waitUntilDelivered(timeout: timeout) else { return false }
        let done = DispatchSemaphore(value: 0)
        recorder.queue.async { self.delegateCallbackQueue.async { done.signal() } }
        return done.wait(timeout: .now() + timeout) == .success
    }
}

extension CaptureMovieFileOutput {
    /// For tests: the writer's writes fail with ENOSPC past this many bytes, like a full disk.
    package var failAfterBytesForTesting: Int64? {
        get { recorder.writerOptions.withLock { $0.failAfterBytes } }
        set { recorder.writerOptions.withLock { $0.failAfterBytes = newValue } }
    }
}
