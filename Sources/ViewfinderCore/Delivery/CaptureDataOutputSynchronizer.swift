import Foundation

// `AVCaptureDataOutputSynchronizer` on Viewfinder's frame pairer: the outputs' samples are matched
// by presentation time (the same host clock stamps every camera's and microphone's samples) and
// handed over together, one collection per match, on the synchronizer's queue.

extension CaptureOutput {
    /// Why a synchronized sample is missing (`AVCaptureOutput.DataDroppedReason`).
    public enum DataDroppedReason: Int, Sendable, Hashable {
        /// Not dropped.
        case none = 0
        /// It came too late.
        case lateData = 1
        /// The output ran out of buffers.
        case outOfBuffers = 2
        /// A discontinuity.
        case discontinuity = 3
    }
}

/// One output's data in a synchronized collection (`AVCaptureSynchronizedData`). Open, as the
/// Objective-C class is in Swift, so that the metadata output's module can add
/// `CaptureSynchronizedMetadataObjectData`; only the package's modules can make one.
///
/// Thread safety: immutable; freely sendable.
open class CaptureSynchronizedData: @unchecked Sendable {  // unchecked: immutable.
    /// The data's presentation time.
    public let timestamp: MediaTime
    package init(timestamp: MediaTime) { self.timestamp = timestamp }
}

/// An output that is not a sample-buffer data output but can be synchronized (the metadata
/// output): a ``CaptureDataOutputSynchronizer`` routes its per-frame results to a sink instead of
/// its delegate.
package protocol SynchronizedDataSource: CaptureOutput {
    /// Hands each frame's result to `sink` on `queue` (replacing the output's delegate, as
    /// AVFoundation's synchronizer does) — every frame the output reads, and every frame it drops
    /// — or, with `nil`, stops doing so.
    func routeSynchronizedData(to sink: SynchronizedDataSink?, queue: DispatchQueue?)
}

/// Where a ``SynchronizedDataSource`` hands its frames: each frame's presentation time and its
/// data, or `nil` data for a frame the output did not read (dropped before it was analysed).
package final class SynchronizedDataSink: Sendable {
    private let deliver: @Sendable (MediaTime, CaptureSynchronizedData?) -> Void
    init(_ deliver: @escaping @Sendable (MediaTime, CaptureSynchronizedData?) -> Void) { self.deliver = deliver }

    /// Hands over the frame at `time`: its `data`, or `nil` when it was not analysed.
    package func receive(_ data: CaptureSynchronizedData?, at time: MediaTime) { deliver(time, data) }
}

/// A video or audio data output's sample in a synchronized collection
/// (`AVCaptureSynchronizedSampleBufferData`).
public final class CaptureSynchronizedSampleBufferData: CaptureSynchronizedData, @unchecked Sendable {
    /// The sample.
    public let sampleBuffer: SampleBuffer
    /// Whether the sample was dropped (then ``sampleBuffer`` is the drop report).
    public let sampleBufferWasDropped: Bool
    /// Why it was dropped.
    public let droppedReason: CaptureOutput.DataDroppedReason
    init(sampleBuffer: SampleBuffer, dropped: CaptureOutput.DataDroppedReason?) {
        self.sampleBuffer = sampleBuffer
        self.sampleBufferWasDropped = dropped != nil
        self.droppedReason = dropped ?? .none
        super.init(timestamp: sampleBuffer.presentationTimeStamp)
    }
}

/// A depth output's data in a synchronized collection (`AVCaptureSynchronizedDepthData`):
/// never made on Linux (no depth cameras).
public final class CaptureSynchronizedDepthData: CaptureSynchronizedData, @unchecked Sendable {
    /// The depth data: `nil`.
    public var depthData: DepthData? { nil }
    /// Whether it was dropped: `true`.
    public var depthDataWasDropped: Bool { true }
    /// Why it was dropped.
    public var droppedReason: CaptureOutput.DataDroppedReason { .none }
}

/// The outputs' data matched to one time (`AVCaptureSynchronizedDataCollection`).
///
/// Thread safety: immutable; freely sendable.
public final class CaptureSynchronizedDataCollection: Sequence, @unchecked Sendable {  // unchecked: immutable.
    private let entries: [(output: CaptureOutput, data: CaptureSynchronizedData)]
    init(_ entries: [(output: CaptureOutput, data: CaptureSynchronizedData)]) { self.entries = entries }

    /// `output`'s data, if the collection has some.
    public func synchronizedData(for captureOutput: CaptureOutput) -> CaptureSynchronizedData? {
        entries.first { $0.output === captureOutput }?.data
    }
    /// `output`'s data, if the collection has some.
    public subscript(_ captureOutput: CaptureOutput) -> CaptureSynchronizedData? {
        synchronizedData(for: captureOutput)
    }
    /// How many outputs have data in it.
    public var count: Int { entries.count }
    /// The outputs that have data in it, in the synchronizer's order.
    public func makeIterator() -> IndexingIterator<[CaptureOutput]> { entries.map(\.output).makeIterator() }
}

/// Told of each synchronized collection (`AVCaptureDataOutputSynchronizerDelegate`).
public protocol CaptureDataOutputSynchronizerDelegate: AnyObject {
    /// The outputs' data matched to one time.
    func dataOutputSynchronizer(
        _ synchronizer: CaptureDataOutputSynchronizer,
        didOutput synchronizedDataCollection: CaptureSynchronizedDataCollection)
}

