import CTurboJPEG
import CV4LConvert
import Dispatch
import Foundation
import Synchronization
import Viewfinder

/// Motion-JPEG decoding (`mjpeg/…`): webcam-like JPEG frames (a scene of gradients and noise,
/// ~1.2 bit/pixel, 4:2:2, quality 85 — colour bars decode far faster and flatter the figure) to
/// NV12 and to BGRA, by Viewfinder's decoder on one core and on two (two decoders on two threads,
/// as the video data output's two lanes run), against TurboJPEG alone (to planar YUV or straight to
/// BGRA, the floor), ffmpeg's MJPEG decoder and libv4lconvert's emulation (what libv4l2 hands an
/// application that asks an MJPEG camera for YU12 or BGR24) on the same frames, in the same run.
/// Each repeat rotates the contenders' order (reversed every other repeat,
/// ``Measure/order(repeat:count:)``) and gives each an untimed pre-roll; figures are frames per
/// second and CPU milliseconds per frame (process CPU time, user + system, over the frames).
enum MJPEGBenchmarks {
    static let sizes = [(1280, 720), (1920, 1080)]
    static let targets: [(label: String, format: PixelFormat, ffmpeg: String)] = [
        ("nv12", .nv12FullRange, "nv12"), ("bgra", .bgra, "bgra"),
    ]
    static let ring = 8

    static func cases(settings: MeasureSettings) -> [BenchmarkCase] {
        (settings.groupSizes ?? sizes).flatMap { size in
            targets.map { target in
                let dimensions = CaptureDevice.Dimensions(width: size.0, height: size.1)
                return BenchmarkCase(name: "mjpeg/\(dimensions)-\(target.label)", group: "mjpeg") { settings in
                    try measure(dimensions, target, settings)
                }
            }
        }
    }

    /// Webcam-like JPEG frames: smooth gradients with seeded noise, 4:2:2 at quality 85.
    static func frames(_ size: CaptureDevice.Dimensions) throws -> [[UInt8]] {
        let encoder = try JPEGEncoder(quality: 0.85, chromaSubsampling: .yuv422)
        let pool = try PixelBufferPool(
            pixelFormat: .bgra, width: size.pixelWidth, height: size.pixelHeight, capacity: 1)
        guard let frame = pool.makePixelBuffer() else { throw CaptureError(.outOfBuffers, "no scene buffer") }
        var state: UInt64 = 0x1234_5678
        func random() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        return try (0..<ring).map { index in
            let p = frame.baseAddress.assumingMemoryBound(to: UInt8.self)
            for y in 0..<size.pixelHeight {
                for x in 0..<size.pixelWidth {
                    let noise = Int(random() % 13) - 6
                    let o = y * frame.bytesPerRow + x * 4
                    let shift = index * 7
                    p[o] = UInt8(clamping: (x + shift) * 255 / size.pixelWidth + noise)
                    p[o + 1] = UInt8(clamping: y * 255 / size.pixelHeight + noise)
                    p[o + 2] = UInt8(clamping: 128 + Int(60 * sin(Double(x + y + shift) / 40)) + noise)
                    p[o + 3] = 255
                }
            }
            return try encoder.encode(frame)
        }
    }

    /// Process CPU time (user + system) in seconds.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    /// A contender: decodes `frames` frames of the ring (the count is a hint; returns how many it
    /// did), or `nil` when it cannot run.
    struct Contender {
        var name: String
        var threads: Int
        /// What the row's figures mean beyond the name (e.g. the format actually produced).
        var note: String? = nil
        var run: (_ frames: Int) throws -> (frames: Int, seconds: Double, cpu: Double)?
    }

