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
@testable import ViewfinderTestSupport
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

@Suite("JPEG codec: round trips through TurboJPEG")
struct JPEGCodecTests {
    static let decodedFormats: [PixelFormat] = [.nv12FullRange, .nv12VideoRange, .i420, .bgra]
    static let sourceFormats: [PixelFormat] = [.bgra, .nv12VideoRange, .nv12FullRange, .i420]
    static let samplings: [JPEGChromaSubsampling] = [.yuv422, .yuv420]

    @Test(arguments: sourceFormats, samplings)
    func patternSurvivesEncodeAndDecode(source: PixelFormat, subsampling: JPEGChromaSubsampling) throws {
        let sequence: UInt64 = 0x5A3C_96E1
        let (width, height) = (640, 480)
        let jpeg = try JPEGTestSupport.jpeg(sequence, source: source, subsampling: subsampling)
        let uvc = try JPEGTestSupport.strippingHuffmanTables(jpeg)
        #expect(!JPEGFrame.hasHuffmanTables(uvc))
        #expect(JPEGFrame.hasHuffmanTables(jpeg))
        let mask = try JPEGTestSupport.flatMask(sequence: sequence, width: width, height: height)
        for format in Self.decodedFormats {
            let decoder = try JPEGDecoder(width: width, height: height, pixelFormat: format)
            let original = try JPEGTestSupport.pattern(sequence, format, width, height)
            for frame in [jpeg, uvc] {
                let header = try frame.withUnsafeBytes { try decoder.readHeader($0) }
                #expect(header.subsampling == subsampling)
                #expect(header.hasHuffmanTables == (frame == jpeg))
                let decoded = try JPEGTestSupport.buffer(format, width, height)
                try decoder.decode(frame, into: decoded)
                #expect(TestPattern.readSequenceNumber(from: decoded) == sequence, "\(source) → \(format)")
                let (worst, compared) = JPEGTestSupport.maximumDifference(decoded, original, mask: mask)
                #expect(compared > width * height / 4, "too few flat samples compared")
                #expect(worst <= 3, "\(source) \(subsampling) → \(format): off by \(worst)")
            }
        }
    }

    @Test("BGRA through planes and libyuv agrees with tjDecompress2")
    func bgraRoutesAgree() throws {
        let sequence: UInt64 = 77
        let mask = try JPEGTestSupport.flatMask(sequence: sequence, width: 640, height: 480)
        for subsampling in [JPEGChromaSubsampling.yuv422, .yuv420, .yuv444, .gray] {
            let jpeg = try JPEGTestSupport.jpeg(sequence, subsampling: subsampling)
            let direct = try JPEGDecoder(width: 640, height: 480, pixelFormat: .bgra)
            direct.decodesBGRAThroughPlanes = false
            let planar = try JPEGDecoder(width: 640, height: 480, pixelFormat: .bgra)
            #expect(planar.decodesBGRAThroughPlanes)
            let a = try JPEGTestSupport.buffer(.bgra, 640, 480)
            let b = try JPEGTestSupport.buffer(.bgra, 640, 480)
            try direct.decode(jpeg, into: a)
            try planar.decode(jpeg, into: b)
            let (worst, _) = JPEGTestSupport.maximumDifference(a, b, mask: mask)
            #expect(worst <= 2, "\(subsampling): routes differ by \(worst)")
            #expect(TestPattern.readSequenceNumber(from: b) == sequence)
        }
    }

