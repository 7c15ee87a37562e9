import Foundation

/// The marker structure of a JPEG frame, as far as Viewfinder needs it: which segments come before
/// the first scan, whether the frame carries Huffman tables, and the standard tables to insert
/// when a USB (UVC) camera's Motion-JPEG frame omits them.
///
/// UVC cameras commonly leave out the DHT segment and rely on the decoder to use the "typical"
/// tables of ITU-T T.81 Annex K.3 (as AVI's MJPEG convention does). libjpeg-turbo falls back to
/// those tables itself, so decoding needs no insertion; a JPEG *file* made from such a frame
/// (a photo) does, or other readers reject it.
///
/// Thread safety: a stateless namespace.
public enum JPEGFrame {
    /// One marker segment before the first scan.
    package struct Segment: Sendable, Hashable {
        /// The marker's second byte (`0xC4` for DHT, `0xE1` for APP1, …).
        package var marker: UInt8
        /// The offset of the segment's `0xFF` marker byte.
        package var offset: Int
        /// The bytes from `offset` to the end of the segment (marker, length and payload).
        package var count: Int
        /// The offset of the payload (after the two length bytes).
        package var payloadOffset: Int { offset + 4 }
        /// The payload's byte count.
        package var payloadCount: Int { count - 4 }
    }

    /// The segments of a frame up to its first scan.
    package struct Layout: Sendable, Hashable {
        /// Every segment between SOI and the first SOS (SOS itself not included).
        package var segments: [Segment]
        /// The offset of the first SOS marker's `0xFF`.
        package var scanOffset: Int
        /// Whether a DHT segment precedes the first scan.
        package var hasHuffmanTables: Bool { segments.contains { $0.marker == 0xC4 } }
    }

    /// Walks the segments from SOI to the first SOS; `nil` if the bytes do not start with SOI or
    /// a segment runs past the end before a scan starts.
    package static func layout(_ bytes: UnsafeRawBufferPointer) -> Layout? {
        var segments: [Segment] = []
        guard let scanOffset = walk(bytes, { segments.append($0) }) else { return nil }
        return Layout(segments: segments, scanOffset: scanOffset)
    }

    /// What ``layout(_:)`` says about the first scan — its offset and whether a DHT segment
    /// precedes it — without collecting the segments (no allocation: once per frame).
    package static func scanStart(_ bytes: UnsafeRawBufferPointer) -> (offset: Int, hasHuffmanTables: Bool)? {
        var hasHuffmanTables = false
        guard let offset = walk(bytes, { if $0.marker == 0xC4 { hasHuffmanTables = true } }) else { return nil }
        return (offset, hasHuffmanTables)
    }

    /// Walks the segments from SOI to the first SOS, handing each to `visit`; returns the offset of
    /// the SOS marker, or `nil` (see ``layout(_:)``).
    private static func walk(_ bytes: UnsafeRawBufferPointer, _ visit: (Segment) -> Void) -> Int? {
        guard bytes.count >= 4, bytes[0] == 0xFF, bytes[1] == 0xD8 else { return nil }
        var index = 2
        while index < bytes.count {
            guard bytes[index] == 0xFF else { return nil }
            // Any number of 0xFF fill bytes may precede a marker.
            while index < bytes.count, bytes[index] == 0xFF { index += 1 }
            guard index < bytes.count else { return nil }
            let marker = bytes[index]
            index += 1
            switch marker {
            case 0x01, 0xD0...0xD7:
                continue  // TEM and RSTn stand alone.
            case 0x00, 0xD8, 0xD9:
                return nil  // A stuffed zero, a second SOI or EOI before any scan: not a frame.
            default:
                break
            }
            guard index + 2 <= bytes.count else { return nil }
            let length = Int(bytes[index]) << 8 | Int(bytes[index + 1])
            guard length >= 2, index + length <= bytes.count else { return nil }
            // Segments are recorded from their marker byte, fill bytes dropped.
            let markerOffset = index - 2
            if marker == 0xDA { return markerOffset }
            visit(Segment(marker: marker, offset: markerOffset, count: length + 2))
            index += length
        }
        return nil
    }

