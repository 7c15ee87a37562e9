import Synchronization

/// One sample as an output hands it over, the counterpart of `CMSampleBuffer`: its media (an
/// image for video; PCM for audio), a ``formatDescription`` saying what the media is, its
/// timing, its sequence number, and attachments (metadata from processors).
///
/// A buffer reported through `captureOutput(_:didDrop:from:)` carries timing, a
/// ``droppedFrameReason`` and a ``droppedFrameCount`` but no media.
///
/// Thread safety: immutable but for ``attachments``, which are guarded by a lock; may be shared
/// across threads. (Outputs reuse a buffer object once nobody but the output holds it: that is
/// invisible to anyone, since nobody else can reach it then.)
public final class SampleBuffer: @unchecked Sendable {
    // unchecked: the stored properties change only while the output that recycles the object
    // holds its one reference (see `recycle(_:into:)`); to everyone else they are immutable.
    /// What a sample buffer carries.
    package enum Media: Sendable {
        /// A video frame.
        case image(PixelBuffer)
        /// A buffer of PCM audio.
        case audio(AudioChunk)
        /// Nothing: a dropped-sample report.
        case none
    }

    package private(set) var media: Media = .none
    /// When the camera captured the frame (start of exposure, or the driver's timestamp), on the
    /// device's clock (monotonic for real cameras).
    public private(set) var presentationTimeStamp = MediaTime.invalid
    /// How long the sample lasts: for video, the device's frame interval.
    public private(set) var duration = MediaTime.invalid
    /// The camera's frame counter; consecutive frames differ by one, gaps mean lost frames.
    public private(set) var sequenceNumber: UInt64 = 0
    /// Why the frame was dropped, for buffers passed to `captureOutput(_:didDrop:from:)`.
    public private(set) var droppedFrameReason: DroppedFrameReason? = nil
    /// For dropped-sample buffers: how many samples the report stands for (more than one for a
    /// device gap, or when drops come faster than the delegate can hear of them); 0 otherwise.
    public private(set) var droppedFrameCount = 0
    /// The media type of the sample (``MediaType/video`` for frames, ``MediaType/audio`` for PCM,
    /// and the same for their drop reports).
    public private(set) var mediaType = MediaType.video

    private let attachmentStore = Mutex<[AttachmentKey: any Sendable]>([:])
    /// The output budget whose slot this frame holds, given back in `deinit` (or when recycled).
    private var budget: FrameBudget?

    package init(
        media: Media, mediaType: MediaType, presentationTimeStamp: MediaTime, duration: MediaTime,
        sequenceNumber: UInt64, droppedFrameReason: DroppedFrameReason? = nil, droppedFrameCount: Int = 0,
        attachments: [AttachmentKey: any Sendable] = [:], budget: FrameBudget? = nil
    ) {
        reset(
            media: media, mediaType: mediaType, presentationTimeStamp: presentationTimeStamp, duration: duration,
            sequenceNumber: sequenceNumber, droppedFrameReason: droppedFrameReason,
            droppedFrameCount: droppedFrameCount, attachments: attachments, budget: budget)
    }

    /// A video frame's buffer.
    package convenience init(
        imageBuffer: PixelBuffer, presentationTimeStamp: MediaTime, duration: MediaTime, sequenceNumber: UInt64,
        attachments: [AttachmentKey: any Sendable], budget: FrameBudget?
    ) {
        self.init(
            media: .image(imageBuffer), mediaType: .video, presentationTimeStamp: presentationTimeStamp,
            duration: duration, sequenceNumber: sequenceNumber, attachments: attachments, budget: budget)
    }

    /// A report of `count` dropped samples of `mediaType`.
    package convenience init(
        droppedFrameReason: DroppedFrameReason, count: Int, mediaType: MediaType, presentationTimeStamp: MediaTime,
        duration: MediaTime, sequenceNumber: UInt64
    ) {
        self.init(
            media: .none, mediaType: mediaType, presentationTimeStamp: presentationTimeStamp, duration: duration,
            sequenceNumber: sequenceNumber, droppedFrameReason: droppedFrameReason, droppedFrameCount: count)
    }

    /// A video frame's buffer like ``init(imageBuffer:presentationTimeStamp:duration:sequenceNumber:attachments:budget:)``,
    /// made from a spare object of `spares` when one is kept (no allocation).
    package static func make(
        imageBuffer: PixelBuffer, presentationTimeStamp: MediaTime, duration: MediaTime, sequenceNumber: UInt64,
        attachments: [AttachmentKey: any Sendable], budget: FrameBudget?, spares: SpareObjects<SampleBuffer>
    ) -> SampleBuffer {
        guard let spare = spares.take() else {
            return SampleBuffer(
                imageBuffer: imageBuffer, presentationTimeStamp: presentationTimeStamp, duration: duration,
                sequenceNumber: sequenceNumber, attachments: attachments, budget: budget)
        }
        spare.reset(
            media: .image(imageBuffer), mediaType: .video, presentationTimeStamp: presentationTimeStamp,
            duration: duration, sequenceNumber: sequenceNumber, droppedFrameReason: nil, droppedFrameCount: 0,
            attachments: attachments, budget: budget)
        return spare
    }

