import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Viewfinder
@testable import ViewfinderALSA
@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderPipeWire
@testable import ViewfinderPreviewWindow
@testable import ViewfinderSimulator
@testable import ViewfinderTestSupport
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

@Suite("Movie file output")
struct MovieFileOutputTests {
    @Test(
        "two seconds of the virtual camera, lossless, read back by libavformat and ffprobe",
        arguments: ["mov", "mp4", "mkv"])
    func recordsSeconds(fileExtension: String) throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("clip.\(fileExtension)")
        let rig = try MovieRig(quality: 1)
        let recorder = FileRecorder()
        rig.movie.movieFragmentInterval = MediaTime(value: 1, timescale: 2)
        rig.movie.startRecording(to: url, recordingDelegate: recorder)
        #expect(rig.movie.isRecording)
        #expect(rig.movie.outputFileURL == url)
        rig.start()
        rig.step(59)
        #expect(rig.movie.recordedDuration == MediaTime(value: 2, timescale: 1))
        #expect(rig.movie.recordedFileSize > 0)
        rig.movie.stopRecording()
        #expect(recorder.waitForFinish())
        rig.session.stopRunning()

        #expect(recorder.startCount == 1)
        #expect(recorder.finishCount == 1)
        #expect(recorder.lastError == nil)
        #expect(!recorder.sawStartAfterFinish)
        #expect(!rig.movie.isRecording)
        #expect(rig.movie.recordedFrameCount == 60)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int)
        #expect(rig.movie.recordedFileSize == Int64(size), "after the finish the figure is the file's size")

        let back = try readBack(url)
        #expect(back.numbers == (0..<60).map(UInt64.init), "every frame, in order, pixel-exact")
        #expect(back.times.isStrictlyIncreasing)
        #expect(abs((back.times.last ?? 0) - 59.0 / 30) < 0.002, "the frames' own times, from 0")
        let reader = try MovieFileReader(url: url)
        #expect(reader.video.codecName == "h264")
        #expect(reader.video.width == 320 && reader.video.height == 240)

        let stats = rig.movie.statistics
        #expect(stats.captured == 60 && stats.delivered == 60 && stats.dropped == 0)