    static func measure(
        _ size: CaptureDevice.Dimensions, _ target: (label: String, format: PixelFormat, ffmpeg: String),
        _ settings: MeasureSettings
    ) throws -> [BenchmarkResult] {
        let jpegs = try frames(size)
        let bitsPerPixel = Double(jpegs.map(\.count).reduce(0, +) * 8) / Double(jpegs.count * size.area)
        // The floor right beside Viewfinder's one core (the comparison that matters most), in
        // either direction the repeats run.
        var contenders: [Contender] = [
            try viewfinder(jpegs, size, target.format, threads: 1),
            try turboJPEG(jpegs, size, bgra: target.format == .bgra),
            try viewfinder(jpegs, size, target.format, threads: 2),
        ]
        contenders.append(libv4lconvert(jpegs, size, bgra: target.format == .bgra))
        if let ffmpeg = settings.ffmpeg, let input = FFmpegMJPEG(ffmpeg: ffmpeg, frames: jpegs) {
            for threads in [1, 2] {
                contenders.append(
                    Contender(name: "ffmpeg -threads \(threads)", threads: threads) { frames in
                        input.run(pixelFormat: target.ffmpeg, threads: threads, frames: frames)
                    })
            }
        }
        // Pilot: frames per run of about runSeconds for each.
        var framesPerRun: [Int] = []
        for contender in contenders {
            let pilot = try contender.run(jpegs.count)
            let fps = pilot.map { Double($0.frames) / $0.seconds } ?? 0
            framesPerRun.append(
                max(jpegs.count, Int(fps * max(settings.runSeconds, settings.minimumRunSeconds ?? 0.2))))
        }
        var fps = [[Double]](repeating: [], count: contenders.count)
        var cpu = [[Double]](repeating: [], count: contenders.count)
        var cpuPerWall = [[Double]](repeating: [], count: contenders.count)
        for repeatIndex in 0..<settings.repeats {
            for index in Measure.order(repeat: repeatIndex, count: contenders.count) {
                _ = try contenders[index].run(jpegs.count)  // untimed pre-roll
                guard let run = try contenders[index].run(framesPerRun[index]) else { continue }
                fps[index].append(Double(run.frames) / run.seconds)
                cpu[index].append(run.cpu / Double(run.frames) * 1000)
                cpuPerWall[index].append(run.cpu / run.seconds)
            }
        }
        let medians = fps.map { Measure.Figures(fps: $0, allocationsPerFrame: 0).median }
        let (oneCore, floorIndex, twoLanes) = (0, 1, 2)
        return contenders.indices.map { index in
            let figures = Measure.Figures(fps: fps[index], allocationsPerFrame: 0)
            let cpuSorted = cpu[index].sorted()
            let cpuMedian = cpuSorted.isEmpty ? nil : cpuSorted[cpuSorted.count / 2]
            var result = BenchmarkResult(
                name: "mjpeg/\(size)-\(target.label)/\(contenders[index].name)", group: "mjpeg", width: size.pixelWidth,
                height: size.pixelHeight, threads: contenders[index].threads, engine: contenders[index].name,
                pixelFormat: target.format.name, fpsMin: figures.min, fpsMedian: figures.median, gbPerS: 0, floor: 0,
                ratioToFloor: medians[floorIndex] > 0 ? figures.median / medians[floorIndex] : 0)
            result.cpuMsPerFrame = cpuMedian
            // How many cores a contender had: 2 lanes below ~1.8 ran on a machine others were using.
            result.cpuPerWall = cpuPerWall[index].isEmpty ? nil : Measure.median(cpuPerWall[index])
            result.note =
                ([String(format: "%.2f bit/pixel", bitsPerPixel)] + [contenders[index].note].compactMap { $0 })
                .joined(separator: "; ")
            result.ratioToPeer = index == twoLanes && medians[oneCore] > 0 ? figures.median / medians[oneCore] : nil
            // CPU per frame over the floor's in the same repeat (the machine's speed drifts by
            // 10–25 % over tens of seconds here; both sides of a same-repeat ratio drift alike):
            // the median and the spread over the repeats.
            if index != floorIndex, cpu[index].count == cpu[floorIndex].count, !cpu[index].isEmpty {
                let ratios = zip(cpu[index], cpu[floorIndex]).map { $1 > 0 ? $0 / $1 : 0 }
                result.cpuRatioToFloor = Measure.median(ratios)
                result.cpuRatioToFloorMin = ratios.min()
                result.cpuRatioToFloorMax = ratios.max()
            }
            return result
        }
    }