/// Hands over the samples of several data outputs matched by time
/// (`AVCaptureDataOutputSynchronizer`): once created, it takes over the outputs' delivery (their
/// own sample buffer delegates are replaced, as in AVFoundation), pairs their samples with a
/// ``FramePairer`` (samples within half a frame interval of each other match; one without a
/// partner is dropped, not held back) and calls its delegate with a
/// ``CaptureSynchronizedDataCollection`` per match, on the delegate's queue.
///
/// A metadata output (`ViewfinderMetadata`'s `CaptureMetadataOutput`) may be one of the outputs:
/// it reports every frame it reads, so each of its frames pairs with the video frame of the same
/// time, and the collection holds a `CaptureSynchronizedMetadataObjectData` whose
/// `metadataObjects` are the codes found in that frame — an empty array when none were. A frame
/// the metadata output did not read (dropped as late while its decoders were busy, or not
/// readable) still pairs, so the video frame is handed over, but the collection has no data for
/// the metadata output (``CaptureSynchronizedDataCollection/synchronizedData(for:)`` is `nil`).
///
/// ```swift
/// let synchronizer = CaptureDataOutputSynchronizer(dataOutputs: [videoOutput, secondVideoOutput])
/// synchronizer.setDelegate(self, queue: queue)
/// ```
///
/// Thread safety: may be used from any thread.
public final class CaptureDataOutputSynchronizer: @unchecked Sendable {  // unchecked: state under `lock`.
    /// The outputs synchronized, in order.
    public let dataOutputs: [CaptureOutput]
    private let lock = NSLock()
    private weak var storedDelegate: (any CaptureDataOutputSynchronizerDelegate)?
    private var queue: DispatchQueue?
    private var proxies: [SynchronizerProxy] = []
    private let pairer: FramePairer<CaptureSynchronizedData?>

    /// A synchronizer of `dataOutputs` (video, audio data and metadata outputs; at least two to
    /// pair).
    /// The frame interval it pairs by is the first video output's device's
    /// ``CaptureDevice/activeVideoMinFrameDuration`` when connected, else 1/30 s.
    public init(dataOutputs: [CaptureOutput]) {
        self.dataOutputs = dataOutputs
        let duration = dataOutputs.lazy.compactMap { $0.connection(with: .video)?.device?.activeVideoMinFrameDuration }
            .first { $0.isNumeric && $0 > .zero }
        pairer = FramePairer(
            streamCount: max(dataOutputs.count, 2), frameDuration: duration ?? MediaTime(value: 1, timescale: 30))
    }

    /// The delegate (held weakly).
    public var delegate: (any CaptureDataOutputSynchronizerDelegate)? { lock.withLock { storedDelegate } }
    /// The queue the delegate is called on.
    public var delegateCallbackQueue: DispatchQueue? { lock.withLock { queue } }

    /// Sets the delegate and its serial queue, and takes over the outputs' delivery.
    public func setDelegate(
        _ delegate: (any CaptureDataOutputSynchronizerDelegate)?, queue delegateCallbackQueue: DispatchQueue?
    ) {
        let queue = delegateCallbackQueue ?? DispatchQueue(label: "viewfinder.synchronizer")
        let proxies = dataOutputs.indices.map { SynchronizerProxy(synchronizer: self, stream: $0) }
        lock.withLock {
            storedDelegate = delegate
            self.queue = queue
            self.proxies = proxies
        }
        for (output, proxy) in zip(dataOutputs, proxies) {
            if let video = output as? CaptureVideoDataOutput {
                video.setSampleBufferDelegate(delegate == nil ? nil : proxy, queue: delegate == nil ? nil : queue)
            } else if let audio = output as? CaptureAudioDataOutput {
                audio.setSampleBufferDelegate(delegate == nil ? nil : proxy, queue: delegate == nil ? nil : queue)
            } else if let source = output as? any SynchronizedDataSource {
                let stream = proxy.stream
                let sink = SynchronizedDataSink { [weak self] time, data in
                    self?.receive(data, at: time, stream: stream)
                }
                source.routeSynchronizedData(to: delegate == nil ? nil : sink, queue: delegate == nil ? nil : queue)
            }
        }
    }

    /// A sample from output `stream`: pairs it and hands over what it completed (on the queue).
    fileprivate func receive(_ sampleBuffer: SampleBuffer, stream: Int) {
        receive(
            CaptureSynchronizedSampleBufferData(sampleBuffer: sampleBuffer, dropped: nil),
            at: sampleBuffer.presentationTimeStamp, stream: stream)
    }

    /// Output `stream`'s data at `time` (`nil`: a frame it did not read): pairs it and hands over
    /// what it completed (on the queue).
    private func receive(_ data: CaptureSynchronizedData?, at time: MediaTime, stream: Int) {
        let tuples = pairer.add(data, at: time, stream: stream)
        guard !tuples.isEmpty, let delegate else { return }
        for tuple in tuples {
            let entries = zip(dataOutputs, tuple.frames).compactMap { output, frame in
                frame.map { (output: output, data: $0) }
            }
            delegate.dataOutputSynchronizer(self, didOutput: CaptureSynchronizedDataCollection(entries))
        }
    }

    /// How many samples found no partner, per output (``FramePairer/unpartnered``).
    public var unpartneredCounts: [Int] { Array(pairer.unpartnered.prefix(dataOutputs.count)) }
}

/// Receives one output's samples for a synchronizer.
private final class SynchronizerProxy: CaptureVideoDataOutputSampleBufferDelegate,
    CaptureAudioDataOutputSampleBufferDelegate, @unchecked Sendable
{
    private weak var synchronizer: CaptureDataOutputSynchronizer?
    let stream: Int
    init(synchronizer: CaptureDataOutputSynchronizer, stream: Int) {
        self.synchronizer = synchronizer
        self.stream = stream
    }
    func captureOutput(
        _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {
        synchronizer?.receive(sampleBuffer, stream: stream)
    }
}
