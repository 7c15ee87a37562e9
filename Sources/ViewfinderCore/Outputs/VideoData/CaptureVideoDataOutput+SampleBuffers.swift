import Dispatch
import Synchronization

extension CaptureVideoDataOutput {
    /// The delivered frames as an `AsyncSequence`, for Swift concurrency:
    ///
    /// ```swift
    /// for await frame in output.sampleBuffers {
    ///     analyse(frame)          // while this runs, newer frames drop as late, counted
    /// }
    /// ```
    ///
    /// Iterating takes the output's delegate slot (it replaces a delegate you set, and setting
    /// one later ends delivery to the sequence): frames come through the same path as to a
    /// delegate, so the late-frame policy and ``CaptureOutput/statistics`` are the delegate's — with
    /// ``alwaysDiscardsLateVideoFrames`` (the default) newest wins: while your loop body runs at
    /// most one newer frame waits, replaced ones count as ``DroppedFrameReason/frameWasLate``.
    /// Drops are counted, not yielded. The sequence does not end when the session stops (a
    /// restart keeps it flowing); it ends when the iterating task is cancelled or the loop is
    /// left. One iteration at a time: a new iterator takes over from the previous one.
    public var sampleBuffers: SampleBufferSequence { SampleBufferSequence(output: self) }
}

/// The frames of a ``CaptureVideoDataOutput`` as an `AsyncSequence` (see
/// ``CaptureVideoDataOutput/sampleBuffers``).
///
/// Thread safety: the sequence is sendable; iterate it from one task.
public struct SampleBufferSequence: AsyncSequence, Sendable {
    /// Delivered frames.
    public typealias Element = SampleBuffer
    /// Iteration never throws.
    public typealias Failure = Never

    package let output: CaptureVideoDataOutput

    /// Starts delivery to a new iterator (taking the output's delegate slot).
    public func makeAsyncIterator() -> Iterator {
        let mailbox = SampleBufferMailbox()
        output.setSampleBufferDelegate(mailbox, queue: DispatchQueue(label: "viewfinder.video-data-output.sequence"))
        return Iterator(handle: IteratorHandle(mailbox))
    }

    /// Waits for the next delivered frame.
    public struct Iterator: AsyncIteratorProtocol {
        /// Delivered frames.
        public typealias Element = SampleBuffer
        /// Iteration never throws.
        public typealias Failure = Never

        package let handle: IteratorHandle

        /// The next frame, or `nil` once the task is cancelled.
        public mutating func next() async -> SampleBuffer? {
            let mailbox = handle.mailbox
            return await withTaskCancellationHandler {
                await mailbox.next()
            } onCancel: {
                mailbox.finish()
            }
        }
    }
}

/// Ends delivery when the last copy of an iterator goes.
package final class IteratorHandle: Sendable {
    package let mailbox: SampleBufferMailbox
    package init(_ mailbox: SampleBufferMailbox) { self.mailbox = mailbox }
    deinit { mailbox.finish() }
}

/// The delegate behind ``SampleBufferSequence``: hands each frame to a waiting `next()`, or
/// holds it — and the delivery queue — until one comes, so a slow loop body is a busy delegate
/// to the output and its late-frame policy and counters apply unchanged.
package final class SampleBufferMailbox: CaptureVideoDataOutputSampleBufferDelegate, Sendable {
    private struct State {
        var waiter: CheckedContinuation<SampleBuffer?, Never>?
        var pending: SampleBuffer?
        var finished = false
    }
    private let state = Mutex(State())
    /// Signalled when a held frame is taken (or dropped by ``finish()``).
    private let taken = DispatchSemaphore(value: 0)
    /// Signalled each time a frame is held waiting for the consumer (for tests).
    package let holding = DispatchSemaphore(value: 0)

    package func captureOutput(
        _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {
        let waiter = state.withLock { state -> CheckedContinuation<SampleBuffer?, Never>?? in
            if state.finished { return .some(nil) }
            if let waiter = state.waiter {
                state.waiter = nil
                return .some(waiter)
            }
            state.pending = sampleBuffer
            return nil
        }
        switch waiter {
        case .some(let continuation?): continuation.resume(returning: sampleBuffer)
        case .some(nil): return
        case nil:
            holding.signal()
            taken.wait()  // the delivery queue waits: the consumer is busy
        }
    }

    /// The next frame; `nil` once finished.
    package func next() async -> SampleBuffer? {
        await withCheckedContinuation { (continuation: CheckedContinuation<SampleBuffer?, Never>) in
            let (ready, finished) = state.withLock { state -> (SampleBuffer?, Bool) in
                if state.finished { return (nil, true) }
                if let pending = state.pending {
                    state.pending = nil
                    return (pending, false)
                }
                state.waiter = continuation
                return (nil, false)
            }
            if let ready {
                taken.signal()
                continuation.resume(returning: ready)
            } else if finished {
                continuation.resume(returning: nil)
            }
        }
    }

    /// Ends the sequence: a waiting `next()` returns `nil`, a held frame is let go.
    package func finish() {
        let (waiter, held) = state.withLock { state in
            state.finished = true
            defer {
                state.waiter = nil
                state.pending = nil
            }
            return (state.waiter, state.pending != nil)
        }
        if held { taken.signal() }
        waiter?.resume(returning: nil)
    }
}