    /// Viewfinder's decoder into pooled buffers, on `threads` threads with a decoder each, frames
    /// split between them (what the output's decode lanes do).
    static func viewfinder(
        _ jpegs: [[UInt8]], _ size: CaptureDevice.Dimensions, _ format: PixelFormat, threads: Int, scale: Int = 1
    ) throws -> Contender {
        let decoders = try (0..<threads).map { _ in
            try JPEGDecoder(
                width: size.pixelWidth, height: size.pixelHeight, pixelFormat: format, scaleDenominator: scale)
        }
        let pool = try PixelBufferPool(
            pixelFormat: format, width: decoders[0].outputWidth, height: decoders[0].outputHeight,
            capacity: 2 * threads)
        let failures = Atomic<Int>(0)
        return Contender(name: threads == 1 ? "viewfinder 1 core" : "viewfinder 2 lanes", threads: threads) {
            frames in
            let cpu0 = cpuSeconds()
            let t0 = Measure.now()
            DispatchQueue.concurrentPerform(iterations: threads) { lane in
                for index in stride(from: lane, to: frames, by: threads) {
                    guard let buffer = pool.makePixelBuffer() else { continue }
                    do {
                        try decoders[lane].decode(jpegs[index % jpegs.count], into: buffer)
                    } catch {
                        failures.add(1, ordering: .relaxed)
                    }
                }
            }
            let seconds = Measure.now() - t0
            guard failures.load(ordering: .relaxed) == 0 else {
                throw CaptureError(.conversionFailed, "the benchmark's JPEG frames failed to decode")
            }
            return (frames, seconds, cpuSeconds() - cpu0)
        }
    }

    /// TurboJPEG alone, one core: to planar Y'CbCr (`tjDecompressToYUVPlanes`), or straight to
    /// BGRA (`tjDecompress2`); at 1/`scale` of the size (TurboJPEG's scaling factors) when `scale`
    /// is 2, 4 or 8.
    static func turboJPEG(_ jpegs: [[UInt8]], _ size: CaptureDevice.Dimensions, bgra: Bool, scale: Int = 1) throws
        -> Contender
    {
        guard let handle = tjInitDecompress() else { throw CaptureError(.systemError, "tjInitDecompress failed") }
        let (w, h) = ((size.pixelWidth + scale - 1) / scale, (size.pixelHeight + scale - 1) / scale)
        let planes = [w * h, ((w + 1) / 2) * h, ((w + 1) / 2) * h].map {
            UnsafeMutablePointer<UInt8>.allocate(capacity: $0)
        }
        let argb = UnsafeMutablePointer<UInt8>.allocate(capacity: w * h * 4)
        final class Keep: @unchecked Sendable {  // unchecked: used by one thread at a time.
            let handle: tjhandle
            let planes: [UnsafeMutablePointer<UInt8>]
            let argb: UnsafeMutablePointer<UInt8>
            init(_ handle: tjhandle, _ planes: [UnsafeMutablePointer<UInt8>], _ argb: UnsafeMutablePointer<UInt8>) {
                (self.handle, self.planes, self.argb) = (handle, planes, argb)
            }
            deinit {
                tjDestroy(handle)
                for plane in planes { plane.deallocate() }
                argb.deallocate()
            }
        }
        let keep = Keep(handle, planes, argb)
        let flags = TJFLAG_ACCURATEDCT
        let name = (bgra ? "turbojpeg → BGRA" : "turbojpeg → planes") + (scale > 1 ? " at 1/\(scale)" : "")
        return Contender(name: name, threads: 1) { frames in
            let cpu0 = cpuSeconds()
            let t0 = Measure.now()
            for index in 0..<frames {
                let jpeg = jpegs[index % jpegs.count]
                let status = jpeg.withUnsafeBufferPointer { bytes -> Int32 in
                    if bgra {
                        return tjDecompress2(
                            keep.handle, bytes.baseAddress, UInt(bytes.count), keep.argb, Int32(w), Int32(w * 4),
                            Int32(h), Int32(TJPF_BGRA.rawValue), flags)
                    }
                    var pointers: [UnsafeMutablePointer<UInt8>?] = keep.planes
                    var strides: [Int32] = [Int32(w), Int32((w + 1) / 2), Int32((w + 1) / 2)]
                    return tjDecompressToYUVPlanes(
                        keep.handle, bytes.baseAddress, UInt(bytes.count), &pointers, Int32(w), &strides, Int32(h),
                        flags)
                }
                if status != 0 { throw CaptureError(.conversionFailed, "TurboJPEG failed on a benchmark frame") }
            }
            return (frames, Measure.now() - t0, cpuSeconds() - cpu0)
        }
    }
}

