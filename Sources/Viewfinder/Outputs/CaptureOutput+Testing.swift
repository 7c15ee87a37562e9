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
