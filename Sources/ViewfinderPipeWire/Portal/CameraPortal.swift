import CDBus
import Foundation
import Synchronization
import ViewfinderCore
import ViewfinderV4L2

/// Where the Camera portal's PipeWire remote goes once access is granted: the PipeWire backend
/// connects to it (`pw_context_connect_fd`) and lists the camera nodes it offers.
package protocol PipeWireRemoteReceiver: Sendable {
    /// Takes ownership of `fd`, an open PipeWire remote with the camera nodes; throws when it
    /// cannot use it (the remote reaches no daemon).
    func receivePipeWireRemote(_ fd: Int32) throws(CaptureError)
}

/// Keeps the newest remote the portal opened until a PipeWire backend takes it (the receiver a
/// portal has when no other is given), closing the one it replaces.
///
/// Thread safety: the descriptor sits under a mutex.
package final class HeldPipeWireRemote: PipeWireRemoteReceiver {
    private let fd = Mutex<Int32?>(nil)

    /// A holder with no remote yet.
    package init() {}

    package func receivePipeWireRemote(_ fd: Int32) {
        if let previous = self.fd.withLock({ held in
            defer { held = fd }
            return held
        }) {
            close(previous)
        }
    }

    /// Hands the held remote over (the caller owns it), if there is one.
    package func take() -> Int32? {
        fd.withLock { held in
            defer { held = nil }
            return held
        }
    }

    deinit {
        if let fd = fd.withLock({ $0 }) { close(fd) }
    }
}

