import CWebSockets
import Dispatch
import Foundation
import Synchronization
import ViewfinderCore

/// What the publisher and the service thread share, under one lock held only for queue
/// operations (no I/O, no allocation but the rare viewer list).
package struct PreviewWebSharedState {
    /// One viewer's queue and counts. A free slot has `id == 0`.
    package struct Slot {
        package var id = 0
        package var kind = PreviewWebServer.ViewerKind.webSocket
        /// A ring of `queueLimitPerViewer` frames, allocated when the server starts.
        package var ring: [PreviewWebPayload?]
        package var head = 0
        package var count = 0
        package var figures: PreviewWebPayload?
        package var framesSent = 0
        package var framesReplaced = 0
        /// Whether the viewer acknowledges the frames it takes off its socket (the page does,
        /// from its first `ack`): then at most ``PreviewWebSharedState/framesInFlightLimit``
        /// frames are written and not yet acknowledged, so a viewer slower than the camera keeps
        /// its backlog in the newest-wins ring instead of the sockets' buffers (megabytes on
        /// loopback: seconds of frames).
        package var acknowledges = false
        package var framesInFlight = 0

        package var hasWork: Bool { count > 0 || figures != nil }
        /// A frame may be written now (the window is open).
        package var mayWriteFrame: Bool {
            count > 0 && (!acknowledges || framesInFlight < PreviewWebSharedState.framesInFlightLimit)
        }
        package var hasWritableWork: Bool { figures != nil || mayWriteFrame }

        package mutating func push(_ frame: PreviewWebPayload) {
            if count == ring.count {
                ring[head] = frame  // replaces the oldest, which is released here
                head = (head + 1) % ring.count
                framesReplaced += 1
            } else {
                ring[(head + count) % ring.count] = frame
                count += 1
            }
        }

        package mutating func pop() -> PreviewWebPayload? {
            guard count > 0 else { return nil }
            let frame = ring[head]
            ring[head] = nil
            head = (head + 1) % ring.count
            count -= 1
            framesSent += 1
            return frame
        }

        package mutating func clear() {
            for index in ring.indices { ring[index] = nil }
            head = 0
            count = 0
            figures = nil
            acknowledges = false
            framesInFlight = 0
        }
    }

    /// Frames written to an acknowledging viewer and not yet acknowledged, at most.
    package static let framesInFlightLimit = 2

    package var slots: [Slot]
    package var viewerCount = 0
    package var nextViewerID = 1
    package var wakePending = false
    /// The libwebsockets context is gone: nobody may wake it any more.
    package var destroyed = false
    package var latestFrame: PreviewWebPayload?
    package var latestFigures: PreviewWebPayload?
    package var lastWidth = 0
    package var lastHeight = 0
    package var counts = PreviewWebServer.Statistics()
    package var retiredSent = 0
    package var retiredReplaced = 0
    package var onClick: (@Sendable (Double, Double) -> Void)?
    package var onPaintReport: (@Sendable (PreviewWebServer.PaintReport) -> Void)?

    package func statistics() -> PreviewWebServer.Statistics {
        var result = counts
        result.framesSent = retiredSent
        result.framesReplaced = retiredReplaced
        result.viewers = []
        for slot in slots where slot.id != 0 {
            result.framesSent += slot.framesSent
            result.framesReplaced += slot.framesReplaced
            result.viewers.append(
                .init(id: slot.id, kind: slot.kind, framesSent: slot.framesSent, framesReplaced: slot.framesReplaced))
        }
        result.viewers.sort { $0.id < $1.id }
        return result
    }
}

/// The C handler: forwards libwebsockets' events to the core named by `context`.
package let previewWebHandler: vf_ws_handler = { context, connection, event, data, length in
    guard let context else { return 0 }
    let core = Unmanaged<PreviewWebServiceCore>.fromOpaque(context).takeUnretainedValue()
    let result = core.handle(connection, event: event, data: data, length: length)
    core.eventHandled.lock()  // under the lock: a waiter between its check and its wait still hears it
    core.eventHandled.broadcast()
    core.eventHandled.unlock()
    return result
}

