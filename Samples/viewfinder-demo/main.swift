// viewfinder-demo: captures from the default camera (the virtual test-pattern camera on a machine
// without one, which its first line says) and prints live figures, captures from the default microphone and prints its
// levels (--audio), shows the camera in a window (--window) or a web page (--preview), or lists the devices and their formats.
import Dispatch
import Foundation
import Synchronization
import Viewfinder
import ViewfinderSimulator

struct Options {
    var seconds = 5.0
    var listDevices = false
    var settings = VideoSettings()
    var preset = CaptureSession.Preset.high
    var deviceID: String?
    var delegateCost = 0.0
    var simulatedC920 = false
    var audio = false
    var recordPath: String?
    var photoPath: String?
    var window = false
    var preview = false
    var previewSize = (1280, 720)
    var previewAddress = "127.0.0.1"
    var previewPort = 0
    var secondsGiven = false
}

let usage = """
    usage: viewfinder-demo [--list-devices] [--seconds N] [--format bgra|nv12|nv12full|yuyv|i420|mjpeg|native]
                           [--size WxH] [--preset high|medium|low|vga640x480|hd1280x720|hd1920x1080]
                           [--device UNIQUE_ID] [--delegate-ms MS] [--simulated-c920] [--audio]
                           [--record FILE] [--photo OUT.jpg] [--window] [--preview [--preview-size WxH]
                           [--preview-address ADDRESS] [--preview-port PORT]]
      --list-devices   print every camera and microphone with its formats and exit
      --window         show the camera in a window (a CaptureVideoPreviewLayer in a PreviewWindow; needs
                       DISPLAY); capture until the window is closed, or for --seconds N if given
      --preview        show the camera on a web page on 127.0.0.1 (a CaptureVideoPreviewLayer in a
                       PreviewWebPresenter): prints the page's URL with its token and captures until
                       interrupted, or for --seconds N if given; --preview-size WxH sets the layer
                       (default 1280x720)
      --preview-address ADDRESS
                       serve the preview page on ADDRESS instead of 127.0.0.1 (implies --preview):
                       0.0.0.0 for every network interface, or one of this machine's addresses. Plain
                       HTTP: the token travels in the URL, so anyone who can see the traffic or the
                       URL can watch the camera; use it on a network you trust, or keep the page on
                       127.0.0.1 and forward it: ssh -L 8080:127.0.0.1:8080 HOST (with --preview-port 8080)
      --preview-port PORT
                       the preview page's port (default: any free port)
      --audio          capture from the default microphone (the virtual one on a machine without a
                       sound card; --device picks another) and print its levels in dBFS per
                       channel each second
      --seconds N      capture for N seconds (default 5), printing a line of figures each second
      --format F       the pixel format to deliver (default: the camera's own, zero-copy; MJPEG decoded
                       to full-range NV12; mjpeg: the camera's JPEG bytes)
      --size WxH       scale delivered frames to W x H
      --preset P       the session preset (default high)
      --device ID      capture from the device with this unique ID (see --list-devices)
      --delegate-ms MS make the delegate take MS milliseconds per frame, to watch late frames drop
      --photo PATH     take one JPEG photo (with EXIF) from the running camera, write it to PATH
                       and exit
      --simulated-c920 plug in a simulated USB webcam (a Logitech C920's formats) and capture from it
                       through the real V4L2 backend, as on a machine with that camera
      --record FILE    also record H.264 to FILE (.mov, .mp4 or .mkv; never overwritten), printing its figures
    """

/// Prints `line` and flushes it at once. stdout is block-buffered when it is a pipe or a file
/// (`viewfinder-demo --preview > log` showed nothing for about 20 s): every line of the demo, the
/// per-second figures and the preview page's address among them, goes out as it is printed.
/// (Making stdout line-buffered with setvbuf would need the C global `stdout`, which Swift 6 does
/// not let this code touch.)
func print(_ line: String) {
    Swift.print(line)
    fflush(nil)
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("viewfinder-demo: \(message)\n".utf8))
    exit(2)
}

