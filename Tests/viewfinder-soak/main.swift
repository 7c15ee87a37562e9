// Soak: runs the capture pipeline for N frames (or M minutes) in phases that take turns —
// a converting output with processors and a fast delegate, a slow delegate (late drops), a
// delegate holding buffers (out-of-buffers drops), native zero-copy delivery — over an unpaced
// virtual camera. After each phase it checks that every frame the camera produced is accounted
// for (delivered + dropped + rate-gated == captured == produced, and the delegate saw exactly
// the delivered frames and the reported drops), and samples the resident set size. Fails when RSS
// grows more than the allowance after the warm-up (the first two rounds of phases) or a frame is
// unaccounted.
//
//   viewfinder-soak [--frames N | --minutes M] [--phase-frames K] [--allowance-mb 2] [--warmup-rounds 2] [--phases converting,slow,holding,native]
//                   [--verbose 1]
//
// Frames are counted in whole phases, so a run may go up to one phase past N.
import Dispatch
import Foundation
import Synchronization
import Viewfinder

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("viewfinder-soak: FAIL: \(message)\n".utf8))
    exit(1)
}

let options: [String: String] = {
    var options: [String: String] = [:]
    var arguments = Array(CommandLine.arguments.dropFirst())
    while arguments.count >= 2, arguments[0].hasPrefix("--") {
        options[String(arguments[0].dropFirst(2))] = arguments[1]
        arguments.removeFirst(2)
    }
    return options
}()
let frameTarget = Int(options["frames"] ?? "") ?? (options["minutes"] == nil ? 1_000_000 : Int.max)
let timeLimit = Double(options["minutes"] ?? "").map { $0 * 60 } ?? .infinity
let phaseFrames = Int(options["phase-frames"] ?? "50000") ?? 50_000
let verbose = options["verbose"] != nil
/// Rounds (one phase of each kind) before RSS is taken as the baseline: allocator arenas, queues
/// and caches reach their working size in the first rounds.
let warmupRounds = max(1, Int(options["warmup-rounds"] ?? "2") ?? 2)
/// `--phases converting,native`: only these phases (default: all, in turn).
let behaviours =
    options["phases"].map { $0.split(separator: ",").compactMap { Behaviour(rawValue: String($0)) } }
    ?? Behaviour.allCases
let allowance = (Double(options["allowance-mb"] ?? "2") ?? 2) * 1_048_576

/// The resident set size now, from /proc/self/statm.
func residentBytes() -> Double {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Double(fields[1]) else { return 0 }
    return pages * Double(sysconf(Int32(_SC_PAGESIZE)))
}

/// What a phase's delegate does with each frame.
enum Behaviour: String, CaseIterable {
    case converting, slow, holding, native
}

/// Counts what it is given; slow or holding as its phase says.
final class SoakDelegate: CaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
    // unchecked: callbacks run one at a time on the output's queue; counters are atomics.
    let behaviour: Behaviour
    let delivered = Atomic<Int>(0)
    let droppedReported = Atomic<Int>(0)
    let outOfOrder = Atomic<Int>(0)
    private var held: [SampleBuffer] = []
    private var last = MediaTime.negativeInfinity

    init(_ behaviour: Behaviour) { self.behaviour = behaviour }

    func captureOutput(
        _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {
        delivered.add(1, ordering: .relaxed)
        let time = sampleBuffer.presentationTimeStamp
        if !(time > last) { outOfOrder.add(1, ordering: .relaxed) }
        last = time
        switch behaviour {
        case .slow:
            let until = DispatchTime.now().uptimeNanoseconds + 200_000
            while DispatchTime.now().uptimeNanoseconds < until {}
        case .holding:
            held.append(sampleBuffer)
            if held.count > 5 { held.removeFirst(held.count - 5) }
        case .converting, .native:
            break
        }
    }

    func captureOutput(_ output: CaptureOutput, didDrop sampleBuffer: SampleBuffer, from connection: CaptureConnection)
    {
        let count = sampleBuffer.attachment(forKey: .droppedFrameCount) as? Int ?? 1
        droppedReported.add(max(1, count), ordering: .relaxed)
    }

    func releaseHeld() { held.removeAll() }
}

let format = CaptureDevice.Format(
    pixelFormat: .nv12VideoRange, width: 320, height: 240, frameRateRanges: [FrameRateRange(framesPerSecond: 30)])

/// One camera, session and output for the whole run, reconfigured between phases (as an app
/// changes settings), so what is measured is the pipeline, not objects made per phase.
let camera = VirtualCamera(
    configuration: .init(
        isPaced: false, frameLimit: phaseFrames, bufferCount: 8, rendersEveryFrame: false, formats: [format]))
