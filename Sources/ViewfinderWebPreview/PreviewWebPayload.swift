import CWebSockets
import ViewfinderCore

/// What a ``PreviewWebPayload`` carries, and where its bytes are.
package struct PreviewWebPayloadInfo {
    package enum Kind { case frame, text }
    package var kind: Kind
    /// The message's length (frame header + JPEG, or the text), after the LWS_PRE headroom.
    package var messageCount: Int
    package var sequenceNumber: UInt64 = 0
    package var presentationSeconds: Double = .nan
    package var publishedMilliseconds: Double = .nan
    package var width: Int = 0
    package var height: Int = 0
    /// The JPEG's length (frames only).
    package var jpegCount: Int = 0
}

/// One message for every viewer, made once per publish and shared (by reference count) by the
/// viewers' queues: libwebsockets' LWS_PRE headroom, then the message.
///
/// A frame's message is ``headerSize`` bytes of header (little endian: "VFP1", header size,
/// sequence number, presentation time in seconds, publish time in milliseconds since 1970,
/// width, height) then the JPEG, then CR LF and the next multipart boundary and part headers
/// (sent only on the multipart stream, after the part).
///
/// Thread safety: written by the publisher before it is shared, then read (and its header
/// rewritten with the same bytes) on the server's service thread only.
package final class PreviewWebPayload: @unchecked Sendable {
    private let header: PreviewWebPayloadInfo
    private let bytes: UnsafeMutablePointer<UInt8>

    private init(_ info: PreviewWebPayloadInfo, capacity: Int) {
        header = info
        bytes = .allocate(capacity: capacity)
    }

    deinit { bytes.deallocate() }

    /// Bytes of a frame message's header.
    package static let headerSize = 40
    /// The multipart stream's boundary.
    package static let boundary = "viewfinder-frame"
    /// What opens the multipart stream: the first boundary and part headers.
    ///
    /// Every part's JPEG is followed at once by the next boundary and part headers: Blink's
    /// multipart parser shows a part in an `<img>` only when the next part's headers arrive, so
    /// a stream that sent them with the next frame would show every frame a frame late. Parts
    /// therefore carry no Content-Length (readers find the boundary, as ffmpeg's mpjpeg demuxer
    /// does); the WebSocket carries the sequence number and times.
    package static let streamOpening = Array("--\(boundary)\r\nContent-Type: image/jpeg\r\n\r\n".utf8)
    /// What follows a part's JPEG on the multipart stream: the next part's boundary and headers.
    package static let partTrailer = Array("\r\n".utf8) + streamOpening
    /// libwebsockets' LWS_PRE.
    package static let headroom = Int(vf_ws_pre_padding())

    /// A frame message holding a copy of `jpeg`.
    package static func frame(
        jpeg: UnsafeRawBufferPointer, sequenceNumber: UInt64, presentationSeconds: Double,
        publishedMilliseconds: Double, width: Int, height: Int
    ) -> PreviewWebPayload {
        let info = PreviewWebPayloadInfo(
            kind: .frame, messageCount: headerSize + jpeg.count, sequenceNumber: sequenceNumber,
            presentationSeconds: presentationSeconds, publishedMilliseconds: publishedMilliseconds, width: width,
            height: height, jpegCount: jpeg.count)
        let payload = make(info, capacity: headroom + headerSize + jpeg.count + partTrailer.count)
        payload.withUnsafeMutablePointerToElements { bytes in
            let body = bytes + headroom + headerSize
            if let source = jpeg.baseAddress, !jpeg.isEmpty {
                body.update(from: source.assumingMemoryBound(to: UInt8.self), count: jpeg.count)
            }
            for (index, byte) in partTrailer.enumerated() { body[jpeg.count + index] = byte }
        }
        payload.stampHeader()
        return payload
    }

    /// A text message (UTF-8).
    package static func text(_ string: String) -> PreviewWebPayload {
        var string = string
        return string.withUTF8 { utf8 in
            let payload = make(.init(kind: .text, messageCount: utf8.count), capacity: headroom + utf8.count)
            payload.withUnsafeMutablePointerToElements { bytes in
                if let source = utf8.baseAddress { (bytes + headroom).update(from: source, count: utf8.count) }
            }
            return payload
        }
    }

    private static func make(_ info: PreviewWebPayloadInfo, capacity: Int) -> PreviewWebPayload {
        PreviewWebPayload(info, capacity: capacity)
    }

    private func withUnsafeMutablePointerToElements<R>(_ body: (UnsafeMutablePointer<UInt8>) -> R) -> R {
        body(bytes)
    }

    package var info: PreviewWebPayloadInfo { header }

    /// Writes a frame's header in front of its JPEG (again: libwebsockets may use the bytes in
    /// front of what it writes, and the multipart stream writes from the JPEG on).
    package func stampHeader() {
        guard header.kind == .frame else { return }
        let info = header
        withUnsafeMutablePointerToElements { bytes in
            let raw = UnsafeMutableRawPointer(bytes + Self.headroom)
            raw.storeBytes(of: UInt32(0x3150_4656).littleEndian, toByteOffset: 0, as: UInt32.self)  // "VFP1"
            raw.storeBytes(of: UInt32(Self.headerSize).littleEndian, toByteOffset: 4, as: UInt32.self)
            raw.storeBytes(of: info.sequenceNumber.littleEndian, toByteOffset: 8, as: UInt64.self)
            raw.storeBytes(of: info.presentationSeconds.bitPattern.littleEndian, toByteOffset: 16, as: UInt64.self)
            raw.storeBytes(of: info.publishedMilliseconds.bitPattern.littleEndian, toByteOffset: 24, as: UInt64.self)
            raw.storeBytes(of: UInt32(truncatingIfNeeded: info.width).littleEndian, toByteOffset: 32, as: UInt32.self)
            raw.storeBytes(of: UInt32(truncatingIfNeeded: info.height).littleEndian, toByteOffset: 36, as: UInt32.self)
        }
    }

    /// The WebSocket message (header + JPEG, or the text), with writable headroom before it.
    package func withMessage<R>(_ body: (UnsafeMutablePointer<UInt8>, Int) -> R) -> R {
        let count = header.messageCount
        return withUnsafeMutablePointerToElements { body($0 + Self.headroom, count) }
    }

    /// A frame's JPEG followed by the next boundary (a multipart part's body), with headroom
    /// before it.
    package func withPartBody<R>(_ body: (UnsafeMutablePointer<UInt8>, Int) -> R) -> R {
        let count = header.jpegCount + Self.partTrailer.count
        return withUnsafeMutablePointerToElements { body($0 + Self.headroom + Self.headerSize, count) }
    }
}