    /// A report of `count` dropped samples like ``init(droppedFrameReason:count:mediaType:presentationTimeStamp:duration:sequenceNumber:)``,
    /// made from a spare object of `spares` when one is kept.
    package static func make(
        droppedFrameReason: DroppedFrameReason, count: Int, mediaType: MediaType, presentationTimeStamp: MediaTime,
        duration: MediaTime, sequenceNumber: UInt64, spares: SpareObjects<SampleBuffer>
    ) -> SampleBuffer {
        guard let spare = spares.take() else {
            return SampleBuffer(
                droppedFrameReason: droppedFrameReason, count: count, mediaType: mediaType,
                presentationTimeStamp: presentationTimeStamp, duration: duration, sequenceNumber: sequenceNumber)
        }
        spare.reset(
            media: .none, mediaType: mediaType, presentationTimeStamp: presentationTimeStamp, duration: duration,
            sequenceNumber: sequenceNumber, droppedFrameReason: droppedFrameReason, droppedFrameCount: count,
            attachments: [:], budget: nil)
        return spare
    }

    /// Fills a new object, or refills one nobody else holds.
    private func reset(
        media: Media, mediaType: MediaType, presentationTimeStamp: MediaTime, duration: MediaTime,
        sequenceNumber: UInt64, droppedFrameReason: DroppedFrameReason?, droppedFrameCount: Int,
        attachments: [AttachmentKey: any Sendable], budget: FrameBudget?
    ) {
        self.media = media
        self.mediaType = mediaType
        self.presentationTimeStamp = presentationTimeStamp
        self.duration = duration
        self.sequenceNumber = sequenceNumber
        self.droppedFrameReason = droppedFrameReason
        self.droppedFrameCount = droppedFrameCount
        attachmentStore.withLock { $0 = attachments }
        self.budget = budget
    }

    /// When the caller holds the last reference to `buffer` (the delegate kept none): gives its
    /// budget slot back, recycles its pixel buffer (``PixelBuffer/recycle(_:)``) and keeps the
    /// object in `spares`. `buffer` is `nil` afterwards either way; a buffer someone still holds
    /// lets go of its media and slot when they do, as always. Returns whether it was recycled.
    @discardableResult
    package static func recycle(_ buffer: inout SampleBuffer?, into spares: SpareObjects<SampleBuffer>) -> Bool {
        guard isKnownUniquelyReferenced(&buffer), let unique = buffer else {
            buffer = nil
            return false
        }
        buffer = nil
        var image: PixelBuffer?
        if case .image(let pixels) = unique.media { image = pixels }
        unique.media = .none
        PixelBuffer.recycle(&image)
        unique.attachmentStore.withLock { $0.removeAll() }
        unique.budget?.release()
        unique.budget = nil
        spares.put(unique)
        return true
    }

    /// The pixels of a video sample (`CMSampleBufferGetImageBuffer`), or `nil` for other media
    /// and for dropped-frame reports.
    public var imageBuffer: PixelBuffer? {
        if case .image(let image) = media { return image }
        return nil
    }

    /// What the media is (`CMSampleBufferGetFormatDescription`); `nil` for dropped-sample
    /// reports, which carry no media.
    public var formatDescription: FormatDescription? {
        switch media {
        case .image(let image):
            return .video(
                pixelFormat: image.pixelFormat,
                dimensions: CaptureDevice.Dimensions(width: image.width, height: image.height))
        case .audio(let chunk):
            return .audio(chunk.format)
        case .none:
            return nil
        }
    }

    /// How many samples the buffer holds (`CMSampleBufferGetNumSamples`): 1 for a video frame,
    /// the frame count for audio (one sample of every channel), 0 for a dropped-sample report.
    public var numSamples: Int {
        switch media {
        case .image: return 1
        case .audio(let chunk): return chunk.frameCount
        case .none: return 0
        }
    }

    /// Whether the buffer holds media (`CMSampleBufferDataIsReady`): `false` for drop reports.
    public var dataIsReady: Bool { numSamples > 0 }

    deinit {
        budget?.release()
    }

    /// A buffer that wraps `imageBuffer` with the given timing, e.g. to feed a processor in a test
    /// or a benchmark.
    public convenience init(
        imageBuffer: PixelBuffer, presentationTimeStamp: MediaTime, duration: MediaTime = .invalid,
        sequenceNumber: UInt64 = 0
    ) {
        self.init(
            imageBuffer: imageBuffer, presentationTimeStamp: presentationTimeStamp, duration: duration,
            sequenceNumber: sequenceNumber, attachments: [:], budget: nil)
    }

