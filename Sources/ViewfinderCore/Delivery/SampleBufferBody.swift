/// What the video and audio data outputs' bodies share: each sample becomes a ``SampleBuffer``
/// handed to a delegate of one of the two protocols that refine
/// ``CaptureDataOutputSampleBufferDelegate``, and each drop a report buffer (timing, reason,
/// count, no media) handed to the same delegate. Written once here; a body says only how to see
/// its delegate as the shared protocol, the media type of its reports, where report buffers come
/// from, and what a report carries beyond that.
package protocol SampleBufferBody: OutputBody where Product == SampleBuffer {
    /// `delegate` as the protocol both data-output delegate protocols refine.
    func receiver(_ delegate: Delegate) -> any CaptureDataOutputSampleBufferDelegate
    /// The media type of the output's drop reports.
    var reportMediaType: MediaType { get }
    /// Spare buffer objects drop reports are made from and returned to; `nil` makes each anew.
    var reportSpares: SpareObjects<SampleBuffer>? { get }
    /// Adds what a report of `drop` carries beyond timing, reason and count (nothing by default).
    func annotate(_ report: SampleBuffer, for drop: DeliveryEngine<Context, SampleBuffer>.DropReport)
}

extension SampleBufferBody {
    package var reportSpares: SpareObjects<SampleBuffer>? { nil }

    package func annotate(_ report: SampleBuffer, for drop: DeliveryEngine<Context, SampleBuffer>.DropReport) {}

    package func consume(
        _ buffer: SampleBuffer, from connection: CaptureConnection, output: CaptureOutput, delegate: Delegate
    ) {
        receiver(delegate).captureOutput(output, didOutput: buffer, from: connection)
    }

    package func reportDrop(
        _ drop: DeliveryEngine<Context, SampleBuffer>.DropReport, output: CaptureOutput, delegate: Delegate
    ) {
        var report: SampleBuffer?
        if let spares = reportSpares {
            report = SampleBuffer.make(
                droppedFrameReason: drop.reason, count: drop.count, mediaType: reportMediaType,
                presentationTimeStamp: drop.presentationTime, duration: drop.duration,
                sequenceNumber: drop.sequenceNumber, spares: spares)
        } else {
            report = SampleBuffer(
                droppedFrameReason: drop.reason, count: drop.count, mediaType: reportMediaType,
                presentationTimeStamp: drop.presentationTime, duration: drop.duration,
                sequenceNumber: drop.sequenceNumber)
        }
        if let report {
            annotate(report, for: drop)
            receiver(delegate).captureOutput(output, didDrop: report, from: drop.connection)
        }
        if let spares = reportSpares { SampleBuffer.recycle(&report, into: spares) }
    }
}
