import Dispatch

/// What the tests read of the shipped outputs' insides: none of it is an output's job, so it
/// lives here rather than in the outputs' own files.
extension CaptureVideoDataOutput {
    /// The negotiated chain and the stream's budget.
    package var pipelineForTesting: (chain: ProcessorChain, budget: FrameBudget)? {
        guard let pipeline = core.context, let budget = core.engine.budget else { return nil }
        return (pipeline.chain, budget)
    }

    /// The engine.
    package var engine: DeliveryEngine<DeliveryPipeline, SampleBuffer> { core.engine }

    /// Spare sample buffer objects.
    package var sampleBufferSpares: SpareObjects<SampleBuffer> { core.body.spares }

    /// Drop reports queued beyond this many are merged into the last one (its
    /// ``SampleBuffer/droppedFrameCount`` grows), so a stalled delegate cannot make the queue grow
    /// without bound.
    package static var dropReportLimit: Int { DeliveryEngine<DeliveryPipeline, SampleBuffer>.dropReportLimit }

    /// Events waiting for the delivery queue (frames and drop reports).
    package var queuedEventCount: Int { core.engine.queuedEventCount }
}

extension CaptureAudioDataOutput {
    /// The engine.
    package var engine: DeliveryEngine<AudioDeliveryContext, SampleBuffer> { core.engine }
}

extension CapturePhotoOutput {
    /// Waits until every callback queued so far has run (tests, demos).
    @discardableResult
    package func waitUntilIdle(timeout: Double) -> Bool { pipeline.waitUntilIdle(core, timeout: timeout) }
}

extension CaptureStillImageOutput {
    /// Waits until every completion queued so far has run (tests).
    @discardableResult
    package func waitUntilIdle(timeout: Double) -> Bool { pipeline.waitUntilIdle(core, timeout: timeout) }
}

extension CaptureDevice {
    /// What the device's shared Motion-JPEG decode has done since its stream started (decodes,
    /// images shared, scaled decodes), while a session streams it; `nil` for a raw format or a
    /// device not streaming. Tests and benchmarks read it to see each frame decoded once.
    package var sharedDecodeStatistics: DeviceFrameDecoder.Statistics? {
        SharedDeviceStream.stream(on: self)?.frameDecoder?.statistics
    }

    /// The shared decode the session planned for the device's outputs, while it streams.
    package var sharedDecodePlan: SharedDecodePlan? {
        SharedDeviceStream.stream(on: self)?.frameDecoder?.currentPlan
    }
}