    @Test(
        "sizes that are no multiple of the MCU decode without overrunning",
        arguments: [(334, 242), (333, 241), (1920, 1080)])
    func awkwardSizes(size: (Int, Int)) throws {
        let (width, height) = size
        for subsampling in Self.samplings {
            for source in Self.sourceFormats {
                let jpeg = try JPEGTestSupport.jpeg(
                    9, source: source, width: width, height: height, subsampling: subsampling)
                for format in Self.decodedFormats {
                    let decoder = try JPEGDecoder(width: width, height: height, pixelFormat: format)
                    let decoded = try JPEGTestSupport.buffer(format, width, height)
                    try decoder.decode(try JPEGTestSupport.strippingHuffmanTables(jpeg), into: decoded)
                    #expect(
                        TestPattern.readSequenceNumber(from: decoded) == 9, "\(width)x\(height) \(source) → \(format)")
                }
            }
        }
    }

    @Test func greyscaleAnd444FramesDecodeToEveryFormat() throws {
        for subsampling in [JPEGChromaSubsampling.gray, .yuv444] {
            let jpeg = try JPEGTestSupport.jpeg(1234, subsampling: subsampling)
            for format in Self.decodedFormats {
                let decoder = try JPEGDecoder(width: 640, height: 480, pixelFormat: format)
                let decoded = try JPEGTestSupport.buffer(format, 640, 480)
                try decoder.decode(jpeg, into: decoded)
                #expect(TestPattern.readSequenceNumber(from: decoded) == 1234, "\(subsampling) → \(format)")
            }
        }
    }

    @Test func decodesMotionJPEGBuffersAndIntoPools() throws {
        let jpeg = try JPEGTestSupport.jpeg(42)
        let layout = PlaneLayout(pixelFormat: .mjpeg, width: 640, height: 480)
        let memory = UnsafeMutableRawPointer.allocate(byteCount: layout.totalBytes, alignment: 64)
        defer { memory.deallocate() }
        memory.copyMemory(from: jpeg, byteCount: jpeg.count)
        let frame = PixelBuffer(memory: memory, layout: layout, dataSize: jpeg.count, owner: nil, slot: 0)
        let decoder = try JPEGDecoder(width: 640, height: 480, pixelFormat: .nv12FullRange)
        let decoded = try JPEGTestSupport.buffer(.nv12FullRange, 640, 480)
        try decoder.decode(frame, into: decoded)
        #expect(TestPattern.readSequenceNumber(from: decoded) == 42)

        let pool = try PixelBufferPool(pixelFormat: .nv12FullRange, width: 640, height: 480, capacity: 1)
        let first = try jpeg.withUnsafeBytes { try decoder.decode($0, from: pool) }
        #expect(TestPattern.readSequenceNumber(from: first) == 42)
        #expect(throws: CaptureError.self) { try jpeg.withUnsafeBytes { _ = try decoder.decode($0, from: pool) } }
        do {
            _ = try jpeg.withUnsafeBytes { try decoder.decode($0, from: pool) }
        } catch let error as CaptureError {
            #expect(error.code == .outOfBuffers)
        }
    }

    @Test func twoDecodersRunOnTwoThreadsAtOnce() throws {
        let frames = try (0..<8).map { try JPEGTestSupport.jpeg(UInt64(100 + $0), width: 1280, height: 720) }
        let decoders = try (0..<2).map { _ in try JPEGDecoder(width: 1280, height: 720, pixelFormat: .nv12FullRange) }
        let wrong = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 2) { lane in
            for (index, frame) in frames.enumerated() where index % 2 == lane {
                let decoded = try? JPEGTestSupport.buffer(.nv12FullRange, 1280, 720)
                let ok = decoded.map { buffer in
                    (try? decoders[lane].decode(frame, into: buffer)) != nil
                        && TestPattern.readSequenceNumber(from: buffer) == UInt64(100 + index)
                }
                if ok != true { wrong.withLock { $0 += 1 } }
            }
        }
        #expect(wrong.withLock { $0 } == 0)
    }

    @Test func rejectsUnsupportedSetups() throws {
        #expect(throws: CaptureError.self) { try JPEGDecoder(width: 640, height: 480, pixelFormat: .yuyv) }
        #expect(throws: CaptureError.self) { try JPEGDecoder(width: 0, height: 480, pixelFormat: .bgra) }
        let decoder = try JPEGDecoder(width: 640, height: 480, pixelFormat: .bgra)
        let jpeg = try JPEGTestSupport.jpeg(1)
        let wrongFormat = try JPEGTestSupport.buffer(.nv12FullRange, 640, 480)
        #expect(throws: CaptureError.self) { try decoder.decode(jpeg, into: wrongFormat) }
        #expect(throws: CaptureError.self) { try JPEGEncoder(chromaSubsampling: .yuv411) }
        let encoder = try JPEGEncoder()
        #expect(throws: CaptureError.self) { try encoder.encode(try JPEGTestSupport.pattern(1, .yuyv, 64, 64)) }
    }
}