let session = CaptureSession(notificationCenter: NotificationCenter())
let output = CaptureVideoDataOutput(bufferBudget: 6)
let queue = DispatchQueue(label: "soak.delegate")
let errors = Atomic<Int>(0)
let observer = NotificationCenter.default.addObserver(
    forName: CaptureSession.runtimeErrorNotification, object: session, queue: nil
) { _ in errors.add(1, ordering: .relaxed) }
do {
    session.sessionPreset = .high
    try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
    try session.tryAddOutput(output)
} catch {
    fail("setting up: \(error)")
}

/// Runs one phase (the camera's frame limit); returns the frames the camera produced.
func runPhase(_ behaviour: Behaviour) -> Int {
    let delegate = SoakDelegate(behaviour)
    do {
        output.typedVideoSettings = behaviour == .native ? VideoSettings() : try VideoSettings(pixelFormat: .bgra)
        output.removeAllProcessors()
        if behaviour == .converting {
            try output.addProcessor(CropProcessor(x: 16, y: 16, width: 256, height: 192), named: "crop")
            try output.addProcessor(MirrorProcessor(), named: "mirror")
        }
        output.alwaysDiscardsLateVideoFrames = behaviour != .holding
        output.setSampleBufferDelegate(delegate, queue: queue)
    } catch {
        fail("setting up the \(behaviour) phase: \(error)")
    }
    session.startRunning()
    guard session.isRunning else { fail("the \(behaviour) phase did not start") }
    guard camera.waitUntilFinished(timeout: 600) else { fail("the \(behaviour) phase did not finish") }
    // A holding delegate gives its buffers back so the last queued frames can be handed over.
    queue.sync { delegate.releaseHeld() }
    session.stopRunning()
    queue.sync {}
    let stats = output.statistics
    let produced = camera.framesProduced
    let delivered = delegate.delivered.load(ordering: .relaxed)
    let reported = delegate.droppedReported.load(ordering: .relaxed)
    guard stats.delivered + stats.dropped + stats.rateGated == stats.captured, stats.captured == produced,
        delivered == stats.delivered, reported == stats.dropped, errors.load(ordering: .relaxed) == 0,
        delegate.outOfOrder.load(ordering: .relaxed) == 0
    else {
        fail(
            "\(behaviour): produced \(produced), captured \(stats.captured), delivered \(stats.delivered) (delegate saw \(delivered)), dropped \(stats.dropped) (reported \(reported)), gated \(stats.rateGated), errors \(errors.load(ordering: .relaxed)), out of order \(delegate.outOfOrder.load(ordering: .relaxed))"
        )
    }
    if verbose {
        print(
            "  \(behaviour.rawValue) produced \(produced), delivered \(stats.delivered), dropped \(stats.dropped) (late \(stats.droppedLate), out of buffers \(stats.droppedOutOfBuffers), discontinuity \(stats.droppedDiscontinuity))"
        )
    }
    return produced
}

let start = Date()
var total = 0
var round = 0
var baseline: Double?
var peak = 0.0
var last = residentBytes()
print("soak: \(frameTarget == Int.max ? "\(timeLimit / 60) min" : "\(frameTarget) frames"), phases of \(phaseFrames)")
while total < frameTarget, Date().timeIntervalSince(start) < timeLimit {
    for behaviour in behaviours where total < frameTarget {
        total += runPhase(behaviour)
    }
    round += 1
    last = residentBytes()
    if round < warmupRounds {
        print(String(format: "round %d (warm-up): %d frames, RSS %.2f MB", round, total, last / 1_048_576))
    } else if let baseline {
        peak = max(peak, last)
        print(
            String(
                format: "round %d: %d frames, RSS %.2f MB (%+.2f MB since warm-up)", round, total, last / 1_048_576,
                (last - baseline) / 1_048_576))
        if last - baseline > allowance {
            fail(String(format: "RSS grew %.2f MB after warm-up", (last - baseline) / 1_048_576))
        }
    } else {
        baseline = last
        peak = last
        print(String(format: "round %d (end of warm-up): %d frames, RSS %.2f MB", round, total, last / 1_048_576))
    }
}
let growth = last - (baseline ?? last)
print(
    String(
        format:
            "soak: PASS, %d frames in %.0f s, every frame accounted; RSS %.2f MB after warm-up, %.2f MB at end (%+.2f MB, peak %.2f MB)",
        total, Date().timeIntervalSince(start), (baseline ?? last) / 1_048_576, last / 1_048_576,
        growth / 1_048_576, peak / 1_048_576))
