import Foundation
import Testing

@testable import Viewfinder
@testable import ViewfinderALSA
@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderPipeWire
@testable import ViewfinderPreviewWindow
@testable import ViewfinderTestSupport
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

/// The container tags ffprobe reads from `url` (keys lowercased: Matroska spells them in capitals).
private func formatTags(_ url: URL) throws -> [String: String]? {
    guard let ffprobe = FFmpegTools.ffprobe else { return nil }
    let result = try FFmpegTools.run(ffprobe, ["-v", "error", "-show_entries", "format_tags", "-of", "json", url.path])
    guard result.status == 0,
        let json = try JSONSerialization.jsonObject(with: result.output) as? [String: Any],
        let format = json["format"] as? [String: Any]
    else { return nil }
    let tags = format["tags"] as? [String: String] ?? [:]
    return Dictionary(tags.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
}

private func h264(_ width: Int = 320, _ height: Int = 240) -> MovieVideoSettings {
    var settings = MovieVideoSettings(codec: .h264, width: width, height: height)
    settings.quality = .constantRateFactor(30)
    return settings
}

private let startMetadata = ["title": "At the start", "comment": "dropped later"]
private let laterMetadata = ["title": "Changed while recording", "artist": "Viewfinder tests"]

@Suite("Recording metadata: settable while recording")
struct RecordingMetadataTests {
    static let containers: [(String, MediaTime, Bool)] = [
        ("mov", MediaTime(value: 1, timescale: 4), true), ("mov", .invalid, true),
        ("mp4", MediaTime(value: 1, timescale: 4), true), ("mp4", .invalid, true),
        ("mkv", MediaTime(value: 1, timescale: 4), false),
    ]

    @Test(
        "metadata replaced mid-recording reaches MOV and MP4 files (fragmented or not); Matroska keeps the start's",
        arguments: containers)
    func replacedMidRecording(fileExtension: String, fragmentInterval: MediaTime, lands: Bool) throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("tagged.\(fileExtension)")
        var options = MovieWriterOptions()
        options.fragmentInterval = fragmentInterval
        options.metadata = startMetadata
        let writer = try MovieFileWriter(url: url, options: options)
        try writer.addVideoStream(h264())
        let frames = try PatternFrames(format: .nv12VideoRange)
        for number in 0..<24 {
            if number == 12 {
                #expect(writer.metadataInFile == startMetadata, "the header holds the start's metadata")
                #expect(writer.metadataUpdatesReachFile == lands)
                writer.updateMetadata(laterMetadata)
            }
            try writer.append(frames.frame(number), presentationTime: MediaTime(value: Int64(number), timescale: 30))
        }
        let summary = try writer.finish()
        #expect(summary.isComplete && summary.videoFramesWritten == 24)
        let expected = lands ? laterMetadata : startMetadata
        #expect(writer.metadataInFile == expected)

        // The file still plays every frame, in order (a rewritten header broke nothing).
        #expect(try readBack(url).numbers == (0..<24).map(UInt64.init))
        guard FFmpegTools.ffprobe != nil else { return }
        let tags = try #require(try formatTags(url), "ffprobe cannot read \(url.lastPathComponent)")
        #expect(tags["title"] == expected["title"])
        #expect(tags["comment"] == expected["comment"], "a key left out of the new metadata is gone")
        #expect(tags["artist"] == expected["artist"])
        let probe = try #require(try FFmpegTools.probe(url))
        #expect(probe.frameCount == 24)
    }

    @Test("a fragmented file whose new metadata outgrows the reserve keeps the start's, and plays")
    func outgrowsReserve() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("big.mov")
        var options = MovieWriterOptions()
        options.fragmentInterval = MediaTime(value: 1, timescale: 4)
        options.metadata = startMetadata
        let writer = try MovieFileWriter(url: url, options: options)
        try writer.addVideoStream(h264())
        let frames = try PatternFrames(format: .nv12VideoRange)
        for number in 0..<12 {
            if number == 6 {
                writer.updateMetadata([
                    "title": "big", "comment": String(repeating: "x", count: 3 * options.metadataReserveBytes),
                ])
            }
            try writer.append(frames.frame(number), presentationTime: MediaTime(value: Int64(number), timescale: 30))
        }
        try writer.finish()
        #expect(writer.metadataInFile == startMetadata)
        #expect(try readBack(url).numbers == (0..<12).map(UInt64.init))
        if let tags = try formatTags(url) { #expect(tags["title"] == "At the start") }
    }

    @Test("a fragmented file killed before the end keeps the start's metadata and its fragments")
    func abandonedKeepsStart() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("cut.mp4")
        var options = MovieWriterOptions()
        options.fragmentInterval = MediaTime(value: 1, timescale: 4)
        options.metadata = startMetadata
        do {
            let writer = try MovieFileWriter(url: url, options: options)
            try writer.addVideoStream(h264())
            let frames = try PatternFrames(format: .nv12VideoRange)
            for number in 0..<60 {  // 2 s: several fragments complete despite the encoder's delay
                if number == 10 { writer.updateMetadata(laterMetadata) }
                try writer.append(
                    frames.frame(number), presentationTime: MediaTime(value: Int64(number), timescale: 30))
            }
            // Dropped without finish(): no trailer, as if the process died.
        }
        let numbers = try readBack(url).numbers
        #expect(numbers.count >= 30 && numbers == (0..<UInt64(numbers.count)).map { $0 }, "\(numbers.count) frames")
        if let tags = try formatTags(url) { #expect(tags["title"] == "At the start") }
    }

    @Test("CaptureMovieFileOutput.metadata set mid-recording lands in the file being recorded")
    func outputMidRecording() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("renamed.mov")
        let rig = try MovieRig()
        rig.movie.metadata = ["title": "Front door"]
        #expect(rig.movie.movieFragmentInterval.isNumeric, "the default is fragmented")
        let recorder = FileRecorder()
        rig.movie.startRecording(to: url, recordingDelegate: recorder)
        rig.start()
        rig.step(5)
        rig.movie.metadata = ["title": "Back door", "location": "+48.8577+002.2950/"]
        rig.step(5)
        rig.movie.stopRecording()
        #expect(recorder.waitForFinish())
        rig.session.stopRunning()
        #expect(recorder.lastError == nil)
        #expect(rig.movie.metadata["title"] == "Back door")
        let numbers = try readBack(url).numbers
        #expect(numbers.count == rig.movie.recordedFrameCount && numbers == (0..<UInt64(numbers.count)).map { $0 })
        guard let tags = try formatTags(url) else { return }
        #expect(tags["title"] == "Back door")
        #expect(tags["location"] == "+48.8577+002.2950/")

        // The next recording starts with the metadata as it is now.
        let next = scratch.url("next.mkv")
        let second = FileRecorder()
        rig.session.startRunning()
        #expect(rig.clock.waitUntilSleeping())
        rig.movie.startRecording(to: next, recordingDelegate: second)
        rig.step(3)
        rig.movie.metadata = ["title": "Too late for Matroska"]
        rig.step(3)
        rig.movie.stopRecording()
        #expect(second.waitForFinish())
        rig.session.stopRunning()
        #expect(try formatTags(next)?["title"] == "Back door", "Matroska keeps the metadata it started with")
    }
}