        guard let probe = try FFmpegTools.probe(url) else {
            #expect(FFmpegTools.ffprobe == nil, "ffprobe could not read the file")
            return
        }
        #expect(probe.codecName == "h264")
        #expect(probe.frameCount == 60)
        #expect(probe.packetTimes.sorted().isStrictlyIncreasing)
        #expect(abs((probe.duration ?? 0) - 2) <= 1.0 / 30)
    }

    @Test("HEVC where asked")
    func hevc() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("clip.mkv")
        let rig = try MovieRig()
        guard rig.movie.availableVideoCodecTypes.contains(.hevc) else { return }
        try rig.movie.setOutputSettings(
            MovieOutputSettings(codec: .hevc), for: try #require(rig.movie.connection(with: .video)))
        #expect(rig.movie.outputSettings(for: try #require(rig.movie.connection(with: .video))).codec == .hevc)
        let recorder = FileRecorder()
        rig.movie.startRecording(to: url, recordingDelegate: recorder)
        rig.start()
        rig.step(9)
        rig.movie.stopRecording()
        #expect(recorder.waitForFinish())
        rig.session.stopRunning()
        #expect(recorder.lastError == nil)
        let reader = try MovieFileReader(url: url)
        #expect(reader.video.codecName == "hevc")
        #expect(try readBack(url).numbers.count == 10)
    }

    @Test("settings out of range and codecs the camera cannot give are refused")
    func settingsRefused() throws {
        let rig = try MovieRig()
        let connection = try #require(rig.movie.connection(with: .video))
        var bad = MovieOutputSettings()
        bad.quality = 2
        #expect(throws: CaptureError.self) { try rig.movie.setOutputSettings(bad, for: connection) }
        bad = MovieOutputSettings()
        bad.averageBitRate = -1
        #expect(throws: CaptureError.self) { try rig.movie.setOutputSettings(bad, for: connection) }
        #expect(!rig.movie.availableVideoCodecTypes.contains(.jpeg), "the virtual camera has no Motion-JPEG")
        #expect { try rig.movie.setOutputSettings(MovieOutputSettings(codec: .jpeg), for: connection) } throws: {
            ($0 as? CaptureError)?.code == .unsupportedFormat
        }
        #expect(rig.movie.outputSettings(for: connection) == MovieOutputSettings())
    }

    @Test("maxRecordedDuration stops the recording at the limit: maximumDurationReached, file playable")
    func maximumDuration() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("limited.mov")
        let rig = try MovieRig()
        rig.movie.maxRecordedDuration = MediaTime(value: 1, timescale: 1)
        let recorder = FileRecorder()
        rig.movie.startRecording(to: url, recordingDelegate: recorder)
        rig.start()
        let stepped = rig.step(until: recorder, limit: 60)
        #expect(recorder.waitForFinish())
        rig.step(5)
        rig.session.stopRunning()
        #expect(stepped == 30, "the 31st frame would end past one second")
        let error = try #require(recorder.lastError)
        #expect(error.code == .maximumDurationReached)
        #expect(error.recordingSuccessfullyFinished == true)
        #expect(recorder.finishCount == 1)
        #expect(rig.movie.recordedDuration == MediaTime(value: 1, timescale: 1))
        #expect(try readBack(url).numbers == (0..<30).map(UInt64.init))
    }

    @Test("maxRecordedFileSize stops the recording once reached: maximumFileSizeReached, file playable")
    func maximumFileSize() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("limited.mp4")
        let rig = try MovieRig(quality: 1)
        rig.movie.maxRecordedFileSize = 8_000
        let recorder = FileRecorder()
        rig.movie.startRecording(to: url, recordingDelegate: recorder)
        rig.start()
        let stepped = rig.step(until: recorder, limit: 300)
        #expect(recorder.waitForFinish())
        rig.session.stopRunning()
        #expect(stepped < 300)
        let error = try #require(recorder.lastError)
        #expect(error.code == .maximumFileSizeReached)
        #expect(error.recordingSuccessfullyFinished == true)
        let frames = try readBack(url).numbers
        #expect(frames == (0..<UInt64(frames.count)).map { $0 })
        #expect(frames.count == rig.movie.recordedFrameCount)
        #expect(frames.count <= stepped + 1)
    }

    @Test("minFreeDiskSpaceLimit beyond the disk's free space stops the recording: diskFull, file playable")
    func minimumFreeSpace() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("space.mkv")
        let rig = try MovieRig()
        let recorder = FileRecorder()
        rig.movie.startRecording(to: url, recordingDelegate: recorder)
        rig.start()
        rig.step(4)
        rig.movie.minFreeDiskSpaceLimit = Int64.max / 2
        rig.step(1)
        #expect(recorder.waitForFinish())
        rig.session.stopRunning()
        let error = try #require(recorder.lastError)
        #expect(error.code == .diskFull)
        #expect(error.recordingSuccessfullyFinished == true)
        #expect(try readBack(url).numbers == [0, 1, 2, 3, 4])
    }

    @Test("a disk that fills up mid-recording: diskFull, the file plays up to its last fragment")
    func diskFills() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("full.mov")
        let rig = try MovieRig(quality: 1)
        rig.movie.movieFragmentInterval = MediaTime(value: 1, timescale: 5)
        rig.movie.failAfterBytesForTesting = 9_000
        let recorder = FileRecorder()
        rig.movie.startRecording(to: url, recordingDelegate: recorder)
        rig.start()
        let stepped = rig.step(until: recorder, limit: 300)
        #expect(recorder.waitForFinish())
        rig.session.stopRunning()
        #expect(stepped < 300)
        let error = try #require(recorder.lastError)
        #expect(error.code == .diskFull)
        #expect(error.recordingSuccessfullyFinished == true)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int)
        #expect(size <= 9_000)
        let frames = try readBack(url).numbers
        #expect(frames.count >= 6, "at least the first fragment")
        #expect(frames == (0..<UInt64(frames.count)).map { $0 })
    }

    @Test("startRecording never overwrites: fileAlreadyExists, and exactly one didFinish")
    func neverOverwrites() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("exists.mov")
        let original = Data("precious".utf8)
        try original.write(to: url)
        let rig = try MovieRig()
        let recorder = FileRecorder()
        rig.movie.startRecording(to: url, recordingDelegate: recorder)
        rig.start()
        rig.step(5)
        #expect(recorder.waitForFinish())
        rig.movie.stopRecording()
        rig.session.stopRunning()
        #expect(rig.movie.waitUntilIdle(timeout: 10))
        #expect(recorder.finishCount == 1)
        #expect(recorder.startCount == 0)
        let error = try #require(recorder.lastError)
        #expect(error.code == .fileAlreadyExists)
        #expect(error.recordingSuccessfullyFinished == false)
        #expect(try Data(contentsOf: url) == original)
        #expect(!rig.movie.isRecording)
    }

    @Test("a recording that never got a frame: noDataCaptured, no file left")
    func noData() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("empty.mov")
        let rig = try MovieRig()
        let recorder = FileRecorder()
        rig.movie.startRecording(to: url, recordingDelegate: recorder)
        rig.movie.stopRecording()
        #expect(recorder.waitForFinish())
        #expect(rig.movie.waitUntilIdle(timeout: 10))
        #expect(recorder.finishCount == 1 && recorder.startCount == 0)
        let error = try #require(recorder.lastError)
        #expect(error.code == .noDataCaptured)
        #expect(error.recordingSuccessfullyFinished == false)
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    @Test("stopping the session finishes the recording, without an error")
    func sessionStopFinishes() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("stopped.mov")
        let rig = try MovieRig()
        let recorder = FileRecorder()
        rig.movie.startRecording(to: url, recordingDelegate: recorder)
        rig.start()
        rig.step(9)
        rig.session.stopRunning()
        #expect(recorder.waitForFinish())
        #expect(recorder.lastError == nil)
        #expect(try readBack(url).numbers == (0..<10).map(UInt64.init))
    }

    @Test("starting a new recording while one runs finishes the first, then records into the second")
    func switchesFiles() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let rig = try MovieRig()
        let recorder = FileRecorder()
        rig.movie.startRecording(to: scratch.url("one.mov"), recordingDelegate: recorder)
        rig.start()
        rig.step(4)
        rig.movie.startRecording(to: scratch.url("two.mov"), recordingDelegate: recorder)
        #expect(recorder.waitForFinish())
        rig.step(5)
        rig.movie.stopRecording()
        #expect(recorder.waitForFinish())
        rig.session.stopRunning()
        #expect(recorder.finishes.withLock { $0.map(\.url.lastPathComponent) } == ["one.mov", "two.mov"])
        #expect(recorder.finishes.withLock { $0.allSatisfy { $0.error == nil } })
        #expect(try readBack(scratch.url("one.mov")).numbers == [0, 1, 2, 3, 4])
        #expect(try readBack(scratch.url("two.mov")).numbers == [5, 6, 7, 8, 9])
    }

    @Test("unplugging the camera mid-recording: deviceWasDisconnected, file playable")
    func unplug() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("unplugged.mp4")
        let rig = try MovieRig()
        let recorder = FileRecorder()
        rig.movie.startRecording(to: url, recordingDelegate: recorder)
        rig.start()
        rig.step(7)
        rig.camera.simulateDisconnect()
        rig.clock.advance(by: .fps(30))
        #expect(recorder.waitForFinish())
        rig.session.stopRunning()
        let error = try #require(recorder.lastError)
        #expect(error.code == .deviceWasDisconnected)
        #expect(error.recordingSuccessfullyFinished == true)
        #expect(recorder.finishCount == 1)
        #expect(try readBack(url).numbers == (0..<8).map(UInt64.init))
    }

    @Test("another device of the session lost mid-recording: sessionWasInterrupted, file playable")
    func interrupted() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("interrupted.mov")
        let rig = try MovieRig()
        let other = VirtualCamera(configuration: .init(clock: rig.clock, formats: [thirtyFPSFormat()]))
        try rig.session.tryAddInput(try CaptureDeviceInput(device: other.device))
        let recorder = FileRecorder()
        rig.movie.startRecording(to: url, recordingDelegate: recorder)
        rig.session.startRunning()
        #expect(rig.clock.waitUntilSleeping(count: 2))
        for _ in 0..<5 {
            rig.clock.advance(by: .fps(30))
            #expect(rig.clock.waitUntilSleeping(count: 2))
            #expect(rig.movie.waitUntilIdle(timeout: 30))
        }
        other.simulateDisconnect()
        rig.clock.advance(by: .fps(30))
        #expect(recorder.waitForFinish())
        #expect(rig.session.isInterrupted)
        rig.session.stopRunning()
        let error = try #require(recorder.lastError)
        #expect(error.code == .sessionWasInterrupted)
        #expect(error.recordingSuccessfullyFinished == true)
        #expect(recorder.finishCount == 1)
        #expect(try readBack(url).numbers.count >= 6)
    }

    @Test("a session stopped by a device failure: sessionWasInterrupted")
    func failureStops() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let rig = try MovieRig()
        let recorder = FileRecorder()
        rig.movie.startRecording(to: scratch.url("failed.mkv"), recordingDelegate: recorder)
        rig.start()
        rig.step(3)
        rig.camera.simulateFailure(CaptureError(.ioError, "the test broke the camera"))
        rig.clock.advance(by: .fps(30))
        #expect(recorder.waitForFinish())
        let error = try #require(recorder.lastError)
        #expect(error.code == .sessionWasInterrupted)
        #expect(error.recordingSuccessfullyFinished == true)
        #expect(try readBack(scratch.url("failed.mkv")).numbers == [0, 1, 2, 3])
    }

    @Test("a video data output on the same session keeps delivering while recording; the counts balance")
    func alongsideVideoDataOutput() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("both.mov")
        let frames = RecordingDelegate()
        let data = CaptureVideoDataOutput()
        data.setSampleBufferDelegate(frames, queue: frames.queue)
        let rig = try MovieRig(quality: 1, others: [data])
        let recorder = FileRecorder()
        rig.movie.startRecording(to: url, recordingDelegate: recorder)
        rig.start()
        // Frame 0 comes at once; each frame is handed over by both outputs before the next is
        // due (otherwise a newer frame would replace a waiting one as late).
        for index in 0..<30 {
            if index > 0 { rig.clock.advance(by: .fps(30)) }
            #expect(rig.clock.waitUntilSleeping())
            #expect(rig.movie.waitUntilIdle(timeout: 30))
            #expect(data.waitUntilDelivered(timeout: 30))
        }
        rig.session.stopRunning()
        #expect(recorder.waitForFinish())
        #expect(recorder.lastError == nil)

        #expect(frames.frames.map(\.patternNumber) == (0..<30).map { UInt64($0) })
        let delivered = data.statistics
        let movie = rig.movie.statistics
        #expect(delivered.captured == 30 && delivered.delivered + delivered.dropped == delivered.captured)
        #expect(movie.captured == delivered.captured)
        #expect(movie.delivered + movie.dropped + movie.rateGated == movie.captured)
        let back = try readBack(url)
        #expect(back.numbers.count == movie.delivered - movie.droppedByProcessor)
        #expect(back.numbers == (0..<30).map(UInt64.init))
    }

    @Test("frames the encoder cannot take in time drop as outOfBuffers; the file's times stay true")
    func encoderTooSlow() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("slow.mkv")
        let rig = try MovieRig(quality: 1, movie: CaptureMovieFileOutput(bufferBudget: 1))
        let recorder = FileRecorder()
        rig.movie.startRecording(to: url, recordingDelegate: recorder)
        rig.start()
        // Block the recording queue: every frame that comes now finds the one slot taken.
        let gate = rig.blockRecordingQueue()
        rig.capture(6)
        gate.signal()
        #expect(rig.movie.waitUntilIdle(timeout: 30))
        rig.step(2)
        rig.movie.stopRecording()
        #expect(recorder.waitForFinish())
        rig.session.stopRunning()
        let stats = rig.movie.statistics
        #expect(stats.droppedOutOfBuffers == 5, "one frame waited in the slot, five found it taken")
        #expect(stats.captured == stats.delivered + stats.dropped)
        let back = try readBack(url)
        #expect(back.numbers == [0, 1, 7, 8])
        let expected = [0.0, 1.0 / 30, 7.0 / 30, 8.0 / 30]
        #expect(zip(back.times, expected).allSatisfy { abs($0 - $1) < 0.002 }, "no squashing: \(back.times)")
    }

    @Test("settings set just before startRecording apply to it whole: queued frames of the old stream do not start it")
    func settingsBeforeStartApplyWhole() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("settings-then-start.mkv")
        let rig = try MovieRig()
        let recorder = FileRecorder()
        rig.start()
        // Block the recording queue, then let frames 1 and 2 come under the old settings: they
        // wait (one for the queue, one in the engine) until after the recording has started.
        let gate = rig.blockRecordingQueue()
        rig.capture(2)
        var lossless = MovieOutputSettings()
        lossless.quality = 1
        try rig.movie.setOutputSettings(lossless, for: try #require(rig.movie.connection(with: .video)))
        rig.movie.startRecording(to: url, recordingDelegate: recorder)
        gate.signal()
        #expect(rig.movie.waitUntilIdle(timeout: 30))
        rig.step(3)
        rig.movie.stopRecording()
        #expect(recorder.waitForFinish())
        rig.session.stopRunning()
        #expect(recorder.lastError == nil)
        #expect(try readBack(url).numbers == [3, 4, 5], "frames 1 and 2 came under the settings replaced")
        let stats = rig.movie.statistics
        #expect(stats.captured == stats.delivered + stats.dropped, "\(stats)")
    }

    @Test("a Motion-JPEG-only camera records to H.264: every frame decoded once and encoded, in order")
    func motionJPEGToH264() throws {
        // A USB 2 webcam gives 1080p30 only as Motion-JPEG: recording it with an encoder decodes it.
        let listing = """
            \t[0]: 'MJPG' (Motion-JPEG, compressed)
            \t\tSize: Discrete 320x240
            \t\t\tInterval: Discrete 0.033s (30.000 fps)
            """
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("mjpeg-h264.mov")
        let rig = try SimulatedRig(listing: listing)
        let device = try rig.device
        let session = CaptureSession(notificationCenter: NotificationCenter())
        let movie = CaptureMovieFileOutput()
        let bytes = ByteCollector()  // frames counted as they arrive, to pace the camera
        let data = CaptureVideoDataOutput()
        data.typedVideoSettings = try VideoSettings(pixelFormat: .mjpeg)
        data.setSampleBufferDelegate(bytes, queue: DispatchQueue(label: "bytes"))
        try session.tryAddInput(try CaptureDeviceInput(device: device))
        try session.tryAddOutput(movie)
        try session.tryAddOutput(data)
        let connection = try #require(movie.connection(with: .video))
        try movie.setOutputSettings(MovieOutputSettings(codec: .h264), for: connection)
        let recorder = FileRecorder()
        movie.startRecording(to: url, recordingDelegate: recorder)
        session.startRunning()
        #expect(session.isRunning)
        #expect(device.activeFormat.pixelFormat == .mjpeg, "the camera has nothing else")
        for _ in 0..<12 {
            let before = bytes.count  // read before the frame can arrive
            rig.clock.advance(by: thirtyFPS)
            #expect(bytes.waitForFrames(before + 1))
            #expect(movie.waitUntilIdle(timeout: 30))
        }
        movie.stopRecording()
        #expect(recorder.waitForFinish())
        session.stopRunning()
        #expect(recorder.lastError == nil, "\(String(describing: recorder.lastError))")
        let stats = movie.statistics
        #expect(stats.dropped == 0)
        #expect(stats.captured == stats.delivered + stats.dropped)
        let reader = try MovieFileReader(url: url)
        #expect(reader.video.codecName == "h264")
        let back = try readBack(url)
        #expect(back.numbers.count == 12, "\(back.numbers) \(stats)")
        #expect(back.numbers == Array(0..<UInt64(back.numbers.count)), "the pattern survives JPEG and H.264")
    }

    @Test("Motion-JPEG passthrough: the file's packets are the camera's JPEG frames, byte for byte")
    func passthrough() throws {
        let listing = """
            \t[0]: 'YUYV' (YUYV 4:2:2)
            \t\tSize: Discrete 320x240
            \t\t\tInterval: Discrete 0.033s (30.000 fps)
            \t[1]: 'MJPG' (Motion-JPEG, compressed)
            \t\tSize: Discrete 320x240
            \t\t\tInterval: Discrete 0.033s (30.000 fps)
            """
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("mjpeg.mov")
        let rig = try SimulatedRig(listing: listing)
        let device = try rig.device
        let session = CaptureSession(notificationCenter: NotificationCenter())
        let movie = CaptureMovieFileOutput()
        let bytes = ByteCollector()
        let data = CaptureVideoDataOutput()
        data.typedVideoSettings = try VideoSettings(pixelFormat: .mjpeg)  // the camera's JPEG bytes, untouched
        data.setSampleBufferDelegate(bytes, queue: DispatchQueue(label: "bytes"))
        try session.tryAddInput(try CaptureDeviceInput(device: device))
        try session.tryAddOutput(movie)
        try session.tryAddOutput(data)
        let connection = try #require(movie.connection(with: .video))
        #expect(movie.availableVideoCodecTypes.contains(.jpeg))
        try movie.setOutputSettings(MovieOutputSettings(codec: .jpeg), for: connection)
        let recorder = FileRecorder()
        movie.startRecording(to: url, recordingDelegate: recorder)
        session.startRunning()
        #expect(session.isRunning)
        #expect(device.activeFormat.pixelFormat == .mjpeg, "negotiation picked the camera's Motion-JPEG")
        #expect(data.isZeroCopy)
        for _ in 0..<10 {
            let before = bytes.count  // read before the frame can arrive
            rig.clock.advance(by: thirtyFPS)
            #expect(bytes.waitForFrames(before + 1))
            #expect(movie.waitUntilIdle(timeout: 30))
        }
        movie.stopRecording()
        #expect(recorder.waitForFinish())
        session.stopRunning()
        #expect(recorder.lastError == nil)

        let reader = try MovieFileReader(url: url)
        #expect(reader.video.codecName == "mjpeg")
        var packets: [[UInt8]] = []
        while let packet = try reader.nextPacket() { packets.append(packet.data) }
        #expect(!packets.isEmpty)
        #expect(packets == bytes.frames.withLock { $0 }, "untouched: no decode, no re-encode")
    }
}