@Suite("JPEG codec: encoder")
struct JPEGEncoderTests {
    @Test func qualityMapsToTurboJPEGScale() {
        #expect(JPEGEncoder.turboJPEGQuality(0) == 1)
        #expect(JPEGEncoder.turboJPEGQuality(1) == 100)
        #expect(JPEGEncoder.turboJPEGQuality(0.85) == 85)
        #expect(JPEGEncoder.turboJPEGQuality(-3) == 1)
        #expect(JPEGEncoder.turboJPEGQuality(7) == 100)
        #expect(JPEGEncoder.turboJPEGQuality(.nan) == 1)
    }

    @Test(arguments: [PixelFormat.bgra, .nv12FullRange, .nv12VideoRange, .i420])
    func higherQualityMakesLargerFiles(format: PixelFormat) throws {
        let scene = try JPEGTestSupport.scene(width: 640, height: 480)
        let frame = try JPEGTestSupport.buffer(format, 640, 480)
        try PixelConverter(
            from: .bgra, size: .init(width: 640, height: 480), to: format, size: .init(width: 640, height: 480)
        ).convert(scene, into: frame)
        let encoder = try JPEGEncoder()
        var sizes: [Int] = []
        for quality in [0.2, 0.5, 0.8, 0.95] {
            encoder.quality = quality
            sizes.append(try encoder.encode(frame).count)
        }
        #expect(sizes == sizes.sorted() && Set(sizes).count == sizes.count, "sizes \(sizes)")
    }

    @Test func encoderReusesItsBuffersAcrossSizes() throws {
        let encoder = try JPEGEncoder(quality: 0.9)
        for (width, height) in [(640, 480), (1280, 720), (320, 240), (1280, 720)] {
            let jpeg = try encoder.encode(try JPEGTestSupport.pattern(5, .nv12FullRange, width, height))
            let decoder = try JPEGDecoder(width: width, height: height, pixelFormat: .i420)
            let decoded = try JPEGTestSupport.buffer(.i420, width, height)
            try decoder.decode(jpeg, into: decoded)
            #expect(TestPattern.readSequenceNumber(from: decoded) == 5)
        }
    }
}

@Suite("JPEG codec: standard Huffman tables")
struct JPEGHuffmanTableTests {
    @Test func standardTablesAreTheOnesLibjpegWrites() throws {
        // TurboJPEG writes the Annex K tables unless asked to optimise them.
        let jpeg = try JPEGTestSupport.jpeg(3)
        let layout = try #require(jpeg.withUnsafeBytes { JPEGFrame.layout($0) })
        var written: [JPEGFrame.HuffmanTable] = []
        for segment in layout.segments where segment.marker == 0xC4 {
            let payload = jpeg[segment.payloadOffset..<(segment.payloadOffset + segment.payloadCount)]
            written += try #require(JPEGFrame.huffmanTables(inPayload: payload))
        }
        func key(_ t: JPEGFrame.HuffmanTable) -> Int { Int(t.tableClass) * 16 + Int(t.identifier) }
        #expect(written.sorted { key($0) < key($1) } == JPEGFrame.standardHuffmanTables.sorted { key($0) < key($1) })
    }

    @Test func standardTablesAreCompletePrefixCodes() {
        let acSymbols = Set([0x00, 0xF0] + (0..<16).flatMap { run in (1...10).map { run << 4 | $0 } })
        for table in JPEGFrame.standardHuffmanTables {
            #expect(table.codeCounts.count == 16)
            #expect(table.codeCounts.reduce(0) { $0 + Int($1) } == table.symbols.count)
            #expect(Set(table.symbols).count == table.symbols.count)
            let expected = table.tableClass == 0 ? Set(0...11) : acSymbols
            #expect(Set(table.symbols.map(Int.init)) == expected)
            // Kraft: a prefix code that leaves the all-ones code unused.
            let kraft = table.codeCounts.enumerated().reduce(0.0) {
                $0 + Double($1.element) / Double(1 << ($1.offset + 1))
            }
            #expect(kraft < 1)
        }
        let segment = JPEGFrame.standardHuffmanTableSegment
        #expect(Array(segment.prefix(2)) == [0xFF, 0xC4])
        #expect(Int(segment[2]) << 8 | Int(segment[3]) == segment.count - 2)
    }

