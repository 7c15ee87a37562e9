// swift-format-ignore-file: AlwaysUseLowerCamelCase
// AVFoundation's audio-settings keys with "AV" deleted (AVSampleRateKey → SampleRateKey), so a
// ported `audioSettings = [AVSampleRateKey: 44_100, …]` compiles unchanged after the deletion.

/// The `audioSettings` key for the format ID; only ``kAudioFormatLinearPCM`` is delivered by
/// a ``CaptureAudioDataOutput``.
public let FormatIDKey = "FormatID"
/// The `audioSettings` key for the sample rate in hertz (an `Int` or `Double`).
public let SampleRateKey = "SampleRate"
/// The `audioSettings` key for the channel count (an `Int`).
public let NumberOfChannelsKey = "NumberOfChannels"
/// The `audioSettings` key for bits per sample: 16 or 32 (an `Int`).
public let LinearPCMBitDepthKey = "LinearPCMBitDepth"
/// The `audioSettings` key for float samples (a `Bool`; floats are 32-bit).
public let LinearPCMIsFloatKey = "LinearPCMIsFloat"
/// The `audioSettings` key for one buffer per channel (a `Bool`).
public let LinearPCMIsNonInterleaved = "LinearPCMIsNonInterleaved"
/// The `audioSettings` key for big-endian samples (a `Bool`; only `false` is delivered).
public let LinearPCMIsBigEndianKey = "LinearPCMIsBigEndian"
/// Linear PCM, Core Audio's `'lpcm'` format ID.
public let kAudioFormatLinearPCM: UInt32 = 0x6C70_636D
