import CPipeWire
import Foundation
import ViewfinderCore
import ViewfinderV4L2

extension PipeWireConnection {
    /// The node name of the session manager's default video source (`default.video.source` in the
    /// daemon's `default` metadata, which WirePlumber keeps), as of the last round trip; `nil`
    /// when the daemon has no such metadata or no default.
    package var defaultVideoSourceName: String? {
        var buffer = [CChar](repeating: 0, count: 512)
        guard vf_pw_connection_default_video_source(handle, &buffer, buffer.count) == 1 else { return nil }
        let value = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        struct Entry: Decodable { var name: String }
        guard let entry = try? JSONDecoder().decode(Entry.self, from: Data(value.utf8)), !entry.name.isEmpty else {
            return nil
        }
        return entry.name
    }

    /// Sets `key` of the `default` metadata to a JSON `value`, as `wpctl set-default` does with
    /// `default.configured.video.source` (for tests). Throws when the daemon has no such metadata.
    package func setDefaultMetadata(_ key: String, json value: String) throws(CaptureError) {
        let result = vf_pw_connection_set_default_metadata(handle, key, "Spa:String:JSON", value)
        guard result == 0 else {
            throw CaptureError(
                .unsupportedFormat,
                "the PipeWire daemon has no 'default' metadata to set \(key) in: is a session manager (WirePlumber) running?",
                errno: -result)
        }
    }
}

extension PipeWireDeviceProvider {
    /// The camera among `cameras` that is PipeWire's default video source: the node's own camera,
    /// or the V4L2 camera the node is a node of (``PipeWireCameraBackend/offers(_:)``); `nil` when
    /// there is no daemon connection yet, no default, or it is none of them. Asks nothing of the
    /// daemon (the connection follows the metadata as its events come).
    package func defaultCamera(among cameras: [CaptureDevice]) -> CaptureDevice? {
        guard let name = openConnection?.defaultVideoSourceName else { return nil }
        if let own = cameras.first(where: { ($0.backend as? PipeWireCameraBackend)?.nodeName == name }) { return own }
        guard let node = presentBackends.first(where: { $0.nodeName == name }) else { return nil }
        return cameras.first { camera in (camera.backend as? V4L2CameraBackend).map { node.offers($0) } ?? false }
    }
}