/// Keeps a copy of every delivered frame's bytes.
final class ByteCollector: CaptureVideoDataOutputSampleBufferDelegate {
    let frames = Mutex<[[UInt8]]>([])
    private let arrived = NSCondition()

    func captureOutput(
        _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {
        guard let image = sampleBuffer.imageBuffer else { return }
        let copy = [UInt8](UnsafeRawBufferPointer(start: image.baseAddress, count: image.dataSize))
        arrived.lock()
        frames.withLock { $0.append(copy) }
        arrived.broadcast()
        arrived.unlock()
    }

    var count: Int { frames.withLock { $0.count } }

    func waitForFrames(_ count: Int, timeout: Double = 10) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        arrived.lock()
        defer { arrived.unlock() }
        while self.count < count {
            if !arrived.wait(until: deadline) { return self.count >= count }
        }
        return true
    }
}

/// Whether something listens on TCP `port` of 127.0.0.1 (from /proc/net/tcp, without connecting:
/// a probe connection would be taken by a one-shot listener).
private func isListening(port: Int) -> Bool {
    guard let table = try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8) else { return false }
    let local = String(format: "0100007F:%04X", port)
    return table.split(separator: "\n").contains { line in
        let fields = line.split(separator: " ")
        return fields.count > 3 && fields[1] == local && fields[3] == "0A"
    }
}

