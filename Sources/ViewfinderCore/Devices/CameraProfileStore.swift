import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One saved camera profile as it is kept on disk: JSON with sorted keys, one value a line, so a
/// person can read and edit it.
///
/// ```json
/// {
///   "controls" : {
///     "brightness" : 20
///   },
///   "format" : {
///     "emulated" : false,
///     "height" : 240,
///     "pixelFormat" : "yuvs",
///     "width" : 320
///   },
///   "frameDuration" : "1/15",
///   "localizedName" : "HD Pro Webcam C920",
///   "uniqueID" : "v4l2:usb-0000:00:14.0-1",
///   "version" : 1
/// }
/// ```
///
/// With typed camera controls the file also has a `"camera"` object (`"focusMode" : "locked"`,
/// `"lensPosition" : 0.5`, `"exposureMode" : "custom"`, `"exposureDuration" : "1/100"`,
/// `"whiteBalanceMode"`, `"whiteBalanceTemperature"` in kelvin, `"videoZoomFactor"`, `"torchMode"`,
/// `"powerLineFrequency"`). Every part is optional: a profile may hold controls only. `pixelFormat` is the four-character
/// code (``PixelFormat/fourCC``) or the format's ``PixelFormat/name``; `frameDuration` is
/// `value/timescale` seconds (`"1/15"` is 15 frames per second).
package struct CameraProfile: Codable, Sendable, Hashable {
    /// The typed camera settings, by the names of AVFoundation's modes (`"continuousAutoFocus"`,
    /// `"custom"`, `"locked"`, `"fiftyHertz"`, …); each only where the camera has the control.
    package struct CameraEntry: Codable, Sendable, Hashable {
        package var focusMode: String?
        package var lensPosition: Float?
        package var exposureMode: String?
        package var exposureDuration: String?
        package var whiteBalanceMode: String?
        package var whiteBalanceTemperature: Int?
        package var videoZoomFactor: Double?
        package var torchMode: String?
        package var powerLineFrequency: String?
    }

    /// A format by what identifies it among a device's formats.
    package struct FormatEntry: Codable, Sendable, Hashable {
        package var pixelFormat: String
        package var width: Int
        package var height: Int
        package var emulated: Bool?
    }

    /// The file layout's version (1); a hand-written file may leave it out.
    package var version: Int? = 1
    /// The typed camera settings (focus, exposure, white balance, zoom, torch, anti-flicker).
    package var camera: CameraEntry?
    package var uniqueID: String?
    package var localizedName: String?
    package var format: FormatEntry?
    package var frameDuration: String?
    package var controls: [String: Int]?

    package init() {}

    /// Parses `"value/timescale"` (or a whole number of seconds); `nil` when malformed.
    package static func parseDuration(_ text: String) -> MediaTime? {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
        guard let value = parts.first.flatMap({ Int64($0) }) else { return nil }
        if parts.count == 1 { return MediaTime(value: value, timescale: 1) }
        guard parts.count == 2, let timescale = Int32(parts[1]), timescale > 0 else { return nil }
        return MediaTime(value: value, timescale: timescale)
    }

    /// `duration` as `"value/timescale"`.
    package static func formatDuration(_ duration: MediaTime) -> String { "\(duration.value)/\(duration.timescale)" }

    /// Whether `format` is the one `entry` names.
    package static func matches(_ entry: FormatEntry, _ format: CaptureDevice.Format) -> Bool {
        (format.pixelFormat.fourCC == entry.pixelFormat || format.pixelFormat.name == entry.pixelFormat)
            && format.dimensions.width == entry.width && format.dimensions.height == entry.height
            && (entry.emulated == nil || entry.emulated == format.isEmulated)
    }
}