    @Test func insertsTablesOnlyWhereMissing() throws {
        let jpeg = try JPEGTestSupport.jpeg(11, subsampling: .yuv420)
        #expect(JPEGFrame.withStandardHuffmanTables(jpeg) == jpeg)
        let uvc = try JPEGTestSupport.strippingHuffmanTables(jpeg)
        let fixed = JPEGFrame.withStandardHuffmanTables(uvc)
        #expect(JPEGFrame.hasHuffmanTables(fixed))
        #expect(fixed.count == uvc.count + JPEGFrame.standardHuffmanTableSegment.count)
        #expect(JPEGFrame.withStandardHuffmanTables(fixed) == fixed)
        #expect(JPEGFrame.withStandardHuffmanTables(Data(uvc)) == Data(fixed))
        #expect(JPEGFrame.withStandardHuffmanTables([1, 2, 3]) == [1, 2, 3])
        #expect(JPEGFrame.withStandardHuffmanTables([]) == [])
        // The repaired frame decodes to exactly the pixels of the original.
        let decoder = try JPEGDecoder(width: 640, height: 480, pixelFormat: .i420)
        let a = try JPEGTestSupport.buffer(.i420, 640, 480)
        let b = try JPEGTestSupport.buffer(.i420, 640, 480)
        try decoder.decode(jpeg, into: a)
        try decoder.decode(fixed, into: b)
        for plane in 0..<3 { #expect(Array(a.bytes(ofPlane: plane)) == Array(b.bytes(ofPlane: plane))) }
    }
}

@Suite("JPEG codec: bad frames")
struct JPEGBadFrameTests {
    static func expectDropped(
        _ frame: [UInt8], _ decoder: JPEGDecoder, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let destination = try JPEGTestSupport.buffer(decoder.pixelFormat, decoder.width, decoder.height)
        do {
            try decoder.decode(frame, into: destination)
            Issue.record("\(what): decoded without an error", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == .conversionFailed, "\(what): \(error)", sourceLocation: sourceLocation)
        }
    }

    static func decoders() throws -> [JPEGDecoder] {
        try JPEGCodecTests.decodedFormats.map { try JPEGDecoder(width: 640, height: 480, pixelFormat: $0) }
    }

    @Test func emptyFramesThrow() throws {
        for decoder in try Self.decoders() {
            try Self.expectDropped([], decoder, "zero-length")
            #expect(throws: CaptureError.self) { try decoder.readHeader(UnsafeRawBufferPointer(start: nil, count: 0)) }
        }
    }

    @Test func truncatedFramesThrow() throws {
        let jpeg = try JPEGTestSupport.strippingHuffmanTables(try JPEGTestSupport.jpeg(8))
        for decoder in try Self.decoders() {
            for fraction in [0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99] {
                let cut = Array(jpeg.prefix(Int(Double(jpeg.count) * fraction)))
                try Self.expectDropped(cut, decoder, "cut at \(cut.count)")
                // Cut short but closed with EOI, as a camera that loses USB packets sends it.
                try Self.expectDropped(cut + [0xFF, 0xD9], decoder, "cut at \(cut.count) + EOI")
            }
            try Self.expectDropped(Array(jpeg.dropLast(2)), decoder, "EOI missing")
        }
    }

    @Test func corruptEntropyDataThrows() throws {
        let jpeg = try JPEGTestSupport.jpeg(21, subsampling: .yuv420)
        let scan = try #require(jpeg.withUnsafeBytes { JPEGFrame.layout($0) }).scanOffset + 20
        let decoder = try JPEGDecoder(width: 640, height: 480, pixelFormat: .nv12FullRange)
        var random = SplitMix64(seed: 99)
        for attempt in 0..<8 {
            var frame = jpeg
            let start = scan + Int(random.next() % UInt64(jpeg.count - scan - 100))
            for index in start..<(start + 32) { frame[index] = UInt8(truncatingIfNeeded: random.next()) }
            try Self.expectDropped(frame, decoder, "random bytes at \(start) (attempt \(attempt))")
        }
    }

