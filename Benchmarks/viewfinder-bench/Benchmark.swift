import Foundation

/// One row of the report (and one object of the JSON array). Optional figures are left out of
/// the JSON when they do not apply.
struct BenchmarkResult: Codable {
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
    /// Conversions: the median over repeats of the row's fps over the floor's in the same repeat
    /// (``Measure/pairedRatio(_:_:)``); `ratioToLibyuv`, `ratioToSwscale` and `ratioToLibyuvCPU`
    /// likewise. Elsewhere the ratio of the medians.
    var ratioToFloor: Double
    var libyuvFps: Double?
    var libyuvPath: String?
    var ratioToLibyuv: Double?
    /// The smallest and largest per-repeat ratio behind `ratioToLibyuv`.
    var ratioToLibyuvMin: Double?
    var ratioToLibyuvMax: Double?
    /// The A/A control of same-size conversions: libyuv's very call run a second time as a
    /// contender of its own, over the first (paired median, smallest and largest per repeat). It
    /// shows what the method can tell apart: two runs of one function differ by this much.
    var libyuvAA: Double?
    var libyuvAAMin: Double?
    var libyuvAAMax: Double?
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
    var latencyP95Us: Double?
    var latencyP99Us: Double?
    /// CPU time (all threads) per recorded frame, in milliseconds (recording and MJPEG benchmarks).
    var cpuMsPerFrame: Double?
    /// CPU per frame over the floor's, paired within each repeat: the median over the repeats,
    /// and the smallest and largest (MJPEG benchmarks).
    var cpuRatioToFloor: Double?
    var cpuRatioToFloorMin: Double?
    var cpuRatioToFloorMax: Double?
    /// The peer's CPU time per frame, in milliseconds (recording benchmarks).
    var peerCpuMsPerFrame: Double?
    /// Cache regime of a conversion ("cold 256 MiB", "hot 12 MiB": the ring's span).
    var regime: String?
    /// CPU time of all the process's threads over wall time, during the timed runs.
    var cpuPerWall: Double?
    /// Frames per CPU-second (median over runs), and the same for the libyuv baseline and the
    /// ratio: the steadier comparison on a shared machine for one band (libyuv runs on one core).
    var fpsPerCPUSecond: Double?
    var libyuvFpsPerCPUSecond: Double?
    var ratioToLibyuvCPU: Double?
    /// CPU microseconds (user + system, all threads) per frame.
    var cpuUsPerFrame: Double?
    /// Paced runs: the camera's rate.
    var pacedFps: Double?
    /// Paced runs: the parked-queue wake-up measured in the same run at the same rate (a serial
    /// DispatchQueue with nothing to do, woken by a dispatch source signalled from another thread;
    /// time from the signal to the handler running).
    var wakeUpP50Us: Double?
    var wakeUpP99Us: Double?
    /// Frames dropped and drop reports delivered during the measured frames.
    var dropped: Int?
    var dropReports: Int?
    /// Frames the allocation figure is over.
    var frames: Int?
    /// Cameras read at once (capacity benchmarks).
    var cameras: Int?
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
    /// The cache regimes conversions run in.
    var regimes: [CacheRegime] = [.cold(multiple: 6), .hot]
    /// Paced latency runs: the rates and how long each lasts (at least `latencyMinimumFrames`).
    var latencyRates: [Int] = [30, 60, 1000]
    var latencySeconds: Double = 5
    var latencyMinimumFrames = 100
    /// Sizes of the pipeline rows.
    var pipelineSizes: [(Int, Int)]? = nil
    /// `--quick`: figures are for a smoke test, not for the results page.
    var quick = false
    /// Sizes of the groups with sizes of their own (mjpeg/, recording/); `nil`: each group's.
    var groupSizes: [(Int, Int)]? = nil
    /// The shortest timed run a group with a floor of its own (mjpeg/, recording/) makes.
    var minimumRunSeconds: Double? = nil
    /// `--allocations-only`: only what counts allocations, with no timing.
    var allocationsOnly = false
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

/// How to add a group (mjpeg/, photo/, recording/, …): write an enum with
/// `cases(settings:) -> [BenchmarkCase]` whose cases carry a new `group` name, add it to
/// ``BenchmarkRegistry/groups``, and optionally a ``ReportTable`` for it in ``ReportTable/all``
/// (a group without one is printed in the generic table). Allocation limits apply to every row
/// that sets `allocationsPerFrame` (see `Benchmarks/allocation-limits.json`); in
/// `--allocations-only` mode a group gets `settings.allocationsOnly == true` and should register
/// only its allocation-counting cases, with short runs.
enum BenchmarkRegistry {
    static let groups: [@Sendable (MeasureSettings) -> [BenchmarkCase]] = [
        ConversionBenchmarks.cases(settings:),
        PipelineBenchmarks.cases(settings:),
        MJPEGPipelineBenchmarks.cases(settings:),
        ProcessorBenchmarks.cases(settings:),
        { settings in settings.includesRecording ? RecordingBenchmarks.cases(settings: settings) : [] },
        PhotoBenchmarks.cases(settings:),
        MJPEGBenchmarks.cases(settings:),
        LatencyBenchmarks.cases(settings:),
        PipeWireBenchmarks.cases(settings:),
        CapacityBenchmarks.cases(settings:),
        MetadataBenchmarks.cases(settings:),
    ]

    static func all(settings: MeasureSettings) -> [BenchmarkCase] {
        groups.flatMap { $0(settings) }
    }
}

// Processor benchmarks: see ProcessorBenchmarks.swift.
