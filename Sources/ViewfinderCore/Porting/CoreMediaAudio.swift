// swift-format-ignore-file: AlwaysUseLowerCamelCase

// Core Media's and Core Audio's audio forms with "CM" deleted (CMSampleBufferGetNumSamples →
// SampleBufferGetNumSamples, CMAudioFormatDescriptionGetStreamBasicDescription →
// AudioFormatDescriptionGetStreamBasicDescription), and Core Audio's AudioStreamBasicDescription
// with its `m…` fields, so an audio meter ported from AVFoundation compiles unchanged.
import Synchronization

/// `AudioStreamBasicDescription`: Core Audio's description of a linear PCM stream, field for
/// field (``AudioFormat`` is Viewfinder's typed form of the same thing).
///
/// Thread safety: a value type; freely sendable.
public struct AudioStreamBasicDescription: Sendable, Hashable {
    /// Frames per second.
    public var mSampleRate: Double
    /// The format: ``kAudioFormatLinearPCM``.
    public var mFormatID: UInt32
    /// `kAudioFormatFlag…` bits: ``kAudioFormatFlagIsFloat`` or
    /// ``kAudioFormatFlagIsSignedInteger``, ``kAudioFormatFlagIsPacked``, and
    /// ``kAudioFormatFlagIsNonInterleaved`` for one buffer per channel (never big-endian).
    public var mFormatFlags: UInt32
    /// Bytes of one packet (one frame for linear PCM).
    public var mBytesPerPacket: UInt32
    /// Frames per packet: 1 for linear PCM.
    public var mFramesPerPacket: UInt32
    /// Bytes of one frame in one buffer: every channel when interleaved, one otherwise.
    public var mBytesPerFrame: UInt32
    /// Channels per frame.
    public var mChannelsPerFrame: UInt32
    /// Bits of one sample of one channel.
    public var mBitsPerChannel: UInt32
    /// Zero (Core Audio's padding).
    public var mReserved: UInt32

    /// A description with every field given (Core Audio's memberwise initializer).
    public init(
        mSampleRate: Double, mFormatID: UInt32, mFormatFlags: UInt32, mBytesPerPacket: UInt32,
        mFramesPerPacket: UInt32, mBytesPerFrame: UInt32, mChannelsPerFrame: UInt32, mBitsPerChannel: UInt32,
        mReserved: UInt32
    ) {
        self.mSampleRate = mSampleRate
        self.mFormatID = mFormatID
        self.mFormatFlags = mFormatFlags
        self.mBytesPerPacket = mBytesPerPacket
        self.mFramesPerPacket = mFramesPerPacket
        self.mBytesPerFrame = mBytesPerFrame
        self.mChannelsPerFrame = mChannelsPerFrame
        self.mBitsPerChannel = mBitsPerChannel
        self.mReserved = mReserved
    }

    /// The description of `format`.
    public init(_ format: AudioFormat) {
        var flags = kAudioFormatFlagIsPacked
        flags |= format.sampleFormat.isFloat ? kAudioFormatFlagIsFloat : kAudioFormatFlagIsSignedInteger
        if !format.isInterleaved { flags |= kAudioFormatFlagIsNonInterleaved }
        self.init(
            mSampleRate: Double(format.sampleRate), mFormatID: kAudioFormatLinearPCM, mFormatFlags: flags,
            mBytesPerPacket: UInt32(format.bytesPerPacket), mFramesPerPacket: UInt32(format.framesPerPacket),
            mBytesPerFrame: UInt32(format.bytesPerFrame), mChannelsPerFrame: UInt32(format.channelCount),
            mBitsPerChannel: UInt32(format.sampleFormat.bitsPerSample), mReserved: 0)
    }
}

/// Samples are floating point.
public let kAudioFormatFlagIsFloat: UInt32 = 1 << 0
/// Samples are big-endian (never set: Viewfinder delivers native little-endian samples).
public let kAudioFormatFlagIsBigEndian: UInt32 = 1 << 1
/// Samples are signed integers.
public let kAudioFormatFlagIsSignedInteger: UInt32 = 1 << 2
/// Samples fill their bytes (always set).
public let kAudioFormatFlagIsPacked: UInt32 = 1 << 3
/// One buffer per channel.
public let kAudioFormatFlagIsNonInterleaved: UInt32 = 1 << 5

extension FormatDescription {
    /// The stream description of an audio format description, `nil` for video (Core Media's
    /// `CMFormatDescription.audioStreamBasicDescription`).
    public var audioStreamBasicDescription: AudioStreamBasicDescription? {
        audioFormat.map(AudioStreamBasicDescription.init)
    }
}

/// `CMSampleBufferGetNumSamples(_:)`: 1 for a video frame, the frame count for audio, 0 for a
/// dropped-sample report (``SampleBuffer/numSamples``).
public func SampleBufferGetNumSamples(_ sampleBuffer: SampleBuffer) -> Int {
    sampleBuffer.numSamples
}

/// `CMSampleBufferGetFormatDescription(_:)`: what the media is; `nil` for a dropped-sample report
/// (``SampleBuffer/formatDescription``).
public func SampleBufferGetFormatDescription(_ sampleBuffer: SampleBuffer) -> FormatDescription? {
    sampleBuffer.formatDescription
}

/// `CMFormatDescriptionGetMediaType(_:)`: the media described.
public func FormatDescriptionGetMediaType(_ description: FormatDescription) -> MediaType {
    description.mediaType
}

/// `CMAudioFormatDescriptionGetStreamBasicDescription(_:)`: a pointer to the description of an
/// audio format (read it with `.pointee`), `nil` for video. As in Core Media the pointer stays
/// valid while the program runs: each distinct audio format's description is made once and kept
/// (there are as many as distinct formats the program meets — a handful).
public func AudioFormatDescriptionGetStreamBasicDescription(_ description: FormatDescription)
    -> UnsafePointer<AudioStreamBasicDescription>?
{
    guard let format = description.audioFormat else { return nil }
    return StreamDescriptions.shared.pointer(for: format)
}

/// The kept descriptions of ``AudioFormatDescriptionGetStreamBasicDescription(_:)``.
private final class StreamDescriptions: Sendable {
    static let shared = StreamDescriptions()
    // unchecked: the pointers are written once, before they are shared, and never freed.
    private struct Pointer: @unchecked Sendable { let value: UnsafeMutablePointer<AudioStreamBasicDescription> }
    private let table = Mutex<[AudioFormat: Pointer]>([:])

    func pointer(for format: AudioFormat) -> UnsafePointer<AudioStreamBasicDescription> {
        table.withLock { table in
            if let kept = table[format] { return UnsafePointer(kept.value) }
            let pointer = UnsafeMutablePointer<AudioStreamBasicDescription>.allocate(capacity: 1)
            pointer.initialize(to: AudioStreamBasicDescription(format))
            table[format] = Pointer(value: pointer)
            return UnsafePointer(pointer)
        }
    }
}
