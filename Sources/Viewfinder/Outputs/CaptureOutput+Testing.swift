import Dispatch

/// What the tests read of the shipped outputs' insides: none of it is an output's job, so it
/// lives here rather than in the outputs' own files.
extension CaptureVideoDataOutput {
    /// The negotiated chain and the stream's budget.
    var pipelineForTesting: (chain: ProcessorChain, budget: FrameBudget)? {
        guard let pipeline = core.context, let budget = core.engine.budget else { return nil }
        return (pipeline.chain, budget)
    }

    /// The engine.
    var engine: DeliveryEngine<DeliveryPipeline, SampleBuffer> { core.engine }

    /// Spare sample buffer objects.
    var sampleBufferSpares: SpareObjects<SampleBuffer> { core.body.spares }

    /// Drop reports queued beyond this many are merged into the last one (its
    /// ``SampleBuffer/droppedFrameCount`` grows), so a stalled delegate cannot make the queue grow
    /// without bound.
    static var dropReportLimit: Int { DeliveryEngine<DeliveryPipeline, SampleBuffer>.dropReportLimit }

    /// Events waiting for the delivery queue (frames and drop reports).
    var queuedEventCount: Int { core.engine.queuedEventCount }
}

extension CaptureAudioDataOutput {
    /// The engine.
    var engine: DeliveryEngine<AudioDeliveryContext, SampleBuffer> { core.engine }
}

extension CaptureFileOutput {
    /// Waits until every frame queued so far has reached the encoder and every recording event
    /// queued so far has been handled, for tests and shutdown. Returns `false` on timeout.
    @discardableResult
    func waitUntilIdle(timeout: Double) -> Bool {
        guard videoCore.waitUntilDelivered(timeout: timeout) else { return false }
        let done = DispatchSemaphore(value: 0)
        recorder.queue.async { self.delegateCallbackQueue.async { done.signal() } }
        return done.wait(timeout: .now() + timeout) == .success
    }
}

extension CaptureMovieFileOutput {
    /// For tests: the writer's writes fail with ENOSPC past this many bytes, like a full disk.
    var failAfterBytesForTesting: Int64? {
        get { recorder.writerOptions.withLock { $0.failAfterBytes } }
        set { recorder.writerOptions.withLock { $0.failAfterBytes = newValue } }
    }
}

extension CapturePhotoOutput {
    /// Waits until every callback queued so far has run (tests, demos).
    @discardableResult
    func waitUntilIdle(timeout: Double) -> Bool { pipeline.waitUntilIdle(core, timeout: timeout) }
}

extension CaptureStillImageOutput {
    /// Waits until every completion queued so far has run (tests).
    @discardableResult
    func waitUntilIdle(timeout: Double) -> Bool { pipeline.waitUntilIdle(core, timeout: timeout) }
}