/// Whether a UDP socket is bound to 127.0.0.1:`port` (an SRT listener).
private func isBoundUDP(port: Int) -> Bool {
    guard let table = try? String(contentsOfFile: "/proc/net/udp", encoding: .utf8) else { return false }
    let local = String(format: ":%04X", port)
    return table.split(separator: "\n").contains { line in
        let fields = line.split(separator: " ")
        return fields.count > 1 && fields[1].hasSuffix(local)
    }
}

@Suite("Movie file output: publishing")
struct MoviePublishingTests {
    /// Starts an ffmpeg listener with `listenerArguments`, waits (bounded) until `isReady` — an
    /// external process: no clock to inject — then records `frames` frames of the virtual camera to
    /// `url` and returns ffprobe's view of what the listener wrote to `received`.
    func publish(
        to url: URL, frames: Int, listenerArguments: [String], received: URL, isReady: () -> Bool
    ) throws -> FFmpegTools.Probe {
        let listener = Process()
        listener.executableURL = URL(fileURLWithPath: try #require(FFmpegTools.ffmpeg))
        listener.arguments = ["-v", "error", "-nostdin"] + listenerArguments + ["-y", received.path]
        listener.standardError = FileHandle.nullDevice
        try listener.run()
        defer { if listener.isRunning { listener.terminate() } }
        var polls = 0
        while !isReady(), polls < 500, listener.isRunning {
            usleep(10_000)
            polls += 1
        }
        try #require(isReady(), "ffmpeg did not start listening")

        let rig = try MovieRig()
        let recorder = FileRecorder()
        rig.movie.startRecording(to: url, recordingDelegate: recorder)
        rig.start()
        rig.step(frames - 1)
        rig.movie.stopRecording()
        #expect(recorder.waitForFinish())
        rig.session.stopRunning()
        #expect(recorder.startCount == 1)
        #expect(recorder.lastError == nil)
        listener.waitUntilExit()
        return try #require(try FFmpegTools.probe(received))
    }

    @Test(
        "recording to an srt:// URL publishes MPEG-TS to an ffmpeg SRT listener on loopback",
        .enabled(if: FFmpegTools.ffmpeg != nil && FFmpegTools.ffprobe != nil, FFmpegTools.missing))
    func srtLoopback() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let port = Int.random(in: 20_000...40_000)
        // Latency 0: SRT hands packets on at once instead of holding them for its 120 ms default,
        // which a caller hanging up after a burst would cut; tlpktdrop=0: with no latency, a packet
        // the loaded machine delayed would otherwise be dropped as too late; linger=5: closing waits
        // (up to 5 s) for what is still in the send buffer, which live mode otherwise discards
        // (26 and 28 of 60 arrived under load without them). ffmpeg's listener reports an I/O error
        // when the caller hangs up; what it wrote stays.
        let probe = try publish(
            to: try #require(URL(string: "srt://127.0.0.1:\(port)?mode=caller&latency=0&tlpktdrop=0&linger=5")),
            frames: 60,
            listenerArguments: [
                "-i", "srt://127.0.0.1:\(port)?mode=listener&listen_timeout=30000000&latency=0&tlpktdrop=0", "-c",
                "copy", "-f",
                "mpegts",
            ], received: scratch.url("received.ts"), isReady: { isBoundUDP(port: port) })
        #expect(probe.codecName == "h264")
        // SRT may still lose a tail the listener had not delivered when the caller hung up.
        #expect(probe.frameCount >= 30 && probe.frameCount <= 60, "\(probe.frameCount) of 60 frames arrived")
        #expect(probe.packetTimes.isStrictlyIncreasing)
    }