    /// Whether the frame ends with EOI (`FF D9`), ignoring zero padding after it that some
    /// cameras leave in the buffer. A frame without one was cut short.
    package static func endsWithEndOfImage(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var end = bytes.count
        while end > 0, bytes[end - 1] == 0 { end -= 1 }
        return end >= 4 && bytes[end - 2] == 0xFF && bytes[end - 1] == 0xD9
    }

    /// Whether the frame has a DHT segment before its first scan (`false` also for bytes that are
    /// not a JPEG frame).
    public static func hasHuffmanTables(_ frame: [UInt8]) -> Bool {
        frame.withUnsafeBytes { layout($0)?.hasHuffmanTables ?? false }
    }

    /// Whether the JPEG in `frame` lacks Huffman tables that ``withStandardHuffmanTables(_:)-([UInt8])``
    /// would add (`false` for a frame that has them, or that is no JPEG it can parse), without
    /// copying it.
    package static func needsStandardHuffmanTables(_ frame: UnsafeRawBufferPointer) -> Bool {
        guard let layout = layout(frame) else { return false }
        return !layout.hasHuffmanTables
    }

    /// The frame with the standard Huffman tables (ITU-T T.81 Annex K.3) inserted just before its
    /// first scan, when it has no DHT segment of its own; otherwise (or when the bytes are not a
    /// well-formed JPEG up to the first scan) the frame unchanged.
    public static func withStandardHuffmanTables(_ frame: [UInt8]) -> [UInt8] {
        frame.withUnsafeBytes { bytes in
            guard let layout = layout(bytes), !layout.hasHuffmanTables else { return frame }
            var result = [UInt8]()
            result.reserveCapacity(frame.count + standardHuffmanTableSegment.count)
            result.append(contentsOf: bytes[0..<layout.scanOffset])
            result.append(contentsOf: standardHuffmanTableSegment)
            result.append(contentsOf: bytes[layout.scanOffset...])
            return result
        }
    }

    /// ``withStandardHuffmanTables(_:)-([UInt8])`` for `Data`.
    public static func withStandardHuffmanTables(_ frame: Data) -> Data {
        let bytes = [UInt8](frame)
        let result = withStandardHuffmanTables(bytes)
        return result.count == bytes.count ? frame : Data(result)
    }

    /// One Huffman table of a DHT segment: its class and slot, the number of codes of each length
    /// 1…16, and the symbols in code order.
    package struct HuffmanTable: Sendable, Hashable {
        /// 0 for DC, 1 for AC.
        package var tableClass: UInt8
        /// The destination slot (0 luminance, 1 chrominance in the standard tables).
        package var identifier: UInt8
        package var codeCounts: [UInt8]
        package var symbols: [UInt8]
    }