extension MJPEGBenchmarks {
    /// libv4lconvert's emulation, one core (libv4l2 converts on the thread that dequeues): each
    /// frame through `v4lconvert_convert` from MJPEG to YU12 (the NV12 rows: libv4lconvert emulates
    /// no NV12, so a user wanting NV12 still has to repack the chroma) or to BGR24 (the BGRA rows:
    /// the closest it emulates, with no alpha byte). libv4lconvert runs on a fake camera (see
    /// CV4LConvert), so no device or plug-in is needed. A contender that cannot decode the frames
    /// (libv4lconvert 1.22 refuses YU12 from a 4:2:0 JPEG whose height is not a multiple of 16) is
    /// reported as not run, with libv4lconvert's message.
    static func libv4lconvert(_ jpegs: [[UInt8]], _ size: CaptureDevice.Dimensions, bgra: Bool) -> Contender {
        let fourcc = bgra ? vf_v4lconvert_bgr24 : vf_v4lconvert_yu12
        let name = bgra ? "libv4lconvert → BGR24" : "libv4lconvert → YU12"
        final class Converter: @unchecked Sendable {  // unchecked: used by one thread at a time.
            let handle: OpaquePointer
            let output: UnsafeMutablePointer<UInt8>
            let capacity: Int
            init?(_ size: CaptureDevice.Dimensions, _ fourcc: UInt32) {
                guard let handle = vf_v4lconvert_create(UInt32(size.width), UInt32(size.height)) else { return nil }
                let capacity = Int(vf_v4lconvert_frame_size(handle, fourcc))
                guard capacity > 0 else {
                    vf_v4lconvert_destroy(handle)
                    return nil
                }
                (self.handle, self.capacity) = (handle, capacity)
                output = .allocate(capacity: capacity)
            }
            deinit {
                vf_v4lconvert_destroy(handle)
                output.deallocate()
            }
            /// Decodes one frame: nil, or libv4lconvert's message.
            func decode(_ jpeg: [UInt8], _ fourcc: UInt32) -> String? {
                let written = jpeg.withUnsafeBufferPointer {
                    vf_v4lconvert_mjpeg(handle, $0.baseAddress, Int32($0.count), fourcc, output, Int32(capacity))
                }
                guard written < 0 else { return nil }
                let message = vf_v4lconvert_error(handle).map { String(cString: $0) } ?? ""
                return message.trimmingCharacters(in: .whitespacesAndNewlines)
            }
        }
        let note = bgra ? "libv4lconvert emulates no 32-bit RGB: BGR24" : "libv4lconvert emulates no NV12: YU12"
        guard let converter = Converter(size, fourcc) else {
            return Contender(name: name, threads: 1, note: "not run: libv4lconvert could not be created") { _ in nil }
        }
        // libv4lconvert 1.22 refuses some sizes and subsamplings: a probe frame says whether it runs,
        // and must decode to TurboJPEG's picture (a fast contender producing garbage would be no
        // contender).
        if let message = converter.decode(jpegs[0], fourcc) {
            return Contender(name: name, threads: 1, note: "not run: libv4lconvert refused the frames (\(message))") {
                _ in nil
            }
        }
        if let mismatch = difference(converter.output, jpegs[0], size, bgra: bgra) {
            return Contender(name: name, threads: 1, note: "not run: \(mismatch)") { _ in nil }
        }
        return Contender(name: name, threads: 1, note: note) { frames in
            let cpu0 = cpuSeconds()
            let t0 = Measure.now()
            for index in 0..<frames {
                if let message = converter.decode(jpegs[index % jpegs.count], fourcc) {
                    throw CaptureError(.conversionFailed, "libv4lconvert failed on a benchmark frame: \(message)")
                }
            }
            return (frames, Measure.now() - t0, cpuSeconds() - cpu0)
        }
    }
}

