import CALSA
import ViewfinderCore

/// A capture PCM alsa-lib lists (`snd_device_name_hint` for "pcm", `IOID` Input or absent).
package struct ALSADeviceInfo: Sendable, Hashable {
    /// The PCM name to open (`default`, `sysdefault:CARD=PCH`, `plughw:CARD=C920,DEV=0`, …).
    package var name: String
    /// alsa-lib's description; its first line names the card, the second the device.
    package var description: String

    /// A name for people: the description's lines joined, or the PCM name.
    package var localizedName: String {
        let lines = description.split(whereSeparator: \.isNewline).map(String.init)
        return lines.isEmpty ? name : lines.joined(separator: ", ")
    }
}

/// Lists ALSA's capture PCMs.
///
/// Thread safety: a stateless namespace; alsa-lib serialises its configuration access.
package enum ALSADeviceDirectory {
    /// Every PCM alsa-lib's hints list that can capture, `default` first (added when the hints
    /// lack it). PCMs whose names show they are not capture devices (`null`, plug-in aliases
    /// such as `dmix` for playback) are left out by their `IOID`.
    package static func captureDevices() -> [ALSADeviceInfo] {
        vf_alsa_silence_errors()
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        var devices: [ALSADeviceInfo] = []
        if snd_device_name_hint(-1, "pcm", &hints) >= 0, let hints {
            defer { snd_device_name_free_hint(hints) }
            var cursor = hints
            while let hint = cursor.pointee {
                defer { cursor += 1 }
                guard let name = take(snd_device_name_get_hint(hint, "NAME")) else { continue }
                let direction = take(snd_device_name_get_hint(hint, "IOID"))
                guard direction == nil || direction == "Input", name != "null" else { continue }
                devices.append(
                    ALSADeviceInfo(name: name, description: take(snd_device_name_get_hint(hint, "DESC")) ?? ""))
            }
        }
        if !devices.contains(where: { $0.name == "default" }) {
            devices.insert(ALSADeviceInfo(name: "default", description: "Default Audio Device"), at: 0)
        } else if let index = devices.firstIndex(where: { $0.name == "default" }), index != 0 {
            devices.insert(devices.remove(at: index), at: 0)
        }
        return devices
    }

    /// The string alsa-lib allocated, freed.
    private static func take(_ pointer: UnsafeMutablePointer<CChar>?) -> String? {
        guard let pointer else { return nil }
        defer { free(pointer) }
        return String(cString: pointer)
    }
}

/// ALSA configuration text Viewfinder builds, for PCMs defined on the fly.
package enum ALSAConfigurationText {
    /// A capture PCM `pcmName` that reads raw interleaved samples from `inputPath` (alsa-lib's
    /// `file` plug-in with `infile`) over a `null` slave, so the real capture path runs with no
    /// sound hardware. The `null` slave takes any format and rate and is not paced: reads
    /// return at once. Pass the text to ``ALSAMicrophone`` / ``ALSAPCM`` as extra configuration.
    package static func fileCapture(pcmName: String, inputPath: String) -> String {
        """
        pcm.\(quoted(pcmName)) {
            type file
            slave.pcm { type null }
            file "/dev/null"
            infile \(quoted(inputPath))
            format raw
        }
        """
    }

    /// `value` as an alsa-lib configuration string literal.
    package static func quoted(_ value: String) -> String {
        var escaped = ""
        for character in value {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "'": escaped += "\\'"
            default: escaped.append(character)
            }
        }
        return "\"\(escaped)\""
    }
}