/// Where camera profiles live: `$XDG_CONFIG_HOME/viewfinder/profiles/<unique ID>/<name>.json`
/// (`~/.config/…` when `XDG_CONFIG_HOME` is unset or not absolute, as the XDG Base Directory
/// specification says). The unique ID is percent-encoded into one path component.
///
/// Thread safety: a value type; files are written whole (to a temporary name, then renamed).
package struct CameraProfileStore: Sendable, Hashable {
    /// The `profiles` directory.
    package var directory: URL

    /// A store in `directory` (tests point it at a temporary directory).
    package init(directory: URL) { self.directory = directory }

    /// The store in the XDG config directory `environment` names (the process's by default).
    package static func standard(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> CameraProfileStore {
        var base: String
        if let configHome = environment["XDG_CONFIG_HOME"], configHome.hasPrefix("/") {
            base = configHome
        } else {
            let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
            base = (home as NSString).appendingPathComponent(".config")
        }
        let url = URL(fileURLWithPath: base, isDirectory: true)
            .appendingPathComponent("viewfinder", isDirectory: true)
            .appendingPathComponent("profiles", isDirectory: true)
        return CameraProfileStore(directory: url)
    }

    /// The folder of one device's profiles.
    package func folder(for uniqueID: String) -> URL {
        var encoded = ""
        for byte in uniqueID.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                encoded.append(Character(Unicode.Scalar(byte)))
            default:
                encoded += String(format: "%%%02X", byte)
            }
        }
        if encoded.hasPrefix(".") { encoded = "%2E" + encoded.dropFirst() }
        return directory.appendingPathComponent(encoded, isDirectory: true)
    }

    /// Throws ``CaptureError/Code/invalidArgument`` unless `name` can be a profile's file name.
    package static func validate(name: String) throws(CaptureError) {
        let allowed = name.unicodeScalars.allSatisfy {
            CharacterSet.alphanumerics.contains($0) || " -_.".unicodeScalars.contains($0)
        }
        guard !name.isEmpty, name.utf8.count <= 100, allowed, !name.hasPrefix("."),
            name == name.trimmingCharacters(in: .whitespaces)
        else {
            throw CaptureError(
                .invalidArgument,
                "'\(name)' cannot name a camera profile: use 1…100 letters, digits, spaces, '-', '_' or '.', not starting with '.' or a space"
            )
        }
    }

    /// The file of profile `name` of device `uniqueID`.
    package func file(for uniqueID: String, name: String) -> URL {
        folder(for: uniqueID).appendingPathComponent(name + ".json", isDirectory: false)
    }

    /// The names of the device's saved profiles, sorted.
    package func names(for uniqueID: String) -> [String] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: folder(for: uniqueID).path)) ?? []
        return entries.filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }.map { String($0.dropLast(5)) }.sorted()
    }

    /// Writes `profile` as `name` (replacing a profile of that name).
    package func save(_ profile: CameraProfile, for uniqueID: String, name: String) throws(CaptureError) {
        try Self.validate(name: name)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let folder = folder(for: uniqueID)
        let target = file(for: uniqueID, name: name)
        do {
            var data = try encoder.encode(profile)
            data.append(UInt8(ascii: "\n"))
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let temporary = folder.appendingPathComponent(".\(name).\(UUID().uuidString).tmp")
            try data.write(to: temporary)
            guard rename(temporary.path, target.path) == 0 else {
                let code = errno
                try? FileManager.default.removeItem(at: temporary)
                throw CaptureError(
                    .systemError, "cannot write the camera profile \(target.path): check the directory's permissions",
                    errno: code)
            }
        } catch let error as CaptureError {
            throw error
        } catch {
            throw CaptureError(
                .systemError,
                "cannot write the camera profile \(target.path) (\(error.localizedDescription)): check that the directory is writable"
            )
        }
    }

    /// Reads profile `name`; throws ``CaptureError/Code/invalidArgument`` when there is none or
    /// the file is not a profile (saying where).
    package func load(for uniqueID: String, name: String) throws(CaptureError) -> CameraProfile {
        try Self.validate(name: name)
        let url = file(for: uniqueID, name: name)
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw CaptureError(
                .invalidArgument,
                "there is no camera profile '\(name)' at \(url.path): save one with saveProfile(named:) or pick one of savedProfileNames"
            )
        }
        do {
            return try JSONDecoder().decode(CameraProfile.self, from: data)
        } catch {
            throw CaptureError(
                .invalidArgument,
                "the camera profile \(url.path) is not valid (\(Self.describe(error))): fix the file or save the profile again"
            )
        }
    }

    /// Removes profile `name`; nothing when there is none.
    package func remove(for uniqueID: String, name: String) throws(CaptureError) {
        try Self.validate(name: name)
        let url = file(for: uniqueID, name: name)
        guard unlink(url.path) == 0 || errno == ENOENT else {
            throw CaptureError(
                .systemError, "cannot remove the camera profile \(url.path): check the directory's permissions",
                errno: errno)
        }
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, let context):
            return "missing " + (context.codingPath.map(\.stringValue) + [key.stringValue]).joined(separator: ".")
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context),
            DecodingError.dataCorrupted(let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? context.debugDescription : "\(path): \(context.debugDescription)"
        default:
            return "\(error)"
        }
    }
}