    /// The "typical" tables of ITU-T T.81 Annex K.3 (Tables K.3–K.6): DC and AC, luminance
    /// (slot 0) and chrominance (slot 1).
    package static let standardHuffmanTables: [HuffmanTable] = [
        // K.3: luminance DC differences.
        HuffmanTable(
            tableClass: 0, identifier: 0,
            codeCounts: [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0],
            symbols: Array(0...11)),
        // K.5: luminance AC coefficients.
        HuffmanTable(
            tableClass: 1, identifier: 0,
            codeCounts: [0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7D],
            symbols: [
                0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61, 0x07,
                0x22, 0x71, 0x14, 0x32, 0x81, 0x91, 0xA1, 0x08, 0x23, 0x42, 0xB1, 0xC1, 0x15, 0x52, 0xD1, 0xF0,
                0x24, 0x33, 0x62, 0x72, 0x82, 0x09, 0x0A, 0x16, 0x17, 0x18, 0x19, 0x1A, 0x25, 0x26, 0x27, 0x28,
                0x29, 0x2A, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3A, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49,
                0x4A, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5A, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69,
                0x6A, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7A, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89,
                0x8A, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9A, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7,
                0xA8, 0xA9, 0xAA, 0xB2, 0xB3, 0xB4, 0xB5, 0xB6, 0xB7, 0xB8, 0xB9, 0xBA, 0xC2, 0xC3, 0xC4, 0xC5,
                0xC6, 0xC7, 0xC8, 0xC9, 0xCA, 0xD2, 0xD3, 0xD4, 0xD5, 0xD6, 0xD7, 0xD8, 0xD9, 0xDA, 0xE1, 0xE2,
                0xE3, 0xE4, 0xE5, 0xE6, 0xE7, 0xE8, 0xE9, 0xEA, 0xF1, 0xF2, 0xF3, 0xF4, 0xF5, 0xF6, 0xF7, 0xF8,
                0xF9, 0xFA,
            ]),
        // K.4: chrominance DC differences.
        HuffmanTable(
            tableClass: 0, identifier: 1,
            codeCounts: [0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0],
            symbols: Array(0...11)),
        // K.6: chrominance AC coefficients.
        HuffmanTable(
            tableClass: 1, identifier: 1,
            codeCounts: [0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 0x77],
            symbols: [
                0x00, 0x01, 0x02, 0x03, 0x11, 0x04, 0x05, 0x21, 0x31, 0x06, 0x12, 0x41, 0x51, 0x07, 0x61, 0x71,
                0x13, 0x22, 0x32, 0x81, 0x08, 0x14, 0x42, 0x91, 0xA1, 0xB1, 0xC1, 0x09, 0x23, 0x33, 0x52, 0xF0,
                0x15, 0x62, 0x72, 0xD1, 0x0A, 0x16, 0x24, 0x34, 0xE1, 0x25, 0xF1, 0x17, 0x18, 0x19, 0x1A, 0x26,
                0x27, 0x28, 0x29, 0x2A, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3A, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48,
                0x49, 0x4A, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5A, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68,
                0x69, 0x6A, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7A, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87,
                0x88, 0x89, 0x8A, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9A, 0xA2, 0xA3, 0xA4, 0xA5,
                0xA6, 0xA7, 0xA8, 0xA9, 0xAA, 0xB2, 0xB3, 0xB4, 0xB5, 0xB6, 0xB7, 0xB8, 0xB9, 0xBA, 0xC2, 0xC3,
                0xC4, 0xC5, 0xC6, 0xC7, 0xC8, 0xC9, 0xCA, 0xD2, 0xD3, 0xD4, 0xD5, 0xD6, 0xD7, 0xD8, 0xD9, 0xDA,
                0xE2, 0xE3, 0xE4, 0xE5, 0xE6, 0xE7, 0xE8, 0xE9, 0xEA, 0xF2, 0xF3, 0xF4, 0xF5, 0xF6, 0xF7, 0xF8,
                0xF9, 0xFA,
            ]),
    ]

    /// One DHT segment (`FF C4`, length, then each table's class/slot byte, 16 counts and symbols)
    /// holding all four standard tables.
    package static let standardHuffmanTableSegment: [UInt8] = {
        var body: [UInt8] = []
        for table in standardHuffmanTables {
            body.append(table.tableClass << 4 | table.identifier)
            body.append(contentsOf: table.codeCounts)
            body.append(contentsOf: table.symbols)
        }
        let length = body.count + 2
        return [0xFF, 0xC4, UInt8(length >> 8), UInt8(length & 0xFF)] + body
    }()

    /// The Huffman tables of a DHT segment's payload, or `nil` if it is malformed.
    package static func huffmanTables(inPayload payload: ArraySlice<UInt8>) -> [HuffmanTable]? {
        var tables: [HuffmanTable] = []
        var index = payload.startIndex
        while index < payload.endIndex {
            guard index + 17 <= payload.endIndex else { return nil }
            let classAndSlot = payload[index]
            let counts = Array(payload[(index + 1)..<(index + 17)])
            let total = counts.reduce(0) { $0 + Int($1) }
            index += 17
            guard index + total <= payload.endIndex else { return nil }
            tables.append(
                HuffmanTable(
                    tableClass: classAndSlot >> 4, identifier: classAndSlot & 0x0F, codeCounts: counts,
                    symbols: Array(payload[index..<(index + total)])))
            index += total
        }
        return tables
    }
}
