import CSDL2
import Dispatch
import Foundation
import Synchronization
import ViewfinderCore

/// The one thread that talks to SDL: SDL's video calls and its event queue belong to the thread
/// that initialised it, so every window of the process is created, drawn, resized and destroyed
/// here. Other threads hand it commands and wake it with an SDL user event (SDL_PushEvent is
/// thread-safe), so it sleeps in `SDL_WaitEventTimeout` between frames and never polls.
///
/// The thread starts with the first window and ends — closing SDL and with it the X connection —
/// when the last window closes; the next window starts a new one (reading `DISPLAY` anew).
///
/// Thread safety: `perform` may be called from any thread; everything else runs on the SDL thread.
package final class SDLDisplay: @unchecked Sendable {  // unchecked: `windows` is touched only by the SDL thread.
    package enum Command: Sendable {
        case open(PreviewWindow, title: String, width: Int, height: Int, reply: Reply<UInt32>)
        case draw(UInt32)
        case resize(UInt32, width: Int, height: Int)
        case close(UInt32, reply: Reply<Bool>)
    }

    /// A result handed back across threads.
    package final class Reply<Value: Sendable>: Sendable {
        private let value = Mutex<Result<Value, CaptureError>?>(nil)
        private let done = DispatchSemaphore(value: 0)
        package func send(_ result: Result<Value, CaptureError>) {
            value.withLock { $0 = result }
            done.signal()
        }
        package func wait(timeout: Double) -> Result<Value, CaptureError> {
            guard done.wait(timeout: .now() + timeout) == .success, let result = value.withLock({ $0 }) else {
                return .failure(
                    CaptureError(.systemError, "the preview window's SDL thread did not answer in \(timeout) s"))
            }
            return result
        }
    }

    private struct Window {
        let window: OpaquePointer
        let renderer: OpaquePointer
        var texture: OpaquePointer?
        var textureWidth: Int32 = 0
        var textureHeight: Int32 = 0
        weak var owner: PreviewWindow?
        /// The frame shown last, drawn again when the window is exposed.
        var shown: PreviewFrame?
    }

    private static let current = Mutex<SDLDisplay?>(nil)
    private let commands = Mutex<[Command]>([])
    /// The SDL event type that wakes the thread (set once SDL has started).
    private let wakeType = Atomic<UInt32>(0)
    private var windows: [UInt32: Window] = [:]
    /// Whether a window was asked for yet (the thread ends only after its windows).
    private var openedAny = false
    /// Closes to answer after this round of commands.
    private var closeReplies: [Reply<Bool>] = []

    private init() {}

    /// Runs `command` on the SDL thread. Only opening a window starts the thread (and SDL) when
    /// none runs; other commands are for windows of a running thread and are dropped otherwise.
    package static func perform(_ command: Command) throws(CaptureError) {
        var starts = false
        if case .open = command { starts = true }
        // Queued under the registry's lock, which the thread also takes to end: a command never
        // goes to a thread that has gone.
        let started: SDLDisplay? = try current.withLock { (current) throws(CaptureError) -> SDLDisplay? in
            let display: SDLDisplay
            if let running = current {
                display = running
            } else if starts {
                display = try start()
            } else {
                if case .close(_, let reply) = command { reply.send(.success(true)) }
                return nil
            }
            current = display
            display.commands.withLock { $0.append(command) }
            return display
        }
        guard let display = started else { return }
        _ = vf_sdl_push_wake(display.wakeType.load(ordering: .acquiring))
    }

    /// Starts the SDL thread; throws what SDL said when it cannot open the display.
    private static func start() throws(CaptureError) -> SDLDisplay {
        let display = SDLDisplay()
        let ready = Reply<UInt32>()
        let thread = Thread {
            guard vf_sdl_init() == 0 else {
                let reason = String(cString: vf_sdl_error())
                vf_sdl_quit()
                ready.send(
                    .failure(
                        CaptureError(
                            .systemError,
                            "cannot open a window: SDL could not start its video (\(reason)); set DISPLAY to a running X server (or WAYLAND_DISPLAY), or use a CallbackPreviewPresenter"
                        )))
                return
            }
            let type = vf_sdl_register_wake()
            guard type != 0 else {
                vf_sdl_quit()
                ready.send(
                    .failure(CaptureError(.systemError, "SDL has no user event type left for the preview window")))
                return
            }
            display.wakeType.store(type, ordering: .releasing)
            ready.send(.success(type))
            display.run()
        }
        thread.name = "viewfinder.preview-window.sdl"
        thread.start()
        _ = try ready.wait(timeout: 20).get()
        return display
    }

    // MARK: The SDL thread

    private func run() {
        var event = vf_sdl_event()
        let wake = wakeType.load(ordering: .acquiring)
        while true {
            if vf_sdl_wait_event(-1, wake, &event) == 1 {
                handle(event)
            }
            if drainCommands() { break }
        }
        for (_, window) in windows { destroy(window) }
        windows.removeAll()
        vf_sdl_quit()
        for reply in closeReplies { reply.send(.success(true)) }
    }

    /// Runs queued commands; `true` once the last window has closed (the thread then ends).
    private func drainCommands() -> Bool {
        while true {
            let next = commands.withLock { queue -> Command? in queue.isEmpty ? nil : queue.removeFirst() }
            guard let next else { break }
            execute(next)
        }
        let done = Self.current.withLock { current in
            let done = openedAny && windows.isEmpty && commands.withLock { $0.isEmpty }
            if done, current === self { current = nil }
            return done
        }
        if !done {
            for reply in closeReplies { reply.send(.success(true)) }
            closeReplies.removeAll()
        }
        return done
    }

    private func execute(_ command: Command) {
        switch command {
        case .open(let owner, let title, let width, let height, let reply):
            openedAny = true
            guard let window = vf_sdl_create_window(title, Int32(width), Int32(height)) else {
                reply.send(
                    .failure(
                        CaptureError(
                            .systemError, "SDL could not create the window: \(String(cString: vf_sdl_error()))")))
                return
            }
            guard let renderer = vf_sdl_create_renderer(window) else {
                let reason = String(cString: vf_sdl_error())
                vf_sdl_destroy_window(window)
                reply.send(
                    .failure(CaptureError(.systemError, "SDL could not make a renderer for the window: \(reason)")))
                return
            }
            vf_sdl_present_black(renderer)
            let id = vf_sdl_window_id(window)
            windows[id] = Window(window: window, renderer: renderer, owner: owner)
            reply.send(.success(id))
        case .draw(let id):
            draw(id, newFrame: true)
        case .resize(let id, let width, let height):
            guard let window = windows[id] else { return }
            vf_sdl_set_window_size(window.window, Int32(width), Int32(height))
            reportSize(of: id)
        case .close(let id, let reply):
            if let window = windows.removeValue(forKey: id) { destroy(window) }
            // Answered once the thread knows whether SDL stays up: a caller closing the last
            // window returns after SDL (and its X connection) is shut.
            closeReplies.append(reply)
        }
    }

    private func handle(_ event: vf_sdl_event) {
        switch event.kind {
        case VF_SDL_EVENT_RESIZED:
            reportSize(of: event.window_id)
        case VF_SDL_EVENT_EXPOSED:
            draw(event.window_id, newFrame: false)
        case VF_SDL_EVENT_CLOSE:
            guard let window = windows.removeValue(forKey: event.window_id) else { return }
            destroy(window)
            window.owner?.windowWasClosed()
        case VF_SDL_EVENT_CLICK:
            windows[event.window_id]?.owner?.windowWasClicked(x: Int(event.x), y: Int(event.y))
        default:
            break
        }
    }

    private func reportSize(of id: UInt32) {
        guard let window = windows[id] else { return }
        var width: Int32 = 0
        var height: Int32 = 0
        vf_sdl_window_size(window.window, &width, &height)
        window.owner?.windowDidResize(width: Int(width), height: Int(height))
    }

    private func draw(_ id: UInt32, newFrame: Bool) {
        guard var window = windows[id] else { return }
        if newFrame, let owner = window.owner {
            while let frame = owner.slot.take() { window.shown = frame }
        }
        guard let frame = window.shown, let pixels = frame.pixelBuffer else {
            vf_sdl_present_black(window.renderer)
            windows[id] = window
            return
        }
        let status = vf_sdl_present_bgra(
            window.renderer, &window.texture, &window.textureWidth, &window.textureHeight, pixels.baseAddress,
            Int32(pixels.bytesPerRow), Int32(pixels.width), Int32(pixels.height))
        windows[id] = window
        if status == 0, newFrame { window.owner?.frameWasDrawn(frame) }
    }

    private func destroy(_ window: Window) {
        if let texture = window.texture { vf_sdl_destroy_texture(texture) }
        vf_sdl_destroy_renderer(window.renderer)
        vf_sdl_destroy_window(window.window)
    }
}
