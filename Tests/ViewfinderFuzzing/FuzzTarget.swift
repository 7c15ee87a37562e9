import Foundation
import Viewfinder
import ViewfinderSimulator

/// The inputs Viewfinder takes from outside that are fuzzed (`Scripts/fuzz.sh`), and how one
/// input is run through each. A run must end in ``Outcome/accepted`` or ``Outcome/refused(_:)``:
/// anything else (a trap, a memory error) is a bug, and the input is kept under
/// `Tests/FuzzCorpus/<target>/`, where a normal test replays it.
///
/// Thread safety: a stateless namespace; runs of different targets may go on in parallel.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// A `v4l2-ctl --list-formats-ext` listing, read by the simulated UVC camera and discovered
    /// through the V4L2 backend, which then streams from its small formats.
    case listing
    /// A Motion-JPEG frame: `JPEGDecoder.readHeader`, then a decode at the size the header says.
    case mjpeg
    /// A movie file for the file-replay path: `MovieFileReader` opens it and reads its frames.
    case movie

    /// How a run ended.
    public enum Outcome: Sendable, Equatable {
        /// The input was read.
        case accepted
        /// The input was refused with this typed error message.
        case refused(String)
    }

    /// Runs `bytes` through the target.
    public func run(_ bytes: [UInt8]) -> Outcome {
        switch self {
        case .listing: return Self.runListing(bytes)
        case .mjpeg: return Self.runJPEG(bytes)
        case .movie: return Self.runMovie(bytes)
        }
    }

    // MARK: Listing

    private static func runListing(_ bytes: [UInt8]) -> Outcome {
        let text = String(decoding: bytes, as: UTF8.self)
        let camera: SimulatedUVCCamera
        do {
            camera = try SimulatedUVCCamera(
                configuration: .init(listing: text, busInfo: "usb-fuzz", clock: ManualClock()))
        } catch {
            return .refused(error.message)
        }
        let bus = SimulatedV4L2Bus(bufferCount: 2)
        bus.plug(camera)
        guard let device = bus.device(for: camera) else { return .accepted }
        // Stream from the smallest format: S_FMT, S_PARM, REQBUFS, mmap and STREAMON over what was read.
        let smallest = device.formats.min {
            $0.dimensions.width * $0.dimensions.height < $1.dimensions.width * $1.dimensions.height
        }
        if let smallest, smallest.dimensions.width * smallest.dimensions.height <= 320 * 240 {
            bus.withDiscovery {
                let session = CaptureSession(notificationCenter: NotificationCenter())
                session.sessionPreset = .inputPriority
                do {
                    try device.lockForConfiguration()
                    defer { device.unlockForConfiguration() }
                    try device.setActiveFormat(smallest)
                    try session.tryAddInput(try CaptureDeviceInput(device: device))
                    try session.tryAddOutput(CaptureVideoDataOutput())
                } catch {
                    return
                }
                session.startRunning()
                session.stopRunning()
            }
        }
        bus.unplug(camera)
        return .accepted
    }

    // MARK: MJPEG

    /// The size of the seed frames, and of the camera format the decoders are made for (as a
    /// camera's stream would be).
    static let jpegSize = (width: 48, height: 32)

    private static func runJPEG(_ bytes: [UInt8]) -> Outcome {
        do throws(CaptureError) {
            for format in [PixelFormat.i420, .nv12VideoRange, .bgra] {
                let decoder = try JPEGDecoder(width: jpegSize.width, height: jpegSize.height, pixelFormat: format)
                let read = bytes.withUnsafeBytes { frame in
                    Result { () throws(CaptureError) in try decoder.readHeader(frame) }
                }
                _ = try read.get()
                let pool = try PixelBufferPool(
                    pixelFormat: format, width: jpegSize.width, height: jpegSize.height, capacity: 1)
                guard let buffer = pool.makePixelBuffer() else { return .accepted }
                try decoder.decode(bytes, into: buffer)
            }
            return .accepted
        } catch {
            return .refused(error.message)
        }
    }

    // MARK: Movie

    private static func runMovie(_ bytes: [UInt8]) -> Outcome {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "viewfinder-fuzz-\(getpid())-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: url) }
        do {
            try Data(bytes).write(to: url)
        } catch {
            return .refused("could not write the input: \(error)")
        }
        do throws(CaptureError) {
            let reader = try MovieFileReader(url: url, outputPixelFormat: .nv12VideoRange, poolCapacity: 2)
            var frames = 0
            while frames < 16, let frame = try reader.nextFrame() {
                _ = frame
                frames += 1
            }
            try reader.rewind()
            _ = try reader.nextPacket()
            return .accepted
        } catch {
            return .refused(error.message)
        }
    }
}

extension FuzzTarget {
    /// Inputs each target is built to read, to mutate from (movie seeds come from ffmpeg in
    /// `Scripts/fuzz.sh`): the C920 listing and a stepwise one; small JPEG frames in four
    /// subsamplings, with and without Huffman tables.
    public var builtInSeeds: [[UInt8]] {
        switch self {
        case .listing:
            let stepwise = """
                ioctl: VIDIOC_ENUM_FMT
                \tType: Video Capture

                \t[0]: 'NV12' (Y/UV 4:2:0)
                \t\tSize: Stepwise 32x32 - 1920x1080 with step 16/8
                \t\t\tInterval: Stepwise 0.033s - 1.000s with step 0.033s (1.000-30.000 fps)
                \t[1]: 'MJPG' (Motion-JPEG, compressed)
                \t\tSize: Continuous 16x16 - 640x480
                \t\t\tInterval: Continuous 0.017s - 2.000s (0.500-60.000 fps)
                """
            return [Array(SimulatedUVCCamera.c920Listing.utf8), Array(stepwise.utf8)]
        case .mjpeg:
            var seeds: [[UInt8]] = []
            for subsampling in [JPEGChromaSubsampling.yuv420, .yuv422, .yuv444, .gray] {
                guard let encoder = try? JPEGEncoder(quality: 0.5, chromaSubsampling: subsampling),
                    let pool = try? PixelBufferPool(
                        pixelFormat: .bgra, width: Self.jpegSize.width, height: Self.jpegSize.height, capacity: 1),
                    let buffer = pool.makePixelBuffer()
                else { continue }
                TestPattern.render(sequenceNumber: 3, into: buffer)
                guard let frame = try? encoder.encode(buffer) else { continue }
                seeds.append(frame)
                seeds.append(Self.strippingHuffmanTables(frame))
            }
            return seeds
        case .movie:
            return []
        }
    }

    /// `frame` without its DHT segments, as many UVC cameras send MJPEG.
    static func strippingHuffmanTables(_ frame: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        var index = 0
        while index + 3 < frame.count, frame[index] == 0xFF {
            let marker = frame[index + 1]
            if marker == 0xD8 {
                output += frame[index..<index + 2]
                index += 2
                continue
            }
            if marker == 0xDA { break }
            let length = Int(frame[index + 2]) << 8 | Int(frame[index + 3])
            let end = min(frame.count, index + 2 + length)
            if marker != 0xC4 { output += frame[index..<end] }
            index = end
        }
        output += frame[min(index, frame.count)...]
        return output
    }
}