    /// All attachments (a drop report's ``droppedFrameCount`` included, under
    /// ``AttachmentKey/droppedFrameCount``).
    public var attachments: [AttachmentKey: any Sendable] {
        var all = attachmentStore.withLock { $0 }
        if droppedFrameReason != nil { all[.droppedFrameCount] = droppedFrameCount }
        return all
    }

    /// The attachment under `key`, if any. A drop report answers
    /// ``AttachmentKey/droppedFrameCount`` from ``droppedFrameCount``.
    public func attachment(forKey key: AttachmentKey) -> (any Sendable)? {
        if key == .droppedFrameCount, droppedFrameReason != nil { return droppedFrameCount }
        return attachmentStore.withLock { $0[key] }
    }

    /// Attaches `value` under `key`, replacing what was there.
    public func setAttachment(_ value: any Sendable, forKey key: AttachmentKey) {
        attachmentStore.withLock { $0[key] = value }
    }

    /// A name for an attachment. Processors define their own as static constants.
    public struct AttachmentKey: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(stringLiteral value: String) { rawValue = value }
    }
}

/// Why a frame was not delivered, passed with `captureOutput(_:didDrop:from:)` (the counterpart
/// of `kCMSampleBufferAttachmentKey_DroppedFrameReason`).
public enum DroppedFrameReason: Hashable, Sendable, CustomStringConvertible {
    /// The delegate was still busy and a newer frame replaced this one
    /// (`alwaysDiscardsLateVideoFrames`).
    case frameWasLate
    /// Every buffer was in use (the delegate, or frames queued for it, hold them all).
    case outOfBuffers
    /// The device lost the frame (a gap in its sequence numbers).
    case discontinuity
    /// A frame processor dropped the frame; the associated value names the processor.
    case droppedByProcessor(String)

    public var description: String {
        switch self {
        case .frameWasLate: return "frameWasLate"
        case .outOfBuffers: return "outOfBuffers"
        case .discontinuity: return "discontinuity"
        case .droppedByProcessor(let name): return "droppedByProcessor(\(name))"
        }
    }
}

/// Bounds how many frames an output has in flight (queued for its delegate, or held by it).
/// A frame takes a slot with `tryAcquire()` when it is accepted; the slot is given back by the
/// sample buffer that carries the frame (in its `deinit`), or by the output when the frame is
/// dropped before becoming one. Counting by hand spares an object per frame.
///
/// Thread safety: lock-free; any thread.
public final class FrameBudget: Sendable {
    package let limit: Int
    private let inFlight = Atomic<Int>(0)

    package init(limit: Int) { self.limit = limit }

    /// Takes a slot; `false` when `limit` frames are already in flight.
    package func tryAcquire() -> Bool {
        var current = inFlight.load(ordering: .relaxed)
        while current < limit {
            let (exchanged, original) = inFlight.compareExchange(
                expected: current, desired: current + 1, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Gives back a slot taken by `tryAcquire()`.
    package func release() { inFlight.subtract(1, ordering: .releasing) }

    /// Frames in flight now.
    package var count: Int { inFlight.load(ordering: .relaxed) }
}

/// What a sample's media is, the counterpart of `CMFormatDescription`: for video the pixel format
/// and dimensions (`CMVideoFormatDescriptionGetDimensions`); for audio the PCM layout
/// (`CMAudioFormatDescriptionGetStreamBasicDescription`).
///
/// Thread safety: a value type; freely sendable.
public enum FormatDescription: Sendable, Hashable, CustomStringConvertible {
    /// Video frames of `pixelFormat` at `dimensions`.
    case video(pixelFormat: PixelFormat, dimensions: CaptureDevice.Dimensions)
    /// Linear PCM audio in `format` (sample rate, channels, sample format, interleaving).
    case audio(AudioFormat)

    /// The media type described.
    public var mediaType: MediaType {
        switch self {
        case .video: return .video
        case .audio: return .audio
        }
    }

    /// The pixel format, for video.
    public var pixelFormat: PixelFormat? {
        switch self {
        case .video(let pixelFormat, _): return pixelFormat
        case .audio: return nil
        }
    }

    /// Width and height, for video.
    public var dimensions: CaptureDevice.Dimensions? {
        switch self {
        case .video(_, let dimensions): return dimensions
        case .audio: return nil
        }
    }

    /// The PCM layout, for audio (the counterpart of the `AudioStreamBasicDescription` that
    /// `CMAudioFormatDescriptionGetStreamBasicDescription` returns).
    public var audioFormat: AudioFormat? {
        switch self {
        case .video: return nil
        case .audio(let format): return format
        }
    }

    public var description: String {
        switch self {
        case .video(let pixelFormat, let dimensions): return "video \(pixelFormat.name) \(dimensions)"
        case .audio(let format): return "audio \(format)"
        }
    }
}