func parse(_ arguments: [String]) -> Options {
    var options = Options()
    var format: PixelFormat?
    var size: (Int, Int)?
    var iterator = arguments.makeIterator()
    func value(_ flag: String) -> String {
        guard let next = iterator.next() else { fail("\(flag) needs a value\n\(usage)") }
        return next
    }
    while let argument = iterator.next() {
        switch argument {
        case "--list-devices": options.listDevices = true
        case "--window": options.window = true
        case "--preview": options.preview = true
        case "--preview-address":
            options.previewAddress = value(argument)
            options.preview = true
        case "--preview-port":
            guard let port = Int(value(argument)), (1...65535).contains(port) else {
                fail("--preview-port takes a port number, 1 to 65535")
            }
            options.previewPort = port
        case "--preview-size":
            let parts = value(argument).split(separator: "x").compactMap { Int($0) }
            guard parts.count == 2, parts[0] > 0, parts[1] > 0 else { fail("--preview-size takes WxH, e.g. 1280x720") }
            options.previewSize = (parts[0], parts[1])
        case "--seconds":
            guard let seconds = Double(value(argument)), seconds > 0 else { fail("--seconds takes a positive number") }
            options.secondsGiven = true
            options.seconds = seconds
        case "--format":
            switch value(argument) {
            case "bgra": format = .bgra
            case "nv12": format = .nv12VideoRange
            case "nv12full": format = .nv12FullRange
            case "yuyv": format = .yuyv
            case "i420": format = .i420
            case "native": format = nil
            case "mjpeg": format = .mjpeg
            case let other: fail("unknown format '\(other)': use bgra, nv12, nv12full, yuyv, i420, mjpeg or native")
            }
        case "--size":
            let parts = value(argument).split(separator: "x").compactMap { Int($0) }
            guard parts.count == 2 else { fail("--size takes WIDTHxHEIGHT, e.g. 1280x720") }
            size = (parts[0], parts[1])
        case "--preset":
            let name = value(argument)
            let known: [CaptureSession.Preset] = [.high, .medium, .low, .vga640x480, .hd1280x720, .hd1920x1080]
            guard let preset = known.first(where: { $0.rawValue == name }) else {
                fail("unknown preset '\(name)': use one of \(known.map(\.rawValue).joined(separator: ", "))")
            }
            options.preset = preset
        case "--device": options.deviceID = value(argument)
        case "--simulated-c920": options.simulatedC920 = true
        case "--audio": options.audio = true
        case "--record": options.recordPath = value(argument)
        case "--photo": options.photoPath = value(argument)
        case "--delegate-ms":
            guard let cost = Double(value(argument)), cost >= 0 else { fail("--delegate-ms takes a number ≥ 0") }
            options.delegateCost = cost / 1000
        case "--help", "-h":
            print(usage)
            exit(0)
        default: fail("unknown option '\(argument)'\n\(usage)")
        }
    }
    if size != nil, format == nil { format = .bgra }
    if let format {
        do {
            options.settings = try VideoSettings(pixelFormat: format, width: size?.0, height: size?.1)
        } catch {
            fail(error.description)
        }
    }
    return options
}

/// Waits for one photo and keeps its file's bytes (or the error).
final class PhotoTaker: CapturePhotoCaptureDelegate {
    let result = Mutex<Result<Data, CaptureError>?>(nil)
    let done = DispatchSemaphore(value: 0)

    func photoOutput(_ output: CapturePhotoOutput, didFinishProcessingPhoto photo: CapturePhoto, error: (any Error)?) {
        let outcome: Result<Data, CaptureError>
        if let data = photo.fileDataRepresentation(), error == nil {
            outcome = .success(data)
        } else {
            outcome = .failure(error as? CaptureError ?? CaptureError(.conversionFailed, "the photo has no JPEG data"))
        }
        result.withLock { $0 = outcome }
    }

    func photoOutput(
        _ output: CapturePhotoOutput, didFinishCaptureFor resolvedSettings: CaptureResolvedPhotoSettings,
        error: (any Error)?
    ) {
        done.signal()
    }
}

/// Counts frames; optionally pretends to work on each.
final class Counter: CaptureVideoDataOutputSampleBufferDelegate {
    let cost: Double
    init(cost: Double) { self.cost = cost }

    func captureOutput(
        _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {
        guard cost > 0 else { return }
        let until = Date(timeIntervalSinceNow: cost)
        while Date() < until {}  // busy, like real per-frame work
    }
}

/// Reports the end of a recording.
final class RecordingReporter: CaptureFileOutputRecordingDelegate {
    let finished = DispatchSemaphore(value: 0)

    func fileOutput(
        _ output: CaptureFileOutput, didStartRecordingTo fileURL: URL, from connections: [CaptureConnection]
    ) {
        print("recording to \(fileURL.path)")
    }

