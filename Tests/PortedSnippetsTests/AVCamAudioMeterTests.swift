// An audio level meter as AVFoundation code writes it (an AVCaptureAudioDataOutput delegate
// reading the sample buffer through Core Media's C functions and the stream description), after
// deleting "AV" and "CM" only. The virtual microphone plays a pure tone at a known level, paced
// by a clock advanced by hand.
import Foundation
import Testing

@testable import Viewfinder
@testable import ViewfinderALSA
@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderPipeWire
@testable import ViewfinderPreviewWindow
@testable import ViewfinderSimulator
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

/// Measures the RMS level of what the microphone hears, and what format it comes in.
final class AudioMeter: NSObject, CaptureAudioDataOutputSampleBufferDelegate {
    var sampleRate: Double = 0
    var channels: UInt32 = 0
    var bitsPerChannel: UInt32 = 0
    var isSignedInteger = false
    var isInterleaved = false
    var totalFrames = 0
    var sumOfSquares: Double = 0
    var sampleCount = 0
    var buffers = 0

    func captureOutput(
        _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {
        guard let formatDescription = SampleBufferGetFormatDescription(sampleBuffer),
            let asbd = AudioFormatDescriptionGetStreamBasicDescription(formatDescription)?.pointee
        else { return }
        sampleRate = asbd.mSampleRate
        channels = asbd.mChannelsPerFrame
        bitsPerChannel = asbd.mBitsPerChannel
        isSignedInteger = asbd.mFormatFlags & kAudioFormatFlagIsSignedInteger != 0
        isInterleaved = asbd.mFormatFlags & kAudioFormatFlagIsNonInterleaved == 0
        // The Swift overlay's property gives the same description.
        precondition(formatDescription.audioStreamBasicDescription == asbd)

        buffers += 1
        let frames = SampleBufferGetNumSamples(sampleBuffer)
        totalFrames += frames
        guard asbd.mBitsPerChannel == 16, isSignedInteger else { return }
        sampleBuffer.withAudioSamples(as: Int16.self) { samples in
            for sample in samples {
                let value = Double(sample) / Double(Int16.max)
                sumOfSquares += value * value
            }
            sampleCount += samples.count
        }
    }

    /// The RMS level in dBFS.
    var level: Double { 10 * log10(sumOfSquares / Double(max(sampleCount, 1))) }
}

@Suite("Ported: an audio meter on Core Media's audio forms", .serialized)
struct AVCamAudioMeterTests {
    @Test("the meter reads the format from the stream description and the tone's level from the samples")
    func metersTheTone() throws {
        let clock = ManualClock()
        let meter = AudioMeter()
        let queue = DispatchQueue(label: "audio meter")
        let output = CaptureAudioDataOutput()
        let pureTone: (inout VirtualMicrophone.Configuration) -> Void = {
            $0.toneLevel = -12
            $0.hasMarkers = false
        }
        try withVirtualCameraAndMicrophone(clock: clock, microphone: pureTone) {
            let session = CaptureSession()
            let microphone = try CaptureDeviceInput(device: CaptureDevice.default(for: .audio)!)
            if session.canAddInput(microphone) { session.addInput(microphone) }
            output.audioSettings = [
                FormatIDKey: kAudioFormatLinearPCM, SampleRateKey: 44_100, NumberOfChannelsKey: 2,
                LinearPCMBitDepthKey: 16, LinearPCMIsFloatKey: false,
            ]
            output.setSampleBufferDelegate(meter, queue: queue)
            if session.canAddOutput(output) { session.addOutput(output) }
            session.startRunning()
            #expect(clock.waitUntilSleeping(count: 1))
            for _ in 0..<50 {
                clock.advance(by: MediaTime(value: 1, timescale: 100))
                #expect(clock.waitUntilSleeping(count: 1))
            }
            session.stopRunning()
            #expect(output.connection(with: .audio)?.audioChannels.count == 2)
        }
        queue.sync {}
        #expect(meter.sampleRate == 44_100)
        #expect(meter.channels == 2)
        #expect(meter.bitsPerChannel == 16 && meter.isSignedInteger && meter.isInterleaved)
        let statistics = output.statistics
        #expect(meter.totalFrames > 0)
        #expect(statistics.delivered == meter.buffers, "every delivered buffer reached the meter")
        #expect(meter.sampleCount == meter.totalFrames * 2, "numSamples counts frames; each frame has two channels")
        // A sine with a -12 dBFS peak has an RMS of -12 - 3.01 dBFS.
        #expect(abs(meter.level - (-15.01)) < 0.5, "measured \(meter.level) dBFS")
    }
}