/// A client of `org.freedesktop.portal.Camera` (xdg-desktop-portal) over a private D-Bus
/// connection: `IsCameraPresent`, `AccessCamera` (the Request object and its `Response` signal)
/// and `OpenPipeWireRemote`, whose fd goes to a ``PipeWireRemoteReceiver``.
///
/// Every operation opens its own connection and closes it, so nothing is shared between calls.
///
/// Thread safety: immutable but for this process's last answer, under a mutex.
package final class CameraPortal: Sendable {
    /// The portal's bus name.
    package static let busName = "org.freedesktop.portal.Desktop"
    /// The portal's object.
    package static let objectPath = "/org/freedesktop/portal/desktop"
    /// The camera interface.
    package static let cameraInterface = "org.freedesktop.portal.Camera"
    /// The interface of the Request objects `AccessCamera` answers through.
    package static let requestInterface = "org.freedesktop.portal.Request"
    /// The environment variable that turns the portal on (`1`) or off (`0`); unset, the portal is
    /// used inside a Flatpak sandbox (`/.flatpak-info` exists).
    package static let environmentVariable = "VIEWFINDER_CAMERA_PORTAL"

    /// The D-Bus address of the bus the portal is on; `nil` for the session bus.
    package let busAddress: String?
    /// The application ID the portal files permissions under (the Flatpak ID), for the hints.
    package let appID: String?
    /// How long `AccessCamera` may wait for the user's answer.
    package let responseTimeout: Duration
    /// Where a granted remote goes.
    package let receiver: any PipeWireRemoteReceiver
    private let lastAnswer = Mutex<DeviceAuthorization?>(nil)
    private let requests = Atomic<Int>(0)

    /// A client of the portal on the bus at `busAddress` (the session bus when `nil`).
    package init(
        busAddress: String? = nil, appID: String? = CameraPortal.sandboxAppID(),
        responseTimeout: Duration = .seconds(300), receiver: any PipeWireRemoteReceiver = HeldPipeWireRemote()
    ) {
        self.busAddress = busAddress
        self.appID = appID
        self.responseTimeout = responseTimeout
        self.receiver = receiver
    }

    /// Whether cameras should come through the portal: `VIEWFINDER_CAMERA_PORTAL=1` or `0` decides;
    /// unset (or anything else), inside a Flatpak sandbox only.
    package static func isWanted(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        sandboxed: Bool = FileManager.default.fileExists(atPath: "/.flatpak-info")
    ) -> Bool {
        switch environment[environmentVariable] {
        case "1": true
        case "0": false
        default: sandboxed
        }
    }

    /// The Flatpak application ID: `FLATPAK_ID`, else `name=` in `/.flatpak-info`'s
    /// `[Application]` group; `nil` outside a sandbox.
    package static func sandboxAppID(
        environment: [String: String] = ProcessInfo.processInfo.environment, info: String? = nil
    ) -> String? {
        if let id = environment["FLATPAK_ID"], !id.isEmpty { return id }
        guard let text = info ?? (try? String(contentsOfFile: "/.flatpak-info", encoding: .utf8)) else { return nil }
        var inApplication = false
        for line in text.split(whereSeparator: \.isNewline) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("[") {
                inApplication = trimmed == "[Application]"
            } else if inApplication, trimmed.hasPrefix("name=") {
                return String(trimmed.dropFirst("name=".count))
            }
        }
        return nil
    }

    /// The object path of the Request an `AccessCamera` call with `token` from the connection
    /// named `uniqueName` gets: `/org/freedesktop/portal/desktop/request/SENDER/TOKEN`, SENDER
    /// being the unique name without its `:` and with `.` as `_`.
    package static func requestPath(uniqueName: String, token: String) -> String {
        let sender = String(uniqueName.drop { $0 == ":" }).replacingOccurrences(of: ".", with: "_")
        return "\(objectPath)/request/\(sender)/\(token)"
    }

    // MARK: Operations

    /// `IsCameraPresent`: whether the portal sees any camera.
    package func isCameraPresent() throws(CaptureError) -> Bool {
        let bus = try connect()
        defer { vf_dbus_close(bus) }
        var error = vf_dbus_error()
        var value: Int32 = 0
        guard
            vf_dbus_get_bool_property(
                bus, Self.busName, Self.objectPath, Self.cameraInterface, "IsCameraPresent", 5000, &value, &error)
                == 0
        else { throw failure(error, doing: "reading IsCameraPresent") }
        return value != 0
    }

    /// The portal's answer to `AccessCamera` (the `Response` code: 0 granted, 1 refused, 2 ended
    /// otherwise); asks the user when the permission store has no answer yet.
    package func accessCamera() throws(CaptureError) -> UInt32 {
        let bus = try connect()
        defer { vf_dbus_close(bus) }
        let token = "viewfinder_\(getpid())_\(requests.add(1, ordering: .relaxed).newValue)"
        let expected = Self.requestPath(uniqueName: String(cString: vf_dbus_unique_name(bus)), token: token)
        // Subscribe before calling, as the portal's documentation says: the Response may come
        // before the reply has been read.
        var error = vf_dbus_error()
        let rule = Self.responseRule(expected)
        guard vf_dbus_add_match(bus, rule, &error) == 0 else { throw failure(error, doing: "subscribing to Response") }
        var handle = [CChar](repeating: 0, count: 512)
        let called = withOptions(["handle_token": token]) { keys, values, count in
            vf_dbus_call_with_options(
                bus, Self.busName, Self.objectPath, Self.cameraInterface, "AccessCamera", keys, values, count, 10000,
                CChar(UInt8(ascii: "o")), &handle, Int32(handle.count), nil, &error)
        }
        guard called == 0 else { throw failure(error, doing: "calling AccessCamera") }
        let path = Self.string(handle)
        if path != expected {
            // A portal older than the handle_token rule: listen on the path it returned.
            guard vf_dbus_add_match(bus, Self.responseRule(path), &error) == 0 else {
                throw failure(error, doing: "subscribing to Response")
            }
        }
        var response: UInt32 = 0
        let waited = vf_dbus_wait_signal(
            bus, path, Self.requestInterface, "Response", Self.milliseconds(responseTimeout), &response, &error)
        switch waited {
        case 1: return response
        case 0:
            throw CaptureError(
                .permissionDenied,
                "The Camera portal gave no answer to AccessCamera within \(responseTimeout) (no Response on \(path)): "
                    + "answer the portal's dialog, or check that xdg-desktop-portal and its backend are running.")
        default: throw failure(error, doing: "waiting for AccessCamera's Response")
        }
    }

    /// `OpenPipeWireRemote`: a PipeWire remote with the camera nodes (the caller owns the fd).
    /// The portal refuses it (`NotAllowed`) unless access was granted.
    package func openPipeWireRemote() throws(CaptureError) -> Int32 {
        let bus = try connect()
        defer { vf_dbus_close(bus) }
        var error = vf_dbus_error()
        var fd: Int32 = -1
        let called = withOptions([:]) { keys, values, count in
            vf_dbus_call_with_options(
                bus, Self.busName, Self.objectPath, Self.cameraInterface, "OpenPipeWireRemote", keys, values, count,
                10000, CChar(UInt8(ascii: "h")), nil, 0, &fd, &error)
        }
        guard called == 0 else { throw failure(error, doing: "calling OpenPipeWireRemote") }
        return fd
    }

    /// The permission the store holds for this app's camera access (`yes`, `no`, `ask`), or
    /// `nil` when it holds none or cannot be reached (inside a sandbox it is not).
    package func storedPermission() -> String? {
        guard let bus = try? connect() else { return nil }
        defer { vf_dbus_close(bus) }
        var error = vf_dbus_error()
        var answer = [CChar](repeating: 0, count: 64)
        let found = vf_dbus_lookup_permission(bus, "devices", "camera", appID ?? "", 2000, &answer, 64, &error)
        return found == 1 ? Self.string(answer) : nil
    }

    // MARK: Authorization

    /// Whether access is granted, without asking anyone: the portal opens a remote only for an
    /// app it has granted; otherwise a stored or earlier refusal is ``CaptureDevice/AuthorizationStatus/denied``,
    /// a disabled camera (lockdown) or a missing portal ``CaptureDevice/AuthorizationStatus/restricted``,
    /// and no answer yet ``CaptureDevice/AuthorizationStatus/notDetermined``.
    package func authorization() -> DeviceAuthorization {
        do {
            let fd = try openPipeWireRemote()
            close(fd)
            return DeviceAuthorization(status: .authorized)
        } catch {
            guard error.code == .permissionDenied, isRefusal(error) else {
                return DeviceAuthorization(status: .restricted, error: error)
            }
            if storedPermission() == "no" { return DeviceAuthorization(status: .denied, error: deniedError()) }
            if let answer = lastAnswer.withLock({ $0 }), answer.status == .denied { return answer }
            return DeviceAuthorization(status: .notDetermined)
        }
    }

    /// Asks for access (`AccessCamera`: the portal asks the user unless an answer is stored) and,
    /// when granted, opens the PipeWire remote and hands it to ``receiver``. Blocks until the
    /// user answers.
    package func requestAccess() -> DeviceAuthorization {
        let answer: DeviceAuthorization
        do {
            switch try accessCamera() {
            case 0:
                try receiver.receivePipeWireRemote(openPipeWireRemote())
                answer = DeviceAuthorization(status: .authorized)
            case 1:
                answer = DeviceAuthorization(status: .denied, error: deniedError())
            case let code:
                answer = DeviceAuthorization(
                    status: .denied,
                    error: CaptureError(
                        .permissionDenied,
                        "The Camera portal ended the access request without an answer (Response \(code)); try again."))
            }
        } catch {
            answer = DeviceAuthorization(status: isRefusal(error) ? .denied : .restricted, error: error)
        }
        lastAnswer.withLock { $0 = answer }
        return answer
    }

    /// The refusal's error, with how to undo a stored answer.
    package func deniedError() -> CaptureError {
        let app = appID ?? "<app-id>"
        return CaptureError(
            .permissionDenied,
            "Camera access was refused through the Camera portal, and the portal keeps that answer (it will not ask "
                + "again). To be asked again, remove it: `flatpak permission-remove devices camera \(app)` (or reset "
                + "every permission of the app: `flatpak permission-reset \(app)`); to allow it without asking: "
                + "`flatpak permission-set devices camera \(app) yes`. `flatpak permissions devices camera` lists "
                + "the stored answers.")
    }

    // MARK: Plumbing

    private func connect() throws(CaptureError) -> OpaquePointer {
        var error = vf_dbus_error()
        let bus: OpaquePointer? =
            if let busAddress { busAddress.withCString { vf_dbus_open($0, &error) } } else { vf_dbus_open(nil, &error) }
        guard let bus else {
            let which = busAddress ?? "the session bus (DBUS_SESSION_BUS_ADDRESS)"
            throw CaptureError(
                .permissionDenied,
                "Could not connect to \(which) to reach the Camera portal: \(Self.text(error)). Start a D-Bus "
                    + "session (the desktop does), or set \(Self.environmentVariable)=0 to open cameras directly.")
        }
        return bus
    }

    /// Whether `error` is the portal refusing this app (as opposed to the portal missing).
    private func isRefusal(_ error: CaptureError) -> Bool {
        error.message.hasPrefix(Self.refusalPrefix)
    }

    private static let refusalPrefix = "The Camera portal refused"

    /// A D-Bus failure as a ``CaptureError`` that says what to do.
    private func failure(_ error: vf_dbus_error, doing action: String) -> CaptureError {
        let name = withUnsafeBytes(of: error.name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        switch name {
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
            return CaptureError(
                .permissionDenied,
                "The Camera portal is not running: nothing owns \(Self.busName) on the session bus (\(action)). "
                    + "Install and start xdg-desktop-portal (Debian: xdg-desktop-portal and a backend such as "
                    + "xdg-desktop-portal-gtk), or set \(Self.environmentVariable)=0 to open cameras directly.")
        case "org.freedesktop.DBus.Error.UnknownMethod", "org.freedesktop.DBus.Error.UnknownInterface",
            "org.freedesktop.DBus.Error.UnknownObject", "org.freedesktop.DBus.Error.UnknownProperty":
            return CaptureError(
                .permissionDenied,
                "The desktop portal has no Camera interface (\(Self.cameraInterface), \(action): \(Self.text(error))); "
                    + "xdg-desktop-portal 1.0 or later has it.")
        case "org.freedesktop.portal.Error.NotAllowed":
            let message = Self.text(error)
            if message.localizedCaseInsensitiveContains("disabled") {
                return CaptureError(
                    .permissionDenied,
                    "The camera is disabled for every app by the desktop's lockdown setting (\(message)): turn it "
                        + "back on in the privacy settings (GNOME: `gsettings set org.gnome.desktop.privacy "
                        + "disable-camera false`).")
            }
            return CaptureError(.permissionDenied, "\(Self.refusalPrefix) camera access (\(action): \(message)).")
        default:
            return CaptureError(.permissionDenied, "The Camera portal failed while \(action): \(Self.text(error)).")
        }
    }

    private static func text(_ error: vf_dbus_error) -> String {
        let name = withUnsafeBytes(of: error.name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let message = withUnsafeBytes(of: error.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return name.isEmpty ? message : "\(name): \(message)"
    }

    /// A NUL-terminated C string in an array, as a String.
    private static func string(_ characters: [CChar]) -> String {
        String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func responseRule(_ path: String) -> String {
        "type='signal',interface='\(requestInterface)',member='Response',path='\(path)'"
    }

    private static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        return Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }

    /// Calls `body` with the options as C string arrays (keys, values, count).
    private func withOptions(
        _ options: [String: String],
        _ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<UnsafePointer<CChar>?>?, Int32) -> Int32
    ) -> Int32 {
        let keys = options.keys.map { strdup($0) }
        let values = options.keys.map { strdup(options[$0]!) }
        defer { for copy in keys + values { free(copy) } }
        let constKeys = keys.map { UnsafePointer($0) }
        let constValues = values.map { UnsafePointer($0) }
        return constKeys.withUnsafeBufferPointer { k in
            constValues.withUnsafeBufferPointer { v in body(k.baseAddress, v.baseAddress, Int32(options.count)) }
        }
    }
}
