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
                    try session.addInput(try CaptureDeviceInput(device: device))
                    try session.addOutput(CaptureVideoDataOutput())
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

    private static func runJPEG(_ bytes: [UInt8]) -> Outcome {
        do throws(CaptureError) {
            let probe = try JPEGDecoder(width: 16, height: 16, pixelFormat: .i420)
            let read = bytes.withUnsafeBytes { frame in
                Result { () throws(CaptureError) in try probe.readHeader(frame) }
            }
            let header = try read.get()
            // Decode only what a camera could send (the decoder checks the size it is given).
            guard header.width <= 1024, header.height <= 1024 else { return .accepted }
            for format in [PixelFormat.i420, .nv12VideoRange, .bgra] {
                let width = format == .bgra ? header.width : (header.width + 1) & ~1
                let height = format == .bgra ? header.height : (header.height + 1) & ~1
                let decoder = try JPEGDecoder(width: width, height: height, pixelFormat: format)
                let pool = try PixelBufferPool(pixelFormat: format, width: width, height: height, capacity: 1)
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
