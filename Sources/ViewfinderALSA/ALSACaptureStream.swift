import CALSA
import Synchronization
import ViewfinderCore

#if canImport(Glibc)
    import Glibc
#endif

/// One running ALSA capture: a thread that waits on the PCM (`snd_pcm_wait`), reads a period at
/// a time (`snd_pcm_readi`) into pooled buffers and hands each on as an ``AudioChunk`` stamped
/// on `CLOCK_MONOTONIC` (`snd_pcm_htimestamp` with the PCM's timestamp type set to
/// `SND_PCM_TSTAMP_TYPE_MONOTONIC`, minus the frames still waiting before the chunk).
///
/// Overruns (`-EPIPE`) are recovered with `snd_pcm_prepare` + `snd_pcm_start` and reported with
/// the frames lost, estimated from the gap between where the sample count and the device's next
/// timestamp put the stream. A suspend (`-ESTRPIPE`) is resumed. When every pooled buffer is
/// held downstream the period is read into a scratch buffer and reported lost (`.outOfBuffers`),
/// so the device itself never overruns because of a slow consumer. Any other error ends the
/// stream through ``AudioStreamSink/audioStreamDidFail(_:)``.
///
/// Thread safety: ``stop()`` may be called from any thread except the sink's callbacks.
package final class ALSACaptureStream: Sendable {
    /// How long the capture thread waits for data before checking for a stop request.
    package static let waitMilliseconds: Int32 = 20

    /// The negotiated format and period.
    package let setup: ALSAPCM.Setup
    private let thread: Mutex<CaptureThread?>
    private let counters = Mutex(Counters())

    /// What the stream has seen so far.
    package struct Counters: Sendable, Hashable {
        /// Chunks delivered.
        package var chunks = 0
        /// Frames delivered.
        package var framesDelivered = 0
        /// Overruns recovered.
        package var overruns = 0
        /// Frames lost to overruns (estimated).
        package var framesLostToOverruns = 0
        /// Frames read and discarded because no buffer was free.
        package var framesLostToBuffers = 0
    }

    /// Starts capturing from `pcm` (configured as `setup`) into `bufferCount` pooled buffers of
    /// one period each, delivering to `sink`. The stream owns `pcm` from now on and closes it.
    package init(pcm: ALSAPCM, setup: ALSAPCM.Setup, bufferCount: Int, sink: AudioStreamSink) throws(CaptureError) {
        self.setup = setup
        let pool = try PCMBufferPool(
            bytesPerBuffer: setup.periodFrames * setup.format.bytesPerFrame, capacity: max(1, bufferCount))
        let started = pcm.start()
        guard started >= 0 else {
            pcm.close()
            throw CaptureError.alsa(started, "starting capture on", name: pcm.name)
        }
        thread = Mutex(nil)
        let worker = CaptureThread(name: "viewfinder.alsa.\(pcm.name)") { [self] thread in
            run(pcm: pcm, pool: pool, sink: sink, isCancelled: { thread.isCancelled })
        }
        thread.withLock { $0 = worker }
    }

    /// The counts so far.
    package var statistics: Counters { counters.withLock { $0 } }

    /// Stops the thread and waits for it; the PCM is closed when this returns.
    package func stop() {
        let worker = thread.withLock { thread in
            defer { thread = nil }
            return thread
        }
        worker?.stop()
    }

    private func run(pcm: ALSAPCM, pool: PCMBufferPool, sink: AudioStreamSink, isCancelled: () -> Bool) {
        defer { pcm.close() }
        let format = setup.format
        let period = setup.periodFrames
        let host = HostClock()
        let scratch = UnsafeMutableRawPointer.allocate(byteCount: period * format.bytesPerFrame, alignment: 64)
        defer { scratch.deallocate() }
        var timeline = AudioTimeline(sampleRate: format.sampleRate)
        var overrunPending = false
        var lostBeforeNext = 0

        func recover(_ result: Int32) -> Bool {
            if result == -EPIPE {
                counters.withLock { $0.overruns += 1 }
                overrunPending = true
                if pcm.prepare() < 0 { return false }
                return pcm.start() >= 0
            }
            if result == -ESTRPIPE {
                var resumed = pcm.resume()
                while resumed == -EAGAIN, !isCancelled() {
                    var pause = timespec(tv_sec: 0, tv_nsec: 10_000_000)
                    nanosleep(&pause, nil)
                    resumed = pcm.resume()
                }
                overrunPending = true
                if resumed < 0, pcm.prepare() < 0 { return false }
                // A resumed PCM may already run (start then answers -EBADFD); a prepared one needs it.
                _ = pcm.start()
                return true
            }
            return false
        }

        func fail(_ result: Int32, _ action: String) {
            guard !isCancelled() else { return }
            // A removed card fails the wait with -EIO: report it as the disconnection it is.
            let result = pcm.isDisconnected ? -ENODEV : result
            sink.audioStreamDidFail(CaptureError.alsa(result, action, name: pcm.name))
        }

        while !isCancelled() {
            let ready = pcm.wait(milliseconds: Self.waitMilliseconds)
            if ready == 0 { continue }
            if ready < 0 {
                if recover(ready) { continue }
                return fail(ready, "waiting for audio from")
            }
            // Read every full period that is waiting.
            while !isCancelled() {
                let stamp = pcm.timestamp()
                let buffer = pool.makeBuffer()
                let target = buffer?.memory ?? scratch
                let read = pcm.read(into: target, frames: period)
                if read == Int(-EAGAIN) || read == 0 { break }
                if read < 0 {
                    if recover(Int32(read)) { break }
                    return fail(Int32(read), "capturing from")
                }
                let arrival = host.now()
                // The first frame read was captured `available` frames before the timestamp.
                let measured = stamp.map {
                    $0.nanoseconds - Int64($0.available) * 1_000_000_000 / Int64(format.sampleRate)
                }
                guard let buffer else {
                    timeline.skip(frames: read, measured: measured)
                    lostBeforeNext += read
                    counters.withLock { $0.framesLostToBuffers += read }
                    sink.audioStreamDidLose(frames: read, reason: .outOfBuffers)
                    continue
                }
                let placed = timeline.place(frames: read, measured: measured, afterOverrun: overrunPending)
                if overrunPending {
                    overrunPending = false
                    counters.withLock { $0.framesLostToOverruns += placed.framesLost }
                    sink.audioStreamDidLose(frames: placed.framesLost, reason: .overrun)
                    lostBeforeNext += placed.framesLost
                }
                let chunk = AudioChunk(
                    buffer: buffer, frameCount: read, format: format,
                    presentationTime: MediaTime(value: placed.nanoseconds, timescale: 1_000_000_000),
                    sampleIndex: placed.sampleIndex, framesLostBefore: lostBeforeNext, hostArrivalTime: arrival)
                lostBeforeNext = 0
                counters.withLock {
                    $0.chunks += 1
                    $0.framesDelivered += read
                }
                sink.audioStreamDidCapture(chunk)
            }
        }
    }
}
