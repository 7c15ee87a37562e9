import CWebSockets

/// What a ``PreviewWebPayload`` carries, and where its bytes are.
struct PreviewWebPayloadInfo {
    enum Kind { case frame, text }
    var kind: Kind
    /// The message's length (frame header + JPEG, or the text), after the LWS_PRE headroom.
    var messageCount: Int
    var sequenceNumber: UInt64 = 0
    var presentationSeconds: Double = .nan
    var publishedMilliseconds: Double = .nan
    var width: Int = 0
    var height: Int = 0
    /// The JPEG's length (frames only).
    var jpegCount: Int = 0
}

/// One message for every viewer, made once per publish and shared (by reference count) by the
/// viewers' queues: libwebsockets' LWS_PRE headroom, then the message.
///
/// A frame's message is ``headerSize`` bytes of header (little endian: "VFP1", header size,
/// sequence number, presentation time in seconds, publish time in milliseconds since 1970,
/// width, height) then the JPEG, then CR LF (sent only after a multipart part).
///
/// Thread safety: written by the publisher before it is shared, then read (and its header
/// rewritten with the same bytes) on the server's service thread only.
final class PreviewWebPayload: @unchecked Sendable {
    private let header: PreviewWebPayloadInfo
    private let bytes: UnsafeMutablePointer<UInt8>

    private init(_ info: PreviewWebPayloadInfo, capacity: Int) {
        header = info
        bytes = .allocate(capacity: capacity)
    }

    deinit { bytes.deallocate() }

    /// Bytes of a frame message's header.
    static let headerSize = 40
    /// libwebsockets' LWS_PRE.
    static let headroom = Int(vf_ws_pre_padding())

    /// A frame message holding a copy of `jpeg`.
    static func frame(
        jpeg: UnsafeRawBufferPointer, sequenceNumber: UInt64, presentationSeconds: Double,
        publishedMilliseconds: Double, width: Int, height: Int
    ) -> PreviewWebPayload {
        let info = PreviewWebPayloadInfo(
            kind: .frame, messageCount: headerSize + jpeg.count, sequenceNumber: sequenceNumber,
            presentationSeconds: presentationSeconds, publishedMilliseconds: publishedMilliseconds, width: width,
            height: height, jpegCount: jpeg.count)
        let payload = make(info, capacity: headroom + headerSize + jpeg.count + 2)
        payload.withUnsafeMutablePointerToElements { bytes in
            let body = bytes + headroom + headerSize
            if let source = jpeg.baseAddress, !jpeg.isEmpty {
                body.update(from: source.assumingMemoryBound(to: UInt8.self), count: jpeg.count)
            }
            body[jpeg.count] = 0x0D
            body[jpeg.count + 1] = 0x0A
        }
        payload.stampHeader()
        return payload
    }

    /// A text message (UTF-8).
    static func text(_ string: String) -> PreviewWebPayload {
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

    var info: PreviewWebPayloadInfo { header }

    /// Writes a frame's header in front of its JPEG (again: libwebsockets may use the bytes in
    /// front of what it writes, and the multipart stream writes from the JPEG on).
    func stampHeader() {
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
    func withMessage<R>(_ body: (UnsafeMutablePointer<UInt8>, Int) -> R) -> R {
        let count = header.messageCount
        return withUnsafeMutablePointerToElements { body($0 + Self.headroom, count) }
    }

    /// A frame's JPEG followed by CR LF (a multipart part's body), with headroom before it.
    func withPartBody<R>(_ body: (UnsafeMutablePointer<UInt8>, Int) -> R) -> R {
        let count = header.jpegCount + 2
        return withUnsafeMutablePointerToElements { body($0 + Self.headroom + Self.headerSize, count) }
    }
}