    func fileOutput(
        _ output: CaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [CaptureConnection],
        error: (any Error)?
    ) {
        let error = error as? CaptureError
        if let error {
            let kept =
                error.recordingSuccessfullyFinished == true ? "the file is playable" : "nothing usable was written"
            print("recording ended: \(error.description) (\(error.code); \(kept))")
        }
        print(
            String(
                format: "recorded %@: %.2f s, %lld bytes, %d frames", outputFileURL.path,
                output.recordedDuration.seconds, output.recordedFileSize, output.recordedFrameCount))
        finished.signal()
    }
}

let options = parse(Array(CommandLine.arguments.dropFirst()))

// With --simulated-c920, device discovery sees a simulated bus with one C920-like camera.
let bus = SimulatedV4L2Bus()
if options.simulatedC920 {
    do {
        bus.plug(try SimulatedUVCCamera(configuration: .init(listing: SimulatedUVCCamera.c920Listing)))
    } catch {
        fail(error.description)
    }
}
func discover<T>(_ body: () -> T) -> T {
    options.simulatedC920 ? bus.withDiscovery(body) : body()
}

// The virtual devices are opt-in (a machine without a camera lists none, as with AVFoundation):
// with no camera, the demo opts in and says so first.
if !options.simulatedC920 {
    if VirtualDevices.isRequested() {
        print(
            "\(VirtualDevices.environmentVariable)=1: the virtual test-pattern camera and microphone are listed after any real ones"
        )
    } else if CaptureDevice.devices(for: .video).isEmpty {
        VirtualDevices.register()
        print(
            "no camera found: using the virtual test-pattern camera (and the virtual microphone after any real one); \(VirtualDevices.environmentVariable)=1 does this for any program"
        )
    }
}

if options.listDevices {
    let devices = discover { CaptureDevice.devices(for: .video) }
    for device in devices {
        print("\(device.localizedName)  [\(device.uniqueID)]  model \(device.modelID), \(device.deviceType.rawValue)")
        for format in device.formats {
            print("    \(format)")
        }
    }
    if devices.isEmpty { print("no video devices") }
    // The simulated bus is video only: microphones come from the machine's own registry.
    let microphones = CaptureDevice.devices(for: .audio)
    for microphone in microphones {
        print("\(microphone.localizedName)  [\(microphone.uniqueID)]  model \(microphone.modelID), microphone")
        // One line per sample format and channel count, with its rates.
        var lines: [(key: String, rates: [Int])] = []
        for case let format? in microphone.formats.map(\.audioFormat) {
            let key = "\(format.sampleFormat), \(format.channelCount) ch"
            if let index = lines.firstIndex(where: { $0.key == key }) {
                lines[index].rates.append(format.sampleRate)
            } else {
                lines.append((key, [format.sampleRate]))
            }
        }
        for line in lines {
            print("    audio \(line.key) @ \(line.rates.sorted().map(String.init).joined(separator: ", ")) Hz")
        }
        if lines.isEmpty { print("    (no formats: the device is busy or cannot be opened now)") }
    }
    if microphones.isEmpty { print("no audio devices") }
    exit(0)
}

/// Counts audio buffers (the levels are read from the connection).
final class AudioCounter: CaptureAudioDataOutputSampleBufferDelegate {
    let frames = Mutex(0)
    func captureOutput(
        _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {
        frames.withLock { $0 += sampleBuffer.numSamples }
    }
}

/// Captures from the default microphone for `seconds`, printing levels each second.
func captureAudio(seconds: Double, deviceID: String?) -> Never {
    let found = deviceID.map { CaptureDevice.device(withUniqueID: $0) } ?? CaptureDevice.default(for: .audio)
    guard let microphone = found, microphone.hasMediaType(.audio) else {
        fail(
            deviceID.map { "no microphone with unique ID '\($0)': run with --list-devices" } ?? "no audio device found")
    }
    let session = CaptureSession()
    let output = CaptureAudioDataOutput()
    let counter = AudioCounter()
    let observer = NotificationCenter.default.addObserver(
        forName: CaptureSession.runtimeErrorNotification, object: session, queue: nil
    ) { note in
        let error = note.userInfo?[CaptureSessionErrorKey] as? CaptureError
        FileHandle.standardError.write(Data("runtime error: \(error?.description ?? "unknown")\n".utf8))
    }
    do {
        try session.tryAddInput(try CaptureDeviceInput(device: microphone))
        output.setSampleBufferDelegate(counter, queue: DispatchQueue(label: "demo.audio"))
        try session.tryAddOutput(output)
    } catch {
        fail(error.description)
    }
    session.startRunning()
    guard session.isRunning else { fail("the session did not start (see the error above)") }
    let format = microphone.activeFormat.audioFormat.map { "\($0)" } ?? "?"
    print("capturing from \(microphone.localizedName) [\(microphone.uniqueID)]: \(format)")
    let start = Date()
    var tick = 1.0
    while Date().timeIntervalSince(start) < seconds {
        Thread.sleep(forTimeInterval: max(0, min(tick, seconds) - Date().timeIntervalSince(start)))
        let channels = output.connection(with: .audio)?.audioChannels ?? []
        let levels = channels.enumerated().map { index, channel in
            String(
                format: "ch%d average %6.1f dBFS, peak %6.1f dBFS", index, channel.averagePowerLevel,
                channel.peakHoldLevel)
        }
        let stats = output.statistics
        print(
            String(format: "%5.1fs  ", Date().timeIntervalSince(start))
                + (levels.isEmpty ? "no audio yet" : levels.joined(separator: "  |  "))
                + "  (buffers \(stats.delivered), dropped \(stats.dropped))")
        tick += 1
    }
    session.stopRunning()
    print("done: \(counter.frames.withLock { $0 }) sample frames; \(output.statistics)")
    NotificationCenter.default.removeObserver(observer)
    exit(0)
}

if options.audio { captureAudio(seconds: options.seconds, deviceID: options.deviceID) }

let device: CaptureDevice
if let id = options.deviceID {
    guard let found = discover({ CaptureDevice.device(withUniqueID: id) }) else {
        fail("no device with unique ID '\(id)': run with --list-devices to see them")
    }
    device = found
} else {
    guard let found = discover({ CaptureDevice.default(for: .video) }) else { fail("no video device found") }
    device = found
}

let session = CaptureSession()
let output = CaptureVideoDataOutput()
let photoOutput = CapturePhotoOutput()
let counter = Counter(cost: options.delegateCost)  // outputs hold delegates weakly: keep it alive
let movie = options.recordPath.map { _ in CaptureMovieFileOutput() }
let reporter = RecordingReporter()
let errorObserver = NotificationCenter.default.addObserver(
    forName: CaptureSession.runtimeErrorNotification, object: session, queue: nil
) { note in
    let error = note.userInfo?[CaptureSessionErrorKey] as? CaptureError
    FileHandle.standardError.write(Data("runtime error: \(error?.description ?? "unknown")\n".utf8))
}
do {
    session.beginConfiguration()
    session.sessionPreset = options.preset
    let input = try CaptureDeviceInput(device: device)
    try session.tryAddInput(input)
    output.typedVideoSettings = options.settings
    output.setSampleBufferDelegate(counter, queue: DispatchQueue(label: "demo.frames"))
    try session.tryAddOutput(output)
    if let movie { try session.tryAddOutput(movie) }
    if options.photoPath != nil { try session.tryAddOutput(photoOutput) }
    session.commitConfiguration()
} catch {
    fail(error.description)
}
// --window: the one line that replaces `view.layer.addSublayer(previewLayer)`.
// --preview: the same layer on a web page on loopback instead.
let previewLayer = options.window || options.preview ? CaptureVideoPreviewLayer(session: session) : nil
var window: PreviewWindow?
var page: PreviewWebPresenter?
if let previewLayer {
    do {
        if options.window {
            window = try PreviewWindow(layer: previewLayer, title: "Viewfinder: \(device.localizedName)")
        }
        if options.preview {
            previewLayer.frame = CGRect(x: 0, y: 0, width: options.previewSize.0, height: options.previewSize.1)
            page = try PreviewWebPresenter(
                layer: previewLayer, address: options.previewAddress, port: options.previewPort)
        }
    } catch {
        fail(error.description)
    }
}
session.startRunning()
guard session.isRunning else { fail("the session did not start (see the error above)") }
let format = device.activeFormat
let delivered = output.deliveredFormat.map { "\($0.pixelFormat.name) \($0.size)" } ?? "?"
print(
    "capturing from \(device.localizedName): \(format.pixelFormat.name) \(format.dimensions) at "
        + "\(String(format: "%.0f", 1 / device.activeVideoMinFrameDuration.seconds)) fps, delivering \(delivered) "
        + (output.isZeroCopy
            ? "(zero-copy)"
            : format.pixelFormat == .mjpeg
                ? "(decoded by libjpeg-turbo\(output.conversionEngine.map { ", converted by \($0.rawValue)" } ?? ""))"
                : "(converted by \(output.conversionEngine?.rawValue ?? "?"))"))

if let movie, let path = options.recordPath {
    movie.startRecording(to: URL(fileURLWithPath: path), recordingDelegate: reporter)
}

if let path = options.photoPath {
    let taker = PhotoTaker()  // the output holds its delegate weakly
    photoOutput.capturePhoto(with: CapturePhotoSettings(), delegate: taker)
    guard taker.done.wait(timeout: .now() + 10) == .success else { fail("no photo within 10 seconds") }
    session.stopRunning()
    switch taker.result.withLock({ $0 }) {
    case .success(let data):
        do {
            try data.write(to: URL(fileURLWithPath: path))
        } catch {
            fail("cannot write \(path): \(error)")
        }
        let exif = EXIFWriter.read(from: [UInt8](data))
        print(
            "wrote \(path): \(data.count) bytes, \(photoOutput.maxPhotoDimensions), taken \(exif?.dateTimeOriginal ?? "?"), "
                + "orientation \(exif?.orientation.map(String.init) ?? "?")")
        exit(0)
    case .failure(let error):
        fail("the photo failed: \(error.description)")
    case nil:
        fail("the photo failed")
    }
}

var previous = output.statistics
var previousPreview = previewLayer?.statistics
let start = Date()
var tick = 1.0
let seconds = (options.window || options.preview) && !options.secondsGiven ? Double.infinity : options.seconds
if let window { print("showing the camera in a \(window.size) window; close it to stop") }
if let page {
    if ["127.0.0.1", "::1", "localhost"].contains(options.previewAddress) {
        print("showing the camera at \(page.url) (the token is required; only this machine can connect)")
    } else {
        let wildcard = ["0.0.0.0", "::"].contains(options.previewAddress)
        print(
            "showing the camera at \(page.url)"
                + (wildcard ? " (replace \(options.previewAddress) with this machine's address: hostname -I)" : "")
                + ": plain HTTP on the network; the token in the URL is the only protection, so share it only"
                + " on a network you trust")
    }
}
while true {
    let elapsed = Date().timeIntervalSince(start)
    if elapsed >= seconds { break }
    if let window, window.waitUntilClosed(timeout: min(tick - elapsed, seconds - elapsed)) { break }
    if window == nil { Thread.sleep(forTimeInterval: min(tick - elapsed, seconds - elapsed)) }
    let now = output.statistics
    let interval = min(1, Date().timeIntervalSince(start) - (tick - 1))
    let fps = Double(now.delivered - previous.delivered) / max(interval, 0.001)
    let latency = output.deliveryLatency
    print(
        String(
            format:
                "%5.1fs  %6.1f fps delivered  dropped late %d, out of buffers %d, discontinuity %d, by processors/decoder %d  latency p50 %.0f µs p99 %.0f µs",
            Date().timeIntervalSince(start), fps, now.droppedLate, now.droppedOutOfBuffers, now.droppedDiscontinuity,
            now.droppedByProcessor,
            latency.p50, latency.p99))
    if let movie {
        let figures = movie.statistics
        print(
            String(
                format: "       recording %6.2f s  %9lld bytes  %5d frames  dropped %d (encoder behind %d)",
                movie.recordedDuration.seconds, movie.recordedFileSize, movie.recordedFrameCount, figures.dropped,
                figures.droppedOutOfBuffers))
    }
    if let previewLayer, let before = previousPreview {
        let shown = previewLayer.statistics
        let rendered = Double(shown.delivered - before.delivered) / max(interval, 0.001)
        if let window {
            print(
                String(
                    format: "       window %@  %6.1f fps rendered  replaced while busy %d  drawn %d",
                    "\(window.size)", rendered, shown.droppedLate, window.statistics.presented))
        }
        if let page {
            print(
                String(
                    format: "       page %@  %6.1f fps rendered  %d viewers  sent %d  replaced before encoding %d",
                    "\(previewLayer.pixelSize)", rendered, page.viewerCount, page.statistics.presented,
                    page.statistics.replaced))
        }
        previousPreview = shown
    }
    previous = now
    tick += 1
}
window?.close()
page?.close()
if let movie {
    movie.stopRecording()
    if reporter.finished.wait(timeout: .now() + 30) == .timedOut { print("the recording did not finish in 30 s") }
}
session.stopRunning()
let final = output.statistics
print("done: \(final)")
withExtendedLifetime(counter) {}
NotificationCenter.default.removeObserver(errorObserver)