    @Test(
        "recording to an rtmp:// URL publishes to an ffmpeg listener on loopback",
        .enabled(if: FFmpegTools.ffmpeg != nil && FFmpegTools.ffprobe != nil, FFmpegTools.missing))
    func rtmpLoopback() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let port = Int.random(in: 20_000...40_000)
        let probe = try publish(
            to: try #require(URL(string: "rtmp://127.0.0.1:\(port)/live/test")), frames: 30,
            listenerArguments: [
                "-listen", "1", "-timeout", "30", "-i", "rtmp://127.0.0.1:\(port)/live/test", "-c", "copy",
            ], received: scratch.url("received.flv"), isReady: { isListening(port: port) })
        #expect(probe.codecName == "h264")
        #expect(probe.frameCount == 30)
        #expect(probe.packetTimes.isStrictlyIncreasing)
        #expect(abs((probe.packetTimes.last ?? 0) - 29.0 / 30) < 0.002)
    }
}

@Suite("Movie file output: audio track (shape)")
struct MovieAudioShapeTests {
    @Test("with an audio format set, PCM chunks go into an AAC track on the same clock")
    func audioTrack() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("with-audio.mov")
        let rig = try MovieRig()
        let format = AudioFormat(sampleRate: 48_000, channelCount: 2, sampleFormat: .float32)
        rig.movie.recorder.audioTrackFormat.withLock { $0 = format }
        let pool = try PCMBufferPool(bytesPerBuffer: 1024 * format.bytesPerFrame, capacity: 4)
        var sampleIndex: UInt64 = 0
        /// Appends 1024-frame chunks of a 440 Hz tone up to `time`.
        func appendAudio(upTo time: MediaTime) throws {
            while format.duration(ofFrames: Int(sampleIndex)) < time {
                let buffer = try #require(pool.makeBuffer())
                let samples = buffer.memory.assumingMemoryBound(to: Float.self)
                for frame in 0..<1024 {
                    let value = Float(sin(2 * Double.pi * 440 * Double(Int(sampleIndex) + frame) / 48_000) * 0.5)
                    samples[2 * frame] = value
                    samples[2 * frame + 1] = value
                }
                let chunk = AudioChunk(
                    buffer: buffer, frameCount: 1024, format: format,
                    presentationTime: format.duration(ofFrames: Int(sampleIndex)), sampleIndex: sampleIndex,
                    framesLostBefore: 0, hostArrivalTime: .zero)
                rig.movie.recorder.queue.sync { rig.movie.recorder.recordAudio(chunk) }
                sampleIndex += 1024
            }
        }
        let recorder = FileRecorder()
        rig.movie.startRecording(to: url, recordingDelegate: recorder)
        rig.start()
        for frame in 1..<30 {
            try appendAudio(upTo: MediaTime.fps(30) * Int64(frame))
            rig.step(1)
        }
        try appendAudio(upTo: MediaTime(value: 1, timescale: 1))
        rig.movie.stopRecording()
        #expect(recorder.waitForFinish())
        rig.session.stopRunning()
        #expect(recorder.lastError == nil)
        #expect(try readBack(url).numbers == (0..<30).map(UInt64.init))
        guard let probe = try FFmpegTools.probe(url) else { return }
        #expect(probe.streamCodecs.sorted() == ["aac", "h264"])
    }
}