extension MJPEGBenchmarks {
    /// Whether libv4lconvert's output of `jpeg` (YU12, or BGR24 when `bgra`) matches TurboJPEG's
    /// decoding of it within ±3: nil, or what differs. libv4lconvert makes YU12 from a 4:2:2 JPEG
    /// by keeping every second chroma row (the odd ones), so its chroma is compared with those.
    static func difference(
        _ output: UnsafePointer<UInt8>, _ jpeg: [UInt8], _ size: CaptureDevice.Dimensions, bgra: Bool
    )
        -> String?
    {
        guard let handle = tjInitDecompress() else { return "tjInitDecompress failed" }
        defer { tjDestroy(handle) }
        let (w, h) = (size.pixelWidth, size.pixelHeight)
        var reference = [UInt8](repeating: 0, count: bgra ? w * h * 3 : w * h * 2)
        let status = jpeg.withUnsafeBufferPointer { bytes in
            reference.withUnsafeMutableBufferPointer { out -> Int32 in
                if bgra {
                    return tjDecompress2(
                        handle, bytes.baseAddress, UInt(bytes.count), out.baseAddress, Int32(w), Int32(w * 3), Int32(h),
                        Int32(TJPF_BGR.rawValue), TJFLAG_ACCURATEDCT)
                }
                let base = out.baseAddress!
                var planes: [UnsafeMutablePointer<UInt8>?] = [base, base + w * h, base + w * h + w / 2 * h]
                var strides: [Int32] = [Int32(w), Int32(w / 2), Int32(w / 2)]
                return tjDecompressToYUVPlanes(
                    handle, bytes.baseAddress, UInt(bytes.count), &planes, Int32(w), &strides, Int32(h),
                    TJFLAG_ACCURATEDCT)
            }
        }
        guard status == 0 else { return "TurboJPEG could not decode the reference frame" }
        var worst = 0
        func compare(_ a: UInt8, _ b: UInt8) { worst = max(worst, abs(Int(a) - Int(b))) }
        if bgra {
            for index in 0..<(w * h * 3) { compare(output[index], reference[index]) }
        } else {
            for index in 0..<(w * h) { compare(output[index], reference[index]) }
            for plane in 0..<2 {
                let source = w * h + plane * (w / 2) * h
                let destination = w * h + plane * (w / 2) * (h / 2)
                for y in 0..<(h / 2) {
                    for x in 0..<(w / 2) {
                        compare(output[destination + y * (w / 2) + x], reference[source + (2 * y + 1) * (w / 2) + x])
                    }
                }
            }
        }
        return worst <= 3 ? nil : "libv4lconvert's picture differs from TurboJPEG's by up to \(worst)"
    }
}

/// The benchmark's JPEG frames as one raw MJPEG stream file, for ffmpeg's MJPEG decoder.
final class FFmpegMJPEG {
    let ffmpeg: String
    let file: URL
    let ring: Int

    init?(ffmpeg: String, frames: [[UInt8]]) {
        self.ffmpeg = ffmpeg
        ring = frames.count
        file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "viewfinder-bench-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).mjpeg")
        guard (try? Data(frames.joined()).write(to: file)) != nil else { return nil }
    }

    deinit { try? FileManager.default.removeItem(at: file) }

    /// Decodes about `frames` frames (whole loops of the ring) to `pixelFormat` with `threads`
    /// threads; real time and CPU time (user + system) from ffmpeg's `-benchmark`.
    func run(pixelFormat: String, threads: Int, frames: Int) -> (frames: Int, seconds: Double, cpu: Double)? {
        let loops = max(0, (frames + ring - 1) / ring - 1)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ffmpeg)
        process.arguments = [
            "-hide_banner", "-nostdin", "-nostats", "-benchmark", "-threads", "\(threads)", "-stream_loop", "\(loops)",
            "-f", "mjpeg", "-i", file.path, "-pix_fmt", pixelFormat, "-f", "null", "-",
        ]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let output = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        func figure(_ key: String) -> Double? {
            guard let range = output.range(of: key + #"=([0-9.]+)s"#, options: .regularExpression) else { return nil }
            return Double(output[range].dropFirst(key.count + 1).dropLast())
        }
        guard process.terminationStatus == 0, let real = figure("rtime"), real > 0, let user = figure("utime"),
            let system = figure("stime")
        else { return nil }
        return (ring * (loops + 1), real, user + system)
    }
}