/// The server's state on its service thread, and the publisher's entry points into the shared
/// state.
///
/// Thread safety: `shared` is lock-guarded; everything else is touched only by the service
/// thread (after `start`), which is the only thread libwebsockets calls back on.
package final class PreviewWebServiceCore: @unchecked Sendable {
    private enum Request {
        /// A response body to write once writable, then end the transaction.
        case body(PreviewWebPayload)
        /// A multipart stream viewer; `opened`: the first boundary and part headers were sent.
        case multipart(slot: Int, opened: Bool)
        /// A WebSocket viewer.
        case webSocket(slot: Int)
    }

    private struct Connection {
        var request: Request?
        var message: [UInt8] = []
    }

    package let shared: Mutex<PreviewWebSharedState>
    /// Broadcast after the service thread handled each libwebsockets event (a viewer joined or
    /// left, a frame was written, a click or paint report arrived), for waiters on what the
    /// server's state shows (``PreviewWebServer/waitUntil(timeout:_:)``).
    package let eventHandled = NSCondition()
    package let authority: String
    private let configuration: PreviewWebServer.Configuration
    private let tokenBytes: [UInt8]
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchGroup()

    // Service thread only.
    private var handle: PreviewWebHandle?
    private var connections: [OpaquePointer: Connection] = [:]
    private var slotConnections: [OpaquePointer?]
    private var writable: [Int] = []
    private var allowedOrigins: Set<String> = []
    private var page: PreviewWebPayload
    private let script: PreviewWebPayload
    /// Headroom and the stream's opening, written from here.
    private let partHeader: UnsafeMutablePointer<UInt8>
    private let serviceThreadID = Atomic<UInt>(0)

    package init(configuration: PreviewWebServer.Configuration) {
        self.configuration = configuration
        let token = configuration.token ?? ""
        tokenBytes = Array(token.utf8)
        let host = configuration.address.contains(":") ? "[\(configuration.address)]" : configuration.address
        authority = host
        let slot = PreviewWebSharedState.Slot(ring: Array(repeating: nil, count: configuration.queueLimitPerViewer))
        shared = Mutex(PreviewWebSharedState(slots: Array(repeating: slot, count: configuration.maxViewers)))
        slotConnections = Array(repeating: nil, count: configuration.maxViewers)
        writable.reserveCapacity(configuration.maxViewers)
        page = PreviewWebPayload.text(PreviewWebPage.html(token: token))
        script = PreviewWebPayload.text(PreviewWebPage.script)
        partHeader = .allocate(capacity: PreviewWebPayload.headroom + PreviewWebPayload.streamOpening.count)
    }

    deinit { partHeader.deallocate() }

    /// Starts the service thread (once the port is known).
    package func start(handle: PreviewWebHandle, port: Int) {
        self.handle = handle
        allowedOrigins = ["http://\(authority):\(port)"]
        if configuration.address == "127.0.0.1" || configuration.address == "::1" {
            allowedOrigins.insert("http://localhost:\(port)")
        }
        finished.enter()
        let thread = Thread { [self] in
            serviceThreadID.store(UInt(pthread_self()), ordering: .releasing)
            let server = handle.server
            while !stopping.load(ordering: .acquiring) {
                if vf_ws_server_service(server) < 0 { break }
            }
            shared.withLock { $0.destroyed = true }
            vf_ws_server_destroy(server)
            connections.removeAll()
            shared.withLock { state in
                for index in state.slots.indices where state.slots[index].id != 0 { retire(&state, index) }
                state.latestFrame = nil
                state.latestFigures = nil
            }
            finished.leave()
        }
        thread.name = "viewfinder.preview-web"
        thread.start()
    }

    package func stop(handle: PreviewWebHandle) {
        if !stopping.exchange(true, ordering: .acquiringAndReleasing) {
            shared.withLock { state in
                if !state.destroyed { vf_ws_server_wake(handle.server) }
            }
        }
        if serviceThreadID.load(ordering: .acquiring) == UInt(pthread_self()) { return }
        finished.wait()
    }

    // MARK: Publisher side

    package func publish(width: Int, height: Int, makeFrame: () -> PreviewWebPayload) {
        guard !stopping.load(ordering: .relaxed) else { return }
        let frame = makeFrame()
        shared.withLock { state in
            state.counts.framesPublished += 1
            state.latestFrame = frame
            state.lastWidth = width
            state.lastHeight = height
            guard state.viewerCount > 0 else { return }
            for index in state.slots.indices where state.slots[index].id != 0 { state.slots[index].push(frame) }
            wake(&state)
        }
    }

    package func publish(text: String) {
        guard !stopping.load(ordering: .relaxed) else { return }
        let message = PreviewWebPayload.text(text)
        shared.withLock { state in
            state.latestFigures = message
            var any = false
            for index in state.slots.indices where state.slots[index].id != 0 && state.slots[index].kind == .webSocket {
                state.slots[index].figures = message
                any = true
            }
            if any { wake(&state) }
        }
    }

    /// Wakes the service thread unless a wake is already on its way (it clears `wakePending`
    /// before it looks at the queues) or the context is gone. lws_cancel_service only writes
    /// to an eventfd; it is called under the lock so that the context cannot be destroyed
    /// meanwhile.
    private func wake(_ state: inout PreviewWebSharedState) {
        guard !state.wakePending, !state.destroyed, let handle else { return }
        state.wakePending = true
        vf_ws_server_wake(handle.server)
    }

    // MARK: Service thread

    package func handle(_ connection: OpaquePointer?, event: Int32, data: UnsafeRawPointer?, length: Int) -> Int32 {
        switch Int(event) {
        case Int(VF_WS_EVENT_WAKE.rawValue):
            wakeViewers()
            return 0
        case Int(VF_WS_EVENT_CLOSED.rawValue):
            if let connection { closed(connection) }
            return 0
        default:
            break
        }
        guard let connection else { return -1 }
        switch Int(event) {
        case Int(VF_WS_EVENT_HTTP.rawValue):
            let path = data.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: length), as: UTF8.self) }
            return httpRequest(connection, path: path ?? "/")
        case Int(VF_WS_EVENT_HTTP_WRITEABLE.rawValue):
            return httpWritable(connection)
        case Int(VF_WS_EVENT_CONFIRM_UPGRADE.rawValue):
            return confirmUpgrade(
                connection, upgrade: data.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) })
        case Int(VF_WS_EVENT_ESTABLISHED.rawValue):
            return established(connection)
        case Int(VF_WS_EVENT_RECEIVE.rawValue):
            return received(connection, data: data, length: length)
        case Int(VF_WS_EVENT_WRITEABLE.rawValue):
            return webSocketWritable(connection)
        default:
            return 0
        }
    }

    private func wakeViewers() {
        writable.removeAll(keepingCapacity: true)
        shared.withLock { state in
            state.wakePending = false
            for index in state.slots.indices where state.slots[index].id != 0 && state.slots[index].hasWritableWork {
                writable.append(index)
            }
        }
        for index in writable {
            if let connection = slotConnections[index] { vf_ws_request_writable(connection) }
        }
    }

    private func hasToken(_ connection: OpaquePointer) -> Bool {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 160) { buffer in
            let count = vf_ws_query_argument(connection, "token", buffer.baseAddress, Int32(buffer.count))
            guard count > 0 else { return false }
            return buffer.withMemoryRebound(to: UInt8.self) { bytes in
                PreviewWebToken.matches(UnsafeBufferPointer(rebasing: bytes[0..<Int(count)]), tokenBytes)
            }
        }
    }

    private func header(_ connection: OpaquePointer, _ which: vf_ws_header) -> String? {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 512) { buffer in
            let count = vf_ws_header(connection, Int32(which.rawValue), buffer.baseAddress, Int32(buffer.count))
            guard count >= 0 else { return nil }
            return String(cString: buffer.baseAddress!)
        }
    }

    private func count(_ update: (inout PreviewWebServer.Statistics) -> Void) {
        shared.withLock { update(&$0.counts) }
    }

    private static let securityHeaders =
        "Cache-Control: no-store\r\nReferrer-Policy: no-referrer\r\nX-Content-Type-Options: nosniff\r\n"
    private static let pageHeaders =
        securityHeaders
        + "X-Frame-Options: DENY\r\nContent-Security-Policy: default-src 'none'; script-src 'self'; "
        + "style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "
        + "base-uri 'none'; form-action 'none'\r\n"

    private func httpRequest(_ connection: OpaquePointer, path: String) -> Int32 {
        guard hasToken(connection) else {
            count { $0.refusedForToken += 1 }
            return vf_ws_respond_status(connection, 403)
        }
        guard vf_ws_is_get(connection) != 0 else {
            count { $0.refusedOther += 1 }
            return vf_ws_respond_status(connection, 405)
        }
        switch path {
        case "/", "/index.html":
            return respond(connection, body: page, type: "text/html; charset=utf-8")
        case "/viewer.js":
            return respond(connection, body: script, type: "text/javascript; charset=utf-8")
        case "/stream.mjpg":
            guard let slot = join(connection, kind: .multipart) else {
                count { $0.refusedForCapacity += 1 }
                return vf_ws_respond_status(connection, 503)
            }
            // Recorded first: if the headers cannot be written, closing the connection frees the slot.
            connections[connection, default: Connection()].request = .multipart(slot: slot, opened: false)
            // No X-Content-Type-Options: nosniff here: Chromium then refuses the stream in an <img>.
            let headers = "Cache-Control: no-store\r\nPragma: no-cache\r\n"
            guard
                vf_ws_respond_headers(
                    connection, 200, "multipart/x-mixed-replace; boundary=\(PreviewWebPayload.boundary)", -1, headers)
                    == 0
            else {
                return -1
            }
            vf_ws_release_headers(connection)
            vf_ws_request_writable(connection)
            return 0
        default:
            count { $0.refusedOther += 1 }
            return vf_ws_respond_status(connection, 404)
        }
    }

    private func respond(_ connection: OpaquePointer, body: PreviewWebPayload, type: String) -> Int32 {
        guard
            vf_ws_respond_headers(connection, 200, type, Int64(body.info.messageCount), Self.pageHeaders) == 0
        else { return -1 }
        connections[connection, default: Connection()].request = .body(body)
        vf_ws_request_writable(connection)
        return 0
    }

    private func httpWritable(_ connection: OpaquePointer) -> Int32 {
        guard let request = connections[connection]?.request else { return 0 }
        switch request {
        case .body(let body):
            connections[connection]?.request = nil
            let written = body.withMessage { vf_ws_write(connection, $0, $1, Int32(VF_WS_WRITE_HTTP_FINAL.rawValue)) }
            guard written == 0 else { return -1 }
            return vf_ws_transaction_completed(connection)
        case .multipart(let slot, let opened):
            // libwebsockets ends a response after a few seconds unless told it lasts. A viewer
            // that leaves is noticed when a frame is written to it.
            vf_ws_cancel_timeout(connection)
            guard opened else {
                connections[connection]?.request = .multipart(slot: slot, opened: true)
                let opening = PreviewWebPayload.streamOpening
                let start = partHeader + PreviewWebPayload.headroom
                start.update(from: opening, count: opening.count)
                guard vf_ws_write(connection, start, opening.count, Int32(VF_WS_WRITE_HTTP.rawValue)) == 0 else {
                    return -1
                }
                if shared.withLock({ $0.slots[slot].hasWork }) { vf_ws_request_writable(connection) }
                return 0
            }
            let (next, more) = shared.withLock { state in (state.slots[slot].pop(), state.slots[slot].hasWork) }
            guard let frame = next else { return 0 }
            let written = frame.withPartBody { vf_ws_write(connection, $0, $1, Int32(VF_WS_WRITE_HTTP.rawValue)) }
            guard written == 0 else { return -1 }
            if more { vf_ws_request_writable(connection) }
            return 0
        case .webSocket:
            return 0
        }
    }

    private func originAllowed(_ connection: OpaquePointer) -> Bool {
        guard let origin = header(connection, VF_WS_HEADER_ORIGIN) else { return true }  // not a web page
        if allowedOrigins.contains(origin) { return true }
        // Bound to a wildcard address: the page's own origin is whatever numeric address the
        // viewer used, which the Host header names. A name (which DNS may rebind to this
        // host) is never accepted this way.
        guard configuration.address == "0.0.0.0" || configuration.address == "::",
            let host = header(connection, VF_WS_HEADER_HOST), Self.isNumericHost(host)
        else { return false }
        return origin == "http://\(host)"
    }

    package static func isNumericHost(_ host: String) -> Bool {
        var address = host
        if address.hasPrefix("[") {
            guard let close = address.firstIndex(of: "]") else { return false }
            address = String(address[address.index(after: address.startIndex)..<close])
            var v6 = in6_addr()
            return inet_pton(AF_INET6, address, &v6) == 1
        }
        if let colon = address.lastIndex(of: ":") { address = String(address[..<colon]) }
        var v4 = in_addr()
        return inet_pton(AF_INET, address, &v4) == 1
    }

    private func confirmUpgrade(_ connection: OpaquePointer, upgrade: String?) -> Int32 {
        guard hasToken(connection) else {
            count { $0.refusedForToken += 1 }
            return vf_ws_respond_status(connection, 403) == 0 ? 1 : -1
        }
        guard upgrade?.lowercased() == "websocket", header(connection, VF_WS_HEADER_PATH) == "/ws" else {
            count { $0.refusedOther += 1 }
            return vf_ws_respond_status(connection, 404) == 0 ? 1 : -1
        }
        guard originAllowed(connection) else {
            count { $0.refusedForOrigin += 1 }
            return vf_ws_respond_status(connection, 403) == 0 ? 1 : -1
        }
        guard shared.withLock({ $0.viewerCount < $0.slots.count }) else {
            count { $0.refusedForCapacity += 1 }
            return vf_ws_respond_status(connection, 503) == 0 ? 1 : -1
        }
        return 0
    }

    private func established(_ connection: OpaquePointer) -> Int32 {
        guard let slot = join(connection, kind: .webSocket) else {
            count { $0.refusedForCapacity += 1 }
            return -1
        }
        connections[connection, default: Connection()].request = .webSocket(slot: slot)
        vf_ws_request_writable(connection)
        return 0
    }

    /// Takes a free slot for a new viewer and queues the newest frame (and figures) for it.
    private func join(_ connection: OpaquePointer, kind: PreviewWebServer.ViewerKind) -> Int? {
        let slot = shared.withLock { state -> Int? in
            guard let index = state.slots.firstIndex(where: { $0.id == 0 }) else { return nil }
            state.slots[index].id = state.nextViewerID
            state.nextViewerID += 1
            state.slots[index].kind = kind
            state.slots[index].framesSent = 0
            state.slots[index].framesReplaced = 0
            if let frame = state.latestFrame { state.slots[index].push(frame) }
            if kind == .webSocket { state.slots[index].figures = state.latestFigures }
            state.viewerCount += 1
            return index
        }
        if let slot { slotConnections[slot] = connection }
        return slot
    }

    private func retire(_ state: inout PreviewWebSharedState, _ index: Int) {
        state.retiredSent += state.slots[index].framesSent
        state.retiredReplaced += state.slots[index].framesReplaced
        state.slots[index].clear()
        state.slots[index].id = 0
        state.viewerCount -= 1
    }

    private func closed(_ connection: OpaquePointer) {
        guard let entry = connections.removeValue(forKey: connection) else { return }
        let slot: Int
        switch entry.request {
        case .multipart(let index, _), .webSocket(let index): slot = index
        default: return
        }
        guard slotConnections[slot] == connection else { return }
        slotConnections[slot] = nil
        shared.withLock { retire(&$0, slot) }
    }

    private func webSocketWritable(_ connection: OpaquePointer) -> Int32 {
        guard case .webSocket(let slot) = connections[connection]?.request else { return 0 }
        let (next, more) = shared.withLock { state -> (PreviewWebPayload?, Bool) in
            if let figures = state.slots[slot].figures {
                state.slots[slot].figures = nil
                return (figures, state.slots[slot].hasWritableWork)
            }
            guard state.slots[slot].mayWriteFrame else { return (nil, false) }
            let frame = state.slots[slot].pop()
            if state.slots[slot].acknowledges { state.slots[slot].framesInFlight += 1 }
            return (frame, state.slots[slot].hasWritableWork)
        }
        guard let next else { return 0 }
        next.stampHeader()
        let kind = next.info.kind == .frame ? VF_WS_WRITE_BINARY : VF_WS_WRITE_TEXT
        let written = next.withMessage { vf_ws_write(connection, $0, $1, Int32(kind.rawValue)) }
        guard written == 0 else { return -1 }
        if more { vf_ws_request_writable(connection) }
        return 0
    }

    /// Messages from the page: JSON clicks, acknowledgements and paint reports. Anything else (or larger than
    /// 4 KiB) closes the connection.
    private func received(_ connection: OpaquePointer, data: UnsafeRawPointer?, length: Int) -> Int32 {
        guard case .webSocket(let slot) = connections[connection]?.request else { return -1 }
        if let data, length > 0 {
            guard (connections[connection]?.message.count ?? 0) + length <= 4096 else { return -1 }
            connections[connection]?.message.append(
                contentsOf: UnsafeRawBufferPointer(start: data, count: length).bindMemory(to: UInt8.self))
        }
        guard vf_ws_is_final_fragment(connection) != 0 else { return 0 }
        let message = connections[connection]?.message ?? []
        connections[connection]?.message.removeAll(keepingCapacity: true)
        guard vf_ws_is_binary(connection) == 0,
            let object = try? JSONSerialization.jsonObject(with: Data(message)) as? [String: Any],
            let type = object["type"] as? String
        else { return -1 }
        switch type {
        case "click":
            guard let x = (object["x"] as? NSNumber)?.doubleValue, let y = (object["y"] as? NSNumber)?.doubleValue,
                x.isFinite, y.isFinite
            else { return -1 }
            let (callback, width, height) = shared.withLock { state in
                state.counts.clicksReceived += 1
                return (state.onClick, Double(state.lastWidth), Double(state.lastHeight))
            }
            // Only points on the picture (a click on the edge pixel column rounds into it).
            guard x >= 0, y >= 0, x <= width, y <= height, width > 0, height > 0 else { return 0 }
            callback?(min(x, width.nextDown), min(y, height.nextDown))
        case "ack":
            // The page took a frame off its socket.
            let more = shared.withLock { state -> Bool in
                if state.slots[slot].acknowledges {
                    state.slots[slot].framesInFlight = max(0, state.slots[slot].framesInFlight - 1)
                } else {
                    state.slots[slot].acknowledges = true
                }
                return state.slots[slot].hasWritableWork
            }
            if more { vf_ws_request_writable(connection) }
        case "paint":
            guard let sequence = (object["sequence"] as? NSNumber)?.doubleValue,
                let time = (object["time"] as? NSNumber)?.doubleValue, sequence >= 0, sequence < 0x1p63, time.isFinite
            else { return -1 }
            let (callback, viewer) = shared.withLock { ($0.onPaintReport, $0.slots[slot].id) }
            callback?(.init(viewer: viewer, sequenceNumber: UInt64(sequence), paintTime: time))
        default:
            return -1
        }
        return 0
    }
}
