// swift-format-ignore-file: AlwaysUseLowerCamelCase

import Foundation

// `AVCaptureVideoDataOutput`'s and `AVCaptureAudioDataOutput`'s recommended asset-writer settings
// (the dictionaries iOS code hands to a writer: codec, size, bit rate; sample rate, channels),
// worked out from the output's connected device and the codecs Viewfinder's recorder writes.

/// The width in pixels a video's settings ask for (`AVVideoWidthKey`).
public let VideoWidthKey = "AVVideoWidthKey"
/// The height in pixels a video's settings ask for (`AVVideoHeightKey`).
public let VideoHeightKey = "AVVideoHeightKey"

/// What a video data output keeps for the porting surface.
package struct VideoDataOutputExtras: Sendable {
    package var automaticallyConfiguresOutputBufferDimensions = true
    package var deliversPreviewSizedOutputBuffers = false
    package var preservesDynamicHDRMetadata = false
    package var preparesCellularRadioForNetworkConnection = false
}

extension CaptureVideoDataOutput {
    /// The codecs frames can come compressed in: none (frames are uncompressed; `.mjpeg`
    /// passthrough is a pixel format, ``availableVideoPixelFormatTypes``).
    public var availableVideoCodecTypes: [VideoCodecType] { [] }

    /// Whether the output picks its buffers' size from the session (default `true`). Kept;
    /// the size is set by ``CaptureVideoProcessingOutput/videoSettings``'s width and height or the device's format.
    public var automaticallyConfiguresOutputBufferDimensions: Bool {
        get { porting.withLock { $0.automaticallyConfiguresOutputBufferDimensions } }
        set { porting.withLock { $0.automaticallyConfiguresOutputBufferDimensions = newValue } }
    }
    /// Whether buffers are preview-sized (default `false`). Kept; ask for a size with
    /// ``CaptureVideoProcessingOutput/videoSettings``' `kCVPixelBufferWidthKey`/`kCVPixelBufferHeightKey` instead.
    public var deliversPreviewSizedOutputBuffers: Bool {
        get { porting.withLock { $0.deliversPreviewSizedOutputBuffers } }
        set { porting.withLock { $0.deliversPreviewSizedOutputBuffers = newValue } }
    }
    /// Whether HDR metadata is kept on frames (default `false`). Kept; Linux cameras have none.
    public var preservesDynamicHDRMetadata: Bool {
        get { porting.withLock { $0.preservesDynamicHDRMetadata } }
        set { porting.withLock { $0.preservesDynamicHDRMetadata = newValue } }
    }
    /// Whether the cellular radio is woken for streaming (default `false`). Kept; changes nothing.
    public var preparesCellularRadioForNetworkConnection: Bool {
        get { porting.withLock { $0.preparesCellularRadioForNetworkConnection } }
        set { porting.withLock { $0.preparesCellularRadioForNetworkConnection = newValue } }
    }

    /// The frame size the output delivers: its settings' size, else the connected device's
    /// active format, turned by the connection's rotation.
    private var deliveredSize: CaptureDevice.Dimensions? {
        guard let connection = connection(with: .video), let device = connection.device else { return nil }
        var size = device.activeFormat.dimensions
        if let width = typedVideoSettings.width, let height = typedVideoSettings.height {
            size = .init(width: width, height: height)
        }
        let angle = Int(connection.videoRotationAngle) % 180
        return angle == 90 ? .init(width: size.height, height: size.width) : size
    }

    /// The codecs a recorder writing `outputFileType` takes, best first: H.264 and HEVC for
    /// QuickTime, MPEG-4 and Matroska files; none for other types.
    public func availableVideoCodecTypesForAssetWriter(writingTo outputFileType: FileType) -> [VideoCodecType] {
        [.mov, .mp4, .m4v, .mkv].contains(outputFileType) ? [.h264, .hevc] : []
    }

