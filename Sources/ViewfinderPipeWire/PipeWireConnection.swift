import CPipeWire
import Foundation
import Synchronization
import ViewfinderCore
import ViewfinderV4L2

/// One connection to a PipeWire daemon: a `pw_thread_loop` (PipeWire's own thread, on which every
/// callback of the connection, its streams and producers runs), a context, a core and the registry.
///
/// The registry's nodes are reported to ``Events`` on the loop thread, which must not block: the
/// device provider hands them to a queue of its own.
///
/// Thread safety: all members may be used from any thread but the loop thread.
package final class PipeWireConnection: @unchecked Sendable {  // unchecked: the C handle is used under the loop's lock.
    /// What the registry reports, on the loop thread.
    package struct Events: Sendable {
        /// A node appeared: its registry ID, object serial, `node.name`, `media.class` and
        /// `media.role` (empty when absent).
        package var nodeAdded:
            @Sendable (_ id: UInt32, _ serial: UInt32, _ name: String, _ mediaClass: String, _ role: String)
                -> Void = { _, _, _, _, _ in }
        /// A global (a node, say) went away.
        package var globalRemoved: @Sendable (_ id: UInt32) -> Void = { _ in }
        /// The daemon connection broke (the daemon exited, say).
        package var failed: @Sendable (_ error: CaptureError) -> Void = { _ in }

        /// Events that go nowhere.
        package init() {}
    }

    private final class Box: Sendable {
        let events: Events
        init(_ events: Events) { self.events = events }
    }

    package let handle: OpaquePointer
    private let box: Unmanaged<Box>
    private let closed = Atomic<Bool>(false)
    /// Where the connection goes: `"remote fd N"` or the socket name, for messages.
    package let remoteDescription: String

    /// Connects to the daemon: through `remoteFileDescriptor` when given (a remote the Camera
    /// portal opened with `OpenPipeWireRemote`; the connection owns it from here on, closing it
    /// when it closes), otherwise to the socket `remoteName` in `$XDG_RUNTIME_DIR` (default:
    /// `$PIPEWIRE_REMOTE`, else `pipewire-0`).
    package init(remoteFileDescriptor: Int32? = nil, remoteName: String? = nil, events: Events = Events())
        throws(CaptureError)
    {
        let box = Unmanaged.passRetained(Box(events))
        let added: vf_pw_node_added_fn = { user, id, serial, name, mediaClass, role in
            let events = Unmanaged<Box>.fromOpaque(user!).takeUnretainedValue().events
            events.nodeAdded(
                id, serial, name.map { String(cString: $0) } ?? "", mediaClass.map { String(cString: $0) } ?? "",
                role.map { String(cString: $0) } ?? "")
        }
        let removed: vf_pw_global_removed_fn = { user, id in
            Unmanaged<Box>.fromOpaque(user!).takeUnretainedValue().events.globalRemoved(id)
        }
        let failed: vf_pw_connection_error_fn = { user, res, message in
            let text = message.map { String(cString: $0) } ?? String(cString: strerror(-res))
            Unmanaged<Box>.fromOpaque(user!).takeUnretainedValue().events.failed(
                CaptureError(
                    .ioError, "the PipeWire daemon connection failed: \(text); is the daemon still running?",
                    errno: -res))
        }
        var message = [CChar](repeating: 0, count: 256)
        let fd = remoteFileDescriptor ?? -1
        let handle = vf_pw_connection_open(
            fd, remoteName, added, removed, failed, box.toOpaque(), &message, message.count)
        guard let handle else {
            box.release()
            let text = Self.text(message)
            throw CaptureError(
                .deviceNotFound,
                "\(text.isEmpty ? "cannot connect to PipeWire" : text) (\(Self.describe(fd: remoteFileDescriptor, name: remoteName))): start the PipeWire daemon (pipewire, wireplumber) or force the V4L2 route with VIEWFINDER_CAMERA_ROUTE=v4l2"
            )
        }
        self.handle = handle
        self.box = box
        self.remoteDescription = Self.describe(fd: remoteFileDescriptor, name: remoteName)
    }

    /// A NUL-terminated C buffer's text.
    package static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func describe(fd: Int32?, name: String?) -> String {
        if let fd { return "remote fd \(fd)" }
        return "socket '\(name ?? ProcessInfo.processInfo.environment["PIPEWIRE_REMOTE"] ?? "pipewire-0")'"
    }

    /// Whether a daemon socket is there to connect to (without connecting): `remoteName` (default
    /// `$PIPEWIRE_REMOTE`, else `pipewire-0`) under `$PIPEWIRE_RUNTIME_DIR` or `$XDG_RUNTIME_DIR`.
    package static func socketExists(remoteName: String? = nil) -> Bool {
        let environment = ProcessInfo.processInfo.environment
        let name = remoteName ?? environment["PIPEWIRE_REMOTE"] ?? "pipewire-0"
        if name.hasPrefix("/") { return FileManager.default.fileExists(atPath: name) }
        for directory in [environment["PIPEWIRE_RUNTIME_DIR"], environment["XDG_RUNTIME_DIR"]].compactMap({ $0 }) {
            if FileManager.default.fileExists(atPath: directory + "/" + name) { return true }
        }
        return false
    }

    /// Waits until the daemon has answered everything sent so far (so every node present has
    /// been reported).
    package func sync(timeoutMilliseconds: Int32 = 2000) throws(CaptureError) {
        let result = vf_pw_connection_sync(handle, timeoutMilliseconds)
        guard result == 0 else {
            throw CaptureError(
                .ioError,
                "the PipeWire daemon (\(remoteDescription)) did not answer: \(String(cString: strerror(-result)))",
                errno: -result)
        }
    }

    /// Node `id`'s properties and formats, or `nil` when it is gone or not a node.
    package func describeNode(_ id: UInt32, timeoutMilliseconds: Int32 = 2000) -> (vf_pw_node_details, [vf_pw_format])?
    {
        var details = vf_pw_node_details()
        var formats = [vf_pw_format](repeating: vf_pw_format(), count: 256)
        let count = vf_pw_node_describe(handle, id, &details, &formats, Int32(formats.count), timeoutMilliseconds)
        guard count >= 0 else { return nil }
        return (details, Array(formats.prefix(Int(count))))
    }

    /// Stops the loop thread and disconnects; no event comes after this returns. Called by
    /// `deinit` too.
    ///
    /// Called on the loop thread itself (the last reference dropped inside one of the connection's
    /// callbacks), the close runs on another thread: closing joins the loop thread, and a loop
    /// thread that destroys its own loop returns into freed memory (seen as a crash on the
    /// `viewfinder.pipewire` thread under load). Events may then come until that close ends.
    package func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        nonisolated(unsafe) let handle = handle
        let box = box
        Self.offLoopThread(handle) {
            vf_pw_connection_close(handle)
            box.release()
        }
    }

    /// Whether the caller runs on this connection's loop thread (inside one of its callbacks).
    package var isCallerOnLoopThread: Bool { vf_pw_connection_in_loop_thread(handle) != 0 }

    /// Runs `teardown` now, or on another thread when the caller is `handle`'s loop thread, where
    /// closing the connection or anything on it would join or destroy the running loop.
    package static func offLoopThread(_ handle: OpaquePointer, _ teardown: @escaping @Sendable () -> Void) {
        if vf_pw_connection_in_loop_thread(handle) != 0 {
            DispatchQueue.global().async(execute: teardown)
        } else {
            teardown()
        }
    }

    deinit { close() }
}

extension PipeWireDeviceProvider {
    /// Makes the process's PipeWire cameras come through `fileDescriptor`, a PipeWire remote the
    /// Camera portal opened (`org.freedesktop.portal.Camera.OpenPipeWireRemote`), instead of the
    /// daemon's socket: the built-in provider drops its current connection (its cameras report
    /// themselves disconnected), connects through the descriptor (which it owns from here on) and
    /// lists what the portal lets it see. Throws when the descriptor does not reach a daemon.
    package static func useRemote(fileDescriptor: Int32) throws(CaptureError) {
        try shared.reconnect(remoteFileDescriptor: fileDescriptor)
    }
}

/// The Camera portal's granted remote reaches the PipeWire provider through
/// ``reconnect(remoteFileDescriptor:)``: its cameras are then the ones the portal lets it see.
extension PipeWireDeviceProvider: PipeWireRemoteReceiver {
    package func receivePipeWireRemote(_ fd: Int32) throws(CaptureError) {
        try reconnect(remoteFileDescriptor: fd)
    }
}
