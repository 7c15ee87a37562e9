import Foundation

/// One row of the report (and one object of the JSON array). Optional figures are left out of
/// the JSON when they do not apply.
struct BenchmarkResult: Encodable {
    var name: String
    var group: String
    var width: Int
    var height: Int
    var destinationWidth: Int?
    var destinationHeight: Int?
    var threads: Int?
    var engine: String?
    /// The pixel format processed (processor benchmarks).
    var pixelFormat: String?
    var fpsMin: Double
    var fpsMedian: Double
    /// Bytes read and written per frame, over median time.
    var gbPerS: Double
    /// Frames per second of a memcpy moving the same bytes (reads + writes) per frame.
    var floor: Double
    var ratioToFloor: Double
    var libyuvFps: Double?
    var libyuvPath: String?
    var ratioToLibyuv: Double?
    var swscaleFps: Double?
    var ratioToSwscale: Double?
    var peer: String?
    var peerFps: Double?
    var ratioToPeer: Double?
    /// The peer's filter alone: its run's time minus the time of `-vf null` on the same frames
    /// (reading raw frames and the null muxer), when that difference is measurable.
    var peerFilterOnlyFps: Double?
    var ratioToPeerFilterOnly: Double?
    var usPerFrame: Double?
    var allocationsPerFrame: Double?
    var latencyP50Us: Double?
    var latencyP99Us: Double?
    /// CPU time (all threads) per recorded frame, in milliseconds (recording and MJPEG benchmarks).
    var cpuMsPerFrame: Double?
    /// The peer's CPU time per frame, in milliseconds (recording benchmarks).
    var peerCpuMsPerFrame: Double?
    var note: String?
}

/// How hard to measure.
struct MeasureSettings: Sendable {
    /// Timed runs per figure (min and median are over these).
    var repeats: Int
    /// Roughly how long each timed run lasts.
    var runSeconds: Double
    /// Frame sizes to measure.
    var sizes: [(Int, Int)]
    /// Frame sizes for the processor benchmarks (fewer in quick mode).
    var processorSizes: [(Int, Int)]
    /// Roughly how long each ffmpeg peer run of a processor lasts.
    var peerSeconds: Double
    /// Whether to run ffmpeg as a peer (when it is installed).
    var ffmpeg: String?
    /// Whether to run the recording benchmarks (off in quick mode unless filtered for).
    var includesRecording = true
}

/// A benchmark: a name to filter on and a body producing one or more rows.
///
/// The registry is a plain list: add a case to ``BenchmarkRegistry/all(settings:)`` (or a new
/// group function there) and it is filtered, run, printed and written like the others.
struct BenchmarkCase {
    var name: String
    var group: String
    var run: (MeasureSettings) throws -> [BenchmarkResult]
}

enum BenchmarkRegistry {
    static func all(settings: MeasureSettings) -> [BenchmarkCase] {
        ConversionBenchmarks.cases(settings: settings) + PipelineBenchmarks.cases(settings: settings)
            + ProcessorBenchmarks.cases(settings: settings)
            + (settings.includesRecording ? RecordingBenchmarks.cases(settings: settings) : [])
            + PhotoBenchmarks.cases(settings: settings) + MJPEGBenchmarks.cases(settings: settings)
    }
}

// Processor benchmarks: see ProcessorBenchmarks.swift.