    /// Settings for writing this output's frames to `outputFileType` with its first codec (see
    /// ``recommendedVideoSettings(forVideoCodecType:assetWriterOutputFileType:)``); `nil` when the
    /// output has no connected camera or the file type takes no video.
    public func recommendedVideoSettingsForAssetWriter(writingTo outputFileType: FileType) -> [String: Any]? {
        guard let codec = availableVideoCodecTypesForAssetWriter(writingTo: outputFileType).first else { return nil }
        return recommendedVideoSettings(forVideoCodecType: codec, assetWriterOutputFileType: outputFileType)
    }

    /// Settings for writing this output's frames as `videoCodecType` to `outputFileType`:
    /// ``VideoCodecKey``, ``VideoWidthKey`` and ``VideoHeightKey`` (the delivered frame size) and
    /// ``VideoCompressionPropertiesKey`` with an average bit rate (`"AverageBitRate"`, bits per
    /// second: 0.1 bit per pixel per frame for H.264 at the device's frame rate, two thirds of
    /// that for HEVC). `nil` when the output has no connected camera, or the codec or file type
    /// is not one ``availableVideoCodecTypesForAssetWriter(writingTo:)`` lists.
    public func recommendedVideoSettings(
        forVideoCodecType videoCodecType: VideoCodecType, assetWriterOutputFileType outputFileType: FileType
    )
        -> [String: Any]?
    {
        guard availableVideoCodecTypesForAssetWriter(writingTo: outputFileType).contains(videoCodecType),
            let size = deliveredSize, size.width > 0, size.height > 0,
            let device = connection(with: .video)?.device
        else { return nil }
        let duration = device.activeVideoMinFrameDuration
        let rate = duration.isNumeric && duration.seconds > 0 ? 1 / duration.seconds : 30
        var bitsPerSecond = Double(size.width * size.height) * rate * 0.1
        if videoCodecType == .hevc { bitsPerSecond *= 2.0 / 3.0 }
        return [
            VideoCodecKey: videoCodecType, VideoWidthKey: size.pixelWidth, VideoHeightKey: size.pixelHeight,
            VideoCompressionPropertiesKey: ["AverageBitRate": Int(bitsPerSecond.rounded())] as [String: Any],
        ]
    }

    /// As ``recommendedVideoSettings(forVideoCodecType:assetWriterOutputFileType:)``; the file's
    /// URL changes nothing.
    public func recommendedVideoSettings(
        forVideoCodecType videoCodecType: VideoCodecType, assetWriterOutputFileType outputFileType: FileType,
        outputFileURL: URL?
    ) -> [String: Any]? {
        recommendedVideoSettings(forVideoCodecType: videoCodecType, assetWriterOutputFileType: outputFileType)
    }

    /// The time scale for a writer of this output's frames: 600, QuickTime's video time scale
    /// (a multiple of 24, 25 and 30 frames a second).
    public var recommendedMediaTimeScaleForAssetWriter: MediaTimeScale { 600 }
}

extension CaptureAudioDataOutput {
    /// Settings for writing this output's audio to `outputFileType`: AAC (`FormatIDKey`
    /// `kAudioFormatMPEG4AAC`) at the delivered sample rate and channel count, with
    /// `"EncoderBitRatePerChannel"` 64 kbit/s; `nil` before the output is connected to a
    /// microphone, or for a file type that takes no audio.
    public func recommendedAudioSettingsForAssetWriter(writingTo outputFileType: FileType) -> [String: Any]? {
        guard [.mov, .mp4, .m4a, .m4v, .mkv].contains(outputFileType), let format = deliveredAudioFormat else {
            return nil
        }
        return [
            FormatIDKey: kAudioFormatMPEG4AAC, SampleRateKey: format.sampleRate,
            NumberOfChannelsKey: format.channelCount,
            "EncoderBitRatePerChannel": 64_000,
        ]
    }

    /// The spatial audio layout tag: 0, none (no spatial audio).
    public var spatialAudioChannelLayoutTag: UInt32 { 0 }
}

/// MPEG-4 AAC (`kAudioFormatMPEG4AAC`), a ``FormatIDKey`` value.
public let kAudioFormatMPEG4AAC: UInt32 = 0x6161_6320