    @Test func badMarkersThrow() throws {
        let jpeg = try JPEGTestSupport.jpeg(5)
        let layout = try #require(jpeg.withUnsafeBytes { JPEGFrame.layout($0) })
        let sof = try #require(layout.segments.first { $0.marker == 0xC0 })
        let decoder = try JPEGDecoder(width: 640, height: 480, pixelFormat: .nv12FullRange)
        var noSOI = jpeg
        noSOI[1] = 0x00
        try Self.expectDropped(noSOI, decoder, "no SOI")
        var lossless = jpeg
        lossless[sof.offset + 1] = 0xC3
        try Self.expectDropped(lossless, decoder, "lossless SOF")
        var longSegment = jpeg
        longSegment[sof.offset + 2] = 0xFF
        try Self.expectDropped(longSegment, decoder, "segment longer than the frame")
        var taller = jpeg
        taller[sof.offset + 5] = 0x02  // height 480 → 736
        try Self.expectDropped(taller, decoder, "wrong height")
        var noScan = Array(jpeg.prefix(layout.scanOffset)) + [0xFF, 0xD9]
        try Self.expectDropped(noScan, decoder, "no scan")
        noScan = Array(jpeg.prefix(layout.scanOffset + 2)) + [0x00, 0x01, 0xFF, 0xD9]
        try Self.expectDropped(noScan, decoder, "bad SOS length")
        var badTables = jpeg
        let dht = try #require(layout.segments.first { $0.marker == 0xC4 })
        badTables[dht.payloadOffset + 1] = 0xFF
        try Self.expectDropped(badTables, decoder, "bad DHT counts")
        let smaller = try JPEGDecoder(width: 320, height: 240, pixelFormat: .bgra)
        try Self.expectDropped(jpeg, smaller, "frame larger than the format")
    }

    @Test("a seeded fuzz loop of mutated frames never crashes")
    func fuzzedFramesNeverCrash() throws {
        let (width, height) = (160, 120)
        var seeds: [[UInt8]] = []
        for subsampling in JPEGCodecTests.samplings {
            let jpeg = try JPEGTestSupport.jpeg(3, width: width, height: height, subsampling: subsampling, quality: 0.8)
            seeds += [jpeg, try JPEGTestSupport.strippingHuffmanTables(jpeg)]
        }
        let decoders = try JPEGCodecTests.decodedFormats.map {
            try JPEGDecoder(width: width, height: height, pixelFormat: $0)
        }
        let destinations = try JPEGCodecTests.decodedFormats.map { try JPEGTestSupport.buffer($0, width, height) }
        var random = SplitMix64(seed: 2026)
        let deadline = Date().addingTimeInterval(10)
        var (decoded, dropped, iterations) = (0, 0, 0)
        while iterations < 4000, Date() < deadline {
            var frame = seeds[Int(random.next() % UInt64(seeds.count))]
            for _ in 0..<(1 + random.next() % 4) {
                let position = Int(random.next() % UInt64(max(1, frame.count)))
                switch random.next() % 6 {
                case 0: frame[position] ^= UInt8(1 << (random.next() % 8))
                case 1: frame[position] = UInt8(truncatingIfNeeded: random.next())
                case 2: frame = Array(frame.prefix(position))
                case 3: frame.insert(contentsOf: [0xFF, UInt8(truncatingIfNeeded: random.next())], at: position)
                case 4: frame[position] = 0xFF
                default:
                    let length = min(frame.count - position, Int(random.next() % 64))
                    frame.insert(contentsOf: frame[position..<(position + length)], at: position)
                }
                if frame.isEmpty { break }
            }
            let lane = Int(random.next() % UInt64(decoders.count))
            do {
                try decoders[lane].decode(frame, into: destinations[lane])
                decoded += 1
            } catch {
                #expect(error.code == .conversionFailed)
                dropped += 1
            }
            iterations += 1
        }
        #expect(iterations >= 1000, "only \(iterations) mutated frames in 10 s")
        #expect(dropped > iterations / 2, "\(dropped) of \(iterations) mutated frames dropped")
        // The decoders still work after all that.
        for (decoder, destination) in zip(decoders, destinations) {
            try decoder.decode(seeds[0], into: destination)
            #expect(TestPattern.readSequenceNumber(from: destination) == 3)
        }
        _ = decoded
    }
}
