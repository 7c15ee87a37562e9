import Dispatch
import Foundation
import Synchronization

// Deferred start (iOS 26): outputs with `isDeferredStartEnabled` get no frames until the others
// have their first one, so a preview (or a video data output drawing one) starts first.

/// Hears when a session runs its deferred start (`AVCaptureSessionDeferredStartDelegate`), on
/// the queue given with ``CaptureSession/setDeferredStartDelegate(_:deferredStartDelegateCallbackQueue:)``.
public protocol CaptureSessionDeferredStartDelegate: AnyObject {
    /// The deferred outputs are about to start: initialization they do not wait for can run now.
    func sessionWillRunDeferredStart(_ session: CaptureSession)
    /// The deferred outputs have started: the next frame reaches them.
    func sessionDidRunDeferredStart(_ session: CaptureSession)
}

/// A session's deferred start: the setting, the delegate, and the outputs waiting in this run.
///
/// Thread safety: every member may be used from any thread; state is under a mutex.
package final class DeferredStartState: @unchecked Sendable {
    // unchecked: state is in a Mutex; the delegate is called only on its queue.
    struct State {
        var automatic = true
        var delegate: WeakReference<AnyObject>?
        var queue: DispatchQueue?
        /// Outputs that get no frames until the deferred start runs (this run).
        var waiting: [CaptureOutput] = []
        /// Non-deferred outputs still to receive their first frame before an automatic start.
        var awaitingFirstFrame = 0
        /// Whether the deferred start was asked for by hand (``CaptureSession/runDeferredStartWhenNeeded()``).
        var requested = false
        var ran = true
    }
    let state = Mutex(State())
}

extension CaptureSession {
    /// Whether ``automaticallyRunsDeferredStart`` may be set to `false`: `true`.
    public var isManualDeferredStartSupported: Bool { true }

    /// Whether the session starts its deferred outputs by itself, once every output without
    /// deferred start (a preview layer's included) has received its first frame. Default `true`.
    /// With `false`, call ``runDeferredStartWhenNeeded()``; a photo request on a deferred photo
    /// output starts them too. Applies from the next ``startRunning()``.
    public var automaticallyRunsDeferredStart: Bool {
        get { deferredStart.state.withLock { $0.automatic } }
        set { deferredStart.state.withLock { $0.automatic = newValue } }
    }

    /// The deferred-start delegate (held weakly).
    public var deferredStartDelegate: (any CaptureSessionDeferredStartDelegate)? {
        deferredStart.state.withLock { $0.delegate?.value as? any CaptureSessionDeferredStartDelegate }
    }

    /// The queue the deferred-start delegate is called on.
    public var deferredStartDelegateCallbackQueue: DispatchQueue? { deferredStart.state.withLock { $0.queue } }

    /// Sets the delegate told when the deferred start runs, and its queue. A delegate without a
    /// queue traps, as AVFoundation raises.
    public func setDeferredStartDelegate(
        _ deferredStartDelegate: (any CaptureSessionDeferredStartDelegate)?,
        deferredStartDelegateCallbackQueue: DispatchQueue?
    ) {
        precondition(
            deferredStartDelegate == nil || deferredStartDelegateCallbackQueue != nil,
            "setDeferredStartDelegate needs a callback queue with a delegate: pass the DispatchQueue to call it on")
        deferredStart.state.withLock {
            $0.delegate = deferredStartDelegate.map { WeakReference($0 as AnyObject) }
            $0.queue = deferredStartDelegate == nil ? nil : deferredStartDelegateCallbackQueue
        }
    }

    /// Starts the deferred outputs now if the other outputs have had their first frame, or as
    /// soon as they have. Only with ``automaticallyRunsDeferredStart`` `false` (otherwise it
    /// traps, as AVFoundation raises); later calls in the same run do nothing. Returns at once.
    public func runDeferredStartWhenNeeded() {
        precondition(
            !automaticallyRunsDeferredStart,
            "runDeferredStartWhenNeeded() is for sessions whose automaticallyRunsDeferredStart is false: set it to false first"
        )
        let run = deferredStart.state.withLock { state -> Bool in
            guard !state.ran, !state.requested else { return false }
            state.requested = true
            return state.awaitingFirstFrame == 0
        }
        if run { runDeferredStart() }
    }

    /// At start: which outputs wait. None when every output (preview layers included) has the
    /// same ``CaptureOutput/isDeferredStartEnabled``: that is the same as no deferred start.
    func prepareDeferredStart() {
        let all = state.withLock { $0.graph.outputs }
        let deferred = all.filter(\.isDeferredStartEnabled)
        let immediate = all.filter { !$0.isDeferredStartEnabled }
        let defers = !deferred.isEmpty && !immediate.isEmpty
        deferredStart.state.withLock { state in
            state.waiting = defers ? deferred : []
            state.awaitingFirstFrame = defers ? immediate.count : 0
            state.requested = false
            state.ran = !defers
        }
        for output in all {
            output.setDeferredStartRole(
                waits: defers && output.isDeferredStartEnabled, triggers: defers && !output.isDeferredStartEnabled)
        }
    }

    /// At stop: nothing waits any more.
    func endDeferredStart() {
        let waiting = deferredStart.state.withLock { state -> [CaptureOutput] in
            defer {
                state.waiting = []
                state.ran = true
            }
            return state.waiting
        }
        for output in waiting { output.setDeferredStartRole(waits: false, triggers: false) }
    }

    /// A non-deferred output received its first frame (on the capture thread).
    package func outputReceivedFirstFrame() {
        let run = deferredStart.state.withLock { state -> Bool in
            guard !state.ran, state.awaitingFirstFrame > 0 else { return false }
            state.awaitingFirstFrame -= 1
            return state.awaitingFirstFrame == 0 && (state.automatic || state.requested)
        }
        if run { runDeferredStart() }
    }

    /// `output` needs its frames now (a capture was asked of it): the deferred start runs on the
    /// app's behalf.
    package func outputNeedsDeferredStart(_ output: CaptureOutput) {
        guard output.isWaitingForDeferredStart else { return }
        runDeferredStart()
    }

    /// Tells the delegate, lets the deferred outputs have frames, tells the delegate again; once a run.
    private func runDeferredStart() {
        let taken = deferredStart.state.withLock {
            state -> (waiting: [CaptureOutput], delegate: AnyObject?, queue: DispatchQueue?)? in
            guard !state.ran else { return nil }
            state.ran = true
            defer { state.waiting = [] }
            return (state.waiting, state.delegate?.value, state.queue)
        }
        guard let taken else { return }
        let delegate = taken.delegate as? any CaptureSessionDeferredStartDelegate
        let box = UncheckedBox((self, delegate))
        if let delegate, let queue = taken.queue {
            let box = UncheckedBox((self, delegate))
            queue.async { box.value.1.sessionWillRunDeferredStart(box.value.0) }
        }
        for output in taken.waiting { output.setDeferredStartRole(waits: false, triggers: false) }
        if delegate != nil, let queue = taken.queue {
            queue.async { box.value.1?.sessionDidRunDeferredStart(box.value.0) }
        }
    }
}

extension CaptureVideoPreviewLayer {
    /// Whether the layer supports deferred start: `true`.
    public var isDeferredStartSupported: Bool { output.isDeferredStartSupported }

    /// Whether the layer starts only with the session's deferred start (see
    /// ``CaptureOutput/isDeferredStartEnabled``). Default `false`: a preview is what the other
    /// outputs wait for.
    public var isDeferredStartEnabled: Bool {
        get { output.isDeferredStartEnabled }
        set { output.isDeferredStartEnabled = newValue }
    }
}
